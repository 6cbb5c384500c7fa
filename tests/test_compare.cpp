// compare and report on result files written by the reporters themselves.
#include <doctest/doctest.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "report/gate.h"
#include "report/report.h"
#include "results/results.h"

using namespace mw;
using nlohmann::json;

namespace {

JobResult job(const std::string& name, const std::string& path, double rps, std::vector<double> repeats = {}) {
  JobResult j;
  j.job.name = name;
  j.job.adapter = "sqlite";
  j.job.op = "insert";
  j.job.opts["path"] = path;
  j.target = path;
  j.latency = std::make_shared<Histogram>();
  for (int i = 1; i <= 100; ++i) j.latency->record(i * 10000);
  j.ops_ok = 100;
  j.elapsed_s = 100 / rps;
  j.rps = rps;
  for (double r : repeats) {
    JobResult k = j;
    k.rps = r;
    j.repeats.push_back(k);
  }
  return j;
}

RunResult as_loaded(const std::string& label, const RunResult& r) { return parse_result_json(to_json(r), label); }

}  // namespace

TEST_CASE("compare: jobs matched by what they measured, ratio against the first file, min-max verdicts for 3 runs") {
  RunResult a, b;
  a.jobs = {job("sqlite insert", "/var/tmp", 1000, {900, 1000, 1100}),
            job("sqlite insert", "/dev/shm", 5000, {4900, 5000, 5100})};
  b.jobs = {job("sqlite insert", "/dev/shm", 10000, {9800, 10000, 10100}),
            job("sqlite insert", "/var/tmp", 1050, {1000, 1050, 1200})};
  b.jobs[1].job.n = 999;  // n does not make another job
  std::string out = format_compare({as_loaded("A.json", a), as_loaded("B.json", b)});
  std::istringstream in(out);
  std::vector<std::string> l;
  for (std::string s; std::getline(in, s);) l.push_back(s);
  REQUIRE(l.size() >= 3);
  CHECK(l[0] ==
        "job                     A.json req/s  p99 ms  B.json req/s  p99 ms  ratio  95% CI  p  verdict                 "
        "   "
        "          note");
  CHECK(
      l[1] ==
      "sqlite insert /var/tmp        1000.0   0.990        1050.0   0.990   1.05       -  -  no significant difference "
      "(min-max)");
  CHECK(l[2] ==
        "sqlite insert /dev/shm        5000.0   0.990       10000.0   0.990   2.00       -  -  faster (min-max)");
}

TEST_CASE("compare: a job only one file has, and failures, are shown") {
  RunResult a, b;
  a.jobs = {job("sqlite insert", "/var/tmp", 1000)};
  b.jobs = {job("sqlite insert", "/var/tmp", 800), job("sqlite insert", "/mnt/ssd", 3000)};
  b.jobs[0].ops_failed = 5;
  std::string out = format_compare({as_loaded("A.json", a), as_loaded("B.json", b)});
  CHECK(out.find("0.80       -  -  not decided  B.json had failures") != std::string::npos);  // a single run each
  CHECK(out.find("sqlite insert /mnt/ssd             -       -        3000.0") != std::string::npos);
  CHECK(
      out.find("single runs: nothing decided (run with --repeat 5 or more, or decide within one run with --decide)") !=
      std::string::npos);
}

TEST_CASE("compare: files that are not mwbench results are clear errors") {
  std::string f = "/tmp/mwbench-notresult-" + std::to_string(getpid()) + ".json";
  std::ofstream(f) << "{\"hello\": 1}";
  CHECK_THROWS_WITH_AS(load_result(f), (f + ": not an mwbench result file (no schema_version and jobs)").c_str(),
                       SetupError);
  std::ofstream(f) << "not json";
  CHECK_THROWS_WITH_AS(load_result(f), (f + ": not JSON").c_str(), SetupError);
  std::filesystem::remove(f);
  CHECK_THROWS_WITH_AS(load_result(f), (f + ": cannot read the file").c_str(), SetupError);
}

TEST_CASE(
    "report: HTML has a bar per job and run, a curve per job and run on the group's charts, whiskers, the context") {
  RunResult a, b;
  a.context.host = "box-a";
  a.jobs = {job("sqlite insert", "/var/tmp", 1000, {900, 1000, 1100}), job("sqlite insert", "/dev/shm", 5000)};
  b.jobs = {job("sqlite insert", "/var/tmp", 1200)};
  std::vector<RunResult> runs{as_loaded("A.json", a), as_loaded("B.json", b)};
  std::string html = render_html(runs);
  auto count = [&](const std::string& what) {
    size_t n = 0;
    for (size_t at = html.find(what); at != std::string::npos; at = html.find(what, at + 1)) ++n;
    return n;
  };
  CHECK(count("class=\"bar\"") == 3);
  CHECK(count("class=\"curve\"") == 3);
  CHECK(count("class=\"whisker\"") == 1);
  CHECK(count("<th>host</th><td>box-a</td>") == 1);
  CHECK(count("<section class=\"group\"") == 1);  // both paths of both files on one pair of charts
  CHECK(count("<svg ") == 2);
  CHECK(count("<script") == 1);  // the table's sorting, inline: nothing to load at view time
  CHECK(html.find(" src=") == std::string::npos);
  CHECK(html.find("src=\"http") == std::string::npos);  // (the SVG namespace URI loads nothing)
  CHECK(html.find("href=\"http") == std::string::npos);
  auto svgs = render_svgs(runs);
  CHECK(svgs.size() == 2);
  CHECK(svgs.count("rps-01.svg"));
  CHECK(svgs["latency-01.svg"].find("aria-label=\"sqlite insert: latency by percentile\"") != std::string::npos);
  CHECK(svgs["latency-01.svg"].find(">/dev/shm (A) \xC2\xB7 p99 ") != std::string::npos);
}

namespace {

// A job of K runs whose req/s are `rps` and whose latencies are 10 us .. 1 ms times `scale[k]`.
JobResult runs_of(const std::string& name, const std::vector<double>& rps, const std::vector<double>& scale = {}) {
  JobResult j = job(name, "/var/tmp", rps[0]);
  for (size_t k = 0; k < rps.size(); ++k) {
    JobResult r = j;
    r.repeats.clear();  // a run has no runs of its own (a copy of j would nest the ones so far: 2^K)
    r.rps = rps[k];
    r.elapsed_s = 100 / rps[k];
    r.latency = std::make_shared<Histogram>();
    double s = k < scale.size() ? scale[k] : 1;
    for (int i = 1; i <= 100; ++i) r.latency->record(static_cast<int64_t>(i * 10000 * s));
    j.repeats.push_back(r);
  }
  if (rps.size() == 1) return j.repeats[0];
  JobResult median = j.repeats[rps.size() / 2];
  median.repeats = j.repeats;
  return median;
}

GateOptions by(std::optional<double> rps, std::optional<double> p99 = {}) {
  GateOptions g;
  g.max_regression = rps;
  g.max_latency_regression = p99;
  return g;
}

std::vector<double> times(std::vector<double> v, double f) {
  for (double& x : v) x *= f;
  return v;
}

const std::vector<double> kTen{10120, 9870, 10340, 9650, 10010, 9920, 10450, 9780, 10200, 9990};
const std::vector<double> kTenScales{1.0, 1.03, 0.97, 1.05, 0.99, 1.01, 0.96, 1.02, 1.04, 0.98};

std::string row_of(const std::string& out, const std::string& name) {
  std::istringstream in(out);
  for (std::string s; std::getline(in, s);)
    if (s.rfind(name, 0) == 0) return s;
  return "";
}

}  // namespace

TEST_CASE("compare: a known 20% slowdown over 10 runs is slower with p < 0.01, and fails a 10% gate") {
  RunResult a, b;
  a.jobs = {runs_of("redis set", kTen)};
  std::vector<double> slower = times(kTen, 0.8);
  std::rotate(slower.begin(), slower.begin() + 3, slower.end());  // not in the same order
  b.jobs = {runs_of("redis set", slower)};
  RunResult la = as_loaded("A.json", a), lb = as_loaded("B.json", b);
  Comparison c = judge_rps(la.jobs[0], lb.jobs[0]);
  CHECK(c.method == Comparison::Method::MannWhitney);
  CHECK(c.kind == Comparison::Kind::Slower);
  REQUIRE(c.p);
  CHECK(*c.p < 0.01);
  CHECK(c.ratio == doctest::Approx(0.8).epsilon(0.01));
  CHECK(*c.lo < 0.8);
  CHECK(*c.hi > 0.8);
  CHECK(*c.hi < 0.9);
  std::string out = format_compare({la, lb});
  CAPTURE(out);
  CHECK(row_of(out, "redis set").find("0.80  0.78-0.82  <0.0001  slower") != std::string::npos);
  CHECK(out.find("Hodges-Lehmann estimate of the ratio with its 95% CI") != std::string::npos);
  GateResult g = gate(la, lb, by(0.10));
  CAPTURE(g.text);
  CHECK(g.failed);
  CHECK(g.text.find(
            "redis set /var/tmp  req/s 0.80 (95% CI 0.78-0.82, p=<0.0001, 10 vs 10 runs): slower; REGRESSION: req/s "
            "more than 10% lower") != std::string::npos);
  CHECK(g.text.find("gate FAILED: 1 of 1 rows regressed") != std::string::npos);
  // slower, but by less than the threshold allows
  GateResult loose = gate(la, lb, by(0.25));
  CHECK_FALSE(loose.failed);
  CHECK(loose.text.find("slower; ok") != std::string::npos);
  // the other way round it is faster, and no gate fails on that
  CHECK(judge_rps(lb.jobs[0], la.jobs[0]).kind == Comparison::Kind::Faster);
  CHECK_FALSE(gate(lb, la, by(0.10)).failed);
}

TEST_CASE("compare: the same figures in another order are no significant difference") {
  RunResult a, b;
  a.jobs = {runs_of("redis get", kTen)};
  std::vector<double> same = kTen;
  std::reverse(same.begin(), same.end());
  std::swap(same[0], same[4]);
  b.jobs = {runs_of("redis get", same)};
  RunResult la = as_loaded("A.json", a), lb = as_loaded("B.json", b);
  Comparison c = judge_rps(la.jobs[0], lb.jobs[0]);
  CHECK(c.kind == Comparison::Kind::Same);
  CHECK(*c.p == doctest::Approx(1.0));
  CHECK(row_of(format_compare({la, lb}), "redis get").find("no significant difference") != std::string::npos);
  GateResult g = gate(la, lb, by(0.01));
  CHECK_FALSE(g.failed);
  CHECK(g.text.find("gate passed: 1 rows within the thresholds") != std::string::npos);
}

TEST_CASE("compare: the p99 gate judges each run's p99") {
  RunResult a, b;
  a.jobs = {runs_of("redis set", kTen, kTenScales)};
  b.jobs = {runs_of("redis set", kTen, times(kTenScales, 1.3))};  // same req/s, p99 30% higher
  RunResult la = as_loaded("A.json", a), lb = as_loaded("B.json", b);
  Comparison c = judge_p99(la.jobs[0], lb.jobs[0]);
  CHECK(c.kind == Comparison::Kind::Slower);
  CHECK(c.ratio == doctest::Approx(1.3).epsilon(0.02));
  GateResult g = gate(la, lb, by(0.10, 0.20));
  CHECK(g.failed);
  CHECK(g.text.find("req/s 1.00 (95% CI") != std::string::npos);
  CHECK(g.text.find("REGRESSION: p99 more than 20% higher") != std::string::npos);
  CHECK_FALSE(gate(la, lb, by({}, 0.50)).failed);
  CHECK_FALSE(gate(la, lb, by(0.10)).failed);
}

TEST_CASE("compare: fewer than 5 runs fall back to the min-max rule; single runs to the threshold alone") {
  RunResult a, b;
  a.jobs = {runs_of("q overlap", {1000, 1100, 1200}), runs_of("q apart", {1000, 1100, 1200}), runs_of("q one", {1000}),
            runs_of("q gone", {1000})};
  b.jobs = {runs_of("q overlap", {800, 900, 1050}), runs_of("q apart", {700, 800, 900}), runs_of("q one", {850}),
            runs_of("q new", {1000})};
  RunResult la = as_loaded("A.json", a), lb = as_loaded("B.json", b);
  std::string out = format_compare({la, lb});
  CAPTURE(out);
  CHECK(row_of(out, "q overlap").find("0.82       -  -  no significant difference (min-max)") != std::string::npos);
  CHECK(row_of(out, "q apart").find("0.73       -  -  slower (min-max)") != std::string::npos);
  CHECK(row_of(out, "q one").find("0.85       -  -  not decided") != std::string::npos);
  CHECK(out.find("(min-max): 2-4 runs, slower or faster only when the min-max ranges are apart") != std::string::npos);
  GateResult g = gate(la, lb, by(0.10));
  CAPTURE(g.text);
  CHECK(g.failed);
  CHECK(g.text.find("q overlap /var/tmp  req/s 0.82 (min-max of 3 vs 3 runs): no significant difference; ok") !=
        std::string::npos);
  CHECK(g.text.find("q apart /var/tmp    req/s 0.73 (min-max of 3 vs 3 runs): slower; REGRESSION") !=
        std::string::npos);
  CHECK(g.text.find("q one /var/tmp      req/s 0.85 (single runs: the threshold alone): -; REGRESSION") !=
        std::string::npos);
  CHECK(g.text.find("q gone /var/tmp     no match in B.json: not gated") != std::string::npos);
  CHECK(g.text.find("1 of 4 baseline rows have no job of the same name in B.json (not gated): 'q gone /var/tmp'") !=
        std::string::npos);
  CHECK(g.text.find("q new /var/tmp      only in B.json: not gated") != std::string::npos);
  CHECK(g.text.find("gate FAILED: 2 of 3 rows regressed") != std::string::npos);
  CHECK_FALSE(gate(la, lb, by(0.30)).failed);
}

TEST_CASE("compare: gate thresholds are percentages") {
  CHECK(parse_threshold("10%", "--max-regression") == doctest::Approx(0.10));
  CHECK(parse_threshold("2.5", "--max-regression") == doctest::Approx(0.025));
  CHECK_THROWS_WITH_AS(parse_threshold("ten", "--max-regression"),
                       "--max-regression expects a percentage above 0 and up to 1000% (10%), got 'ten'", SetupError);
  CHECK_THROWS_AS(parse_threshold("0%", "--max-regression"), SetupError);
  CHECK_THROWS_AS(parse_threshold("-5%", "--max-regression"), SetupError);
  CHECK_THROWS_AS(parse_threshold("", "--max-regression"), SetupError);
}

TEST_CASE("compare: a req/s gate that cannot fail is refused, naming the option") {
  for (const char* t : {"100%", "100", "250%", "1000%"}) {
    CAPTURE(t);
    CHECK_THROWS_WITH_AS(parse_threshold(t, "--max-regression", 1),
                         ("--max-regression expects a percentage below 100% (req/s cannot fall by that much: a gate "
                          "that cannot fail), got '" +
                          std::string(t) + "'")
                             .c_str(),
                         SetupError);
  }
  CHECK(parse_threshold("99.9%", "--max-regression", 1) == doctest::Approx(0.999));
  CHECK(parse_threshold("1000%", "--max-latency-regression") == doctest::Approx(10));  // p99 may grow 10x
}

namespace {

// A --find-max row: `rate` found, `passed` of 3 repeats at it passed (3: confirmed).
JobResult searched(const std::string& name, const std::string& verdict, double rate, int passed = 3) {
  JobResult j = job(name, "/var/tmp", rate > 0 ? rate : 100);
  auto c = std::make_shared<Capacity>();
  c->slo = "p99<1ms", c->verdict = *capacity_verdict_names.parse(verdict), c->step_s = 1;
  if (verdict == "found") {
    c->max_rps = c->searched_rps = rate, c->repeats = 3, c->repeats_passed = passed;
    c->repeat_min = rate * 0.99, c->repeat_max = rate * 1.01, c->confirmed = passed == 3;
  }
  CapacityStep probe;
  probe.kind = StepKind::Probe, probe.achieved = rate * 2;
  c->steps.push_back(probe);
  j.capacity = c;
  return j;
}

GateResult gated(const std::vector<JobResult>& base, const std::vector<JobResult>& now, double threshold = 0.1) {
  RunResult a, b;
  a.jobs = base, b.jobs = now;
  GateOptions o;
  o.max_regression = threshold;
  return gate(as_loaded("base.json", a), as_loaded("this run", b), o);
}

}  // namespace

// #28: a found rate whose repeats did not all pass is at the edge: compare says so beside its
// req/s and in its note, and the gate takes it neither as a baseline nor as a pass.
TEST_CASE("compare: a --find-max rate not confirmed is marked, and the gate takes it neither as baseline nor pass") {
  RunResult a, b;
  a.jobs = {searched("redis get", "found", 20000), searched("redis set", "found", 15000, 1)};
  b.jobs = {searched("redis get", "found", 19000, 2), searched("redis set", "found", 15000)};
  const std::string out = format_compare({as_loaded("A.json", a), as_loaded("B.json", b)});
  INFO(out);
  CHECK(out.find("19000.0 unconfirmed") != std::string::npos);
  CHECK(out.find("15000.0 unconfirmed") != std::string::npos);
  CHECK(out.find("20000.0 unconfirmed") == std::string::npos);
  CHECK(out.find("max at SLO p99<1ms: 20000.0 req/s -> 19000.0 req/s not confirmed (2 of 3 repeats passed) (0.95x)") !=
        std::string::npos);
  CHECK(out.find("max at SLO p99<1ms: 15000.0 req/s not confirmed (1 of 3 repeats passed) -> 15000.0 req/s (1.00x)") !=
        std::string::npos);
  CHECK(out.find("unconfirmed: a --find-max rate that missed the SLO in some of its repeats") != std::string::npos);

  // within the 10% threshold, but not confirmed: not a pass
  GateResult g = gated({searched("redis get", "found", 20000)}, {searched("redis get", "found", 19000, 2)});
  INFO(g.text);
  CHECK(g.failed);
  CHECK(g.text.find("REGRESSION: max at SLO not confirmed") != std::string::npos);
  // the same rate confirmed passes; a drop beyond the threshold fails, confirmed or not
  CHECK(!gated({searched("redis get", "found", 20000)}, {searched("redis get", "found", 19000)}).failed);
  g = gated({searched("redis get", "found", 20000)}, {searched("redis get", "found", 15000, 1)});
  CHECK(g.text.find("REGRESSION: max at SLO more than 10% lower, max at SLO not confirmed") != std::string::npos);
  // a baseline that is not confirmed (or client-bound) is no baseline: not gated, and named
  for (const JobResult& base : {searched("redis get", "found", 30000, 2), searched("redis get", "client-bound", 0)}) {
    g = gated({base, searched("redis set", "found", 15000)},
              {searched("redis get", "found", 10000), searched("redis set", "found", 15000)});
    INFO(g.text);
    CHECK(!g.failed);
    CHECK(g.text.find("  redis get /var/tmp  max at SLO p99<1ms: ") != std::string::npos);
    CHECK(g.text.find("; base.json has no confirmed rate: not gated\n") != std::string::npos);
    CHECK(g.text.find("1 of 2 baseline rows searched with --find-max have no confirmed rate in base.json (not gated; "
                      "search them again for a baseline): 'redis get /var/tmp'\n") != std::string::npos);
    CHECK(g.text.find("gate passed: 1 rows within the thresholds") != std::string::npos);
  }
  // a baseline that found no rate gates nothing down; one that found a rate fails a run that found none
  CHECK(!gated({searched("redis get", "none", 0)}, {searched("redis get", "found", 10000, 1)}).failed);
  CHECK(gated({searched("redis get", "found", 20000)}, {searched("redis get", "client-bound", 0)}).failed);
}
