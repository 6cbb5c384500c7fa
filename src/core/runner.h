// Runs a list of jobs through their adapters: availability, prepare, measure, verify, teardown.
#pragma once
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "results/result.h"

namespace mw {

struct RunOptions {
  std::string suite = "cli";
  std::string command;
  bool progress = true;  // a progress line on stderr when it is a terminal
  int repeat = 1;        // run each job this many times, interleaved across the jobs
};

RunResult run_jobs(const std::vector<Job>& jobs, const RunOptions& opts);
// One job, start to end; never throws (set-up errors land in the result).
JobResult run_one(const Job& job, bool show_progress = false);
// The same with the adapter made by `make` instead of the registry's (tests use their own).
// Only make/prepare/open failing is a set-up error; verify(), metrics() or describe() failing
// after the measurement fails the job's verification and keeps its figures.
JobResult run_one_with(const Job& job, const std::function<std::unique_ptr<Adapter>(const Job&)>& make,
                       bool show_progress = false);

}  // namespace mw
