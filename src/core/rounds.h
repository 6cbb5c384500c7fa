// Decisions (issue 41): rounds above the runner. A round runs every alternative once, in a fresh
// random order balanced so that each goes first equally often (decide::RoundOrder); each run is
// the alternative's whole run (its own set-up, the same warm-up, its measurement, its teardown),
// so each starts from the state its adapter's set-up makes (AdapterSpec::reset says what that is).
// After each round the decision looks again (decision.h, decide_stats.h), and the rounds end when
// every alternative is decided, or at the budget (--max-rounds, --max-time), or when stopped.
#pragma once
#include <functional>
#include <string>
#include <vector>

#include "core/runner.h"
#include "results/decision.h"
#include "results/result.h"

namespace mw {

// What a decision asks (the command line's --decide options, checked).
struct DecideOptions {
  decide::Settings settings;
  double max_time_s = 0;       // 0: none
  std::string metric = "rps";  // jobs: "rps", "p99" or "cpu"; commands: "wall" or "regex"
  std::string pattern;         // "regex": the pattern
  bool higher_is_better = true;
  std::string baseline;             // an alternative's label or name; "": the first
  std::vector<std::string> expect;  // --expect NAME>=RATIO, as given
  double noninferior = 0;           // --noninferior RATIO (0: not asked)
  bool drop_caches = false;         // --drop-caches: before each run (root)
  bool gate = false;                // --gate: exit 3 on a slower verdict or a question not met
  uint64_t seed = 0;                // of the round orders; 0: from the clock
};

// The alternatives' labels: A, B, ..., Z, then A2, B2, ...
std::string alternative_label(size_t i);
// A decision's frame: its settings, alternatives, baseline and questions, checked (the baseline
// and each --expect name an alternative by label or name; margin in (0, 100%)); throws
// SetupError naming the option.
DecideResult plan_decision(const std::vector<std::string>& names, const DecideOptions& o);

// One run of alternative `a`: the figures, and a fatal reason to stop every round ("" when none:
// an alternative that cannot be measured at all, its set-up failed or its metric is nowhere in
// its output).
struct RoundRun {
  DecisionRun run;
  std::string fatal;
};
using RunAlternative = std::function<RoundRun(int a)>;
// Runs rounds until the decision is settled, the budget ends or a run is fatal; after each round
// `progress` (may be empty) sees the decision so far.
void run_rounds(DecideResult& d, const RunAlternative& run, const std::function<void(const DecideResult&)>& progress);

// After a round, on a terminal (tty): "round 7: B 1.123x undecided C 0.981x equivalent" on
// stderr, in place; tty false clears the line shown (at the end).
void show_progress(const DecideResult& d, bool tty);

// run --decide and an adapter's list with --decide: the jobs are the alternatives. The result
// holds every job once (its median run, every run as its repeats) and the decision (run.decide).
RunResult run_decision(const std::vector<Job>& jobs, const RunOptions& ro, const DecideOptions& o);
// The figure of a job's run a decision reads: req/s, p99 in ns, or CPU seconds per op (mwbench's
// and the managed servers'); ok false (with why) when the run failed or has no such figure.
DecisionRun decision_run(const JobResult& r, const std::string& metric);

// --drop-caches: sync and drop the page cache; throws SetupError naming the option when this
// process may not (not root).
void drop_page_cache();

// The exit code a decision adds: 3 when --gate and a verdict is slower or a question was not
// met; 0 otherwise.
int decision_exit_code(const DecideResult& d, bool gate);
// The gate's line: "decision gate passed", or "decision gate FAILED: B slower; C>=1.05 undecided".
std::string decision_gate_text(const DecideResult& d);

}  // namespace mw
