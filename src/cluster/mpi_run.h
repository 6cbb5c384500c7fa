// `mpirun -n K mwbench <adapter|run> ...`: rank 0 parses the options or suites and sends the
// expanded jobs to every rank; each rank runs its share of every job's clients, ops and rate;
// rank 0 alone sets the target up and checks it at the end, on every rank's counts; one barrier
// before each measured phase; rank 0 merges the ranks' results exactly (the merge of
// `mwbench merge`) and writes the one result file.
#pragma once
#include <vector>

#include "core/runner.h"

namespace mw {

// First thing in main(). Started by mpirun: starts MPI; on ranks other than 0, runs what rank 0
// sends and returns their exit code. Returns -1 to go on (alone, or as rank 0), or an exit code
// (2: mpirun started this binary without MPI support, said on stderr).
int mpi_enter(int& argc, char**& argv);
// What main() returns, through this: on rank 0 it tells the other ranks (the exit code, or that
// there is nothing to run) and ends MPI.
int mpi_leave(int code);
// Throws SetupError when the jobs cannot run on several ranks: a target mwbench starts itself
// (or a local file), fewer clients than ranks, --repeat.
void check_ranks(const std::vector<Job>& jobs, int repeat);
// run_jobs(), on every rank under MPI: the merged result on rank 0.
RunResult run_everywhere(const std::vector<Job>& jobs, const RunOptions& opts);

}  // namespace mw
