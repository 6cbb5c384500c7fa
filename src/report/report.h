// Reporters only format a RunResult; they compute nothing the result does not hold.
#pragma once
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "result.h"

namespace mw {

std::string format_table(const RunResult& r);     // terminal (default)
std::string format_markdown(const RunResult& r);
std::string format_csv(const RunResult& r);
nlohmann::json to_json(const RunResult& r);       // the result file (schema_version 1)
// The result file's text: each top-level key, and each job, on a line of its own (histograms
// make a pretty-printed file ten times larger).
std::string result_text(const RunResult& r);

// Shared by the table and Markdown reporters: one row of cells per job, and the notes below.
std::vector<std::string> summary_header();
std::vector<std::string> summary_row(const RunResult& r, const JobResult& j);
std::vector<std::string> summary_notes(const RunResult& r);
std::string context_line(const Context& c);
// Crash jobs (--crash kill): the durability table's header and rows (none when no job crashed),
// and the notes under it (the kill-is-not-a-power-cut caveat first).
std::vector<std::vector<std::string>> durability_rows(const RunResult& r);
// A crash job's "killed" cell: "redis-server at 50%", "power cut, redis-server at 50%".
std::string crash_text(const std::string& crash, const std::string& victim, double at);
std::vector<std::string> durability_notes(const RunResult& r);
std::string fmt(double v, int decimals);

// Writes results/<timestamp>-<suite>.json atomically and never over an earlier file;
// returns the path written.
std::string write_result_file(const RunResult& r, const std::string& dir);
// Writes `text` to `path` atomically (temp file + rename).
void write_file_atomic(const std::string& path, const std::string& text);

}  // namespace mw
