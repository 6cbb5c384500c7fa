// The result file: the one RunResult as JSON, written atomically, never over an earlier file.
#pragma once
#include <nlohmann/json_fwd.hpp>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "results/result.h"

namespace mw {

nlohmann::json to_json(const RunResult& r);  // the result file
// A job's params as the file has them: the common settings and the adapter's options (redacted).
nlohmann::json job_params(const Job& job);
// The req/s of interval k of a job's series: its ok ops over its length (the last one partial).
double series_rps(const JobResult& j, size_t k);
// The req/s of one op of a workload's mix: its ok ops over the job's elapsed time.
double op_rps(const JobResult& j, const OpFigures& op);
// --repeat: the lowest and highest req/s of its runs (the median's among them); nullopt when
// the job was not repeated.
struct RpsRange {
  double min = 0, max = 0;
};
std::optional<RpsRange> rps_range(const JobResult& j);
// What a job's sync or round-trip latency means for the stores people run (stores.cpp): the
// figure ("a write and its fdatasync: p50 0.61 ms, p99 12.0 ms, max 29.3 ms"), then one line per
// store's rule; empty for ops that measure no such latency (AdapterSpec::latency_is says which).
struct StoreGuidance {
  std::string figure;
  std::vector<std::string> rules;
};
StoreGuidance store_guidance(const JobResult& j);
// Sets j.latency_is and j.baseline from the running build's registry (AdapterSpec::latency_is,
// ::baseline): a fresh run's jobs, and a file written before results carried them.
void adapter_facts(JobResult& j);
// The result file's text: each top-level key, and each job, on a line of its own (histograms
// make a pretty-printed file ten times larger).
std::string result_text(const RunResult& r);
// Writes results/<timestamp>-<suite>.json atomically and never over an earlier file;
// returns the path written.
std::string write_result_file(const RunResult& r, const std::string& dir);
// Writes `text` to `path` atomically (temp file + rename); refuses a path that is there and is
// not a regular file (a device, a FIFO, a directory: a rename would replace it).
void write_file_atomic(const std::string& path, const std::string& text);
// The same, but never over a file that is there (link(), not rename()): SetupError "PATH exists".
void write_file_new(const std::string& path, const std::string& text);
// Before anything runs: each output (option, path) must be a regular file or not there yet, in a
// directory that exists and can be written, not one of `inputs`, and not another output's path.
// Throws SetupError naming the option and the reason.
void check_output_targets(const std::vector<std::pair<std::string, std::string>>& outputs,
                          const std::vector<std::string>& inputs);

}  // namespace mw
