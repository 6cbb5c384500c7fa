// Result files read back: for `mwbench compare` and `mwbench report`. Every file goes through
// one validating loader into the typed model below; nothing else reads a result file's JSON.
#pragma once
#include <cstdint>
#include <nlohmann/json_fwd.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "results/result.h"

namespace mw {

// A job's state as the result file names it: "done", "interrupted", "setup-failed", "skipped";
// parse_state is its inverse (nullopt for any other text). (Here, not in result.h, to keep the
// many users of result.h from recompiling; the writer and the CSV include this header.)
const char* state_name(JobResult::State s);
std::optional<JobResult::State> parse_state(std::string_view name);

// A warning's kind as the result file names it (jobs[].warning_kinds, context.warning_kinds,
// ranks[].warning_kinds: one a warning, in order): "shared-cores", "client-bound", ... ;
// parse_warning_kind is its inverse (nullopt for any other text).
const char* warning_kind_name(WarningKind k);
std::optional<WarningKind> parse_warning_kind(std::string_view name);

// What the reports read of a job beyond its fields (compare, gate, HTML).
// It has figures: it ran to its end, or until the run was interrupted.
bool ran(const JobResult& j);
// Verification (of any run, repeats included) failed.
bool unverified(const JobResult& j);
// What a figure of a job that ran says beside it: "" (good), "FAILED" (ops of some run
// failed or were not run) or "unverified" (every op succeeded, the end check failed).
std::string failure_mark(const JobResult& j);
// Its server was started by mwbench on this machine (server "managed": "yes").
bool managed_server(const JobResult& j);
// The latency of its successful ops at percentile p, in ns (0 when it has no histogram).
double latency_at(const JobResult& j, double p);

// The limits of what the loader reads: larger or deeper is not a result file mwbench wrote.
constexpr size_t kMaxResultBytes = size_t{256} << 20;
constexpr int kMaxResultDepth = 32;

// A result file's text into the run model: what was written is what is read back (writing the
// run again gives the same text). Throws SetupError "LABEL: what is wrong" (and nothing else)
// for anything that is not an mwbench result file of schema_version 1 or 2, or whose jobs'
// ops_ok are not the counts of their histograms.
RunResult parse_result(std::string_view text, const std::string& label);
// The same for a parsed document (tests, the MPI ranks' results).
RunResult parse_result_json(const nlohmann::json& doc, const std::string& label);
// Reads FILE (a regular file up to kMaxResultBytes) and parses it; the label is its name.
// Throws SetupError "FILE: ..." when it cannot be read or is not an mwbench result.
RunResult load_result(const std::string& file);

// The jobs of several runs matched by name; a name some run holds more than once by what the
// jobs measured (adapter, op, name, parameters; not n, duration or the port of a server mwbench
// started): rows in first-seen order, each with the index of its job in every run (-1 when a
// run lacks it).
struct MatchedJob {
  std::string name;
  std::vector<int> index;  // per run
};
std::vector<MatchedJob> match_jobs(const std::vector<const RunResult*>& runs);
std::vector<MatchedJob> match_jobs(const std::vector<RunResult>& runs);

// Why a run of a job is not a plain figure ("B.json had failures (3 failed, 0 not run)",
// "B.json skipped: why"): "" when it is one.
std::string failure_note(const RunResult& run, const JobResult& job);
// "different durability contracts: periodic-fsync 1 s vs fsync-per-ack" when both jobs declare
// one and they differ; "" otherwise. Rows with different contracts are never compared silently.
std::string contracts_differ(const JobResult& a, const JobResult& b);
// Both were repeated and their min-max req/s ranges overlap.
bool within_noise(const JobResult& a, const JobResult& b);

}  // namespace mw
