// Runs of the same jobs measured at the same time by several processes (MPI ranks, or copies
// started by ssh or Kubernetes), merged exactly: histogram counts added, min/max/sum kept,
// counts by status added; elapsed is the slowest run's, req/s the total successful ops over it.
#pragma once
#include <string>
#include <vector>

#include "results/result.h"

namespace mw {

struct Merged {
  RunResult run;
  // What merging could not vouch for (the runs' time windows do not overlap: NotSimultaneous;
  // figures that differ per run: Merge); run.context.warnings holds them too, after the runs' own.
  std::vector<Warning> warnings;
};

// Throws SetupError naming the run and the job when the runs did not run the same jobs (count,
// name, adapter, op, pipeline, duration and the adapter's options but its seed), when a run
// has --repeat (merge the runs of one repeat), or when fewer than one run is given.
// `command` is what the merged result says made it.
Merged merge_runs(const std::vector<RunResult>& runs, const std::string& command);
// Throws SetupError when two of the files are one run (the same start, host, command and figures:
// a copy, or the same file twice), which merging would count twice. `mwbench merge` checks it;
// MPI ranks are distinct processes.
void check_distinct_runs(const std::vector<RunResult>& runs);

}  // namespace mw

namespace mw {
// `mwbench merge A.json B.json ... [--json OUT]`: the exit status of the merged run (0, 1, 2,
// or 128+signal), 2 for bad arguments or files that cannot be merged.
int merge_command(int argc, char** argv);
}  // namespace mw
