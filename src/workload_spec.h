// The workload's options (--mix, --keys, --keyspace, ...), declared once for every keyed adapter,
// and the Workload a job's options describe.
#pragma once
#include <memory>
#include <vector>

#include "adapter.h"
#include "workload.h"

namespace mw {

// Appended to the options of every adapter whose spec maps abstract ops (AdapterSpec::kv_ops).
const std::vector<OptionSpec>& workload_options();
std::vector<OptionSpec> with_workload_options(std::vector<OptionSpec> own);

// The job's workload, or nullptr when it runs a native op (no --mix). Throws SetupError naming
// the option for a bad value, or an op the adapter cannot map.
std::shared_ptr<const Workload> workload_of(const Job& job, const AdapterSpec& spec);

}  // namespace mw
