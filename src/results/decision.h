// A decision between alternatives measured in paired rounds (issue 41): what was asked, every
// round's figures, and each alternative's estimate and verdict against the baseline. Plain data:
// core/rounds.cpp fills it for jobs (run --decide, an adapter's list with --decide), app's
// `mwbench decide` for commands; the reporters format it; results.cpp reads it back.
#pragma once
#include <string>
#include <vector>

#include "util/decide_stats.h"

namespace mw {

// One run of one alternative in a round.
struct DecisionRun {
  bool ok = false;            // measured: a failed run is never data (its round is counted failed)
  double value = 0;           // the metric: req/s, p99 in ns, CPU seconds per op, seconds, or the regex's figure
  double wall_s = 0;          // the run's own length
  std::string why;            // not ok: why ("3 ops failed", "exit 1", "the metric matched nothing")
  double steal = -1;          // the machine's steal share over the run (-1: not read)
  bool client_bound = false;  // the job's "limited by" said the client was the limit
  // CPU seconds per op of mwbench and of the servers it manages (-1: not read); a command's own
  // CPU (user + system of it and its children) per run in cpu_self.
  double cpu_self = -1, cpu_servers = -1;
};

struct DecisionRound {
  std::vector<int> order;         // the alternatives in the order they ran
  std::vector<DecisionRun> runs;  // by alternative
  bool ok() const {
    for (auto& r : runs)
      if (!r.ok) return false;
    return !runs.empty();
  }
};

struct Alternative {
  std::string label;  // "A", "B", ... in the order given
  std::string name;   // the job's name, or the command as given (redacted)
  std::string reset;  // what is done before each of its runs (the adapter's declared reset)
  int job = -1;       // run --decide: its row in RunResult::jobs
};

// What the rounds say beside the verdict (the diagnostics of one alternative against the baseline).
struct DecisionDiagnostics {
  double sd_d = 0;                   // the spread of the per-round log ratios (paired)
  double cov = 0, cov_baseline = 0;  // each side's coefficient of variation over its runs (unpaired)
  // The ratio over the rounds in which the alternative ran before the baseline, and after it
  // (0 when none): an order effect is their difference.
  double ratio_first = 0, ratio_second = 0;
  int rounds_first = 0, rounds_second = 0;
  double trend = 0;               // the log ratio's slope per round (a drift between the two)
  double steal_max = -1;          // the highest steal share either side saw in a run (-1: not read)
  std::vector<int> steal_apart;   // rounds (from 1) whose two runs' steal differed by kStealApart or more
  std::vector<int> client_bound;  // rounds (from 1) in which either side was client-bound
  // Means over the measured rounds, per op (jobs) or per run (commands); -1: not read.
  double cpu_self = -1, cpu_servers = -1, cpu_self_baseline = -1, cpu_servers_baseline = -1;
};
constexpr double kStealApart = 0.10;

// A one-sided question asked of an alternative (--expect, --noninferior) and its answer.
struct Asked {
  decide::Question question;
  decide::Outcome outcome = decide::Outcome::Undecided;
};

// One alternative against the baseline.
struct Decision {
  int alternative = 0;
  decide::Estimate estimate;
  std::vector<Asked> asked;
  DecisionDiagnostics diagnostics;
  int rounds = 0;         // rounds of data (measured on both sides)
  int rounds_failed = 0;  // rounds in which either side failed
};

struct DecideResult {
  std::string metric = "rps";  // "rps", "p99", "cpu", "wall", or "regex"
  std::string pattern;         // the regex (metric "regex")
  bool higher_is_better = true;
  decide::Settings settings;
  double max_time_s = 0;  // 0: no time budget
  int baseline = 0;
  std::vector<Alternative> alternatives;
  std::vector<std::vector<decide::Question>> questions;  // by alternative (--expect, --noninferior)
  std::vector<DecisionRound> rounds;
  std::vector<Decision> decisions;  // one per alternative but the baseline, in order
  // Why the rounds ended: "decided" (every alternative), "max-rounds", "max-time", "interrupted",
  // "failed" (an alternative failed in set-up or could not be measured: its runs would never be data)
  std::string stopped;
  std::string stop_detail;  // "failed": what
  double elapsed_s = 0;
  uint64_t seed = 0;  // of the round orders
};

// The method in words, for the result file and the report.
std::string decision_method(const DecideResult& r);
// Every decision (and its diagnostics) made again from the rounds: the estimate of each
// alternative over the rounds in which both it and the baseline were measured.
void decide_rounds(DecideResult& r, const decide::Schedule& s);
// The rounds' one-line summary of why they ended: "every alternative decided", "--max-rounds 30
// reached", ...
std::string stop_text(const DecideResult& r);
// Whether every alternative needs no more rounds.
bool all_settled(const DecideResult& r);

}  // namespace mw
