// Results are plain data; the reporters only format them.
#pragma once
#include <algorithm>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "api/adapter.h"
#include "api/warning.h"
#include "results/episodes.h"
#include "results/profile.h"
#include "results/slo.h"
#include "util/histogram.h"
#include "util/names.h"
#include "util/series.h"

namespace mw {

namespace queue {
struct Figures;  // queue.h
}
struct DecideResult;  // decision.h

// The result file's schema_version written; the loader reads it and 1 alike (2 named jobs[].per_op,
// misses, durability, series and ranks, which version 1 files written since hold too).
constexpr int kSchemaVersion = 2;

// Warning and WarningKind: warning.h (the adapter API's too). Files written before kinds were
// (schema 2 without warning_kinds, and schema 1) get theirs from the loader alone, by the words
// each kind's warning starts with (results.cpp).

// A line of the notes under the summary table (a job's state, failures, SLO, per-op figures,
// profile, ...) or under the durability table (a crash job's loss, what a crash means): what it is
// about (its kind) and its words, made from the job's typed fields by make_notes (notes.h) where a
// run is finished (the runner, merge, rank 0 under mpirun), carried with the run, written to the
// file beside their kinds and read back; the reports print them. Readers decide by the kind, never
// by the words. Warnings are not notes: Warning, apart.
enum class NoteKind : uint8_t {
  Other,            // a kind of a newer mwbench's
  Skipped,          // the job did not run: why
  SetupError,       // its set-up failed: why
  Interrupted,      // it was stopped: partial figures
  Failed,           // some ops failed or were not run
  ErrorSample,      // one of the first distinct failures, under Failed
  VerifyFailed,     // the verification failed: what
  Capacity,         // --find-max: what the search found (or not), and in how many steps
  SloMissed,        // the objectives it missed
  SloMet,           // the objectives it met
  Side,             // one side's figures (read, write) of an adapter with sides
  Workload,         // what the mix was
  PerOp,            // one op of the mix: its figures
  ProtocolMetrics,  // the adapter's protocol figures (the job's line, then one a metric)
  Contract,         // what an acknowledged write meant
  Profile,          // the resource profile's lines, and what limited the job
  Stores,           // what its sync or round-trip latency means for the stores people run
  Repeats,          // the run's: req/s is the median of interleaved runs
  Durability,       // a crash job's line under the durability table: its note, loss, writes in doubt, detail
  CrashModel,       // the run's, above those: what a process kill, a power cut or a torn cut means
  Episode,          // a stretch where p99 or throughput left the job's norm, and its causes (at most 3 a job)
  Fault,            // --fault: one line per fault (its window, failures, recovery, writes lost)
  Connect,          // --reconnect-every: the new connections' opens, apart from the ops
};
constexpr int kNoteKinds = static_cast<int>(NoteKind::Connect) + 1;

struct Note {
  NoteKind kind = NoteKind::Other;
  std::string text;
  bool operator==(const Note&) const = default;
};

struct SideResult {
  std::string name;
  uint64_t ops_ok = 0, bytes = 0;
  std::shared_ptr<Histogram> latency;
};

// One abstract op of a workload's mix: the same figures as a job's.
struct OpFigures {
  std::string op;
  uint64_t ops_ok = 0, ops_failed = 0;
  uint64_t misses = 0;  // reads of a key that was not there (counted in ops_ok)
  std::shared_ptr<Histogram> latency;
  uint64_t not_stored = 0;  // writes that stored nothing (counted in ops_ok): loops.h's record_other
};

// A crash-and-restart job (--crash kill): what happened to the measured phase's writes.
// acked + in_doubt + never_sent = ops; lost and corrupt_acked are among acked.
struct DurabilityResult {
  bool ran = false;
  CrashKind crash = CrashKind::Kill;
  std::string model;    // power: the page-cache model ("mwbench-pagecache-1")
  std::string victim;   // the process killed
  std::string setting;  // the job's side-by-side settings: "persistence=aof-always"
  std::string level;    // its durability settings as set (durability_level): "aof-always"
  Expectation expect = Expectation::Any;
  std::string note;     // where safety depends on fsync (a line under the table: NoteKind::Durability)
  double crash_at = 0;  // fraction of -n or --duration
  uint64_t ops = 0, acked = 0, lost = 0, in_doubt = 0, in_doubt_present = 0, never_sent = 0, corrupt = 0;
  double recovery_s = 0;        // kill to the first successful answer
  double loss_window_s = 0;     // lost > 0: from the oldest lost write's acknowledgement to the crash
  std::string detail;           // the first lost or corrupt write, or why the writes were not read back
  bool checked = true;          // false: interrupted, or the restart failed, before the writes were read back
  bool unrecoverable = false;   // --crash torn: the store did not open or answer on what survived
  bool restart_failed = false;  // the store did not come back or answer the read-back (exit 2; figures stand)
  bool failed() const { return restart_failed || (expect == Expectation::Durable && (lost > 0 || corrupt > 0)); }
};

// One fault of a --fault job (core/faults.h): what the clients saw, from the merged record of
// every op. Times in seconds from the measured phase's start; latencies in ns.
struct FaultResult {
  std::string fault;            // as given: "restart@40%/1s"
  std::string kind;             // "restart"
  double delay_s = 0;           // slow: the delay added to each chunk relayed, each way
  double at_s = 0, done_s = 0;  // injected (a stop: every process stopped), its action ended (restarted, SIGCONT)
  std::string error;            // the action failed (the restart did not come back): why
  std::string
      promoted;  // kill-primary, switchover, kill-node: the primary (leader) once the clients were back ("" none told)
  std::string node;  // kill-node: the node killed and why it was chosen
  // The unavailable window: from the last success before the fault to the first after it (the
  // longest gap between successes across it); `back` false: none came after (to the phase's end).
  double window_start_s = 0, window_end_s = 0;
  bool back = true;
  std::map<std::string, uint64_t> failed;  // ops that failed in the window, by status ("error", "timeout")
  uint64_t in_doubt = 0;                   // in flight at the fault, failed: done or not, no one knows
  // From the fault until throughput is back to 90% of its rate before (a 0.5 s stretch at that rate
  // starts); -1: it never was.
  double back_90_s = -1;
  double rate_before = 0;  // successful ops/s before the fault
  // during: from the fault until back at 90% (a slow: the time it lasted); after: from then on
  double p99_before_ns = 0, p99_during_ns = 0, p99_after_ns = 0;
  uint64_t ops_after = 0;  // successes after the window
  // Acknowledged writes lost (read back at the end, as the crash checks do), those acknowledged
  // since the fault before this one; -1: not read back (lost_note says why).
  int64_t lost = -1;
  std::string lost_note;
  // A queue's messages across the fault, from the job's ledger (the end check): acknowledged to the
  // producer and never consumed, consumed again unmarked, consumed after a later message of the
  // same producer; -1: not counted (a job's faults share one ledger: counted on the first that
  // kills a server, queue_note says so on the others). queue_contract: what an acknowledgement
  // promised (a loss under a replicated one fails the job).
  int64_t messages_lost = -1, messages_duplicated = -1, messages_reordered = -1;
  std::string queue_note, queue_contract;
  double window_s() const { return window_end_s - window_start_s; }
};

// --find-max: what a step of the capacity search was: the closed-loop probe (the estimate), a
// step of the search, or a repeat at a rate being confirmed.
enum class StepKind : uint8_t { Probe, Search, Repeat };
inline constexpr const char* kStepKindNames[] = {"probe", "search", "repeat"};
inline constexpr Names<StepKind> step_kind_names{kStepKindNames};
inline const char* step_kind_name(StepKind k) { return step_kind_names(k); }
// A step's verdict: none (the probe: an estimate, not judged; "" in the file), pass, fail, or
// client-bound (mwbench was the limit: the search ends).
enum class StepVerdict : uint8_t { None, Pass, Fail, ClientBound };
inline constexpr const char* kStepVerdictNames[] = {"", "pass", "fail", "client-bound"};
inline constexpr Names<StepVerdict> step_verdict_names{kStepVerdictNames};
inline const char* step_verdict_name(StepVerdict v) { return step_verdict_names(v); }
// What the search found: a rate (found), none (no rate passed), client-bound, or interrupted.
enum class CapacityVerdict : uint8_t { Found, None, ClientBound, Interrupted };
inline constexpr const char* kCapacityVerdictNames[] = {"found", "none", "client-bound", "interrupted"};
inline constexpr Names<CapacityVerdict> capacity_verdict_names{kCapacityVerdictNames};
inline const char* capacity_verdict_name(CapacityVerdict v) { return capacity_verdict_names(v); }

// --find-max: one measured step of the capacity search (core/capacity.h).
struct CapacityStep {
  StepKind kind = StepKind::Probe;
  double offered = 0;                          // ops/s asked for; 0 for the probe
  double achieved = 0;                         // ops/s that completed
  double p50_ns = 0, p99_ns = 0, p999_ns = 0;  // coordinated-omission corrected
  uint64_t errors = 0;                         // failed plus not-run ops
  double lag_p99_ns = 0;                       // the generator's send lag (intended to actual send, with a free slot)
  double cpu = 0;                              // mwbench's own CPU over the step, in cores
  double loop_busy = 0;                        // the busiest event loop's share of the step awake (never waiting), 0-1
  // mwbench's own stalls in the step (JobResult::stall_s): the most stalled event loop's stalls in
  // all and its longest, and that loop thread's wait for a CPU (-1: unknown), in seconds
  double stall_s = 0, stall_max_s = 0, cpu_wait_s = -1;
  double backlog_first = 0, backlog_last = 0;  // a queue's: mean backlog over the first and last third
  double warmup_s = 0;                         // the step's warm-up, before its measured phase
  // The search's own set-up before this step: from the last measured phase's end (the probe's:
  // from the clients' opening) to this one's start, less the warm-up (judging, merging, a queue's
  // drain, starting the threads).
  double setup_s = 0;
  StepVerdict verdict = StepVerdict::None;
  std::string why;  // what failed or why the client was the limit
  // A failed step after which no rate would pass (a server of the target stopped answering): the
  // search ends on it, verdict "none". The search's own, not in the file.
  bool ends_search = false;
};

// --find-max: the highest open-loop rate that met the SLO, and every step that found it.
struct Capacity {
  std::string slo;
  double precision = 0.05, step_s = 5, lag_bound_ns = 0;
  CapacityVerdict verdict = CapacityVerdict::None;
  // The reported rate: one whose repeats all passed (confirmed), else the last rate tried with
  // how many of its repeats passed (0: none passed in the search). The confirmation's rule is in
  // capacity.cpp's search_capacity.
  double max_rps = 0;
  double repeat_min = 0, repeat_max = 0;  // achieved over the repeats at max_rps
  int repeats = 0, repeats_passed = 0;    // at max_rps
  bool confirmed = false;                 // every repeat at max_rps passed
  double searched_rps = 0;  // the highest rate that passed once in the search (max_rps before any step down)
  int step_downs = 0;       // rates whose repeat failed, before max_rps
  double first_fail = 0;    // the lowest offered rate that failed, in the search or a repeat (0: none did)
  std::string fail_why;     // what failed there (which bound), or why the client was the limit
  std::string advice;       // client-bound: what to do
  double elapsed_s = 0;     // the whole search: from its clients ready to its last step's end
  std::vector<CapacityStep> steps;
};

struct JobResult {
  Job job;
  std::string target;
  // What the adapter's spec says of the job, kept with it: a stored result is drawn by these, not
  // by the reading build's registry. adapter_facts() fills them from the registry: the driver's
  // as it makes the result, the runner's for every job of a run (one that never ran too), the
  // reader's for a file of before that lacks them. The latency its op measures (the stores guidance), and whether the
  // adapter is the driver alone (drawn beside the stores as their baseline, never ranked).
  LatencyKind latency_is = LatencyKind::None;
  bool baseline = false;
  Info server;                     // from Adapter::describe()
  std::vector<std::string> paths;  // filesystem paths the job used
  enum class State { Done, Interrupted, SetupFailed, Skipped } state = State::Done;
  std::string message;  // why skipped / set-up error
  uint64_t ops_ok = 0, ops_failed = 0, ops_not_run = 0;
  // Open loop by --duration: ops due before its end that were not sent by then (the clients fell
  // behind --rate). Not failures: the rate offered was not kept (figure_warnings says so).
  uint64_t ops_not_sent = 0;
  uint64_t warmup_ok = 0;  // successful warm-up ops (they changed the target too)
  uint64_t errors[kStatusCount] = {};
  std::vector<std::string> error_samples;  // the first few distinct failure details
  double elapsed_s = 0;
  double rps = 0;  // ops_ok / elapsed_s
  uint64_t bytes = 0;
  std::shared_ptr<Histogram> latency;              // successful ops (corrected in open loop)
  std::shared_ptr<Histogram> latency_failed;       // failed ops
  std::shared_ptr<Histogram> latency_uncorrected;  // open loop only: from the actual send
  std::shared_ptr<Histogram> send_lag;             // open loop only: the generator's lag (loops.h)
  double own_cpu_s = 0;                            // mwbench's CPU time over the measured phase
  int loop_threads = 0;                            // threads that ran its clients
  double loop_busy = 0;                            // open loop: the busiest event loop's share of time awake (loops.h)
  // --reconnect-every: each new connection's open in the measured phase (core/renewal.h), and the
  // clients' total wait for --connect-rate's turns before them.
  std::shared_ptr<Histogram> connect;
  // Over TLS, the opens whose handshake was full and those that resumed a session (--tls-resume).
  std::shared_ptr<Histogram> connect_full, connect_resumed;
  double connect_wait_s = 0;
  // Open loop: mwbench's own stalls (loops.h, ClientStats::stall_ns): the most stalled event
  // loop's in all, its longest, and its thread's wait for a CPU over the phase (-1: unknown); s
  double stall_s = 0, stall_max_s = 0, cpu_wait_s = -1;
  std::vector<uint64_t> per_second;    // successful ops completed in each second
  std::vector<SeriesInterval> series;  // per interval of series_interval_s (Job::interval_s)
  double series_interval_s = 0;
  double started_epoch_s = 0;     // wall clock at the measured phase's start (--hdr-log)
  std::vector<SideResult> sides;  // per side (read, write), when the adapter has sides
  Verdict verify;
  Metrics metrics;                // from Adapter::metrics()
  bool step_metrics = false;      // --find-max: metrics are the row's step's (Adapter::take_metrics)
  std::vector<Warning> warnings;  // the adapter's and the driver's, then figure_warnings (notes.h)
  std::vector<Note> notes;        // the lines under the tables about this job (make_notes)
  // A workload job (--mix): per-op figures, misses, and the load phase as a result of its own.
  std::vector<OpFigures> per_op;
  uint64_t misses = 0;
  std::string workload;  // what the mix was, in words
  std::shared_ptr<JobResult> load;
  // --repeat K: every run of the job (this result is the one with the median req/s).
  std::vector<JobResult> repeats;
  SloOutcome slo;  // the job's objectives (Job::slo) against its figures
  // A queue op (produce, consume, roundtrip): the ledger's counts, the produce -> consume
  // latency and the backlog per second (queue.h).
  std::shared_ptr<const queue::Figures> queue;
  std::shared_ptr<const Capacity> capacity;  // --find-max
  DurabilityResult durability;               // --crash kill: acked, lost, in doubt, corrupt, recovery
  std::optional<Contract> contract;          // what an acknowledged write meant (Abilities::contract)
  Profile profile;                           // the timed phase's resources and what limited the job
  // The timeline (episodes.h): the events of each interval of `series`, and the episodes found over
  // it. episodes_judged: the series had a norm to judge by (false: none looked for, or a file of
  // before episodes were); judged and none: a quiet run.
  std::vector<EventTrack> events;
  std::vector<Episode> episodes;
  bool episodes_judged = false;
  std::vector<FaultResult> faults;  // --fault: one per fault, in the order they fell

  bool failed_once() const {
    // A crash job's failed ops are its writes in doubt, its ops not run those never sent.
    if (durability.ran) return state == State::SetupFailed || durability.failed() || (verify.checked && !verify.ok);
    // A fault job's failed ops are the fault's (its figures say how many); its action failing is not.
    if (!faults.empty())
      return state == State::SetupFailed || (verify.checked && !verify.ok) ||
             std::any_of(faults.begin(), faults.end(), [](const FaultResult& f) { return !f.error.empty(); });
    return state == State::SetupFailed || ops_failed > 0 || ops_not_run > 0 || (verify.checked && !verify.ok);
  }
  bool failed() const {
    if (failed_once()) return true;
    for (auto& r : repeats)
      if (r.failed_once()) return true;
    return false;
  }
  double mbps() const { return elapsed_s > 0 ? static_cast<double>(bytes) / 1e6 / elapsed_s : 0; }
};

// A job's state as the result file names it.
inline constexpr const char* kStateNames[] = {"done", "interrupted", "setup-failed", "skipped"};
inline constexpr Names<JobResult::State> state_names{kStateNames};

struct Context {
  std::string host, cpu, kernel, virtualization, build_type, os;
  int cores = 0;
  uint64_t memory_bytes = 0;
  std::map<std::string, std::string> libraries;
  std::map<std::string, std::pair<std::string, std::string>> paths;  // path -> (fs, device)
  std::vector<Warning> warnings;
};

// One process of a run spread over several (an MPI rank), or one run `mwbench merge` took:
// where it ran and how many clients it ran per job.
struct RankContext {
  int rank = 0;
  std::string host, cpu, kernel, started_at;
  std::string source;  // the result file it came from (merge), or "" (MPI)
  int cores = 0;
  uint64_t memory_bytes = 0;
  std::vector<int64_t> clients;  // per job, in the order of RunResult::jobs
  std::vector<Warning> warnings;
};

struct RunResult {
  std::string label;       // a loaded run: its file's name, shown in tables and charts
  std::string suite;       // "quick", "cli-redis"...
  std::string started_at;  // ISO 8601 UTC
  std::string command;     // how it was invoked
  Context context;
  std::vector<JobResult> jobs;
  bool interrupted = false;
  int signal = 0;                  // the signal that interrupted it (0: SIGINT assumed)
  std::vector<RankContext> ranks;  // more than one process measured it (MPI, merge)
  std::vector<Note> notes;         // the run's own notes, after its jobs' (make_notes: Repeats)
  std::string gate;                // `run --baseline`: the gate's verdict per row ("": no gate)
  bool gate_failed = false;        // some row regressed beyond the threshold: exit 3
  // --decide, `mwbench decide`: the rounds and each alternative's verdict (decision.h)
  std::shared_ptr<DecideResult> decide;
};

// 0: every op succeeded and verified; 1: some op failed or a verification failed;
// 2: a set-up error; 3: an SLO was missed or the baseline gate failed (and nothing failed);
// 128+signal when interrupted (130 SIGINT, 143 SIGTERM, 129 SIGHUP).
int exit_code(const RunResult& r);
// Every string of a run's result (command, names, targets, params, messages, samples,
// warnings, server facts) passed through the redaction rule (redact.h); and the secret values
// the jobs were given (secret options, the variables of *-env options, URL passwords,
// "user:password"), as they are or base64- or URL-encoded, replaced by *** wherever echoed.
void redact_result(RunResult& run);
// Text about `job` shown while it runs (the live metrics' labels, the progress line), by the
// same rule redact_result applies to every string: the patterns, and the job's secret values.
std::string redact_for(const Job& job, const std::string& text);

}  // namespace mw
