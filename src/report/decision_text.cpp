// A decision in words (decision.h): a header line, one line per alternative with its verdict,
// ratio and interval (and its questions' answers), then the diagnostics against the baseline.
#include <cmath>

#include "report/report.h"
#include "results/decision.h"
#include "util/text.h"

namespace mw {

namespace {

std::string x3(double v) { return fmt(v, 3) + "x"; }
std::string pct(double v, int decimals = 1) { return fmt(v * 100, decimals) + "%"; }

std::string metric_words(const DecideResult& d) {
  std::string m = d.metric == "rps"    ? "req/s"
                  : d.metric == "p99"  ? "p99 latency"
                  : d.metric == "cpu"  ? "CPU per op (mwbench and the servers it manages)"
                  : d.metric == "wall" ? "wall time"
                                       : "the figure of /" + d.pattern + "/";
  return m +
         (d.higher_is_better ? " (higher is better)" : " (lower is better; ratios turned round: above 1 is better)");
}

std::string rounds_list(const std::vector<int>& v) {
  std::string s;
  for (size_t i = 0; i < v.size() && i < 12; ++i) s += (i ? ", " : "") + std::to_string(v[i]);
  return s + (v.size() > 12 ? ", ... (" + std::to_string(v.size()) + " in all)" : "");
}

std::string cpu_text(double self, double servers, bool jobs) {
  if (self < 0) return "";
  std::string s = jobs ? fmt(self * 1e6, 2) + " us" : fmt(self, 3) + " s";
  if (servers >= 0) s += " (servers " + (jobs ? fmt(servers * 1e6, 2) + " us" : fmt(servers, 3) + " s") + ")";
  return s;
}

}  // namespace

std::string verdict_text(const DecideResult& d, const Decision& x) {
  const decide::Estimate& e = x.estimate;
  std::string v = decide::verdict_name(e.verdict);
  if (e.verdict != decide::Verdict::Undecided) return v;
  if (!e.looked) return v + " (fewer than " + std::to_string(d.settings.min_rounds) + " rounds)";
  std::string why = e.lo > 1 || e.hi < 1 ? "differs from 1, margin not settled; " : "";
  return v + " (" + why +
         (e.rounds_needed > 0
              ? "about " + std::to_string(e.rounds_needed) + " rounds at this spread"
              : "near the margin: not within " + std::to_string(decide::kMaxRounds * 10) + " rounds at this spread") +
         ")";
}

std::string decision_line(const DecideResult& d, const Decision& x) {
  const decide::Estimate& e = x.estimate;
  const Alternative& a = d.alternatives[static_cast<size_t>(x.alternative)];
  std::string s = a.label + "  " + a.name + "  " + verdict_text(d, x) + "  " + x3(e.ratio);
  if (e.looked) s += " (" + x3(e.lo) + "-" + x3(e.hi) + ")";
  if (e.robust) s += ", robust " + x3(e.hl.estimate) + " (" + x3(e.hl.lo) + "-" + x3(e.hl.hi) + ")";
  if (e.disagree)
    s += " DISAGREE: the signed-rank check says " + std::string(decide::verdict_name(e.robust_verdict)) +
         " (a round far from the rest: see the diagnostics)";
  for (const Asked& q : x.asked)
    s += "; " + a.label + decide::question_text(q.question) + ": " + decide::outcome_name(q.outcome);
  s += "  [" + std::to_string(x.rounds) + " rounds" +
       (x.rounds_failed ? ", " + std::to_string(x.rounds_failed) + " failed" : "") + "]";
  return s;
}

std::vector<std::string> decision_lines(const DecideResult& d, bool quiet) {
  std::vector<std::string> out;
  const Alternative& base = d.alternatives[static_cast<size_t>(d.baseline)];
  int failed = 0;
  for (auto& r : d.rounds) failed += !r.ok();
  out.push_back("decision: " + metric_words(d) + ", margin " + pct(d.settings.margin, 0) + ", " +
                std::to_string(d.rounds.size()) + " rounds" +
                (failed ? " (" + std::to_string(failed) + " failed)" : "") + " of at most " +
                std::to_string(d.settings.max_rounds) + ": " + stop_text(d) + " (" + fmt(d.elapsed_s, 1) + " s)");
  out.push_back("  " + base.label + "  " + base.name + "  baseline");
  for (const Decision& x : d.decisions) out.push_back("  " + decision_line(d, x));
  if (quiet) return out;
  const bool jobs = base.job >= 0 || d.metric == "rps" || d.metric == "p99" || d.metric == "cpu";
  out.push_back("diagnostics against " + base.label + ":");
  for (const Decision& x : d.decisions) {
    const DecisionDiagnostics& g = x.diagnostics;
    const std::string& label = d.alternatives[static_cast<size_t>(x.alternative)].label;
    std::string s = "  " + label + ": paired spread of ln ratio " + pct(g.sd_d) + " against each side's own " +
                    pct(g.cov) + " and " + pct(g.cov_baseline) + " (CoV of its runs)";
    if (g.rounds_first && g.rounds_second)
      s += "; order: " + x3(g.ratio_first) + " when " + label + " ran first, " + x3(g.ratio_second) + " second";
    s += "; trend " + (g.trend >= 0 ? std::string("+") : std::string("")) + pct(std::expm1(g.trend), 2) + " a round";
    if (g.steal_max >= 0) s += "; steal up to " + pct(g.steal_max);
    if (!g.steal_apart.empty())
      s += "; steal " + fmt(kStealApart * 100, 0) + "+ points apart in rounds " + rounds_list(g.steal_apart);
    if (!g.client_bound.empty())
      s += "; client-bound in rounds " + rounds_list(g.client_bound) + " (the figure measures mwbench)";
    if (std::string c = cpu_text(g.cpu_self, g.cpu_servers, jobs); !c.empty())
      s += std::string(jobs ? "; CPU per op " : "; CPU per run ") + c + ", " + base.label + " " +
           cpu_text(g.cpu_self_baseline, g.cpu_servers_baseline, jobs);
    out.push_back(s);
  }
  bool same = true;  // one line when every alternative's set-up resets alike
  for (auto& a : d.alternatives) same &= a.reset == base.reset;
  for (auto& a : d.alternatives)
    if (!a.reset.empty() && (!same || &a == &base))
      out.push_back("  reset before each run" + (same ? std::string() : " of " + a.label) + ": " + a.reset);
  out.push_back("method: " + decision_method(d));
  return out;
}

}  // namespace mw
