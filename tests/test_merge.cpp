// `mwbench merge` (and the MPI ranks' merge): result files written by the reporter, read back
// through the validating loader, merged exactly.
#include <doctest/doctest.h>

#include <nlohmann/json.hpp>
#include <random>

#include "report/report.h"
#include "results/merge.h"
#include "results/results.h"
#include "tests/helpers.h"

using namespace mw;
using nlohmann::json;

namespace {

// A job measured by one copy: `samples` successful latencies, `failed` failed ones.
JobResult part(const std::vector<int64_t>& samples, uint64_t failed, int clients, double elapsed) {
  JobResult j;
  j.job.name = "redis set";
  j.job.adapter = "redis";
  j.job.op = "set";
  j.job.clients = clients;
  j.job.n = samples.size() + failed;
  j.job.opts["host"] = "10.0.0.5";
  j.job.opts["seed"] = std::to_string(clients);  // each copy its own stream: not a mismatch
  j.target = "10.0.0.5:6379";
  j.latency = std::make_shared<Histogram>();
  j.latency_failed = std::make_shared<Histogram>();
  for (auto v : samples) j.latency->record(v);
  for (uint64_t k = 0; k < failed; ++k) j.latency_failed->record(5'000'000'000);
  j.ops_ok = samples.size();
  j.ops_failed = failed;
  j.errors[static_cast<int>(Status::Timeout)] = failed;
  j.elapsed_s = elapsed;
  j.rps = static_cast<double>(j.ops_ok) / elapsed;
  j.per_second = {j.ops_ok / 2, j.ops_ok - j.ops_ok / 2};
  j.metrics = {count_metric("connections opened", clients),
               {"received rate", 1.5 * clients, "kB/s", Metric::Merge::Sum},
               {"document length", 84, "bytes", Metric::Merge::Same},
               {"waiting p99", 2.0 * clients, "ms", Metric::Merge::Same}};
  return j;
}

RunResult run_of(JobResult j, const std::string& started, const std::string& host) {
  RunResult r;
  r.suite = "cli-redis";
  r.started_at = started;
  r.context.host = host;
  r.context.cores = 2;
  r.jobs.push_back(std::move(j));
  return r;
}

RunResult loaded(const RunResult& r, const std::string& label) { return parse_result(result_text(r), label); }

std::vector<int64_t> draw(size_t n, uint64_t seed) {
  std::mt19937_64 g(seed);
  std::lognormal_distribution<double> d(11, 1.2);  // ~60 us, long tail
  std::vector<int64_t> v;
  for (size_t i = 0; i < n; ++i) v.push_back(static_cast<int64_t>(d(g)));
  return v;
}

}  // namespace

TEST_CASE("merge: the same histogram as one run over both sets of samples; counts, errors, series added") {
  auto a = draw(20000, 1), b = draw(15000, 2);
  RunResult ra = run_of(part(a, 3, 2, 2.0), "2026-11-30T06:00:00Z", "load-1");
  RunResult rb = run_of(part(b, 4, 3, 2.5), "2026-11-30T06:00:01Z", "load-2");
  Merged m = merge_runs({loaded(ra, "a.json"), loaded(rb, "b.json")}, "mwbench merge a.json b.json");
  CHECK(m.warnings.size() == 1);  // only the "note" metric, which differs per run
  REQUIRE(m.run.jobs.size() == 1);
  const JobResult& j = m.run.jobs[0];

  Histogram all;
  for (auto v : a) all.record(v);
  for (auto v : b) all.record(v);
  CHECK(j.ops_ok == 35000);
  CHECK(j.latency->count() == all.count());
  CHECK(j.latency->buckets() == all.buckets());
  CHECK(j.latency->min() == all.min());
  CHECK(j.latency->max() == all.max());
  CHECK(j.latency->sum() == all.sum());
  for (double p : {50.0, 90.0, 99.0, 99.9, 99.99}) CHECK(j.latency->percentile(p) == all.percentile(p));
  CHECK(j.ops_failed == 7);
  CHECK(j.latency_failed->count() == 7);
  CHECK(j.errors[static_cast<int>(Status::Timeout)] == 7);
  CHECK(j.elapsed_s == 2.5);  // the slowest run's
  CHECK(j.rps == doctest::Approx(35000 / 2.5));
  CHECK(j.job.clients == 5);
  CHECK(j.job.n == 35007);
  CHECK(j.per_second == std::vector<uint64_t>{10000 + 7500, 10000 + 7500});
  // counts and rates add up, a fact all parts share stays, a percentile per part is left out
  CHECK(test::metric(j, "connections opened") == 5);
  CHECK(test::metric(j, "received rate") == doctest::Approx(7.5));
  CHECK(find_metric(j.metrics, "received rate")->unit == "kB/s");
  CHECK(test::metric(j, "document length") == 84);
  CHECK(find_metric(j.metrics, "waiting p99") == nullptr);
  REQUIRE(m.run.ranks.size() == 2);
  CHECK(m.run.ranks[0].host == "load-1");
  CHECK(m.run.ranks[1].host == "load-2");
  CHECK(m.run.ranks[1].clients == std::vector<int64_t>{3});
  CHECK(m.run.ranks[1].source == "b.json");

  // The merged file reads back through the loader and merges again with a third part: the
  // ranks it lists stay, one more is added.
  RunResult rc = run_of(part(draw(100, 3), 0, 1, 1.0), "2026-11-30T06:00:01Z", "load-3");
  Merged again = merge_runs({loaded(m.run, "ab.json"), loaded(rc, "c.json")}, "mwbench merge ab.json c.json");
  CHECK(again.run.jobs[0].ops_ok == 35100);
  CHECK(again.run.ranks.size() == 3);
}

TEST_CASE("merge: runs of other jobs are refused, naming the file and the job") {
  RunResult ra = run_of(part(draw(10, 1), 0, 1, 1), "2026-11-30T06:00:00Z", "x");
  JobResult other = part(draw(10, 2), 0, 1, 1);
  other.job.opts["value-size"] = "100";
  RunResult rb = run_of(other, "2026-11-30T06:00:00Z", "y");
  CHECK_THROWS_WITH_AS(
      merge_runs({loaded(ra, "a.json"), loaded(rb, "b.json")}, ""),
      "b.json: job 1 (redis set): option value-size \"100\" is not (not set) as in a.json: not the same job",
      SetupError);
  JobResult get = part(draw(10, 2), 0, 1, 1);
  get.job.op = "get";
  CHECK_THROWS_WITH_AS(
      merge_runs({loaded(ra, "a.json"), loaded(run_of(get, "2026-11-30T06:00:00Z", "y"), "b.json")}, ""),
      "b.json: job 1 (redis set): op get is not set as in a.json: not the same job", SetupError);
  RunResult two = ra;
  two.jobs.push_back(ra.jobs[0]);
  CHECK_THROWS_WITH_AS(merge_runs({loaded(ra, "a.json"), loaded(two, "b.json")}, ""),
                       "b.json has 2 jobs, a.json has 1: not parts of one run", SetupError);
}

TEST_CASE("merge: runs that did not measure at the same time are merged with a warning") {
  RunResult ra = run_of(part(draw(10, 1), 0, 1, 2.0), "2026-11-30T06:00:00Z", "x");
  RunResult rb = run_of(part(draw(10, 2), 0, 1, 2.0), "2026-11-30T06:05:00Z", "y");
  Merged m = merge_runs({loaded(ra, "a.json"), loaded(rb, "b.json")}, "");
  REQUIRE(!m.warnings.empty());
  CHECK(m.warnings[0].text ==
        "the runs did not all measure at the same time (b.json started 298 s after a.json ended): "
        "the merged req/s is not one load on the target");
  CHECK(m.warnings[0].kind == WarningKind::NotSimultaneous);
  RunResult rc = run_of(part(draw(10, 2), 0, 1, 2.0), "2026-11-30T06:00:03Z", "z");  // within a's 2 s (+1 s)
  CHECK(merge_runs({loaded(ra, "a.json"), loaded(rc, "c.json")}, "").warnings.empty());
}

TEST_CASE("merge: a file whose histogram disagrees with its counts is refused, never trusted") {
  RunResult ra = run_of(part(draw(10, 1), 0, 1, 1), "2026-11-30T06:00:00Z", "x");
  json doc = to_json(ra);
  doc["jobs"][0]["ops_ok"] = 11;
  // (issue 24 item 11: the loader refuses it for every reader, merge included)
  CHECK_THROWS_WITH_AS(parse_result(doc.dump(), "bad.json"),
                       "bad.json: jobs[0]: the histogram holds 10 successful ops, ops_ok says 11: not a file mwbench "
                       "wrote, or one changed since",
                       SetupError);
  // Hostile histogram extremes are refused by the loader with the field named.
  doc = to_json(ra);
  doc["jobs"][0]["histogram"]["sum"] = -5;
  CHECK_THROWS_WITH_AS(parse_result(doc.dump(), "h.json"),
                       "h.json: jobs[0].histogram.sum: expected a whole number of at least 0", SetupError);
  doc = to_json(ra);
  doc["jobs"][0]["histogram"]["max"] = 1;
  CHECK_THROWS_AS(parse_result(doc.dump(), "h.json"), SetupError);
  doc = to_json(ra);
  doc["jobs"][0]["errors"]["Bogus"] = 1;
  CHECK_THROWS_WITH_AS(parse_result(doc.dump(), "h.json"), "h.json: jobs[0].errors.Bogus: not a status mwbench counts",
                       SetupError);
  doc = to_json(ra);
  doc["ranks"] = json::array({{{"rank", "zero"}}});
  CHECK_THROWS_WITH_AS(parse_result(doc.dump(), "h.json"),
                       "h.json: ranks[0].rank: expected a whole number (0 to 1000000), got string", SetupError);
}

TEST_CASE("merge: the same run twice is refused (the same file, or a copy), never doubled") {
  RunResult ra = run_of(part(draw(10, 1), 0, 1, 1), "2026-11-30T06:00:00Z", "x");
  RunResult rb = run_of(part(draw(10, 2), 0, 1, 1), "2026-11-30T06:00:00Z", "x");    // same start and host
  CHECK_NOTHROW(check_distinct_runs({loaded(ra, "a.json"), loaded(rb, "b.json")}));  // other figures
  CHECK_THROWS_WITH_AS(check_distinct_runs({loaded(ra, "a.json"), loaded(rb, "b.json"), loaded(ra, "a.json")}),
                       "a.json is the same run as a.json (started 2026-11-30T06:00:00Z on x, the same figures): "
                       "merging it twice would count it twice",
                       SetupError);
  CHECK_THROWS_AS(check_distinct_runs({loaded(ra, "a.json"), loaded(ra, "copy.json")}), SetupError);
}

TEST_CASE("merge: sums past 2^64 are refused with the reason, never wrapped") {
  RunResult ra = run_of(part(draw(10, 1), 0, 1, 1), "2026-11-30T06:00:00Z", "x");
  json doc = to_json(ra);
  // a count past what a file holds (1e15) is refused by the loader, before any merge adds it
  doc["jobs"][0]["params"]["n"] = 1e19;
  CHECK_THROWS_WITH_AS(parse_result(doc.dump(), "a.json"),
                       "a.json: jobs[0].params.n: expected a whole number (0 to 1000000000000000), "
                       "got a fraction or an overflow",
                       SetupError);
  doc["jobs"][0]["params"]["n"] = -1;
  CHECK_THROWS_WITH_AS(parse_result(doc.dump(), "a.json"),
                       "a.json: jobs[0].params.n: -1 is negative (0 to 1000000000000000)", SetupError);
  // ops_ok: each file holds at most 1e15 (the loader's cap), 18447 of them more than 2^64
  RunResult big = run_of(part({}, 0, 1, 1), "2026-11-30T06:00:00Z", "h");
  big.jobs[0].latency->record_n(1000, 1'000'000'000'000'000);
  big.jobs[0].ops_ok = 1'000'000'000'000'000;
  RunResult one = loaded(big, "big.json");
  std::vector<RunResult> runs(18447, one);
  for (size_t i = 0; i < runs.size(); ++i) runs[i].context.host = "h" + std::to_string(i);
  CHECK_THROWS_WITH_AS(merge_runs(runs, ""),
                       "redis set: the runs' ops_ok add up to more than 2^64: not runs mwbench wrote", SetupError);
  runs.resize(18446);  // 1.8446e19 still fits
  CHECK(merge_runs(runs, "").run.jobs[0].ops_ok == 18446 * 1'000'000'000'000'000ull);
}

TEST_CASE("metrics: typed in the file, read back as written; a file from before they were typed still loads") {
  RunResult ra = run_of(part(draw(10, 1), 0, 2, 1), "2026-11-30T06:00:00Z", "x");
  json doc = to_json(ra);
  REQUIRE(doc["jobs"][0]["metrics"].is_array());
  CHECK(doc["jobs"][0]["metrics"][1] ==
        json{{"name", "received rate"}, {"value", 3.0}, {"unit", "kB/s"}, {"merge", "sum"}});
  RunResult back = loaded(ra, "a.json");
  const Metrics& m = back.jobs[0].metrics;
  REQUIRE(m.size() == 4);
  CHECK(m[0].name == "connections opened");
  CHECK(m[0].value == 2);
  CHECK(m[0].unit == "");
  CHECK(m[3].name == "waiting p99");
  CHECK(m[3].merge == Metric::Merge::Same);
  // the {name: text} form: a whole number is a count, a number and a word a fact, the rest dropped
  doc["jobs"][0]["metrics"] = {{"connections opened", "4"},
                               {"document length", "84 bytes"},
                               {"waiting ms", "min 2.430  avg 36.363"},
                               {"HTTP status", "200: 1205"}};
  const Metrics old = parse_result(doc.dump(), "old.json").jobs[0].metrics;
  REQUIRE(old.size() == 2);
  CHECK(old[0].name == "connections opened");
  CHECK(old[0].merge == Metric::Merge::Sum);
  CHECK(old[1].name == "document length");
  CHECK(old[1].value == 84);
  CHECK(old[1].unit == "bytes");
  CHECK(old[1].merge == Metric::Merge::Same);
  // hostile: a value that is not a figure, an unknown merge rule
  doc["jobs"][0]["metrics"] = json::array({{{"name", "x"}, {"value", -1}}});
  CHECK_THROWS_WITH_AS(parse_result(doc.dump(), "h.json"),
                       "h.json: jobs[0].metrics[0].value: -1 is out of range (0 to 1e15)", SetupError);
  doc["jobs"][0]["metrics"] = json::array({{{"name", "x"}, {"value", 1}, {"merge", "avg"}}});
  CHECK_THROWS_WITH_AS(parse_result(doc.dump(), "h.json"),
                       "h.json: jobs[0].metrics[0].merge: expected \"sum\" or \"same\"", SetupError);
}

TEST_CASE("metrics: the lines under a job's row; a statistic's five figures share one line") {
  Metrics m = {count_metric("HTTP 200 responses", 900),
               {"document length", 60, "bytes", Metric::Merge::Same},
               {"connect min", 0.0125, "ms", Metric::Merge::Same},
               {"connect p50", 0.25, "ms", Metric::Merge::Same},
               {"connect max", 3, "ms", Metric::Merge::Same},
               {"received rate", 12.5, "kB/s", Metric::Merge::Sum}};
  CHECK(metric_lines(m) == std::vector<std::string>{"HTTP 200 responses: 900", "document length: 60 bytes",
                                                    "connect: min 0.013, p50 0.250, max 3.000 ms",
                                                    "received rate: 12.500 kB/s"});
}
