// The result file: the one RunResult as JSON, written atomically, never over an earlier file.
#pragma once
#include <nlohmann/json.hpp>
#include <string>

#include "result.h"

namespace mw {

nlohmann::json to_json(const RunResult& r);  // the result file
// The result file's text: each top-level key, and each job, on a line of its own (histograms
// make a pretty-printed file ten times larger).
std::string result_text(const RunResult& r);
// Writes results/<timestamp>-<suite>.json atomically and never over an earlier file;
// returns the path written.
std::string write_result_file(const RunResult& r, const std::string& dir);
// Writes `text` to `path` atomically (temp file + rename).
void write_file_atomic(const std::string& path, const std::string& text);

}  // namespace mw
