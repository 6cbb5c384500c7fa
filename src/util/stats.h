// Statistics for comparing two sets of repeated runs: the Mann-Whitney U test and the
// Hodges-Lehmann shift estimate with its distribution-free confidence interval (Moses).
// Used by `compare` and the baseline gate; checked against scipy (tests/stats_reference.py).
#pragma once
#include <cstdint>
#include <span>
#include <vector>

namespace mw {

// Two-sided Mann-Whitney U test of x against y.
struct MannWhitney {
  double u = 0;        // U of x: pairs with x_i > y_j, plus half the ties (scipy's statistic)
  double p = 1;        // two-sided p-value
  bool exact = false;  // exact null distribution (no ties, both samples <= kExactMax values);
                       // otherwise the normal approximation with tie and continuity correction
};
constexpr size_t kExactMax = 50;
MannWhitney mann_whitney(std::span<const double> x, std::span<const double> y);

// The null distribution of U for samples of n and m values without ties: counts[u] is the
// number of the C(n+m, n) orderings whose U is u (u = 0 .. n*m). Additions only (exact in
// doubles up to n = m = 50).
std::vector<double> mann_whitney_counts(size_t n, size_t m);

// The Hodges-Lehmann estimate of the shift y - x (the median of all n*m differences y_j - x_i)
// and Moses' interval: the k-th smallest and k-th largest difference, k chosen from the exact
// null distribution of U (or its normal approximation when the test above is not exact) so
// that the interval covers the true shift with at least `confidence`. `achieved` is the
// coverage of that interval (exact case), or `confidence` (approximation).
struct Shift {
  double estimate = 0, lo = 0, hi = 0;
  double achieved = 0;
};
Shift hodges_lehmann(std::span<const double> x, std::span<const double> y, double confidence = 0.95);

// The ratio y / x of two sets of positive figures (req/s, p99): the shift of their logarithms
// above, exponentiated. estimate 1.25: y is 25% higher than x.
Shift ratio_estimate(std::span<const double> x, std::span<const double> y, double confidence = 0.95);

double median(std::vector<double> v);
// P(Z > z) for a standard normal Z, and its inverse for 0 < p < 1.
double normal_sf(double z);
double normal_isf(double p);

}  // namespace mw
