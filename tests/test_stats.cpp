// src/util/stats.cpp against known answers computed with scipy (tests/stats_reference.py writes
// stats_expected.inc; the stats_reference ctest checks the committed file is what scipy says).
#include <doctest/doctest.h>

#include <vector>

#include "util/stats.h"

using namespace mw;

namespace {

struct StatsCase {
  const char* name;
  std::vector<double> x, y;
  double u, p;
  bool exact;
  double shift, shift_lo, shift_hi, shift_achieved;
  double ratio, ratio_lo, ratio_hi, ratio_achieved;
};

#include "tests/stats_expected.inc"

}  // namespace

TEST_CASE("stats: Mann-Whitney U and its two-sided p-value match scipy") {
  for (auto& c : kStatsCases) {
    CAPTURE(c.name);
    MannWhitney mw = mann_whitney(c.x, c.y);
    CHECK(mw.u == doctest::Approx(c.u).epsilon(1e-12));
    CHECK(mw.exact == c.exact);
    CHECK(mw.p == doctest::Approx(c.p).epsilon(1e-9));
  }
}

TEST_CASE("stats: Hodges-Lehmann shift and ratio with Moses' interval match the reference") {
  for (auto& c : kStatsCases) {
    CAPTURE(c.name);
    Shift s = hodges_lehmann(c.x, c.y);
    CHECK(s.estimate == doctest::Approx(c.shift).epsilon(1e-9));
    CHECK(s.lo == doctest::Approx(c.shift_lo).epsilon(1e-9));
    CHECK(s.hi == doctest::Approx(c.shift_hi).epsilon(1e-9));
    CHECK(s.achieved == doctest::Approx(c.shift_achieved).epsilon(1e-9));
    Shift r = ratio_estimate(c.x, c.y);
    CHECK(r.estimate == doctest::Approx(c.ratio).epsilon(1e-9));
    CHECK(r.lo == doctest::Approx(c.ratio_lo).epsilon(1e-9));
    CHECK(r.hi == doctest::Approx(c.ratio_hi).epsilon(1e-9));
    CHECK(r.achieved == doctest::Approx(c.ratio_achieved).epsilon(1e-9));
  }
}

TEST_CASE("stats: the exact null distribution of U") {
  std::vector<double> counts = mann_whitney_counts(5, 5);
  REQUIRE(counts.size() == std::size(kCounts55));
  for (size_t u = 0; u < counts.size(); ++u) CHECK(counts[u] == kCounts55[u]);
  std::vector<double> big = mann_whitney_counts(50, 50);
  double total = 0;
  for (double c : big) total += c;
  CHECK(total == doctest::Approx(1.008913445455642e29).epsilon(1e-12));  // C(100, 50)
  CHECK(big.front() == 1);
  for (size_t u = 0; u < big.size(); u += 97) CHECK(big[u] == big[big.size() - 1 - u]);  // symmetric
}

TEST_CASE("stats: median and the normal tail") {
  CHECK(median({3, 1, 2}) == 2);
  CHECK(median({4, 1, 3, 2}) == 2.5);
  CHECK(normal_sf(1.959963984540054) == doctest::Approx(0.025).epsilon(1e-12));
  CHECK(normal_isf(0.025) == doctest::Approx(1.959963984540054).epsilon(1e-12));
  CHECK(normal_isf(0.5) == doctest::Approx(0).scale(1));
}
