// Reporters only format a RunResult; they compute nothing the result does not hold.
#pragma once
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "result.h"
#include "text.h"
#include "writer.h"

namespace mw {

std::string format_table(const RunResult& r);     // terminal (default)
std::string format_markdown(const RunResult& r);
std::string format_csv(const RunResult& r);

// Shared by the table and Markdown reporters: one row of cells per job, and the notes below.
// The columns of the summary table; "limited by" when some job of the run has a profile.
std::vector<std::string> summary_header(const RunResult& r);
std::vector<std::string> summary_row(const RunResult& r, const JobResult& j);
// with_warnings false: all but the warnings (the run's, its jobs', "too short"): --quiet's notes.
std::vector<std::string> summary_notes(const RunResult& r, bool with_warnings = true);
std::string context_line(const Context& c);
// A job's resource profile in words ("profile: ...", its lines, "limited by: ..."); none when
// it has none (profile_text.cpp).
bool any_profile(const RunResult& r);
std::vector<std::string> profile_lines(const std::string& name, const JobResult& j);
// What a sync or round-trip latency means for the stores people run ("stores: ..."): none for
// other ops (guidance.cpp; AdapterSpec::latency_is says which ops).
std::vector<std::string> guidance_lines(const std::string& name, const JobResult& j);
// Crash jobs (--crash kill): the durability table's header and rows (none when no job crashed),
// and the notes under it (the kill-is-not-a-power-cut caveat first).
std::vector<std::vector<std::string>> durability_rows(const RunResult& r);
// A crash row's name: the job's name, then those of its settings ("synchronous=full") that the name
// lacks and that differ between the rows of its adapter and op; each setting once. One per row, in order.
struct CrashRow {
  std::string name, adapter, op, setting;
};
std::vector<std::string> crash_row_names(const std::vector<CrashRow>& rows);
std::vector<std::string> crash_row_names(const RunResult& r);  // one per job of r (its name where none crashed)
// A crash job's "killed" cell: "redis-server at 50%", "power cut, redis-server at 50%".
std::string crash_text(const std::string& crash, const std::string& victim, double at);
std::vector<std::string> durability_notes(const RunResult& r);
// A loss in one sentence: "aof-everysec lost 0.8 s of writes" (the durability level, else the job).
std::string loss_sentence(const std::string& job, const std::string& level, double window_s);
// The loss window's cell: "0.8" (seconds), "-" when nothing was lost.
std::string loss_window_text(uint64_t lost, double window_s);

// --find-max: whether any job searched, its "max at SLO" cell ("41230.5 (40950-41400)",
// "client-bound", "none"), the notes under the table, and the table of every step.
bool has_capacity(const RunResult& r);
std::string capacity_cell(const JobResult& j);
std::vector<std::string> capacity_notes(const JobResult& j, const std::string& name);
std::vector<std::vector<std::string>> capacity_rows(const RunResult& r);
// Two --find-max rows of result files: "max at SLO p99<1ms: 41230.0 req/s -> 33800.0 req/s (0.82x)";
// "" unless both searched.
std::string capacity_change(const JobResult& base, const JobResult& now);

}  // namespace mw
