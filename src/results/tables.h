// The result file's field tables (fields.h): one per struct of the result model, each field's
// key, value, check, merge rule and whether it is free text. The writer (writer.h), the loader
// (results.h), merge (merge.h), redaction (redact_result) and the JSON Schema
// (docs/reference/result-schema.json, `mwbench help --schema`) are all driven by them.
#pragma once
#include <nlohmann/json_fwd.hpp>

#include "results/fields.h"
#include "results/result.h"

namespace mw {

const fields::Table<RunResult>& run_table();
const fields::Table<JobResult>& job_table();
const fields::Table<Profile>& profile_table();

// The result file's JSON Schema (draft 2020-12), from the tables.
nlohmann::json result_schema();

}  // namespace mw
