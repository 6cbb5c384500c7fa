// The notes under the summary and durability tables (Note, NoteKind: result.h) and the warnings of
// a job's figures as a whole, made from a job's typed fields. make_notes is called where a run is
// finished (the runner, merge, rank 0 under mpirun) and by the loader for files written before
// notes were; the reports print the notes and warnings a run carries.
#pragma once
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "results/result.h"

namespace mw {

// Every job's notes (JobResult::notes) and the run's own (RunResult::notes), from their figures,
// and each job's figure_warnings, last in JobResult::warnings in place of any it held (merge and
// rank 0 make them again of the merged figures).
void make_notes(RunResult& r);
std::vector<Note> job_notes(const JobResult& j);
std::vector<Note> run_notes(const RunResult& r);
// A checked crash job that had no write acknowledged before the crash: nothing it could lose.
inline constexpr const char* kNothingAcked =
    "no write was acknowledged before the crash, so none could be lost: the verdict proves nothing (more writes "
    "before the crash: a larger -n or --duration)";

// The durability table's notes (--crash), in place of any the run held: the run's caveats of what
// its crashes mean (CrashModel: a process kill's, then the power cut's model, then the torn cut's)
// and each crash job's lines (Durability: its note, loss, writes in doubt, detail), named as its
// row. A run with a crash job has at least one caveat. make_notes makes them with the others.
void make_durability_notes(RunResult& r);
// The warnings of a job's figures as a whole: a found rate that missed the SLO in some repeats
// (NotConfirmed: capacity_warning's words), a measured phase under 0.1 s (TooShort) and an open
// loop that did not send 1% or more of the ops due by its end (BehindSchedule). None for a job
// that did not run.
std::vector<Warning> figure_warnings(const JobResult& j);
// Whether a warning is one of figure_warnings' kinds (made again from the figures, never kept).
bool of_figures(const Warning& w);
// --find-max: why a found rate is not confirmed ("": it is, or nothing was found).
std::string capacity_warning(const JobResult& j);
// The job as the notes name it: its name, and where it ran (jobs side by side share a name).
std::string note_name(const JobResult& j);

// A note's kind as the file names it (jobs[].note_kinds, note_kinds: one a note, in order):
// "skipped", "slo-missed", ...; parse_note_kind is its inverse (nullopt for any other text).
const char* note_kind_name(NoteKind k);
std::optional<NoteKind> parse_note_kind(std::string_view name);

// The lines of some kinds, for the notes and the tests: a job's resource profile in words
// ("profile: ...", its lines, "limited by: ..."; none when it has none), what a sync or round-trip
// latency means for the stores people run ("stores: ..."; none for other ops: AdapterSpec::latency_is
// says which), and what a --find-max search found.
std::vector<std::string> profile_lines(const std::string& name, const JobResult& j);
// The profile's last line: "limited by: NAME: disk flushes (EVIDENCE)".
std::string limited_by_line(const std::string& name, const Profile& p);
std::vector<std::string> guidance_lines(const std::string& name, const JobResult& j);
std::vector<std::string> capacity_notes(const JobResult& j, const std::string& name);
// A job's episodes, a line each ("episode: NAME: 12.0-13.5 s: p99 48 ms (median interval 0.9 ms):
// CAUSE; CAUSE"), its first kEpisodeCauses causes; at most kEpisodeLines, then "and N more".
inline constexpr size_t kEpisodeLines = 3, kEpisodeCauses = 2;
std::vector<std::string> episode_lines(const std::string& name, const JobResult& j);
// --reconnect-every: "connect: NAME: 100 new connections (one every 1 ops), each open ms mean ...";
// "" for a job without them; NAME left out when empty.
std::string connect_line(const std::string& name, const JobResult& j);

// A crash row's name: the job's name, then those of its settings ("synchronous=full") that the name
// lacks and that differ between the rows of its adapter and op; each setting once. One per row, in order.
struct CrashRow {
  std::string name, adapter, op, setting;
};
std::vector<std::string> crash_row_names(const std::vector<CrashRow>& rows);
std::vector<std::string> crash_row_names(const RunResult& r);  // one per job of r (its name where none crashed)
// A loss in one sentence: "aof-everysec lost 0.8 s of writes" (the durability level, else the job).
std::string loss_sentence(const std::string& job, const std::string& level, double window_s);
// The loss window's cell: "0.8" (seconds), "-" when nothing was lost.
std::string loss_window_text(uint64_t lost, double window_s);

}  // namespace mw
