// --rate as a shape over time and --arrivals (docs/guide/workloads.md, "Load that changes over
// time"): the rate a whole job offers at each moment, and one client's schedule of due times.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace mw {

// Where a job keeps them (Job::opts, so the result file's params carry them and read them back):
// the shape as given, when --rate is one (the job's rate is then its mean over its span), and
// --arrivals when it is not uniform.
constexpr const char* kRateShapeKey = "rate_shape";
constexpr const char* kArrivalsKey = "arrivals";

enum class Arrivals : uint8_t { Uniform, Poisson };
Arrivals parse_arrivals(const std::string& v);  // throws SetupError naming --arrivals
const char* arrivals_name(Arrivals a);

// The offered rate over time, in ops/s across all clients. Ramp, steps and spike are pieces in
// which the rate is constant or linear (the last piece holds on for ever); sine is periodic.
struct RateShape {
  enum class Kind : uint8_t { Constant, Ramp, Steps, Sine, Spike };
  Kind kind = Kind::Constant;
  std::string text;  // as given, for the result file
  // A piece: from `t` (s), `ops` offered before it, the rate at its start and its slope (ops/s^2).
  struct Piece {
    double t, ops, rate, slope;
  };
  std::vector<Piece> pieces;
  double mean = 0, amplitude = 0, period = 0;  // sine
  double span = 0;                             // the shape's own length (s): one period, or its pieces

  bool constant() const { return kind == Kind::Constant; }
  double rate_at(double t) const;    // ops/s at t seconds
  double ops_until(double t) const;  // the ops offered in [0, t)
  double mean_rate() const;          // over its span
  // The time by which `ops` ops are offered (the inverse of ops_until); `piece` a hint, kept.
  double time_of(double ops, size_t& piece) const;
};

// "20000", "20k", "ramp:1k..20k/60s", "steps:1k,2k,4k,8k/10s", "sine:10k+-5k/60s",
// "spike:10k,+40k@30s/5s". Throws SetupError (without the option's name: the caller adds it).
RateShape parse_rate_shape(const std::string& v);
RateShape constant_rate(double ops_per_s);  // --arrivals poisson at a plain --rate

// One client's schedule: when each of its ops is due, in ns after the schedule's start, for a
// `share` of the shape's rate. Uniform: op k when k ops' worth of the share is offered; Poisson:
// gaps drawn from the exponential distribution at the rate of the moment (time-rescaled).
class Schedule {
 public:
  Schedule() = default;
  Schedule(const RateShape* shape, double share, Arrivals a, uint64_t seed);
  int64_t next_ns();  // the due time of the next op; each call the following one

 private:
  double exp1();
  const RateShape* shape_ = nullptr;
  double per_op_ = 1;  // the shape's ops per op of this client (1 / share)
  bool poisson_ = false;
  uint64_t rng_ = 0;
  double u_ = 0;  // this client's ops offered so far (in its share's units)
  size_t piece_ = 0;
};

}  // namespace mw
