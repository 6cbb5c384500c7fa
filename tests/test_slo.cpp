// SLOs: parsed once with clear errors, checked against a job's figures, marked in the table,
// kept in the JSON, and exit 3 when missed (unless ops failed: 1 wins).
#include <doctest/doctest.h>
#include <unistd.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "config/config.h"
#include "report/report.h"
#include "results/slo.h"

using namespace mw;

namespace {

JobResult measured(double rps, int64_t step_ns, uint64_t failed = 0) {
  JobResult j;
  j.job.name = "redis get";
  j.job.adapter = "redis";
  j.job.op = "get";
  j.target = "127.0.0.1:6379";
  j.latency = std::make_shared<Histogram>();
  for (int i = 1; i <= 100; ++i) j.latency->record(i * step_ns);  // p99 = 99 steps
  j.latency_failed = std::make_shared<Histogram>();
  j.ops_ok = 100;
  j.ops_failed = failed;
  j.rps = rps;
  j.elapsed_s = 100 / rps;
  return j;
}

std::string parse_error(const std::string& spec) {
  try {
    parse_slo(spec);
  } catch (const SetupError& e) {
    return e.what();
  }
  return "no error";
}

}  // namespace

TEST_CASE("slo: terms and their values") {
  auto t = parse_slo("p99<2ms, rps>=10k,errors=0,mean<=500us,max<1s,errors<0.5%,mbps>100");
  REQUIRE(t.size() == 7);
  CHECK(t[0].metric == "p99");
  CHECK(t[0].op == SloTerm::Op::Lt);
  CHECK(t[0].value == 2e6);
  CHECK(t[1].op == SloTerm::Op::Ge);
  CHECK(t[1].value == 10000);
  CHECK(t[2].op == SloTerm::Op::Eq);
  CHECK(t[3].value == 500e3);
  CHECK(t[4].value == 1e9);
  CHECK(t[5].percent);
  CHECK(t[5].value == doctest::Approx(0.005));
  CHECK(t[6].metric == "mbps");
}

TEST_CASE("slo: bad text is one clear line naming the term") {
  CHECK(parse_error("p99<2") == "'p99<2': expected a latency with a unit: ns, us, ms or s (2ms)");
  CHECK(parse_error("p98<2ms") ==
        "'p98<2ms': unknown metric 'p98'; expected rps, mbps, errors, min, mean, p50, p90, p99, p999 or max");
  CHECK(parse_error("rps") == "'rps': expected METRIC OP VALUE with OP one of < <= > >= = (p99<2ms)");
  CHECK(parse_error("rps>") == "'rps>': expected METRIC OP VALUE with OP one of < <= > >= = (p99<2ms)");
  CHECK(parse_error("rps>>5") == "'rps>>5': expected METRIC OP VALUE with OP one of < <= > >= = (p99<2ms)");
  CHECK(parse_error("rps>lots") == "'rps>lots': expected req/s as a number (10000, 10k, 1.5M)");
  CHECK(parse_error("errors=0.5") == "'errors=0.5': expected a whole count of failed ops (0) or a share (0.1%)");
  CHECK(parse_error(" , ") == "empty; expected terms METRIC OP VALUE (p99<2ms,rps>10000,errors=0)");
  CHECK(parse_error("p99<-2ms") == "'p99<-2ms': expected a latency with a unit: ns, us, ms or s (2ms)");
  CHECK(parse_error(std::string(2000, 'x')) == "2000 characters; at most 1000");
}

TEST_CASE("slo: a term that cannot fail or cannot hold is refused") {
  CHECK(parse_error("errors=101%") == "'errors=101%': a share of failed ops is at most 100% (0.1%)");
  CHECK(parse_error("errors<=250%") == "'errors<=250%': a share of failed ops is at most 100% (0.1%)");
  CHECK(parse_error("p99<0ms") == "'p99<0ms': can never hold (no figure is below 0)");
  CHECK(parse_error("rps<0") == "'rps<0': can never hold (no figure is below 0)");
  CHECK(parse_error("errors<0") == "'errors<0': can never hold (no figure is below 0)");
  CHECK(parse_error("errors<=100%") == "no error");
  CHECK(parse_error("errors=0") == "no error");
  CHECK_THROWS_WITH_AS(expand_jobs("null", {{"slo", {"errors=101%"}, "--slo"}}, "cli"),
                       "--slo: 'errors=101%': a share of failed ops is at most 100% (0.1%)", SetupError);
}

TEST_CASE("options: -n beside --duration is refused; a suite job's duration replaces the defaults' n") {
  CHECK_THROWS_WITH_AS(expand_jobs("null", {{"n", {"100"}, "-n"}, {"duration", {"1s"}, "--duration"}}, "cli"),
                       "--duration: give -n or --duration, not both (a --duration run ends by time: -n would be "
                       "ignored)",
                       SetupError);
  std::string f = "/tmp/mwbench-n-duration-" + std::to_string(getpid()) + ".toml";
  std::ofstream(f) << "[defaults]\nn = 500\n[[job]]\nadapter = \"null\"\nduration = \"1s\"\n"
                      "[[job]]\nadapter = \"null\"\n";
  auto s = load_suite(f);
  REQUIRE(s.jobs.size() == 2);
  CHECK(s.jobs[0].duration_s == 1);
  CHECK(s.jobs[1].n == 500);
  std::ofstream(f) << "[[job]]\nadapter = \"null\"\nn = 5\nduration = \"1s\"\n";
  CHECK_THROWS_AS(load_suite(f), SetupError);
  unlink(f.c_str());
}

TEST_CASE("slo: met and missed against a job's figures") {
  JobResult j = measured(20000, 20000);  // p99 = 1.98 ms
  SloOutcome ok = check_slo("p99<2ms,rps>10000,errors=0", j);
  CHECK(ok.checked);
  CHECK(ok.passed);
  JobResult slow = measured(8000, 30000, 2);  // p99 2.97 ms, 2 failed ops
  SloOutcome bad = check_slo("p99<2ms,rps>10000,errors=0,errors<5%", slow);
  CHECK_FALSE(bad.passed);
  REQUIRE(bad.violations.size() == 3);
  CHECK(bad.violations[0].text == "p99 2.972 ms, wanted p99<2ms");
  CHECK(bad.violations[1].text == "rps 8000.0, wanted rps>10000");
  CHECK(bad.violations[2].text == "errors 2, wanted errors=0");
  CHECK(bad.violated("p99"));
  CHECK_FALSE(bad.violated("max"));
  JobResult skipped;
  skipped.state = JobResult::State::Skipped;
  SloOutcome none = check_slo("p99<2ms", skipped);
  CHECK_FALSE(none.checked);
  CHECK(none.passed);
}

TEST_CASE("slo: a missed SLO exits 3, marks its cells and is kept in the JSON; failed ops exit 1") {
  RunResult run;
  run.jobs = {measured(20000, 20000), measured(8000, 30000)};
  run.jobs[0].slo = check_slo("p99<2ms", run.jobs[0]);
  run.jobs[1].slo = check_slo("p99<2ms,rps>10k", run.jobs[1]);
  CHECK(exit_code(run) == 3);
  make_notes(run);
  std::string table = format_table(run, Detail::Full);
  std::istringstream in(table);
  std::vector<std::string> l;
  for (std::string s; std::getline(in, s);) l.push_back(s);
  REQUIRE(l.size() > 4);
  CHECK(l[1].find(" !") == std::string::npos);
  CHECK(l[2].find("8000.0 !") != std::string::npos);
  CHECK(l[2].find("2.972 !") != std::string::npos);
  CHECK(l[2].find("3.000  0") != std::string::npos);  // max is not marked
  CHECK(table.find("SLO met: redis get (127.0.0.1:6379): p99<2ms") != std::string::npos);
  CHECK(table.find("SLO MISSED: redis get (127.0.0.1:6379): p99 2.972 ms, wanted p99<2ms; rps 8000.0, wanted rps>10k "
                   "(!: the cells that miss it)") != std::string::npos);
  // by default (no -v) the missed SLO is the job's line; a met one says nothing the table does not
  const std::string glance = format_table(run);
  CHECK(glance.find("\nSLO MISSED: redis get (127.0.0.1:6379): p99 2.972 ms") != std::string::npos);
  CHECK(glance.find("SLO met") == std::string::npos);
  auto j = to_json(run);
  CHECK(j["jobs"][0]["slo"] == nlohmann::json::parse(R"({"spec": "p99<2ms", "passed": true, "violations": []})"));
  CHECK(j["jobs"][1]["slo"]["passed"] == false);
  CHECK(j["jobs"][1]["slo"]["violations"][1] ==
        nlohmann::json::parse(R"({"metric": "rps", "text": "rps 8000.0, wanted rps>10k"})"));
  CHECK(j["exit_code"] == 3);
  run.jobs[0].ops_failed = 1;
  CHECK(exit_code(run) == 1);  // failed ops win over a missed SLO
}

TEST_CASE("slo: from the command line and from suites, errors name the option or file:line") {
  auto jobs = expand_jobs("null", {{"slo", {"p99<1ms,errors=0"}, "--slo"}}, "cli");
  REQUIRE(jobs.size() == 1);
  CHECK(jobs[0].slo == "p99<1ms,errors=0");
  CHECK_THROWS_WITH_AS(expand_jobs("null", {{"slo", {"p99<1"}, "--slo"}}, "cli"),
                       "--slo: 'p99<1': expected a latency with a unit: ns, us, ms or s (2ms)", SetupError);
  std::string f = "/tmp/mwbench-slo-" + std::to_string(getpid()) + ".toml";
  std::ofstream(f) << "[[job]]\nadapter = \"null\"\nslo = \"p99<1ms\"\n\n"
                      "[[job]]\nadapter = \"null\"\nslo = \"p99<1\"\n";
  std::string want = f + ":7: slo: 'p99<1': expected a latency with a unit: ns, us, ms or s (2ms)";
  CHECK_THROWS_WITH_AS(load_suite(f), want.c_str(), SetupError);
  std::ofstream(f) << "[defaults]\nslo = \"errors=0\"\n[[job]]\nadapter = \"null\"\n";
  CHECK(load_suite(f).jobs[0].slo == "errors=0");
  unlink(f.c_str());
}
