// Capacity at an SLO (--find-max): the highest open-loop rate a target sustains with its latency
// under a bound and nothing failed. A closed-loop probe gives an estimate; open-loop steps
// bracket the capacity and bisect the bracket to --find-precision; the found rate is measured
// again --find-repeat times, and reported only when every repeat passed (else a lower rate is
// tried, a bounded number of times). Each step is judged on the coordinated-omission corrected
// latency (the SLO), the achieved rate (within 2% of the offered one), its errors and whether it
// settled.
// A step where the load generator itself was the limit is neither a pass nor a fail but
// "client-bound", and ends the search: its figures would be the client's, not the target's. So
// is a step that missed a bound when mwbench's own stalls (its event loop descheduled, or held
// in a client's call, while replies came on time) account for every bound it missed.
// Neither is a step whose every op was slower than a latency bound (the target's failure: the
// search goes on below it, and an SLO under anything the target answers in ends "none"), nor one
// in which the target stopped answering (no op succeeded over its last fifth: a fail; when no op
// ran at all, or a server of the target used no CPU over the step, the search ends "none").
// A queue (roundtrip: the producers take the offered rate, the consumers run flat out) passes a
// step when, besides the producers' own figures, its backlog stayed bounded (QueueStep), the round
// trip's latency met the SLO and the ledger found nothing wrong meanwhile.
#pragma once
#include <functional>
#include <string>
#include <vector>

#include "core/driver.h"
#include "results/result.h"

namespace mw {

struct Workload;

// How a step is judged.
struct StepRules {
  std::string slo;          // the --find-max terms (slo.h)
  double lag_bound_ns = 0;  // the generator is behind when its send lag's p99 is above this
  bool judge_cpu = true;    // false when the target runs inside mwbench (its work is mwbench's CPU)
  int cores = 1;            // this machine's
};

constexpr double kAchievedShare = 0.98;   // a step passes when it achieved this share of the offered rate
constexpr double kCpuSaturated = 0.9;     // of the cores its clients run on: mwbench's CPU is saturated
constexpr double kLoopBusy = 0.9;         // an event loop awake this share of the step never caught up
constexpr double kMinLagBoundNs = 100e3;  // a timer's slack and a busy machine's wake-up: below this, noise
// mwbench's own stalls (loops.h: an event loop away from its clients 1 ms or more beyond the wait
// it asked for; JobResult::stall_s is the most stalled loop's in all). A step that missed a bound
// is client-bound, not failed, when they account for every bound it missed: they covered at least
// kStallShare of the measured phase, and each bound's own share of it: a latency percentile's
// share of the ops (p99: 1%, p999: 0.1%, max: any) with a stall as long as the send lag's bound;
// an achieved rate short of 98% by f, (f - 2%) / kStallMargin; a throughput that changed by c
// between the first and the last third (never settled), c / (3 x kStallMargin). Errors, a
// verification, a queue's backlog or ledger: no stall accounts for them (kStallNever).
constexpr double kStallShare = 0.02;  // the 98% rule's allowance: a loop away less than this could not fail a step
constexpr double kStallMargin = 2;    // a stall costs at most its own share; twice that, for a target's catch-up
constexpr double kStallNever = 2;     // a share no stall reaches

// A queue's step, watched while it was measured: the backlog (produced - consumed) sampled every
// tenth of the step, the round trips of the messages consumed in it, the rate they were consumed
// at, and what the ledger and the consumers found wrong in it.
struct QueueStep {
  std::vector<int64_t> backlog;
  Histogram roundtrip;
  double consumed_rps = 0;
  uint64_t consumed = 0;  // in the measured step
  uint64_t duplicates = 0, corrupt = 0, unexpected = 0, consumer_failed = 0;
};
// The backlog is bounded when its mean over the last third of the samples exceeds the mean over
// the first third by at most 2% of the messages offered in the step (consumers that keep about
// 97% of the producers' pace pass, as the 98% achieved-rate rule lets producers), and never by
// less than 16 messages (acknowledgements and consumers' takes in flight make it jitter).
constexpr double kBacklogShare = 0.02;
constexpr double kBacklogSlack = 16;
// "" when bounded, else what grew: `offered` ops/s over `seconds`.
std::string backlog_growth(const std::vector<int64_t>& samples, double offered, double seconds, double* first = nullptr,
                           double* last = nullptr);

// The send-lag bound for an SLO: a quarter of its tightest latency bound, at least 100 us (the
// lag counts in the corrected latency; a generator that spends a quarter of the budget late
// would make the target look slower than it is).
double lag_bound_ns(const std::string& slo);

// A step's figures judged: the verdict and what failed ("" verdict for the probe, offered 0):
// client-bound when the generator was the limit, or when mwbench's own stalls account for what
// failed (kStallShare), else pass or fail.
// A queue's step (`q`) is judged on its round trip's latency and backlog (QueueStep).
CapacityStep judge_step(const JobResult& r, double offered, StepKind kind, const StepRules& rules,
                        const QueueStep* q = nullptr);

// Under MPI each rank judges its own client in every step (its generator's lag, its event loops,
// its CPU on its machine) and rank 0 judges the merged figures: a step is client-bound when any
// rank's client was the limit, or when the ranks sharing one machine together used 90% of the
// cores their clients run on there.
struct RankNote {
  int rank = 0;
  std::string host;
  int cores = 1, threads = 1;
  double cpu = 0, lag_p99_ns = 0, loop_busy = 0;  // as CapacityStep's, this rank's alone
  double stall_s = 0, stall_max_s = 0, cpu_wait_s = -1;
  std::string limit;  // why its client was the limit ("" when it kept up)
};
// A note travels as JSON with its encoding's version: note_of throws SetupError on a note no rank
// of this mwbench wrote (another version: a rank running another mwbench build).
constexpr int kRankNoteVersion = 1;
std::string note_text(const RankNote& n);
RankNote note_of(const std::string& text);
// The merged step judged with every rank's note (rank 0's first).
CapacityStep judge_ranked_step(const JobResult& merged, const std::vector<RankNote>& ranks, double offered,
                               StepKind kind, const StepRules& rules);

// The search on any measured function (the tests drive it with a fake one): `measure(rate, kind)`
// runs one step at `rate` (0: the closed-loop probe) and returns it judged. `plan` carries the
// SLO, the precision and the step time; the steps and the verdict are filled in.
// The reported rate is confirmed: all its `repeat` repeats passed; a repeat that fails steps the
// rate down (search_capacity says how far and how often).
using StepFn = std::function<CapacityStep(double rate, StepKind kind)>;
Capacity search_capacity(Capacity plan, int repeat, const StepFn& measure);

// The step whose figures make the job's row: the median (by achieved rate) of the repeats at the
// reported rate, or the step that ended the search.
size_t row_step(const Capacity& c);

// The whole job on a prepared adapter: its clients opened once, the search, the repeats.
// Returns the figures of the median repeat at the found rate (or of the step that ended the
// search) with the capacity attached. Throws SetupError as measure() does. Under MPI (`ranks`)
// rank 0 searches and orders each step, and every rank runs its share of it. `can`: the adapter's
// abilities, asked once after its set-up (a queue's figures make its steps watch the ledger).
JobResult find_capacity(const Job& job, Adapter& adapter, const Abilities& can, const Workload* workload,
                        bool judge_cpu, const ProgressFn& progress = {}, const RankPlan& ranks = one_process());

}  // namespace mw
