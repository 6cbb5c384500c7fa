// --find-max in the terminal and Markdown reports: the "max at SLO" cell and a table of every step
// of the search (its notes, and the warning of a found rate at the edge: results/notes.cpp).
#include <algorithm>

#include "report/report.h"

namespace mw {

namespace {

std::string ms(double ns) { return fmt(ns / 1e6, 3); }

}  // namespace

bool has_capacity(const RunResult& r) {
  return std::any_of(r.jobs.begin(), r.jobs.end(), [](const JobResult& j) { return j.capacity != nullptr; });
}

std::string capacity_cell(const JobResult& j) {
  if (!j.capacity) return "-";
  const Capacity& c = *j.capacity;
  if (c.verdict == CapacityVerdict::Found) {  // "confirmed" when every repeat at the rate passed, else how many did
    const std::string passed =
        c.confirmed ? " confirmed"
                    : ", " + std::to_string(c.repeats_passed) + " of " + std::to_string(c.repeats) + " passed";
    return fmt(c.max_rps, 1) + passed +
           (c.repeats ? " (" + fmt(c.repeat_min, 0) + "-" + fmt(c.repeat_max, 0) + ")" : "");
  }
  return capacity_verdict_name(c.verdict);
}

std::vector<std::vector<std::string>> capacity_rows(const RunResult& r) {
  std::vector<std::vector<std::string>> rows;
  for (auto& j : r.jobs) {
    if (!j.capacity) continue;
    if (rows.empty())
      rows.push_back({"job", "step", "offered/s", "achieved/s", "p50 ms", "p99 ms", "p99.9 ms", "errors", "lag p99 ms",
                      "cpu", "loop busy", "verdict"});
    for (const CapacityStep& s : j.capacity->steps)
      rows.push_back({j.job.name, step_kind_name(s.kind), s.offered > 0 ? fmt(s.offered, 1) : "closed",
                      fmt(s.achieved, 1), ms(s.p50_ns), ms(s.p99_ns), ms(s.p999_ns), std::to_string(s.errors),
                      ms(s.lag_p99_ns), fmt(s.cpu, 2), fmt(s.loop_busy * 100, 0) + "%",
                      s.verdict == StepVerdict::None ? "estimate" : step_verdict_name(s.verdict)});
  }
  for (auto& row : rows)
    for (auto& c : row) c = printable(c);
  return rows;
}

}  // namespace mw
