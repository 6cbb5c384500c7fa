#include "util/stats.h"

#include <algorithm>
#include <cmath>

namespace mw {

namespace {

// Midranks of x followed by y (1-based), and the sizes of the groups of tied values.
struct Ranked {
  std::vector<double> rank;
  std::vector<double> ties;  // t of each group with t > 1
};

Ranked rank_all(std::span<const double> x, std::span<const double> y) {
  std::vector<std::pair<double, size_t>> all;
  for (size_t i = 0; i < x.size(); ++i) all.push_back({x[i], i});
  for (size_t j = 0; j < y.size(); ++j) all.push_back({y[j], x.size() + j});
  std::sort(all.begin(), all.end());
  Ranked r;
  r.rank.resize(all.size());
  for (size_t i = 0; i < all.size();) {
    size_t k = i;
    while (k < all.size() && all[k].first == all[i].first) ++k;
    double mid = (static_cast<double>(i + 1) + static_cast<double>(k)) / 2;
    for (size_t q = i; q < k; ++q) r.rank[all[q].second] = mid;
    if (k - i > 1) r.ties.push_back(static_cast<double>(k - i));
    i = k;
  }
  return r;
}

bool use_exact(size_t n, size_t m, const Ranked& r) { return r.ties.empty() && n <= kExactMax && m <= kExactMax; }

// P(U <= u) under the null, from the counts.
double cdf(const std::vector<double>& counts, double total, long u) {
  double s = 0;
  for (long k = 0; k <= u && k < static_cast<long>(counts.size()); ++k) s += counts[static_cast<size_t>(k)];
  return s / total;
}

double sum(const std::vector<double>& v) {
  double s = 0;
  for (double c : v) s += c;
  return s;
}

}  // namespace

double normal_sf(double z) { return 0.5 * std::erfc(z / std::sqrt(2.0)); }

double normal_isf(double p) {
  double lo = -40, hi = 40;  // normal_sf falls from 1 to 0 across it
  for (int i = 0; i < 200; ++i) {
    double mid = (lo + hi) / 2;
    (normal_sf(mid) > p ? lo : hi) = mid;
  }
  return (lo + hi) / 2;
}

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  size_t h = v.size() / 2;
  return v.size() % 2 ? v[h] : (v[h - 1] + v[h]) / 2;
}

std::vector<double> mann_whitney_counts(size_t n, size_t m) {
  // f(i, j)[u] = f(i-1, j)[u - j] + f(i, j-1)[u]: the largest of the i + j values is either an
  // x (above all j y's) or a y (above no x).
  std::vector<std::vector<double>> prev(m + 1, std::vector<double>{1});
  for (size_t i = 1; i <= n; ++i) {
    std::vector<std::vector<double>> cur(m + 1);
    cur[0] = {1};
    for (size_t j = 1; j <= m; ++j) {
      std::vector<double> f(i * j + 1, 0);
      for (size_t u = 0; u < prev[j].size(); ++u) f[u + j] += prev[j][u];
      for (size_t u = 0; u < cur[j - 1].size(); ++u) f[u] += cur[j - 1][u];
      cur[j] = std::move(f);
    }
    prev = std::move(cur);
  }
  return prev[m];
}

MannWhitney mann_whitney(std::span<const double> x, std::span<const double> y) {
  MannWhitney out;
  size_t n = x.size(), m = y.size();
  if (n == 0 || m == 0) return out;
  Ranked r = rank_all(x, y);
  double r1 = 0;
  for (size_t i = 0; i < n; ++i) r1 += r.rank[i];
  double nd = static_cast<double>(n), md = static_cast<double>(m);
  out.u = r1 - nd * (nd + 1) / 2;
  double big = std::max(out.u, nd * md - out.u);  // two-sided: the larger U's upper tail, doubled
  if (use_exact(n, m, r)) {
    out.exact = true;
    std::vector<double> counts = mann_whitney_counts(n, m);
    double upper = 0;
    for (size_t u = static_cast<size_t>(big); u < counts.size(); ++u) upper += counts[u];
    out.p = std::min(1.0, 2 * upper / sum(counts));
    return out;
  }
  double total = nd + md, tie_term = 0;
  for (double t : r.ties) tie_term += t * t * t - t;
  double s = std::sqrt(nd * md / 12 * ((total + 1) - tie_term / (total * (total - 1))));
  if (!(s > 0)) return out;  // every value the same: no evidence of any difference
  double z = (big - nd * md / 2 - 0.5) / s;
  out.p = std::clamp(2 * normal_sf(z), 0.0, 1.0);
  return out;
}

Shift hodges_lehmann(std::span<const double> x, std::span<const double> y, double confidence) {
  Shift out;
  size_t n = x.size(), m = y.size();
  if (n == 0 || m == 0) return out;
  std::vector<double> d;
  d.reserve(n * m);
  for (double b : y)
    for (double a : x) d.push_back(b - a);
  std::sort(d.begin(), d.end());
  out.estimate = median(d);
  double alpha = 1 - confidence;
  size_t nm = d.size(), k = 1;  // the interval is [d_(k), d_(nm+1-k)], 1-based
  if (use_exact(n, m, rank_all(x, y))) {
    std::vector<double> counts = mann_whitney_counts(n, m);
    double total = sum(counts);
    while (k + 1 <= (nm + 1) / 2 && cdf(counts, total, static_cast<long>(k)) <= alpha / 2) ++k;
    out.achieved = 1 - 2 * cdf(counts, total, static_cast<long>(k) - 1);
  } else {
    double nmd = static_cast<double>(nm);
    double sd = std::sqrt(nmd * static_cast<double>(n + m + 1) / 12);
    double c = std::floor(nmd / 2 - 0.5 - normal_isf(alpha / 2) * sd) + 1;
    const size_t half = (nm + 1) / 2;  // rounded up
    k = static_cast<size_t>(std::clamp(c, 1.0, static_cast<double>(half)));
    out.achieved = confidence;
  }
  out.lo = d[k - 1];
  out.hi = d[nm - k];
  return out;
}

Shift ratio_estimate(std::span<const double> x, std::span<const double> y, double confidence) {
  std::vector<double> lx, ly;
  for (double v : x) lx.push_back(std::log(v));
  for (double v : y) ly.push_back(std::log(v));
  Shift s = hodges_lehmann(lx, ly, confidence);
  return {std::exp(s.estimate), std::exp(s.lo), std::exp(s.hi), s.achieved};
}

}  // namespace mw
