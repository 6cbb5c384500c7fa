// The driver: clients, phases, the clock, histograms, error counting, progress.
// It knows nothing of any adapter's protocol.
#pragma once
#include <atomic>
#include <functional>
#include <memory>

#include "api/adapter.h"
#include "api/stop.h"
#include "core/ranks.h"
#include "results/result.h"

namespace mw {

struct Progress {
  uint64_t done = 0, errors = 0, total = 0;  // total 0: a duration run
  double elapsed_s = 0, duration_s = 0;
};
using ProgressFn = std::function<void(const Job&, const Progress&)>;

// Opens the job's clients on an adapter that has been prepared, runs warm-up and the
// measured phase, and returns the figures: counts, histograms, timing, the driver's warnings,
// and the state (Interrupted when a stop was requested). Throws SetupError when a client cannot
// be opened. With a workload (--mix) the clients are handed its requests, a load phase writes
// the key space first (load), and the figures are kept per abstract op too (per_op). Under MPI
// (`ranks`) it runs this rank's share of the clients. `can`: what the adapter can do for the job
// besides (its crash hooks, contract, lock waits, server events), asked once after its set-up.
JobResult measure(const Job& job, Adapter& adapter, const Abilities& can, const ProgressFn& progress = {},
                  const Workload* workload = nullptr, const RankPlan& ranks = one_process());
// The same, asking the adapter's abilities itself (a job measured on its own: the tests).
JobResult measure(const Job& job, Adapter& adapter, const ProgressFn& progress = {}, const Workload* workload = nullptr,
                  const RankPlan& ranks = one_process());

class Measurement;

// The capacity search's measurer (capacity.h): the job's clients opened (and a workload's key
// space loaded) once; each step() is a warm-up of `warmup_s` and a measured phase of `seconds`
// at `rate` ops/s spread over the clients (0: closed loop). Throws SetupError as measure() does.
class Stepper {
 public:
  Stepper(const Job& job, Adapter& adapter, const Abilities& can, const ProgressFn& progress = {},
          const Workload* workload = nullptr, const RankPlan& ranks = one_process());
  // The same, asking the adapter's abilities itself (the tests).
  Stepper(const Job& job, Adapter& adapter, const ProgressFn& progress = {}, const Workload* workload = nullptr,
          const RankPlan& ranks = one_process());
  ~Stepper();
  // `at_measure`: called between the warm-up and the measured phase (a queue's watcher starts).
  JobResult step(double rate, double seconds, double warmup_s, const std::function<void()>& at_measure = {});

  // When the last step's phases ran (now_ns()): its warm-up's start and end, and its measured
  // phase's start (the clients set off) and end (every client done). `ready`: when the clients
  // were open and the key space loaded. The time from one measured phase's end to the next's
  // start, less the warm-up, is the search's own set-up between steps. All 0 before a step.
  struct Times {
    int64_t ready = 0, warmup_start = 0, warmup_end = 0, measure_start = 0, measure_end = 0;
  };
  Times times() const;

 private:
  std::unique_ptr<Measurement> m_;  // null: stopped during the load
};

}  // namespace mw
