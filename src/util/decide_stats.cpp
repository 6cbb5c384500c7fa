#include "util/decide_stats.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <numeric>

#include "util/stats.h"
#include "util/status.h"

namespace mw::decide {

namespace {

// The continued fraction of the regularized incomplete beta function (modified Lentz).
double beta_fraction(double a, double b, double x) {
  constexpr double kTiny = 1e-300, kEps = 1e-16;
  const double qab = a + b, qap = a + 1, qam = a - 1;
  double c = 1, d = 1 - qab * x / qap;
  if (std::fabs(d) < kTiny) d = kTiny;
  d = 1 / d;
  double h = d;
  for (int m = 1; m <= 500; ++m) {
    const double m2 = 2.0 * m;
    double aa = m * (b - m) * x / ((qam + m2) * (a + m2));
    d = 1 + aa * d;
    if (std::fabs(d) < kTiny) d = kTiny;
    c = 1 + aa / c;
    if (std::fabs(c) < kTiny) c = kTiny;
    d = 1 / d;
    h *= d * c;
    aa = -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2));
    d = 1 + aa * d;
    if (std::fabs(d) < kTiny) d = kTiny;
    c = 1 + aa / c;
    if (std::fabs(c) < kTiny) c = kTiny;
    d = 1 / d;
    const double step = d * c;
    h *= step;
    if (std::fabs(step - 1) < kEps) break;
  }
  return h;
}

// I_x(a, b).
double incomplete_beta(double a, double b, double x) {
  if (x <= 0) return 0;
  if (x >= 1) return 1;
  const double front =
      std::exp(std::lgamma(a + b) - std::lgamma(a) - std::lgamma(b) + a * std::log(x) + b * std::log1p(-x));
  if (x < (a + 1) / (a + b + 2)) return front * beta_fraction(a, b, x) / a;
  return 1 - front * beta_fraction(b, a, 1 - x) / b;
}

double normal_pdf(double z) { return std::exp(-0.5 * z * z) / std::sqrt(2 * M_PI); }

// Ranks (1-based midranks) of |v|, and the sizes of the groups of tied |v| (t > 1).
void abs_ranks(std::span<const double> v, std::vector<double>& rank, std::vector<double>& ties) {
  std::vector<std::pair<double, size_t>> a;
  for (size_t i = 0; i < v.size(); ++i) a.push_back({std::fabs(v[i]), i});
  std::sort(a.begin(), a.end());
  rank.assign(v.size(), 0);
  ties.clear();
  for (size_t i = 0; i < a.size();) {
    size_t k = i;
    while (k < a.size() && a[k].first == a[i].first) ++k;
    const double mid = (static_cast<double>(i + 1) + static_cast<double>(k)) / 2;
    for (size_t q = i; q < k; ++q) rank[a[q].second] = mid;
    if (k - i > 1) ties.push_back(static_cast<double>(k - i));
    i = k;
  }
}

double tie_term(const std::vector<double>& ties) {
  double s = 0;
  for (double t : ties) s += t * t * t - t;
  return s;
}

// The variance of W+ over n values under the null, less the tie correction.
double w_variance(double n, const std::vector<double>& ties) {
  return n * (n + 1) * (2 * n + 1) / 24 - tie_term(ties) / 48;
}

}  // namespace

double t_sf(double t, double df) {
  if (!(df > 0)) return 0.5;
  const double tail = 0.5 * incomplete_beta(df / 2, 0.5, df / (df + t * t));
  return t > 0 ? tail : 1 - tail;
}

double t_isf(double p, double df) {
  if (p <= 0) return HUGE_VAL;
  if (p >= 1) return -HUGE_VAL;
  if (p == 0.5) return 0;
  if (p > 0.5) return -t_isf(1 - p, df);
  double lo = 0, hi = 1;
  while (t_sf(hi, df) > p && hi < 1e12) lo = hi, hi *= 2;
  for (int i = 0; i < 200 && hi - lo > 1e-13 * hi; ++i) {
    const double mid = (lo + hi) / 2;
    (t_sf(mid, df) > p ? lo : hi) = mid;
  }
  return (lo + hi) / 2;
}

std::vector<double> signed_rank_counts(size_t n) {
  // The product over i of (1 + q^i): each value's rank i counts in W+ or not.
  std::vector<double> c{1};
  for (size_t i = 1; i <= n; ++i) {
    std::vector<double> next(c.size() + i, 0);
    for (size_t w = 0; w < c.size(); ++w) next[w] += c[w], next[w + i] += c[w];
    c = std::move(next);
  }
  return c;
}

SignedRank signed_rank(std::span<const double> d) {
  std::vector<double> v;
  for (double x : d)
    if (x != 0) v.push_back(x);
  SignedRank out;
  out.n = v.size();
  if (v.empty()) return out;
  std::vector<double> rank, ties;
  abs_ranks(v, rank, ties);
  for (size_t i = 0; i < v.size(); ++i)
    if (v[i] > 0) out.w_plus += rank[i];
  const double n = static_cast<double>(v.size()), mean = n * (n + 1) / 4;
  if (ties.empty() && v.size() <= kExactRanks) {
    out.exact = true;
    const std::vector<double> counts = signed_rank_counts(v.size());
    const double total = std::ldexp(1.0, static_cast<int>(v.size()));
    const auto w = static_cast<size_t>(out.w_plus);
    if (2 * w == counts.size() - 1) return out;  // the centre: p = 1
    double less = 0, greater = 0;
    for (size_t k = 0; k < counts.size(); ++k) (k <= w ? less : greater) += counts[k];
    greater += counts[w];  // P(W+ >= w)
    out.p = std::min(1.0, 2 * std::min(less, greater) / total);
    return out;
  }
  const double sd = std::sqrt(w_variance(n, ties));
  if (!(sd > 0)) return out;
  const double t = std::min(out.w_plus, n * (n + 1) / 2 - out.w_plus);
  out.p = std::clamp(2 * normal_sf(std::fabs((t - mean) / sd)), 0.0, 1.0);
  return out;
}

Located walsh_interval(std::span<const double> d, double confidence) {
  Located out;
  const size_t n = d.size();
  if (n == 0) return out;
  std::vector<double> w;
  w.reserve(n * (n + 1) / 2);
  for (size_t i = 0; i < n; ++i)
    for (size_t j = i; j < n; ++j) w.push_back((d[i] + d[j]) / 2);
  std::sort(w.begin(), w.end());
  out.estimate = median(w);
  const size_t m = w.size();
  const double alpha = 1 - confidence;
  std::vector<double> rank, ties;
  abs_ranks(d, rank, ties);
  const bool zero = std::find(d.begin(), d.end(), 0.0) != d.end();
  size_t k = 1;  // the interval is [w_(k), w_(m+1-k)], 1-based
  if (ties.empty() && !zero && n <= kExactRanks) {
    out.exact = true;
    const std::vector<double> counts = signed_rank_counts(n);
    const double total = std::ldexp(1.0, static_cast<int>(n));
    std::vector<double> cdf(counts.size());
    std::partial_sum(counts.begin(), counts.end(), cdf.begin());
    while (k + 1 <= (m + 1) / 2 && cdf[k] / total <= alpha / 2) ++k;
    out.achieved = 1 - 2 * cdf[k - 1] / total;
  } else {
    const double nd = static_cast<double>(n), sd = std::sqrt(w_variance(nd, ties));
    const double c = std::floor(static_cast<double>(m) / 2 - 0.5 - normal_isf(alpha / 2) * sd) + 1;
    const size_t half = (m + 1) / 2;  // rounded up
    k = static_cast<size_t>(std::clamp(c, 1.0, static_cast<double>(half)));
    out.achieved = confidence;
  }
  out.lo = w[k - 1];
  out.hi = w[m - k];
  return out;
}

double pocock_spending(double t, double alpha) { return alpha * std::log(1 + (M_E - 1) * std::clamp(t, 0.0, 1.0)); }

namespace {

// The grid of sequential_boundaries' sub-density: spacing kGridH aligned to multiples of it (so one
// table of the kernel serves every look) plus the region's two edges, -lim and lim.
constexpr double kGridH = 0.05;

std::vector<double> density_grid(double lim) {
  std::vector<double> g{-lim};
  for (long j = static_cast<long>(std::ceil(-lim / kGridH)); static_cast<double>(j) * kGridH < lim; ++j)
    if (static_cast<double>(j) * kGridH > -lim) g.push_back(static_cast<double>(j) * kGridH);
  g.push_back(lim);
  return g;
}

// The trapezoid rule's weights on a grid.
std::vector<double> trapezoid_weights(const std::vector<double>& g) {
  std::vector<double> w(g.size(), 0);
  for (size_t i = 0; i + 1 < g.size(); ++i) {
    const double half = (g[i + 1] - g[i]) / 2;
    w[i] += half, w[i + 1] += half;
  }
  return w;
}

// The boundary z at look n whose crossing probability (from sub-density f on grid x, with weights
// w, over the `sd` of the increments since the last look) spends `target`: by bisection.
double boundary_at(double n, double sd, double target, const std::vector<double>& x, const std::vector<double>& w,
                   const std::vector<double>& f) {
  if (target <= 0) return 40;
  auto crossing = [&](double z) {
    const double lim = z * std::sqrt(n);
    double s = 0;
    for (size_t i = 0; i < x.size(); ++i)
      s += w[i] * f[i] * (normal_sf((lim + x[i]) / sd) + normal_sf((lim - x[i]) / sd));
    return s;
  };
  double lo = 0, hi = 40;
  for (int it = 0; it < 60; ++it) {
    const double mid = (lo + hi) / 2;
    (crossing(mid) > target ? lo : hi) = mid;
  }
  return (lo + hi) / 2;
}

// The sub-density on the next look's grid nx: the last one's (f on x, weights w) convolved with the
// increments' normal of `sd`; the kernel at multiples of h (the grids' inner points) from one
// table, exactly at the edges.
std::vector<double> next_density(const std::vector<double>& x, const std::vector<double>& w,
                                 const std::vector<double>& f, const std::vector<double>& nx, double sd) {
  std::vector<double> nf(nx.size(), 0);
  const size_t span = static_cast<size_t>(std::ceil((nx.back() - x.front()) / kGridH)) + 2;
  std::vector<double> kernel(span + 1);
  for (size_t q = 0; q <= span; ++q) kernel[q] = normal_pdf(static_cast<double>(q) * kGridH / sd) / sd;
  std::vector<double> wf(x.size());
  for (size_t i = 0; i < x.size(); ++i) wf[i] = w[i] * f[i];
  for (size_t j = 0; j < nx.size(); ++j) {
    const bool edge_j = j == 0 || j + 1 == nx.size();
    double s = 0;
    for (size_t i = 0; i < x.size(); ++i) {
      const bool edge_i = i == 0 || i + 1 == x.size();
      if (edge_i || edge_j) {
        s += wf[i] * normal_pdf((nx[j] - x[i]) / sd) / sd;
      } else {
        const double q = std::fabs(nx[j] - x[i]) / kGridH;
        s += wf[i] * kernel[static_cast<size_t>(std::lround(q))];
      }
    }
    nf[j] = s;
  }
  return nf;
}

}  // namespace

std::vector<double> sequential_boundaries(const std::vector<int>& looks, int max_n, double alpha) {
  // The sum S_k of the first n_k standardized observations is Brownian motion at time n_k. f holds
  // the sub-density of S at the last look over the region where the test went on, on a grid
  // (density_grid); integrals by the trapezoid rule.
  std::vector<double> b;
  std::vector<double> x, f;  // grid and sub-density
  double spent = 0;
  for (size_t k = 0; k < looks.size(); ++k) {
    const double n = looks[k];
    const double total = pocock_spending(n / max_n, alpha);
    const double target = std::max(0.0, total - spent);
    double bk;
    if (k == 0) {
      bk = target > 0 ? normal_isf(target / 2) : 40;
      x = density_grid(bk * std::sqrt(n));
      f.resize(x.size());
      for (size_t i = 0; i < x.size(); ++i) f[i] = normal_pdf(x[i] / std::sqrt(n)) / std::sqrt(n);
    } else {
      const double sd = std::sqrt(n - looks[k - 1]);
      const std::vector<double> w = trapezoid_weights(x);
      bk = boundary_at(n, sd, target, x, w, f);
      std::vector<double> nx = density_grid(bk * std::sqrt(n));
      f = next_density(x, w, f, nx, sd);
      x = std::move(nx);
    }
    spent += target;
    b.push_back(bk);
  }
  return b;
}

Schedule::Schedule(const Settings& s) : s_(s) {
  s_.min_rounds = std::max(2, s_.min_rounds);
  s_.max_rounds = std::max(s_.min_rounds, s_.max_rounds);
  std::vector<int> looks;
  for (int n = s_.min_rounds; n <= s_.max_rounds; ++n) looks.push_back(n);
  z95_ = sequential_boundaries(looks, s_.max_rounds, s_.alpha);
  z90_ = sequential_boundaries(looks, s_.max_rounds, 2 * s_.alpha);
  for (int n = s_.min_rounds; n <= s_.max_rounds; ++n) {
    t95_.push_back(t_isf(normal_sf(z_at(n, false)), n - 1));
    t90_.push_back(t_isf(normal_sf(z_at(n, true)), n - 1));
  }
}

double Schedule::z_at(int n, bool tost) const {
  const std::vector<double>& z = tost ? z90_ : z95_;
  const int k = std::clamp(n, s_.min_rounds, s_.max_rounds) - s_.min_rounds;
  return z[static_cast<size_t>(k)];
}

double Schedule::multiplier(int n, bool tost) const {
  if (n >= s_.min_rounds && n <= s_.max_rounds) return (tost ? t90_ : t95_)[static_cast<size_t>(n - s_.min_rounds)];
  // Beyond the schedule (a projection): the last look's level, the t quantile by its first
  // Cornish-Fisher term (df >= max_rounds).
  const double z = z_at(n, tost), df = std::max(1, n - 1);
  return z * (1 + (z * z + 1) / (4 * df));
}

double Schedule::level(int n, bool tost) const { return 1 - 2 * normal_sf(z_at(n, tost)); }

namespace {

constexpr const char* kVerdictNames[] = {"undecided", "faster", "slower", "equivalent", "different-within-margin"};
constexpr const char* kOutcomeNames[] = {"undecided", "met", "failed"};

template <class E, size_t N>
std::optional<E> named(const char* const (&names)[N], std::string_view name) {
  for (size_t i = 0; i < N; ++i)
    if (name == names[i]) return static_cast<E>(i);
  return std::nullopt;
}

}  // namespace

const char* verdict_name(Verdict v) { return kVerdictNames[static_cast<int>(v)]; }
std::optional<Verdict> parse_verdict(std::string_view name) { return named<Verdict>(kVerdictNames, name); }
const char* outcome_name(Outcome o) { return kOutcomeNames[static_cast<int>(o)]; }
std::optional<Outcome> parse_outcome(std::string_view name) { return named<Outcome>(kOutcomeNames, name); }

Verdict classify(double lo, double hi, double lo90, double hi90, double margin) {
  const double m = std::log1p(margin);
  if (lo > m) return Verdict::Faster;
  if (hi < -m) return Verdict::Slower;
  if ((lo > 0 || hi < 0) && lo > -m && hi < m) return Verdict::DifferentWithinMargin;
  if (lo90 > -m && hi90 < m) return Verdict::Equivalent;
  return Verdict::Undecided;
}

namespace {

// The first n > from whose intervals would decide, were the mean and spread to stay; 0: none.
int rounds_needed(double mean, double sd, int from, const Schedule& s) {
  const double margin = s.settings().margin;
  for (int n = std::max(from + 1, s.settings().min_rounds); n <= kMaxRounds * 10; ++n) {
    const double se = sd / std::sqrt(n), w = s.multiplier(n) * se, w90 = s.multiplier(n, true) * se;
    if (classify(mean - w, mean + w, mean - w90, mean + w90, margin) != Verdict::Undecided) return n;
  }
  return 0;
}

}  // namespace

Estimate estimate(std::span<const double> d, const Schedule& s, bool with_robust) {
  Estimate e;
  e.n = static_cast<int>(d.size());
  if (d.empty()) return e;
  e.mean = std::accumulate(d.begin(), d.end(), 0.0) / static_cast<double>(e.n);
  if (e.n > 1) {
    double ss = 0;
    for (double x : d) ss += (x - e.mean) * (x - e.mean);
    e.sd = std::sqrt(ss / (e.n - 1));
  }
  e.ratio = std::exp(e.mean);
  if (e.n >= s.settings().min_rounds) {
    e.looked = true;
    const double se = e.sd / std::sqrt(e.n), w = s.multiplier(e.n) * se, w90 = s.multiplier(e.n, true) * se;
    e.lo = std::exp(e.mean - w), e.hi = std::exp(e.mean + w);
    e.lo90 = std::exp(e.mean - w90), e.hi90 = std::exp(e.mean + w90);
    e.verdict = classify(e.mean - w, e.mean + w, e.mean - w90, e.mean + w90, s.settings().margin);
    e.level = s.level(e.n);
  }
  if (!with_robust) return e;
  if (e.looked) {
    auto on_ratio = [](Located l) {
      l.estimate = std::exp(l.estimate), l.lo = std::exp(l.lo), l.hi = std::exp(l.hi);
      return l;
    };
    e.robust = true;
    e.hl = on_ratio(walsh_interval(d, e.level));
    e.hl90 = on_ratio(walsh_interval(d, s.level(e.n, true)));
    e.robust_verdict =
        classify(std::log(e.hl.lo), std::log(e.hl.hi), std::log(e.hl90.lo), std::log(e.hl90.hi), s.settings().margin);
    e.disagree = e.robust_verdict != e.verdict || e.hl.estimate < e.lo || e.hl.estimate > e.hi;
  }
  if (e.verdict == Verdict::Undecided && e.n > 1) e.rounds_needed = rounds_needed(e.mean, e.sd, e.n, s);
  return e;
}

Outcome answer(const Estimate& e, const Question& q) {
  if (!e.looked) return Outcome::Undecided;
  if (q.at_least) return e.lo90 >= q.ratio ? Outcome::Met : e.hi90 < q.ratio ? Outcome::Failed : Outcome::Undecided;
  return e.hi90 <= q.ratio ? Outcome::Met : e.lo90 > q.ratio ? Outcome::Failed : Outcome::Undecided;
}

std::pair<std::string, Question> parse_expect(const std::string& text) {
  auto bad = [&] {
    return SetupError(
        "--expect expects NAME>=RATIO or NAME<=RATIO with a ratio above 0 and up to 1000 (B>=1.05), got '" + text +
        "'");
  };
  const size_t at = text.find_first_of("<>");
  if (at == std::string::npos || at == 0) throw bad();
  Question q;
  q.at_least = text[at] == '>';
  size_t num = at + 1;
  if (num < text.size() && text[num] == '=') ++num;
  std::string name = text.substr(0, at);
  while (!name.empty() && name.back() == ' ') name.pop_back();
  while (!name.empty() && name.front() == ' ') name.erase(0, 1);
  std::string value = text.substr(num);
  while (!value.empty() && value.front() == ' ') value.erase(0, 1);
  char* end = nullptr;
  q.ratio = std::strtod(value.c_str(), &end);
  if (name.empty() || value.empty() || *end || !std::isfinite(q.ratio) || q.ratio <= 0 || q.ratio > 1000) throw bad();
  return {name, q};
}

std::string question_text(const Question& q) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%s%g", q.at_least ? ">=" : "<=", q.ratio);
  return buf;
}

bool settled(const Estimate& e, std::span<const Question> questions) {
  if (questions.empty()) return e.verdict != Verdict::Undecided;
  return std::all_of(questions.begin(), questions.end(),
                     [&](const Question& q) { return answer(e, q) != Outcome::Undecided; });
}

RoundOrder::RoundOrder(int k, uint64_t seed) : k_(std::max(1, k)), rng_(seed) {}

std::vector<int> RoundOrder::next() {
  if (at_ == firsts_.size()) {
    firsts_.resize(static_cast<size_t>(k_));
    std::iota(firsts_.begin(), firsts_.end(), 0);
    std::shuffle(firsts_.begin(), firsts_.end(), rng_);
    at_ = 0;
  }
  const int first = firsts_[at_++];
  std::vector<int> rest;
  for (int i = 0; i < k_; ++i)
    if (i != first) rest.push_back(i);
  std::shuffle(rest.begin(), rest.end(), rng_);
  rest.insert(rest.begin(), first);
  return rest;
}

double slope(std::span<const double> d) {
  const size_t n = d.size();
  if (n < 3) return 0;
  const double mx = (static_cast<double>(n) - 1) / 2;
  const double my = std::accumulate(d.begin(), d.end(), 0.0) / static_cast<double>(n);
  double sxy = 0, sxx = 0;
  for (size_t i = 0; i < n; ++i) {
    const double dx = static_cast<double>(i) - mx;
    sxy += dx * (d[i] - my), sxx += dx * dx;
  }
  return sxx > 0 ? sxy / sxx : 0;
}

}  // namespace mw::decide
