// Runs a list of jobs through their adapters: availability, prepare, measure, verify, teardown.
#pragma once
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "core/ranks.h"
#include "results/result.h"

namespace mw {

struct RunOptions {
  std::string suite = "cli";
  std::string command;
  bool progress = true;  // a progress line on stderr when it is a terminal
  int repeat = 1;        // run each job this many times, interleaved across the jobs
  // Under MPI, this process's part (cluster/mpi_run.cpp; it outlives the run); null: alone.
  const RankPlan* ranks = nullptr;
};

RunResult run_jobs(const std::vector<Job>& jobs, const RunOptions& opts);
// The pieces run_jobs is made of, shared with a decision's rounds (rounds.h):
// - the run's start: suite, command, the time, the machine's context;
// - why no more jobs start ("interrupted before it started", a rank that died), or "";
// - one run of a job that never throws: a set-up error, or anything escaping run_one, lands in the
//   result, and a run that may not start any more is Skipped with the reason;
// - the rows made of every job's runs at the end: a job run once is its own row, a job run
//   several times its median run by req/s with every run as its repeats (a workload's load phase
//   a row before its job's); the shared servers stopped, the context finished, the run redacted
//   and its notes made. Returns each job's row in run.jobs.
RunResult start_run(const RunOptions& opts);
std::string run_ended(const RankPlan& ranks = one_process());
JobResult run_guarded(const Job& job, bool tty, const RankPlan& ranks = one_process());
std::vector<int> finish_run(RunResult& run, std::vector<std::vector<JobResult>> runs);
// One job, start to end; never throws (set-up errors land in the result). Under MPI (`ranks`),
// this rank's part of it.
JobResult run_one(const Job& job, bool show_progress = false, const RankPlan& ranks = one_process());
// The same with the adapter made by `make` instead of the registry's (tests use their own).
// Only make/prepare/open failing is a set-up error; verify(), metrics() or describe() failing
// after the measurement fails the job's verification and keeps its figures.
JobResult run_one_with(const Job& job, const std::function<std::unique_ptr<Adapter>(const Job&)>& make,
                       bool show_progress = false);

}  // namespace mw
