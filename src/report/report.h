// Reporters only format a RunResult; they compute nothing the result does not hold.
#pragma once
#include <map>
#include <string>
#include <vector>

#include "results/decision.h"
#include "results/notes.h"
#include "results/result.h"
#include "results/writer.h"
#include "util/text.h"

namespace mw {

// What the table and Markdown reporters print under the table. Glance (the default): the durability
// table, and at most one line a job (glance_line) and the run's warnings; Full (-v): every note
// and warning, the --find-max steps, the decision's diagnostics and the machine.
enum class Detail { Glance, Full };
std::string format_table(const RunResult& r, Detail detail = Detail::Glance);  // terminal (default)
std::string format_markdown(const RunResult& r, Detail detail = Detail::Glance);
std::string format_csv(const RunResult& r);

// Result files side by side (compare.cpp): the ratios of each job's figures to the first run's.
std::string format_compare(const std::vector<RunResult>& runs);
// One self-contained HTML page (inline SVG and CSS, a few lines of inline script that sort
// the table; nothing loaded at view time): a verdict per group of jobs, per group req/s bars
// on its own scale and the latency curves of its jobs on one chart, per workload the adapters
// side by side, every job in one sortable table, and each run's context.
std::string render_html(const std::vector<RunResult>& runs);
// The charts alone: file name -> SVG (rps-NN.svg and latency-NN.svg per group).
std::map<std::string, std::string> render_svgs(const std::vector<RunResult>& runs);

// Shared by the table and Markdown reporters: one row of cells per job, and the notes below.
// The columns of the summary table; "limited by" when some job of the run has a profile.
std::vector<std::string> summary_header(const RunResult& r);
std::vector<std::string> summary_row(const RunResult& r, const JobResult& j);
// The notes the run carries (JobResult::notes, RunResult::notes: make_notes) but the durability
// table's, each job's followed by its warnings ("warning: ..."), then the run's warnings.
std::vector<std::string> summary_notes(const RunResult& r);
// --quiet's notes, under its line a job as redis-benchmark -q prints one a test: what went wrong
// (a job skipped, not set up, interrupted; failed ops and their first samples, a failed
// verification, a missed SLO) and what --find-max found; no warning of any kind, no profile,
// contract, mix or protocol figures.
std::vector<std::string> quiet_notes(const RunResult& r);
// The default run's line for a job ("" when it has nothing to say): the first of what went wrong or
// is suspect (a failure with its first error sample, a missed SLO, a search that found no rate, its
// faults in short, a warning; "(N more: -v)" when there are more), else what --find-max found, else
// what limited it when a resource did ("limited by: NAME: disk flushes (EVIDENCE)").
std::string glance_line(const JobResult& j);
// Under the default table: each job's glance_line, then the --repeat legend and the run's warnings.
std::vector<std::string> glance_notes(const RunResult& r);
std::string context_line(const Context& c);
// Whether a job of the run has a resource profile (profile_text.cpp); its lines are notes.
bool any_profile(const RunResult& r);
// Crash jobs (--crash kill): the durability table's header and rows (none when no job crashed),
// and the notes under it as the run carries them (make_durability_notes: the caveats first, then
// each crash job's lines). Their rows' names, loss sentence and window: notes.h.
std::vector<std::vector<std::string>> durability_rows(const RunResult& r);
// A crash job's "killed" cell: "redis-server at 50%", "power cut, redis-server at 50%".
std::string crash_text(CrashKind crash, const std::string& victim, double at);
std::vector<std::string> durability_notes(const RunResult& r);
// Whether a note is printed under the durability table rather than under the summary.
bool under_durability(const Note& n);

// --find-max: whether any job searched, its "max at SLO" cell ("41230.5 (40950-41400)",
// "client-bound", "none"), and the table of every step (the notes under the table, and the
// warning of a found rate that missed the SLO in some repeats: notes.h).
bool has_capacity(const RunResult& r);
std::string capacity_cell(const JobResult& j);
std::vector<std::vector<std::string>> capacity_rows(const RunResult& r);
// Two --find-max rows of result files: "max at SLO p99<1ms: 41230.0 req/s -> 33800.0 req/s (0.82x)",
// a rate whose repeats did not all pass "33800.0 req/s not confirmed (2 of 3 repeats passed)";
// "" unless both searched.
std::string capacity_change(const JobResult& base, const JobResult& now);
// A --find-max row whose found rate is not confirmed (some of its repeats missed the SLO).
bool unconfirmed(const JobResult& j);
// "41230.0 req/s", "33800.0 req/s not confirmed (2 of 3 repeats passed)", or the verdict.
std::string found_rate(const Capacity& c);

// A decision (decision.h) in words: a header, the baseline, one line per alternative (its
// verdict, ratio and interval, the robust check, its questions' answers); without `quiet` the
// diagnostics against the baseline, what each run's set-up reset, and the method.
std::vector<std::string> decision_lines(const DecideResult& d, bool quiet);
// "faster", "undecided (about 40 rounds at this spread)", ...
std::string verdict_text(const DecideResult& d, const Decision& x);

}  // namespace mw
