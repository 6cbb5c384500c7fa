// --find-max in the terminal and Markdown reports: the "max at SLO" cell, the notes under the
// table and a table of every step of the search.
#include <algorithm>

#include "report.h"

namespace mw {

namespace {

std::string ms(double ns) { return fmt(ns / 1e6, 3); }

// How long the search took, and its own set-up between steps as a share of the time it measured.
std::string timing(const Capacity& c) {
  if (c.elapsed_s <= 0 || c.steps.empty()) return "";
  double setup = 0;
  for (const CapacityStep& s : c.steps) setup += s.setup_s;
  const double measured = c.step_s * static_cast<double>(c.steps.size());
  return " in " + fmt(c.elapsed_s, 1) + " s (set-up between steps " + fmt(setup / measured * 100, 2) +
         "% of the step time)";
}

std::string times(int n) { return n == 1 ? "once" : std::to_string(n) + " times"; }

}  // namespace

bool has_capacity(const RunResult& r) {
  return std::any_of(r.jobs.begin(), r.jobs.end(), [](const JobResult& j) { return j.capacity != nullptr; });
}

std::string capacity_cell(const JobResult& j) {
  if (!j.capacity) return "-";
  const Capacity& c = *j.capacity;
  if (c.verdict == "found") {  // "confirmed" when every repeat at the rate passed, else how many did
    const std::string passed = c.confirmed ? " confirmed"
                                           : ", " + std::to_string(c.repeats_passed) + " of " +
                                                 std::to_string(c.repeats) + " passed";
    return fmt(c.max_rps, 1) + passed +
           (c.repeats ? " (" + fmt(c.repeat_min, 0) + "-" + fmt(c.repeat_max, 0) + ")" : "");
  }
  return c.verdict == "none" ? "none" : c.verdict;
}

std::vector<std::string> capacity_notes(const JobResult& j, const std::string& name) {
  std::vector<std::string> out;
  if (!j.capacity) return out;
  const Capacity& c = *j.capacity;
  const std::string steps = std::to_string(c.steps.size()) + " steps of " + fmt(c.step_s, 2) + " s" + timing(c);
  const std::string fail = c.first_fail > 0 ? "; first failing rate " + fmt(c.first_fail, 1) + " req/s: " + c.fail_why : "";
  if (c.verdict == "found") {
    std::string s = "max at SLO: " + name + ": " + fmt(c.max_rps, 1) + " req/s at " + c.slo;
    if (c.repeats)
      s += std::string(c.confirmed ? ", confirmed" : "") + " (" + std::to_string(c.repeats_passed) + " of " +
           std::to_string(c.repeats) + " repeats passed, achieved " + fmt(c.repeat_min, 1) + "-" +
           fmt(c.repeat_max, 1) + " req/s)";
    if (c.step_downs > 0)
      s += "; stepped down " + times(c.step_downs) + " from " + fmt(c.searched_rps, 1) +
           " req/s, which had passed once in the search";
    // the bracket it ended with: within --find-precision, unless the steps ran out first
    const std::string bracket = c.first_fail > 0 ? ", bracket within " + fmt((c.first_fail / c.max_rps - 1) * 100, 1) + "%"
                                                 : ", no failing rate within the steps";
    out.push_back(s + fail + "; " + steps + bracket);
    if (!c.confirmed && c.repeats == 0)
      out.push_back("warning: " + name + ": not confirmed: " + fmt(c.max_rps, 1) + " req/s passed once, never repeated");
    else if (!c.confirmed)
      out.push_back("warning: " + name + ": not confirmed: " + fmt(c.max_rps, 1) + " req/s missed the SLO in " +
                    std::to_string(c.repeats - c.repeats_passed) + " of its " + std::to_string(c.repeats) + " repeats" +
                    (c.step_downs > 0 ? " after stepping down " + times(c.step_downs) : "") +
                    ": it is at the edge, not below it (a busy machine, or a target whose capacity varies)");
  } else if (c.verdict == "none") {
    out.push_back("NO RATE MET THE SLO: " + name + ": " + c.slo + ": " + c.fail_why +
                  (c.first_fail > 0 ? " (lowest rate tried " + fmt(c.first_fail, 2) + " req/s)" : "") + "; " + steps);
  } else if (c.verdict == "client-bound") {
    out.push_back("CLIENT-BOUND: " + name + ": at " + fmt(c.first_fail, 1) + " req/s offered, " + c.fail_why + "; " +
                  c.advice + (c.max_rps > 0 ? " (" + fmt(c.max_rps, 1) + " req/s had passed, below the limit)" : "") +
                  "; " + steps);
  } else {
    out.push_back("interrupted: " + name + ": the capacity search stopped after " + steps);
  }
  return out;
}

std::vector<std::vector<std::string>> capacity_rows(const RunResult& r) {
  std::vector<std::vector<std::string>> rows;
  for (auto& j : r.jobs) {
    if (!j.capacity) continue;
    if (rows.empty())
      rows.push_back({"job", "step", "offered/s", "achieved/s", "p50 ms", "p99 ms", "p99.9 ms", "errors", "lag p99 ms",
                      "cpu", "loop busy", "verdict"});
    for (const CapacityStep& s : j.capacity->steps)
      rows.push_back({j.job.name, s.kind, s.offered > 0 ? fmt(s.offered, 1) : "closed", fmt(s.achieved, 1),
                      ms(s.p50_ns), ms(s.p99_ns), ms(s.p999_ns), std::to_string(s.errors), ms(s.lag_p99_ns),
                      fmt(s.cpu, 2), fmt(s.loop_busy * 100, 0) + "%", s.verdict.empty() ? "estimate" : s.verdict});
  }
  for (auto& row : rows)
    for (auto& c : row) c = printable(c);
  return rows;
}

}  // namespace mw
