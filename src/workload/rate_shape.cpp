#include "workload/rate_shape.h"

#include <algorithm>
#include <cmath>
#include <numbers>

#include "util/parse.h"
#include "util/status.h"
#include "util/text.h"

namespace mw {

namespace {

constexpr double kMaxRate = 1e9;
constexpr double kMaxTime = 30 * 86400;

// "20000", "20k", "1.5M": ops/s, k and M as thousands and millions.
double rate_number(const std::string& s, const std::string& what, bool zero_ok = false) {
  size_t used = 0;
  const double v = parse_number(s, &used);
  const std::string unit = s.substr(used);
  double mult = 0;
  if (unit.empty())
    mult = 1;
  else if (unit == "k" || unit == "K")
    mult = 1e3;
  else if (unit == "M")
    mult = 1e6;
  const double r = v * mult;
  if (used == 0 || mult == 0 || !(zero_ok ? r >= 0 : r > 0) || r > kMaxRate)
    throw SetupError(what + ": expected a rate " + (zero_ok ? "from 0" : "above 0") +
                     " to 1G ops/s (20000, 20k, 1.5M), got '" + printable(s) + "'");
  return r;
}

double time_part(const std::string& s, const std::string& what) {
  const double t = parse_duration(s, what);
  if (!(t >= 1e-3 && t <= kMaxTime)) throw SetupError(what + ": expected a time from 1ms to 720h, got '" + s + "'");
  return t;
}

// "A/B" split at the last '/': the shape's numbers and its time.
std::pair<std::string, std::string> over(const std::string& body, const std::string& form) {
  const size_t slash = body.rfind('/');
  if (slash == std::string::npos) throw SetupError("expected " + form + ", got '" + printable(body) + "'");
  return {body.substr(0, slash), body.substr(slash + 1)};
}

void add_piece(RateShape& s, double t, double rate, double slope) {
  double ops = 0;
  if (!s.pieces.empty()) {
    const RateShape::Piece& p = s.pieces.back();
    const double d = t - p.t;
    ops = p.ops + p.rate * d + p.slope * d * d / 2;
  }
  s.pieces.push_back({t, ops, rate, slope});
}

}  // namespace

Arrivals parse_arrivals(const std::string& v) {
  if (v == "uniform") return Arrivals::Uniform;
  if (v == "poisson") return Arrivals::Poisson;
  throw SetupError("expected uniform or poisson, got '" + printable(v) + "'");
}

const char* arrivals_name(Arrivals a) { return a == Arrivals::Poisson ? "poisson" : "uniform"; }

RateShape parse_rate_shape(const std::string& v) {
  RateShape s;
  s.text = v;
  const size_t colon = v.find(':');
  if (colon == std::string::npos) {
    size_t used = 0;
    const double r = parse_number(v, &used);
    const std::string unit = v.substr(used);
    const double mult = unit.empty() ? 1 : unit == "k" || unit == "K" ? 1e3 : unit == "M" ? 1e6 : 0;
    if (used == 0 || mult == 0 || !(r >= 0) || r * mult > kMaxRate)
      throw SetupError(
          "rate expects a number from 0 to 1000000000 (20000, 20k, 1.5M) or a shape (ramp:1k..20k/60s, "
          "steps:1k,2k/10s, sine:10k+-5k/60s, spike:10k,+40k@30s/5s), got '" +
          printable(v) + "'");
    add_piece(s, 0, r * mult, 0);
    return s;
  }
  const std::string kind = v.substr(0, colon), body = v.substr(colon + 1);
  if (kind == "ramp") {
    const std::string form = "ramp:FROM..TO/TIME (ramp:1k..20k/60s)";
    auto [rates, time] = over(body, form);
    const size_t dots = rates.find("..");
    if (dots == std::string::npos) throw SetupError("expected " + form + ", got '" + printable(v) + "'");
    const double from = rate_number(rates.substr(0, dots), "ramp's start", true);
    const double to = rate_number(rates.substr(dots + 2), "ramp's end");
    const double d = time_part(time, "ramp's length");
    s.kind = RateShape::Kind::Ramp;
    add_piece(s, 0, from, (to - from) / d);
    add_piece(s, d, to, 0);
    s.span = d;
  } else if (kind == "steps") {
    auto [rates, time] = over(body, "steps:R1,R2,.../TIME (steps:1k,2k,4k,8k/10s)");
    const double d = time_part(time, "each step's length");
    s.kind = RateShape::Kind::Steps;
    const std::vector<std::string> rs = split_list(rates);
    if (rs.empty() || rs.size() > 10000) throw SetupError("steps: expected 1 to 10000 rates, got '" + rates + "'");
    for (size_t i = 0; i < rs.size(); ++i) add_piece(s, static_cast<double>(i) * d, rate_number(rs[i], "a step"), 0);
    s.span = d * static_cast<double>(rs.size());
  } else if (kind == "sine") {
    const std::string form = "sine:MEAN+-AMPLITUDE/PERIOD (sine:10k+-5k/60s)";
    auto [rates, time] = over(body, form);
    const size_t pm = rates.find("+-");
    if (pm == std::string::npos) throw SetupError("expected " + form + ", got '" + printable(v) + "'");
    s.kind = RateShape::Kind::Sine;
    s.mean = rate_number(rates.substr(0, pm), "sine's mean");
    s.amplitude = rate_number(rates.substr(pm + 2), "sine's amplitude", true);
    if (s.amplitude > s.mean)
      throw SetupError("sine: the amplitude (" + rates.substr(pm + 2) + ") must not exceed the mean (" +
                       rates.substr(0, pm) + "): the rate would go below 0");
    s.period = s.span = time_part(time, "sine's period");
  } else if (kind == "spike") {
    const std::string form = "spike:BASE,+EXTRA@AT/LENGTH (spike:10k,+40k@30s/5s)";
    auto [rates, time] = over(body, form);
    const size_t comma = rates.find(",+"), at = rates.find('@');
    if (comma == std::string::npos || at == std::string::npos || at < comma)
      throw SetupError("expected " + form + ", got '" + printable(v) + "'");
    const double base = rate_number(rates.substr(0, comma), "spike's base");
    const double extra = rate_number(rates.substr(comma + 2, at - comma - 2), "spike's extra");
    if (base + extra > kMaxRate) throw SetupError("spike: base and extra above 1G ops/s");
    const double when = parse_duration(rates.substr(at + 1), "spike's start");
    if (when > kMaxTime) throw SetupError("spike's start: expected a time up to 720h");
    const double len = time_part(time, "spike's length");
    s.kind = RateShape::Kind::Spike;
    if (when > 0) add_piece(s, 0, base, 0);
    add_piece(s, when, base + extra, 0);
    add_piece(s, when + len, base, 0);
    s.span = when + len;
  } else {
    throw SetupError(
        "expected a rate (20k) or a shape: ramp:1k..20k/60s, steps:1k,2k/10s, sine:10k+-5k/60s, "
        "spike:10k,+40k@30s/5s; got '" +
        printable(v) + "'");
  }
  return s;
}

RateShape constant_rate(double ops_per_s) {
  RateShape s;
  add_piece(s, 0, ops_per_s, 0);
  return s;
}

double RateShape::rate_at(double t) const {
  if (kind == Kind::Sine) return mean + amplitude * std::sin(2 * std::numbers::pi * t / period);
  auto it = std::upper_bound(pieces.begin(), pieces.end(), t, [](double x, const Piece& p) { return x < p.t; });
  const Piece& p = it == pieces.begin() ? pieces.front() : *(it - 1);
  return p.rate + p.slope * (t - p.t);
}

double RateShape::ops_until(double t) const {
  if (kind == Kind::Sine)
    return mean * t + amplitude * period / (2 * std::numbers::pi) * (1 - std::cos(2 * std::numbers::pi * t / period));
  auto it = std::upper_bound(pieces.begin(), pieces.end(), t, [](double x, const Piece& p) { return x < p.t; });
  const Piece& p = it == pieces.begin() ? pieces.front() : *(it - 1);
  const double d = t - p.t;
  return p.ops + p.rate * d + p.slope * d * d / 2;
}

double RateShape::mean_rate() const {
  if (kind == Kind::Sine) return mean;
  if (span <= 0) return pieces.front().rate;
  return ops_until(span) / span;
}

double RateShape::time_of(double ops, size_t& piece) const {
  if (kind == Kind::Sine) {  // Newton's steps kept inside the bracket M t <= ops_until(t) <= M t + A P / pi
    double lo = std::max(0.0, (ops - amplitude * period / std::numbers::pi) / mean), hi = ops / mean;
    double t = hi;
    for (int i = 0; i < 50 && hi - lo > 1e-10; ++i) {
      const double f = ops_until(t) - ops;
      if (f > 0)
        hi = t;
      else
        lo = t;
      const double r = rate_at(t);
      double next = r > 0 ? t - f / r : (lo + hi) / 2;
      if (!(next > lo && next < hi)) next = (lo + hi) / 2;
      if (std::fabs(next - t) < 1e-10) return next;
      t = next;
    }
    return t;
  }
  piece = std::min(piece, pieces.size() - 1);
  while (piece + 1 < pieces.size() && pieces[piece + 1].ops <= ops) ++piece;
  while (piece > 0 && pieces[piece].ops > ops) --piece;
  const Piece& p = pieces[piece];
  const double left = ops - p.ops;
  if (p.slope == 0) return p.rate > 0 ? p.t + left / p.rate : (piece + 1 < pieces.size() ? pieces[piece + 1].t : 1e18);
  // rate*d + slope*d^2/2 = left, in the form that keeps its precision as the slope nears 0
  const double disc = std::max(0.0, p.rate * p.rate + 2 * p.slope * left);
  const double den = p.rate + std::sqrt(disc);
  return den > 0 ? p.t + 2 * left / den : p.t;
}

Schedule::Schedule(const RateShape* shape, double share, Arrivals a, uint64_t seed)
    : shape_(shape), per_op_(1 / share), poisson_(a == Arrivals::Poisson), rng_(seed * 0x9E3779B97F4A7C15ull + 1) {}

// splitmix64's step and an exponential variate of mean 1
double Schedule::exp1() {
  uint64_t z = (rng_ += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  z ^= z >> 31;
  const double u = (static_cast<double>(z >> 11) + 0.5) * 0x1.0p-53;  // (0, 1)
  return -std::log(u);
}

int64_t Schedule::next_ns() {
  const double t = shape_->time_of(u_ * per_op_, piece_);
  u_ += poisson_ ? exp1() : 1.0;
  return t >= 9e9 ? INT64_MAX / 2 : static_cast<int64_t>(t * 1e9);
}

}  // namespace mw
