// Result files read back: for `mwbench compare` and `mwbench report`. Every file goes through
// one validating loader into the typed model below; nothing else reads a result file's JSON.
#pragma once
#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "result.h"

namespace mw {

// A job's state as the result file names it: "done", "interrupted", "setup-failed", "skipped";
// parse_state is its inverse (nullopt for any other text). (Here, not in result.h, to keep the
// many users of result.h from recompiling; the writer and the CSV include this header.)
const char* state_name(JobResult::State s);
std::optional<JobResult::State> parse_state(std::string_view name);

struct LatencySummary {  // nanoseconds
  double min = 0, mean = 0, p50 = 0, p90 = 0, p99 = 0, p999 = 0, max = 0;
  uint64_t count = 0;
};

// One op of a workload's mix (jobs[].per_op.{read,update,...}): the same figures as a job's.
struct LoadedOp {
  std::string op;  // read, update, insert, delete, rmw, scan
  uint64_t ops_ok = 0, ops_failed = 0, misses = 0;
  double rps = 0;
  std::optional<LatencySummary> latency;
  std::optional<std::vector<std::pair<int64_t, uint64_t>>> histogram;
};

// One interval of a job's time series (jobs[].series.intervals): its start on the job's own
// clock, ops ok and failed completed in it, their rate, and the latency of the successful ones.
struct LoadedInterval {
  double t_s = 0, rps = 0;
  uint64_t ok = 0, failed = 0;
  double p50 = 0, p99 = 0, max = 0;  // ns
};

struct LoadedJob {
  std::string name, adapter, op, target;
  JobResult::State state = JobResult::State::Done;
  std::string message;  // why skipped / set-up error
  // Parameters as written: name -> the value's JSON text (what tells jobs apart), and the
  // value itself for those that are strings (shown beside the name).
  std::map<std::string, std::string> params;
  std::map<std::string, std::string> string_params;
  int64_t clients = 1, pipeline = 1;
  uint64_t ops_ok = 0, ops_failed = 0, ops_not_run = 0;
  double elapsed_s = 0, rps = 0;
  std::optional<double> rps_min, rps_max;                          // --repeat: the range
  std::optional<LatencySummary> latency;                           // successful ops
  std::optional<std::vector<std::pair<int64_t, uint64_t>>> histogram;  // (value ns, count)
  bool verify_checked = false, verify_ok = true;
  std::string verify_detail;
  std::vector<std::string> warnings;
  bool managed_server = false;  // its server was started by mwbench on this machine
  // A workload job (op "mix", and its "load" phase): the workload in words, the misses, and
  // per op of the mix its figures (in the file's order).
  std::string workload;
  uint64_t misses = 0;
  std::vector<LoadedOp> per_op;
  std::vector<LoadedJob> repeats;  // --repeat K: every run (this one is the median's)
  DurabilityResult durability;                 // --crash kill (ran: the job had one)
  std::optional<Capacity> capacity;            // --find-max: what it found, every step
  std::optional<Contract> contract;            // what an acknowledged write meant (contract.h)
  // What limited the job (its profile's verdict) and the figures that say so; "" when the file
  // has no profile.
  std::string limited_by, limited_evidence;
  std::map<std::string, std::string> server;
  Metrics metrics;
  std::vector<std::string> paths, error_samples;
  std::map<std::string, uint64_t> errors;  // Status name -> count
  uint64_t warmup_ok = 0, bytes = 0;
  std::vector<uint64_t> per_second;
  double series_interval_s = 0;  // 0: the file has no time series for the job
  std::vector<LoadedInterval> series;
  std::vector<int64_t> backlog;  // a queue op: produced - consumed per second (queue.backlog)

  bool ran() const { return state == JobResult::State::Done || state == JobResult::State::Interrupted; }
  // This run alone: set-up failed, skipped, ops failed or not run, or verification failed.
  bool failed_once() const;
  // Any run of the job (repeats included).
  bool failed() const;
  bool unverified() const;  // verification (of any run) failed, every op succeeded
  // What a figure of a job that ran says beside it: "" (good), "FAILED" (ops of some run
  // failed or were not run) or "unverified" (every op succeeded, the end check failed).
  std::string failure_mark() const;
};

struct LoadedRun {
  std::string label;  // the file's name, shown in tables and charts
  std::string suite, started_at, command;
  bool interrupted = false;
  Context context;
  std::vector<LoadedJob> jobs;
  std::vector<RankContext> ranks;  // the processes that measured it (MPI ranks, merged runs)
};

// The limits of what the loader reads: larger or deeper is not a result file mwbench wrote.
constexpr size_t kMaxResultBytes = size_t{256} << 20;
constexpr int kMaxResultDepth = 32;
// Each histogram is rebuilt whole (about 270 kB): more than a run of mwbench holds is refused.
constexpr size_t kMaxResultHistograms = 4096;

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
// The reports' view of a run (compare, gate, HTML): its jobs' figures as the file shows them.
LoadedRun view_of(const RunResult& run);

// The jobs of several runs matched by name; a name some run holds more than once by what the
// jobs measured (adapter, op, name, parameters; not n, duration or the port of a server mwbench
// started): rows in first-seen order, each with the index of its job in every run (-1 when a
// run lacks it).
struct MatchedJob {
  std::string name;
  std::vector<int> index;  // per run
};
std::vector<MatchedJob> match_jobs(const std::vector<LoadedRun>& runs);

// Why a run of a job is not a plain figure ("B.json had failures (3 failed, 0 not run)",
// "B.json skipped: why"): "" when it is one.
std::string failure_note(const LoadedRun& run, const LoadedJob& job);
// "different durability contracts: periodic-fsync 1 s vs fsync-per-ack" when both jobs declare
// one and they differ; "" otherwise. Rows with different contracts are never compared silently.
std::string contracts_differ(const LoadedJob& a, const LoadedJob& b);
// Both were repeated and their min-max req/s ranges overlap.
bool within_noise(const LoadedJob& a, const LoadedJob& b);

std::string format_compare(const std::vector<LoadedRun>& runs);
// One self-contained HTML page (inline SVG and CSS, a few lines of inline script that sort
// the table; nothing loaded at view time): a verdict per group of jobs, per group req/s bars
// on its own scale and the latency curves of its jobs on one chart, per workload the adapters
// side by side, every job in one sortable table, and each run's context.
std::string render_html(const std::vector<LoadedRun>& runs);
// The charts alone: file name -> SVG (rps-NN.svg and latency-NN.svg per group).
std::map<std::string, std::string> render_svgs(const std::vector<LoadedRun>& runs);

}  // namespace mw
