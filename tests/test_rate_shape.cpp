// --rate shapes and --arrivals (workload/rate_shape.h): the grammar, the ops each shape offers
// over time, and the schedules of one client (issue 43).
#include <doctest/doctest.h>

#include <cmath>
#include <numbers>
#include <string>
#include <vector>

#include "util/status.h"
#include "workload/rate_shape.h"

using namespace mw;

namespace {

std::string error_of(const std::string& v) {
  try {
    parse_rate_shape(v);
  } catch (const SetupError& e) {
    return e.what();
  }
  return "";
}

// The due times (s) of a client's first n ops.
std::vector<double> dues(const RateShape& s, double share, Arrivals a, size_t n) {
  Schedule sched(&s, share, a, 7);
  std::vector<double> out;
  for (size_t i = 0; i < n; ++i) out.push_back(static_cast<double>(sched.next_ns()) / 1e9);
  return out;
}

}  // namespace

TEST_CASE("rate shape: each form offers the ops its shape says") {
  const RateShape c = parse_rate_shape("20k");
  CHECK(c.constant());
  CHECK(c.mean_rate() == 20000);
  CHECK(parse_rate_shape("1.5M").mean_rate() == 1.5e6);
  CHECK(parse_rate_shape("0").mean_rate() == 0);  // the closed loop

  const RateShape r = parse_rate_shape("ramp:1k..20k/60s");
  CHECK(r.kind == RateShape::Kind::Ramp);
  CHECK(r.rate_at(0) == doctest::Approx(1000));
  CHECK(r.rate_at(30) == doctest::Approx(10500));
  CHECK(r.rate_at(90) == doctest::Approx(20000));  // holds its end
  CHECK(r.ops_until(60) == doctest::Approx(10500 * 60));
  CHECK(r.mean_rate() == doctest::Approx(10500));

  const RateShape st = parse_rate_shape("steps:1k,2k,4k,8k/10s");
  CHECK(st.rate_at(5) == 1000);
  CHECK(st.rate_at(15) == 2000);
  CHECK(st.rate_at(35) == 8000);
  CHECK(st.rate_at(100) == 8000);
  CHECK(st.ops_until(25) == doctest::Approx(10000 + 20000 + 20000));
  CHECK(st.mean_rate() == doctest::Approx(3750));

  const RateShape sn = parse_rate_shape("sine:10k+-5k/60s");
  CHECK(sn.rate_at(15) == doctest::Approx(15000));
  CHECK(sn.rate_at(45) == doctest::Approx(5000));
  CHECK(sn.ops_until(60) == doctest::Approx(600000));
  CHECK(sn.mean_rate() == 10000);

  const RateShape sp = parse_rate_shape("spike:10k,+40k@30s/5s");
  CHECK(sp.rate_at(29.9) == 10000);
  CHECK(sp.rate_at(30) == 50000);
  CHECK(sp.rate_at(34.9) == 50000);
  CHECK(sp.rate_at(35) == 10000);
  CHECK(sp.ops_until(40) == doctest::Approx(400000 + 200000));
  CHECK(parse_rate_shape("spike:1k,+3k@0s/1s").rate_at(0.5) == 4000);
}

TEST_CASE("rate shape: time_of inverts ops_until for every shape") {
  for (const char* text : {"20k", "ramp:0..20k/10s", "ramp:20k..1k/10s", "steps:1k,9k,2k/3s", "sine:10k+-10k/7s",
                           "spike:10k,+40k@3s/2s"}) {
    CAPTURE(text);
    const RateShape s = parse_rate_shape(text);
    size_t piece = 0;
    for (double t = 0; t < 30; t += 0.37) {
      const double ops = s.ops_until(t);
      CHECK(s.time_of(ops, piece) == doctest::Approx(t).epsilon(1e-6));
    }
  }
}

TEST_CASE("rate shape: bad input names what was expected") {
  CHECK(error_of("fast").find("rate expects a number from 0 to 1000000000 (20000, 20k, 1.5M) or a shape") !=
        std::string::npos);
  CHECK(error_of("wave:1k/1s").find("expected a rate (20k) or a shape") != std::string::npos);
  CHECK(error_of("ramp:1k-20k/60s").find("ramp:FROM..TO/TIME") != std::string::npos);
  CHECK(error_of("ramp:1k..20k").find("ramp:FROM..TO/TIME") != std::string::npos);
  CHECK(error_of("ramp:1k..0/60s").find("ramp's end: expected a rate above 0") != std::string::npos);
  CHECK(error_of("steps:1k,x/10s").find("a step: expected a rate") != std::string::npos);
  CHECK(error_of("steps:1k/0s").find("each step's length: expected a time from 1ms") != std::string::npos);
  CHECK(error_of("sine:5k+-10k/60s").find("must not exceed the mean") != std::string::npos);
  CHECK(error_of("spike:10k+40k@30s/5s").find("spike:BASE,+EXTRA@AT/LENGTH") != std::string::npos);
  CHECK(error_of("2G").find("rate expects a number") != std::string::npos);
  CHECK(error_of("steps:2G/1s").find("a step: expected a rate above 0 to 1G") != std::string::npos);
  CHECK_THROWS_AS(parse_arrivals("bursty"), SetupError);
  CHECK(parse_arrivals("poisson") == Arrivals::Poisson);
}

TEST_CASE("rate shape: a client's uniform schedule spaces its share of the rate") {
  const RateShape s = parse_rate_shape("steps:2k,1k/1s");
  const std::vector<double> d = dues(s, 0.5, Arrivals::Uniform, 1500);  // 1k/s, then 500/s
  CHECK(d[0] == 0);
  CHECK(d[1] == doctest::Approx(0.001));
  CHECK(d[1000] == doctest::Approx(1.0));
  CHECK(d[1001] == doctest::Approx(1.002));
  CHECK(d[1499] == doctest::Approx(1.998));
}

// Poisson arrivals: the gaps are exponential (mean 1/rate, coefficient of variation 1), and at a
// shaped rate the count in each stretch follows the shape.
TEST_CASE("rate shape: Poisson arrivals have exponential gaps at the rate of the moment") {
  const RateShape c = parse_rate_shape("10k");
  const std::vector<double> d = dues(c, 1, Arrivals::Poisson, 200000);
  double sum = 0, sq = 0;
  for (size_t i = 1; i < d.size(); ++i) {
    const double g = d[i] - d[i - 1];
    sum += g, sq += g * g;
  }
  const double n = static_cast<double>(d.size() - 1), mean = sum / n, sd = std::sqrt(sq / n - mean * mean);
  CHECK(mean == doctest::Approx(1e-4).epsilon(0.01));
  CHECK(sd / mean == doctest::Approx(1).epsilon(0.02));

  const RateShape st = parse_rate_shape("steps:10k,40k/1s");
  const std::vector<double> e = dues(st, 1, Arrivals::Poisson, 50000);
  size_t first = 0, second = 0;
  for (double t : e) {
    if (t < 1)
      ++first;
    else if (t < 2)
      ++second;
  }
  CHECK(static_cast<double>(first) == doctest::Approx(10000).epsilon(0.03));
  CHECK(static_cast<double>(second) == doctest::Approx(40000).epsilon(0.03));
  // another client's seed: another sequence
  Schedule a(&c, 1, Arrivals::Poisson, 1), b(&c, 1, Arrivals::Poisson, 2);
  a.next_ns(), b.next_ns();
  CHECK(a.next_ns() != b.next_ns());
}
