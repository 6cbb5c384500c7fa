// Decisions over rounds (core/rounds.h): the loop, its budget and its failures; jobs as the
// alternatives; the decision in the result file, read back, redacted, and in the reports.
#include <doctest/doctest.h>

#include <chrono>
#include <cmath>
#include <csignal>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <set>
#include <thread>

#include "api/stop.h"
#include "core/command.h"
#include "core/rounds.h"
#include "report/report.h"
#include "results/decision_json.h"
#include "results/results.h"
#include "results/writer.h"
#include "tests/helpers.h"

using namespace mw;

namespace {

DecideOptions options(int max_rounds = 30) {
  DecideOptions o;
  o.settings.max_rounds = max_rounds;
  o.seed = 5;
  return o;
}

// Alternative a's figure in round r: a fixed speed with a small deterministic wobble.
RunAlternative steady(std::vector<double> speeds, int* calls = nullptr) {
  return [speeds, calls, k = 0](int a) mutable {
    if (calls) ++*calls;
    RoundRun out;
    out.run.ok = true;
    out.run.value = speeds[static_cast<size_t>(a)] * (1 + 0.01 * std::sin(++k * 1.7));
    out.run.wall_s = 0.01;
    return out;
  };
}

RunResult with_decision(const DecideResult& d) {
  RunResult run;
  run.suite = "decide";
  run.command = "decide 'a' 'b'";
  run.started_at = "2026-01-01T00:00:00Z";
  run.decide = std::make_shared<DecideResult>(d);
  return run;
}

}  // namespace

TEST_CASE("rounds: a clear difference stops once decided; every round in a balanced order") {
  DecideResult d = plan_decision({"a", "b", "c"}, options());
  int calls = 0;
  run_rounds(d, steady({100, 130, 100}, &calls), nullptr);
  CHECK(d.stopped == "decided");
  CHECK(d.rounds.size() >= 6);
  CHECK(d.rounds.size() < 30);
  CHECK(calls == static_cast<int>(3 * d.rounds.size()));
  REQUIRE(d.decisions.size() == 2);
  CHECK(d.decisions[0].alternative == 1);
  CHECK(d.decisions[0].estimate.verdict == decide::Verdict::Faster);
  CHECK(d.decisions[0].estimate.ratio == doctest::Approx(1.3).epsilon(0.02));
  CHECK(d.decisions[1].estimate.verdict == decide::Verdict::Equivalent);
  std::vector<int> first(3, 0);
  for (auto& r : d.rounds) ++first[static_cast<size_t>(r.order[0])];
  for (size_t k = 0; k + 3 <= d.rounds.size(); k += 3)  // each goes first once in each block of 3 rounds
    CHECK(std::set<int>{d.rounds[k].order[0], d.rounds[k + 1].order[0], d.rounds[k + 2].order[0]}.size() == 3);
  CHECK(d.decisions[0].diagnostics.rounds_first + d.decisions[0].diagnostics.rounds_second == d.decisions[0].rounds);
}

TEST_CASE("rounds: lower is better turns the ratio round; the baseline may be any alternative") {
  DecideOptions o = options();
  o.higher_is_better = false;  // a time: b takes 1.3x as long, so b is slower
  o.baseline = "b";
  DecideResult d = plan_decision({"a", "b"}, o);
  CHECK(d.baseline == 1);
  run_rounds(d, steady({1.0, 1.3}), nullptr);
  REQUIRE(d.decisions.size() == 1);
  CHECK(d.decisions[0].alternative == 0);
  CHECK(d.decisions[0].estimate.verdict == decide::Verdict::Faster);  // a, against b
  CHECK(d.decisions[0].estimate.ratio == doctest::Approx(1.3).epsilon(0.02));
}

TEST_CASE("rounds: a failed run is never data; an alternative failing from the start ends the rounds") {
  SUBCASE("one failed round") {
    DecideResult d = plan_decision({"a", "b"}, options(8));
    int k = 0;
    RunAlternative base = steady({100, 100});
    run_rounds(
        d,
        [&](int a) {
          RoundRun r = base(a);
          if (a == 1 && ++k == 2) r.run = DecisionRun{false, 0, 0.01, "exit 1"};
          return r;
        },
        nullptr);
    REQUIRE(d.rounds.size() >= 7);  // the first look needs 6 rounds of data
    CHECK(!d.rounds[1].ok());
    CHECK(d.decisions[0].rounds == static_cast<int>(d.rounds.size()) - 1);
    CHECK(d.decisions[0].rounds_failed == 1);
    CHECK(d.rounds[1].runs[1].why == "exit 1");
  }
  SUBCASE("failing every time") {
    DecideResult d = plan_decision({"a", "b"}, options());
    RunAlternative base = steady({100, 100});
    run_rounds(
        d,
        [&](int a) {
          RoundRun r = base(a);
          if (a == 1) r.run = DecisionRun{false, 0, 0.01, "exit 1"};
          return r;
        },
        nullptr);
    CHECK(d.rounds.size() == 3);
    CHECK(d.stopped == "failed");
    CHECK(d.stop_detail == "B (b) failed in each of its first 3 runs: exit 1");
  }
  SUBCASE("fatal: the round ends, and the rounds") {
    DecideResult d = plan_decision({"a", "b"}, options());
    run_rounds(
        d,
        [](int a) {
          RoundRun r;
          if (a == 1)
            r.fatal = "B: the metric matched nothing";
          else
            r.run = DecisionRun{true, 5, 0.01, ""};
          return r;
        },
        nullptr);
    CHECK(d.rounds.size() == 1);
    CHECK(d.rounds[0].runs[0].ok);  // what was measured stays
    CHECK(d.stopped == "failed");
  }
}

TEST_CASE("rounds: --max-time begins no round that would end past it") {
  DecideOptions o = options();
  o.max_time_s = 0.5;
  DecideResult d = plan_decision({"a", "b"}, o);
  int k = 0;
  const auto start = std::chrono::steady_clock::now();
  run_rounds(
      d,
      [&](int a) {  // b swings 0.6x to 1.4x: undecided for many rounds
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
        RoundRun r;
        r.run = DecisionRun{true, a == 0 ? 100.0 : (++k % 2 ? 60.0 : 140.0), 0.01, ""};
        return r;
      },
      nullptr);
  CHECK(d.stopped == "max-time");
  CHECK(d.rounds.size() >= 2);
  CHECK(d.rounds.size() < 30);
  CHECK(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() < 2);
}

TEST_CASE("rounds: what a decision asks is checked before anything runs") {
  CHECK_THROWS_WITH_AS(plan_decision({"a"}, options()),
                       "a decision needs two alternatives or more, got 1 (give a list, more jobs or another command: "
                       "the first is the baseline)",
                       SetupError);
  DecideOptions o = options();
  o.settings.margin = 1.0;
  CHECK_THROWS_WITH_AS(plan_decision({"a", "b"}, o),
                       doctest::Contains("--margin expects a percentage above 0% and below 100%"), SetupError);
  o = options(5);
  CHECK_THROWS_WITH_AS(plan_decision({"a", "b"}, o), doctest::Contains("--max-rounds expects 6 to 1000"), SetupError);
  o = options();
  o.expect = {"Z>=1.1"};
  CHECK_THROWS_WITH_AS(plan_decision({"a", "b"}, o), "--expect Z>=1.1: 'Z' is not an alternative: A (a), B (b)",
                       SetupError);
  o.expect = {"a>=1.1"};
  CHECK_THROWS_WITH_AS(plan_decision({"a", "b"}, o), doctest::Contains("is the baseline"), SetupError);
  o.expect = {"b>=1.1"};
  o.noninferior = 0.9;
  DecideResult d = plan_decision({"a", "b", "c"}, o);
  REQUIRE(d.questions.size() == 3);
  CHECK(d.questions[0].empty());
  CHECK(d.questions[1].size() == 2);  // its own and --noninferior
  CHECK(d.questions[2].size() == 1);
  CHECK(alternative_label(0) == "A");
  CHECK(alternative_label(27) == "B2");
}

TEST_CASE("rounds: a decision in the result file: every field read back, the same text written again") {
  DecideOptions o = options();
  o.expect = {"B>=1.05", "C<=0.9"};
  o.metric = "regex", o.pattern = "rate: ([0-9]+)";
  DecideResult d = plan_decision({"cmd a", "cmd b --password=hunter22", "cmd c"}, o);
  d.alternatives[1].reset = "none";
  run_rounds(d, steady({100, 125, 100}), nullptr);
  d.rounds[0].runs[2].steal = 0.3, d.rounds[0].runs[0].steal = 0.01;  // diagnostics with something to say
  d.rounds[1].runs[1].client_bound = true;
  decide_rounds(d, decide::Schedule(d.settings));
  RunResult run = with_decision(d);
  redact_result(run);
  const std::string text = result_text(run);
  CHECK(text.find("hunter22") == std::string::npos);
  const nlohmann::json doc = nlohmann::json::parse(text);
  REQUIRE(doc.contains("decisions"));
  CHECK(doc["decisions"].size() == 2);
  CHECK(!doc.contains("decision"));  // two compared: the list alone
  const nlohmann::json& b = doc["decisions"][0];
  CHECK(b["alternative"] == "B");
  CHECK(b["baseline"] == "cmd a");
  CHECK(b["verdict"] == "faster");
  CHECK(b["ci"].size() == 2);
  CHECK(b["ci"][0].get<double>() < b["ratio"].get<double>());
  CHECK(b["questions"][0]["question"] == "B>=1.05");
  CHECK(b["questions"][0]["outcome"] == "met");
  CHECK(doc["decide"]["rounds"].size() == d.rounds.size());
  RunResult back = parse_result(text, "d.json");
  CHECK(result_text(back) == text);
  REQUIRE(back.decide);
  REQUIRE(back.decide->decisions.size() == 2);
  const Decision& x = back.decide->decisions[0];
  CHECK(x.estimate.verdict == decide::Verdict::Faster);
  CHECK(x.estimate.lo == d.decisions[0].estimate.lo);
  CHECK(x.diagnostics.client_bound == std::vector<int>{2});
  CHECK(back.decide->decisions[1].diagnostics.steal_apart == std::vector<int>{1});
  CHECK(back.decide->questions[2].size() == 1);
  CHECK(back.decide->alternatives[1].name == "cmd b --password=***");
  // A file whose decision is damaged is refused, naming the field.
  nlohmann::json bad = doc;
  bad["decisions"][0]["verdict"] = "level with";
  CHECK_THROWS_WITH_AS(parse_result(bad.dump(), "d.json"),
                       "d.json: decisions[0].verdict: 'level with' is not a verdict of a decision", SetupError);
  bad = doc;
  bad["decide"]["rounds"][0]["runs"].erase(0);
  CHECK_THROWS_WITH_AS(parse_result(bad.dump(), "d.json"), doctest::Contains("expected a run per alternative"),
                       SetupError);
  // one comparison: "decision" too
  DecideResult two = plan_decision({"a", "b"}, options());
  run_rounds(two, steady({100, 80}), nullptr);
  const nlohmann::json one = nlohmann::json::parse(result_text(with_decision(two)));
  CHECK(one["decision"]["verdict"] == "slower");
  CHECK(one["decisions"].size() == 1);
}

TEST_CASE("rounds: the jobs are the alternatives (null -c 1,2): their runs, the decision in each row, the words") {
  Job a = test::make_job("null", "nop", 3000, 1), b = test::make_job("null", "nop", 3000, 2);
  a.name = "null nop c=1", b.name = "null nop c=2";
  DecideOptions o = options(6);
  o.gate = true;
  RunResult run = run_decision({a, b}, RunOptions{"cli-null", "null --decide", false, 1}, o);
  REQUIRE(run.decide);
  const DecideResult& d = *run.decide;
  CHECK(d.rounds.size() >= 6);
  REQUIRE(run.jobs.size() == 2);
  CHECK(run.jobs[0].repeats.size() == d.rounds.size());  // every round's run kept, as --repeat keeps them
  CHECK(d.alternatives[1].job == 1);
  CHECK(d.alternatives[0].reset == "nothing to reset: no target");
  CHECK(d.rounds[0].runs[0].ok);
  CHECK(d.rounds[0].runs[0].value == run.jobs[0].repeats[0].rps);
  CHECK(d.rounds[0].runs[0].cpu_self > 0);  // the profile's CPU per op
  CHECK(!run.gate.empty());
  const std::string text = result_text(run);
  const nlohmann::json doc = nlohmann::json::parse(text);
  CHECK(!doc["jobs"][0].contains("decision"));  // the baseline
  CHECK(doc["jobs"][1]["decision"]["alternative"] == "B");
  CHECK(doc["jobs"][1]["decision"]["baseline"] == "null nop c=1");
  RunResult back = parse_result(text, "null.json");
  CHECK(result_text(back) == text);
  const std::string table = format_table(back, Detail::Full);
  CHECK(table.find("decision: req/s (higher is better), margin 5%, ") != std::string::npos);
  CHECK(table.find("  A  null nop c=1  baseline") != std::string::npos);
  CHECK(table.find("  B  null nop c=2  ") != std::string::npos);
  CHECK(table.find("diagnostics against A:") != std::string::npos);
  CHECK(table.find("reset before each run: nothing to reset: no target") != std::string::npos);
  // by default (no -v) the verdicts alone: no diagnostics, no method
  const std::string glance = format_table(back);
  CHECK(glance.find("  B  null nop c=2  ") != std::string::npos);
  CHECK(glance.find("diagnostics against A:") == std::string::npos);
  CHECK(glance.find("\nmethod: ") == std::string::npos);
  // compare shows a file's own decision; the HTML draws it
  back.label = "null.json";
  CHECK(format_compare({back, back}).find("null.json decided:\n  decision: req/s") != std::string::npos);
  const std::string html = render_html({back});
  CHECK(html.find("<h2 id=\"decision\">Decision</h2>") != std::string::npos);
  CHECK(html.find("class=\"chart forest\"") != std::string::npos);
  CHECK(html.find("decided over " + std::to_string(d.rounds.size()) + " paired rounds") != std::string::npos);
}

TEST_CASE("rounds: a job whose set-up fails ends the rounds; what ran is kept") {
  Job a = test::make_job("null", "nop", 1000, 1), b = test::make_job("sqlite", "insert", 100, 1);
  b.opts["path"] = "/nonexistent/mwbench-decide";
  RunResult run = run_decision({a, b}, RunOptions{"cli", "x", false, 1}, options());
  REQUIRE(run.decide);
  CHECK(run.decide->stopped == "failed");
  CHECK(run.decide->stop_detail.find("sqlite insert: setup-failed: ") == 0);
  CHECK(run.decide->rounds.size() == 1);
  CHECK(exit_code(run) == 2);
  REQUIRE(run.jobs.size() == 2);
  CHECK(run.jobs[0].state == JobResult::State::Done);
}

TEST_CASE("rounds: a job's run as a decision reads it") {
  JobResult r = test::done_result("null", "nop", "x", 5000);
  r.profile.taken = true, r.profile.ops = 100, r.profile.self.user_s = 0.001, r.profile.steal_share = 0.2;
  r.profile.suspect = true;
  DecisionRun x = decision_run(r, "rps");
  CHECK(x.ok);
  CHECK(x.value == 5000);
  CHECK(x.steal == 0.2);
  CHECK(x.client_bound);
  CHECK(x.cpu_self == doctest::Approx(1e-5));
  CHECK(x.cpu_servers == -1);
  CHECK(decision_run(r, "cpu").value == doctest::Approx(1e-5));
  CHECK(decision_run(r, "p99").value == latency_at(r, 99));
  r.ops_failed = 3;
  x = decision_run(r, "rps");
  CHECK(!x.ok);
  CHECK(x.why == "3 ops failed, 0 not run");
}

TEST_CASE("rounds: a stopped or timed-out command is asked to end first, then killed") {
  test::TempDir dir;
  const std::string flag = dir.path + "/cleaned";
  // stopped: SIGTERM reaches the group, and its clean-up runs before mwbench goes on
  std::thread stopper([] {
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    stop_requested() = true;
  });
  auto t0 = std::chrono::steady_clock::now();
  CommandRun r = run_command("trap 'echo done > " + flag + "; exit 3' TERM; echo up; sleep 30 & wait", "", 60);
  stopper.join();
  stop_requested() = false;
  CHECK(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() < 3);
  CHECK(r.stopped);
  CHECK(r.exit_code == 3);
  CHECK(std::filesystem::exists(flag));
  // a command that closed its output and runs on: ended at its timeout, not waited for
  t0 = std::chrono::steady_clock::now();
  r = run_command("exec >/dev/null 2>&1; sleep 30", "", 0.5);
  CHECK(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() < 3);
  CHECK(r.timed_out);
  CHECK(r.why().find("timed out after") == 0);
  // one that ignores SIGTERM: killed once the grace is over
  t0 = std::chrono::steady_clock::now();
  r = run_command("trap '' TERM; echo up; while :; do sleep 0.1; done", "", 0.5);
  const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  CHECK(took >= kEndGraceS);
  CHECK(took < kEndGraceS + 3);
  CHECK(r.timed_out);
  CHECK(r.signal == SIGKILL);
}
