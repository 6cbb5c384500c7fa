// Is a job of one run faster or slower than the same job of another (significance over the
// repeats), and the baseline gate built on it (`compare --max-regression`, `run --baseline`).
#pragma once
#include <optional>
#include <string>
#include <vector>

#include "results/results.h"

namespace mw {

// Runs of at least this many repeats (in both files) are judged by the Mann-Whitney U test;
// fewer by the min-max rule; single runs not at all.
constexpr size_t kMinSignificanceRuns = 5;
constexpr double kSignificance = 0.05;  // two-sided
constexpr double kConfidence = 0.95;    // of the ratio's interval

struct Comparison {
  enum class Kind { Unknown, Faster, Slower, Same } kind = Kind::Unknown;
  enum class Method { Single, MinMax, MannWhitney } method = Method::Single;
  double ratio = 0;                 // new / base (Hodges-Lehmann for Mann-Whitney, else medians)
  std::optional<double> lo, hi, p;  // Mann-Whitney only: the ratio's interval and the p-value
  size_t runs_base = 0, runs_new = 0;
};

// The figures a verdict is drawn from: each repeat's (or the one run's) req/s, or p99 in ns.
std::vector<double> rps_runs(const JobResult& j);
std::vector<double> p99_runs(const JobResult& j);

// higher_is_better: req/s (a ratio above 1 is faster); p99 is the other way round.
Comparison judge(const std::vector<double>& base, const std::vector<double>& now, bool higher_is_better);
Comparison judge_rps(const JobResult& base, const JobResult& now);
Comparison judge_p99(const JobResult& base, const JobResult& now);

// "faster", "slower", "no significant difference", or "-" (single runs).
std::string verdict_word(const Comparison& v);
// "0.0003", "<0.0001".
std::string p_text(double p);

struct GateOptions {
  std::optional<double> max_regression;          // fraction: 0.1 for "10%"
  std::optional<double> max_latency_regression;  // fraction of p99
  bool any() const { return max_regression || max_latency_regression; }
};
// "10%", "10" (percent) or "0.1%": a fraction in (0, 1000%], and below `below` (a fall of req/s
// by 100% or more cannot happen: --max-regression passes 1). Throws SetupError naming `option`.
double parse_threshold(const std::string& text, const std::string& option, double below = 1e9);

struct GateResult {
  bool failed = false;  // some row regressed beyond a threshold
  std::string text;     // a line per row with its verdict, and the outcome
};
// Every row of `now` against `base`, rows matched as in compare (by name).
// A row regresses when it is slower (req/s lower; with max_latency_regression, p99 higher)
// by more than the threshold and the difference is significant (K >= 5 in both: Mann-Whitney
// p < 0.05; 2-4 runs: min-max ranges apart; single runs: the threshold alone). Rows only one
// side has, or that did not run on one side, are listed and not gated; baseline rows with no
// match are named once more at the end. Rows both sides searched (--find-max) are judged by
// their found rates: a baseline row with no confirmed rate (some repeats missed, or its search
// ended client-bound) is not gated and named at the end; a run's row whose rate is not confirmed,
// against a baseline that found one, fails ("max at SLO not confirmed").
GateResult gate(const RunResult& base, const RunResult& now, const GateOptions& opts);

}  // namespace mw
