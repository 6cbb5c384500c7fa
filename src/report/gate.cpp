// The baseline gate: which rows of a run are slower than the baseline by more than allowed.
#include "report/gate.h"

#include "report/report.h"
#include "util/text.h"

namespace mw {

namespace {

std::string pct(double fraction) { return fmt(fraction * 100, fraction * 100 < 1 ? 2 : 0) + "%"; }

// "req/s 0.80 (0.74-0.86, p=0.0002, 10 vs 10 runs): slower"
std::string describe(const char* what, const Comparison& c) {
  std::string s = std::string(what) + " " + fmt(c.ratio, 2);
  if (c.method == Comparison::Method::MannWhitney)
    s += " (95% CI " + fmt(*c.lo, 2) + "-" + fmt(*c.hi, 2) + ", p=" + p_text(*c.p) + ", " +
         std::to_string(c.runs_base) + " vs " + std::to_string(c.runs_new) + " runs)";
  else if (c.method == Comparison::Method::MinMax)
    s += " (min-max of " + std::to_string(c.runs_base) + " vs " + std::to_string(c.runs_new) + " runs)";
  else
    s += " (single runs: the threshold alone)";
  return s + ": " + verdict_word(c);
}

// Beyond the threshold: significantly worse (or, for single runs, merely worse) by more than it.
bool regressed(const Comparison& c, double threshold, bool higher_is_better) {
  bool beyond = higher_is_better ? c.ratio < 1 - threshold : c.ratio > 1 + threshold;
  if (!beyond) return false;
  return c.method == Comparison::Method::Single || c.kind == Comparison::Kind::Slower;
}

// A searched baseline row's rate can be gated against: one whose repeats all passed, or none
// found (nothing can fall below it). An unconfirmed rate is at the edge, and a client-bound or
// interrupted search measured no rate of the target's.
bool baseline_rate(const Capacity& c) {
  return c.verdict == CapacityVerdict::None || (c.verdict == CapacityVerdict::Found && c.confirmed);
}

// "K of N baseline rows WHY: 'a', 'b'" for the baseline rows the gate passed over, if any.
void ungated(std::string& text, const std::vector<std::string>& names, const RunResult& base, const std::string& why) {
  if (names.empty()) return;
  std::string list;
  for (auto& n : names) list += (list.empty() ? "'" : ", '") + n + "'";
  text += printable(std::to_string(names.size()) + " of " + std::to_string(base.jobs.size()) + " baseline rows " + why +
                    ": " + list) +
          "\n";
}

}  // namespace

GateResult gate(const RunResult& base, const RunResult& now, const GateOptions& opts) {
  GateResult out;
  std::string head = "gate against " + base.label + ":";
  if (opts.max_regression) head += " req/s at most " + pct(*opts.max_regression) + " lower";
  if (opts.max_regression && opts.max_latency_regression) head += ",";
  if (opts.max_latency_regression) head += " p99 at most " + pct(*opts.max_latency_regression) + " higher";
  out.text = printable(head) + "\n";
  std::vector<MatchedJob> rows = match_jobs(std::vector<const RunResult*>{&base, &now});
  size_t width = 0, bad = 0, judged = 0;
  std::vector<std::string> unmatched;         // baseline rows the run has no job for
  std::vector<std::string> unconfirmed_base;  // searched baseline rows with no confirmed rate
  for (auto& m : rows) width = std::max(width, printable(m.name).size());
  for (auto& m : rows) {
    std::string line = "  " + printable(m.name) + std::string(width - printable(m.name).size(), ' ') + "  ";
    const JobResult* b = m.index[0] >= 0 ? &base.jobs[static_cast<size_t>(m.index[0])] : nullptr;
    const JobResult* n = m.index[1] >= 0 ? &now.jobs[static_cast<size_t>(m.index[1])] : nullptr;
    if (!b || !n) {
      out.text += line + printable(b ? "no match in " + now.label : "only in " + now.label) + ": not gated\n";
      if (b) unmatched.push_back(m.name);
      continue;
    }
    if (!ran(*b) || !ran(*n)) {
      const JobResult* idle = ran(*b) ? n : b;
      out.text +=
          line + printable((ran(*b) ? now.label : base.label) + " " + state_name(idle->state)) + ": not gated\n";
      continue;
    }
    const bool searched = b->capacity && n->capacity;  // --find-max rows: the found rate is the figure
    if (searched && !baseline_rate(*b->capacity)) {
      out.text +=
          line + printable(capacity_change(*b, *n) + "; " + base.label + " has no confirmed rate: not gated") + "\n";
      unconfirmed_base.push_back(m.name);
      continue;
    }
    ++judged;
    std::vector<std::string> why;
    std::string said;
    if (searched) {
      said = capacity_change(*b, *n);
      const Capacity &bc = *b->capacity, &nc = *n->capacity;
      if (opts.max_regression && bc.verdict == CapacityVerdict::Found &&
          (nc.verdict != CapacityVerdict::Found || nc.max_rps < (1 - *opts.max_regression) * bc.max_rps))
        why.push_back("max at SLO more than " + pct(*opts.max_regression) + " lower");
      if (bc.verdict == CapacityVerdict::Found && unconfirmed(*n)) why.push_back("max at SLO not confirmed");
    } else if (opts.max_regression) {
      Comparison c = judge_rps(*b, *n);
      said = describe("req/s", c);
      if (regressed(c, *opts.max_regression, true))
        why.push_back("req/s more than " + pct(*opts.max_regression) + " lower");
    }
    if (opts.max_latency_regression) {
      Comparison c = judge_p99(*b, *n);
      said += (said.empty() ? "" : "; ") + describe("p99", c);
      if (regressed(c, *opts.max_latency_regression, false))
        why.push_back("p99 more than " + pct(*opts.max_latency_regression) + " higher");
    }
    std::string verdict = why.empty() ? "ok" : "REGRESSION: ";
    for (size_t i = 0; i < why.size(); ++i) verdict += (i ? ", " : "") + why[i];
    bad += !why.empty();
    out.text += line + said + "; " + verdict + "\n";
  }
  ungated(out.text, unmatched, base, "have no job of the same name in " + now.label + " (not gated)");
  ungated(out.text, unconfirmed_base, base,
          "searched with --find-max have no confirmed rate in " + base.label +
              " (not gated; search them again for a baseline)");
  out.failed = bad > 0;
  out.text += out.failed ? "gate FAILED: " + std::to_string(bad) + " of " + std::to_string(judged) + " rows regressed\n"
                         : "gate passed: " + std::to_string(judged) + " rows within the thresholds\n";
  return out;
}

}  // namespace mw
