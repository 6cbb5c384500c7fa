#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

#include "util/histogram.h"

using mw::Histogram;

namespace {
// The exact value at percentile p of sorted data, by the same rank rule (ceil(p/100 * n)).
int64_t exact(const std::vector<int64_t>& sorted, double p) {
  size_t rank = static_cast<size_t>(std::llround(std::ceil(p * static_cast<double>(sorted.size()) / 100.0 - 1e-6)));
  return sorted[std::max<size_t>(rank, 1) - 1];
}

void check_accuracy(std::vector<int64_t> values) {
  Histogram h;
  for (auto v : values) h.record(v);
  std::sort(values.begin(), values.end());
  for (double p : {1.0, 10.0, 50.0, 90.0, 99.0, 99.9, 99.99, 100.0}) {
    double want = static_cast<double>(exact(values, p));
    double got = static_cast<double>(h.percentile(p));
    CAPTURE(p);
    CHECK(std::abs(got - want) <= want * 0.001);
  }
  CHECK(h.min() == values.front());
  CHECK(h.max() == values.back());
  CHECK(h.count() == values.size());
}
}  // namespace

TEST_CASE("histogram: values below 2048 ns are exact") {
  Histogram h;
  for (int64_t v = 0; v < 2048; ++v) h.record(v);
  CHECK(h.percentile(50) == 1023);
  CHECK(h.percentile(100) == 2047);
  CHECK(h.min() == 0);
  CHECK(h.mean() == doctest::Approx(1023.5));
}

TEST_CASE("histogram: percentiles within 0.1% on known distributions") {
  std::mt19937_64 rng(42);
  SUBCASE("uniform 1 us .. 10 ms") {
    std::uniform_int_distribution<int64_t> d(1000, 10'000'000);
    std::vector<int64_t> v(200000);
    for (auto& x : v) x = d(rng);
    check_accuracy(v);
  }
  SUBCASE("exponential, mean 200 us") {
    std::exponential_distribution<double> d(1.0 / 200000);
    std::vector<int64_t> v(200000);
    for (auto& x : v) x = static_cast<int64_t>(d(rng)) + 1;
    check_accuracy(v);
  }
  SUBCASE("log-normal with a heavy tail up to seconds") {
    std::lognormal_distribution<double> d(12.0, 2.0);
    std::vector<int64_t> v(200000);
    for (auto& x : v) x = std::min<int64_t>(static_cast<int64_t>(d(rng)) + 1, Histogram::kMaxValue);
    check_accuracy(v);
  }
}

TEST_CASE("histogram: index and value round trip across the whole range") {
  for (int64_t v : {int64_t{1}, int64_t{2047}, int64_t{2048}, int64_t{4095}, int64_t{123456789}, int64_t{1000000000},
                    Histogram::kMaxValue}) {
    int i = Histogram::index_of(v);
    CAPTURE(v);
    CHECK(Histogram::lowest_at(i) <= v);
    CHECK(Histogram::highest_at(i) >= v);
    CHECK(static_cast<double>(Histogram::highest_at(i) - Histogram::lowest_at(i)) <= std::max(1.0, v * 0.001));
    CHECK(i < Histogram::kCountsLen);
  }
}

TEST_CASE("histogram: merge equals recording everything in one") {
  Histogram a, b, all;
  for (int64_t v = 1; v < 100000; v += 7) (v % 2 ? a : b).record(v * 13), all.record(v * 13);
  a.merge(b);
  CHECK(a.count() == all.count());
  CHECK(a.buckets() == all.buckets());
  CHECK(a.percentile(99) == all.percentile(99));
  CHECK(a.mean() == doctest::Approx(all.mean()));
  CHECK(a.min() == all.min());
  CHECK(a.max() == all.max());
}

TEST_CASE("histogram: sparse buckets rebuild the same histogram") {
  Histogram h, copy;
  for (int64_t v = 1; v < 5'000'000; v = v * 3 / 2 + 1) h.record_n(v, static_cast<uint64_t>(v % 5 + 1));
  for (auto& [v, c] : h.buckets()) copy.record_n(v, c);
  CHECK(copy.buckets() == h.buckets());
  CHECK(copy.percentile(90) == h.percentile(90));
}

TEST_CASE("histogram: values beyond one hour are clamped and counted") {
  Histogram h;
  h.record(Histogram::kMaxValue * 2);
  CHECK(h.clamped() == 1);
  CHECK(h.max() == Histogram::kMaxValue);
  CHECK(h.percentile(50) == Histogram::kMaxValue);
}

// percentile() reads only the occupied counters and walks from the nearer end: every rank, from
// either end, after a merge, a reset and a restore whose exact min and max differ from the buckets',
// gives the counter a scan of the whole array gives.
TEST_CASE("histogram: percentiles read over the occupied range, from either end, equal a whole scan") {
  auto whole_scan = [](const Histogram& h, double p) {
    uint64_t rank = static_cast<uint64_t>(
        std::ceil(p / 100.0 * static_cast<double>(h.count()) - 1e-9 * p / 100.0 * static_cast<double>(h.count())));
    rank = std::max<uint64_t>(rank, 1);
    uint64_t seen = 0;
    for (auto& [v, n] : h.buckets())
      if ((seen += n) >= rank) return std::clamp(Histogram::highest_at(Histogram::index_of(v)), h.min(), h.max());
    return h.max();
  };
  std::mt19937_64 rng(42);
  std::lognormal_distribution<double> ln(11, 2);
  Histogram a, b;
  for (int i = 0; i < 20000; ++i) (i % 3 ? a : b).record(static_cast<int64_t>(ln(rng)));
  Histogram restored = Histogram::restore(a.buckets(), a.min() + 1, a.max() - 1, a.sum());
  Histogram merged = a;
  merged.merge(b);
  Histogram one;
  one.record(123456);
  Histogram emptied = a;
  emptied.reset();
  emptied.record(77);
  emptied.record(5'000'000);
  for (const Histogram* h : {&a, &b, &restored, &merged, &one, &emptied})
    for (double p = 0; p <= 100; p += 0.25) {
      CAPTURE(p);
      CHECK(h->percentile(p) == whole_scan(*h, p));
    }
  CHECK(merged.buckets().size() > a.buckets().size());
  CHECK(emptied.buckets().size() == 2);
  CHECK(Histogram().percentile(99) == 0);
  CHECK(Histogram().buckets().empty());
}
