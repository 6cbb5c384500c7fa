// The workload's options (--mix, --keys, --keyspace, ...), declared once for every keyed adapter,
// and the Workload a job's options describe.
#pragma once
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "api/adapter.h"
#include "workload/workload.h"

namespace mw {

// The workload's options, typed (options.h); defaults are the struct's.
struct WorkloadOptions {
  std::string mix;  // "": the job runs a native op
  std::string keys = "uniform";
  std::optional<uint64_t> keyspace;  // 100000 for a mix; a native op may have its own default
  double zipf_theta = 0.99;
  std::string hotspot = "0.2:0.8";
  std::string value_size = "100";
  std::optional<bool> load;  // default: when the mix reads
  uint64_t seed = 1;
  uint32_t scan_length = 100;
  std::string hot_shift;       // "": the hot keys stay
  std::string workload;        // a published workload (twitter:N): its mix, keys and sizes, unless given
  std::string workload_model;  // a model file (mwbench model --json): its mix, keys and sizes, unless given
  std::string ttl = "0";       // seconds a written key lives (parse_ttl); 0: for ever
};
WorkloadOptions workload_options_of(const Job& job);

// Options of every adapter whose spec maps abstract ops (AdapterSpec::kv_ops; capabilities.h).
const std::vector<OptionSpec>& workload_options();

// The job's workload, or nullptr when it runs a native op (no --mix). Throws SetupError naming
// the option for a bad value, or an op the adapter cannot map.
std::shared_ptr<const Workload> workload_of(const Job& job, const AdapterSpec& spec);

// The end check of a keyed store after a mix: 1,000 keys spread over the key space are read
// back (`get` returns false for a missing key) and must hold a value of their own; when the
// workload guarantees the key space (loaded, never deleted) none may be missing and `count`,
// the store's record count, must cover it.
Verdict verify_workload(const Workload& w, uint64_t count, const std::function<bool(uint64_t, std::string&)>& get);

}  // namespace mw
