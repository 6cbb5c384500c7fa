// A run spread over several processes (MPI ranks): how this process takes part. It travels with
// the run (RunOptions::ranks, then each job's runner, driver and capacity search); a process alone
// has the defaults (one_process()), and the runner and driver do what they always did.
#pragma once
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "api/adapter.h"
#include "api/stop.h"  // run_id
#include "results/result.h"

namespace mw {

// --find-max under MPI: rank 0's order to every rank for the search's next step, a step at `rate`
// or the end (the figures of step `pick` make the row). It travels as 14 bytes: "MWSO", the
// encoding's version, the kind, and its figure (the rate's IEEE bits, or the pick) little-endian.
// A rank reads it with step_order_of, which checks each part: a rank of another mwbench build
// (another version) is told so, not sent a step it would read wrong.
struct StepOrder {
  enum class Kind : uint8_t { Step, End };
  Kind kind = Kind::Step;
  double rate = 0;    // Step: the offered rate (ops/s), finite; 0: the closed-loop probe
  uint64_t pick = 0;  // End: the step whose figures are the row
};
constexpr uint8_t kStepOrderVersion = 1;
std::string step_order_bytes(const StepOrder& o);
// Throws SetupError saying what is wrong with `bytes` ("a capacity step order of encoding
// version 2; this mwbench reads version 1: every rank must run the same mwbench").
StepOrder step_order_of(std::string_view bytes);

struct RankPlan {
  int rank = 0, size = 1;
  bool active() const { return size > 1; }
  // Set-up (prepare: create the database, preload) and the end check: rank 0 alone.
  bool sets_up() const { return rank == 0; }
  // This rank's clients of `total`, as [first, first + count): contiguous, remainders to the
  // low ranks. The driver gives its clients these global indices (seq ranges, workload streams).
  std::pair<int, int> clients(int total) const;
  // Hooks (empty when alone). after_setup: rank 0 has set the target up (a barrier);
  // before_measure: every rank has warmed up (the barrier before each rank starts its clock);
  // totals: every rank's counts added up, for rank 0's end check; setup_failed: ends every rank
  // (exit 2); run_ended: why the remaining jobs do not run (a rank died), or "".
  std::function<void(const Job&)> after_setup, before_measure;
  std::function<Counts(const Job&, const Counts&)> totals;
  std::function<void(const Job&, const std::string&)> setup_failed;
  std::function<std::string()> run_ended;
  // --find-max (capacity.cpp): the search runs on rank 0 and every rank runs each of its steps.
  // step_order: rank 0 sends `order` (the next step, or the end) to every rank; the others wait
  // for it into `order` (a rank that cannot read it stops every rank, exit 2). step_figures: every rank sends its
  // step's figures and `note` (its word on its own client) to rank 0, which gets them merged as a run's job is (counts
  // and histograms added, the time series interval by interval) and every rank's note, in rank order; the others get
  // nothing back. A rank that stops answering stops every rank (exit 2).
  struct StepFigures {
    JobResult merged;
    std::vector<std::string> notes;
  };
  std::function<void(const Job&, StepOrder& order)> step_order;
  std::function<StepFigures(const Job&, const JobResult& mine, const std::string& note)> step_figures;
};

// The plan of a process alone: rank 0 of 1, no hooks.
const RankPlan& one_process();

// Of `total` ops split over `clients` clients (remainders to the low ones), those of clients
// [first, first + count).
uint64_t share_of(uint64_t total, int clients, int first, int count);

}  // namespace mw
