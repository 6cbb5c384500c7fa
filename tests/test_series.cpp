// The time series: a compact mergeable histogram per interval, ops ok and failed per interval,
// the "never settled" warning, and what the driver and the JSON keep of it.
#include <doctest/doctest.h>

#include <nlohmann/json.hpp>
#include <random>

#include "core/runner.h"
#include "report/report.h"
#include "tests/helpers.h"
#include "util/series.h"

using namespace mw;

TEST_CASE("series: the compact layout holds every value within 1%") {
  std::mt19937_64 rng(15);
  for (int i = 0; i < 100000; ++i) {
    int64_t v = static_cast<int64_t>(rng() % static_cast<uint64_t>(CompactLayout::kMaxValue));
    if (i % 3 == 0) v %= 100000;
    int idx = CompactLayout::index_of(v);
    REQUIRE(idx >= 0);
    REQUIRE(idx < CompactLayout::kLen);
    CHECK(CompactLayout::lowest_at(idx) <= v);
    CHECK(CompactLayout::highest_at(idx) >= v);
    CHECK(static_cast<double>(CompactLayout::highest_at(idx) - CompactLayout::lowest_at(idx)) <=
          0.01 * static_cast<double>(std::max<int64_t>(v, 100)));
  }
  CHECK(CompactLayout::index_of(CompactLayout::kMaxValue) < CompactLayout::kLen);
  CHECK(CompactLayout::index_of(255) == 255);
  CHECK(CompactLayout::lowest_at(CompactLayout::index_of(256)) == 256);
}

TEST_CASE("series: ops land in their interval; clients merge by adding counts") {
  SeriesSink sink;
  SeriesRecorder a, b;
  a.start(1'000'000'000, &sink);
  b.start(1'000'000'000, &sink);
  for (int i = 1; i <= 100; ++i) a.add(10'000'000LL * i / 2, i * 1000, true);  // 0.005 .. 0.5 s: 1 .. 100 us
  b.add(200'000'000, 5'000'000, true);                                         // 5 ms, interval 0
  b.add(300'000'000, 0, false);                                                // a failure, interval 0
  a.add(2'500'000'000, 7'000, true);                                           // interval 2 (interval 1 empty)
  b.add(2'600'000'000, 0, false);
  a.finish();
  b.finish();
  auto s = sink.take();
  REQUIRE(s.size() == 3);
  CHECK(s[0].ok == 101);
  CHECK(s[0].failed == 1);
  CHECK(s[0].max == 5'000'000);
  CHECK(s[0].percentile(50) == doctest::Approx(51'000).epsilon(0.01));
  CHECK(s[0].percentile(99) == doctest::Approx(100'000).epsilon(0.01));
  CHECK(s[0].percentile(100) == 5'000'000);
  CHECK(s[1].ok == 0);
  CHECK(s[1].failed == 0);
  CHECK(s[2].ok == 1);
  CHECK(s[2].failed == 1);
  CHECK(s[2].percentile(50) == doctest::Approx(7'000).epsilon(0.01));
}

TEST_CASE("series: a run that never settles is flagged") {
  std::vector<SeriesInterval> s(10);
  for (size_t k = 0; k < s.size(); ++k) s[k].ok = k < 3 ? 1000 : k < 6 ? 800 : 600;
  CHECK(settle_warning(s, 1, 9.5) ==
        "throughput fell 40% from the first third to the last (1000.0 to 600.0 req/s over 9 intervals of 1.000 s): the "
        "run never settled (burst credits, noisy neighbours, throttling, a warm-up too short?)");
  for (auto& iv : s) iv.ok = 1000;
  s[9].ok = 10;  // the last, partial interval does not count
  CHECK(settle_warning(s, 1, 9.5) == "");
  CHECK(settle_warning(std::vector<SeriesInterval>(5, s[0]), 1, 5) == "");  // too short to tell
}

TEST_CASE("series: the driver keeps one interval per --interval, their counts add up to the job's") {
  Job j = test::make_job("null", "nop", 0);
  j.duration_s = 1.0;
  j.interval_s = 0.25;
  j.opts["fail-every"] = "1000";
  JobResult r = run_one(j);
  REQUIRE(r.series.size() >= 4);
  CHECK(r.series.size() <= 5);
  uint64_t ok = 0, failed = 0;
  for (auto& iv : r.series) {
    ok += iv.ok;
    failed += iv.failed;
  }
  CHECK(ok == r.ops_ok);
  CHECK(failed == r.ops_failed);
  CHECK(r.series[1].ok > 0);
  RunResult run;
  run.jobs = {r};
  auto js = to_json(run);
  auto& series = js["jobs"][0]["series"];
  CHECK(series["interval_s"] == 0.25);
  CHECK(series["intervals"].size() == r.series.size());
  CHECK(series["intervals"][1]["t_s"] == 0.25);
  CHECK(series["intervals"][1]["ok"] == r.series[1].ok);
  CHECK(series["intervals"][1]["rps"].get<double>() == doctest::Approx(static_cast<double>(r.series[1].ok) / 0.25));
  CHECK(series["intervals"][1]["p99"].get<int64_t>() <= series["intervals"][1]["max"].get<int64_t>());
}

TEST_CASE("series: per-second counts with intervals that do not divide a second") {
  SeriesSink sink;
  SeriesRecorder r;
  r.start(400'000'000, &sink);  // 0.4 s: segments end at 0.4, 0.8, 1.0, 1.2, 1.6, 2.0, ...
  int64_t ms = 1'000'000;
  for (int64_t t : {10, 390, 410, 790, 810, 990, 1010, 1190, 1210, 2500}) r.add(t * ms, 1000, true);
  r.add(-5 * ms, 1000, true);  // before the phase start: second 0, interval 0
  r.add(1500 * ms, 0, false);  // a failure counts in no second
  r.finish();
  CHECK(r.per_second() == std::vector<uint64_t>{7, 3, 1});
  auto s = sink.take();
  REQUIRE(s.size() == 7);
  std::vector<uint64_t> ok;
  for (auto& iv : s) ok.push_back(iv.ok);
  CHECK(ok == std::vector<uint64_t>{3, 2, 4, 1, 0, 0, 1});
  CHECK(s[3].failed == 1);

  SeriesRecorder unstarted;  // warm-up and load: seconds alone
  for (int64_t t : {1, 999, 1000, 3001}) unstarted.add(t * ms, 10, true);
  unstarted.finish();
  CHECK(unstarted.per_second() == std::vector<uint64_t>{2, 1, 0, 1});
}
