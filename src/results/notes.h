// The notes under the summary table (Note, NoteKind: result.h), made from a job's typed fields.
// make_notes is called where a run is finished (the runner, merge, rank 0 under mpirun) and by the
// loader for files written before notes were; the reports print the notes a run carries.
#pragma once
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "result.h"

namespace mw {

// Every job's notes (JobResult::notes) and the run's own (RunResult::notes), from their figures.
void make_notes(RunResult& r);
std::vector<Note> job_notes(const JobResult& j);
std::vector<Note> run_notes(const RunResult& r);
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
std::vector<std::string> guidance_lines(const std::string& name, const JobResult& j);
std::vector<std::string> capacity_notes(const JobResult& j, const std::string& name);

}  // namespace mw
