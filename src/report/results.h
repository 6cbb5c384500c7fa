// Result files read back: for `mwbench compare` and `mwbench report`.
#pragma once
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

namespace mw {

struct LoadedRun {
  std::string label;    // the file's name, shown in tables and charts
  nlohmann::json data;  // the result file
};

// Throws SetupError "FILE: ..." when it cannot be read or is not an mwbench result.
LoadedRun load_result(const std::string& file);
// The same from the file's text: errors and the run's label name `label`.
LoadedRun parse_result(std::string_view text, const std::string& label);

// The jobs of several runs matched by what they measured (adapter, op, name, parameters; not
// n, duration or the port of a server mwbench started): rows in first-seen order, each with
// the index of its job in every run (-1 when a run lacks it).
struct MatchedJob {
  std::string name;
  std::vector<int> index;  // per run
};
std::vector<MatchedJob> match_jobs(const std::vector<LoadedRun>& runs);

std::string format_compare(const std::vector<LoadedRun>& runs);
// Self-contained HTML (inline SVG, no network at view time): req/s bars, latency percentile
// curves per job, and each run's context.
std::string render_html(const std::vector<LoadedRun>& runs);
// The charts alone: file name -> SVG.
std::map<std::string, std::string> render_svgs(const std::vector<LoadedRun>& runs);

}  // namespace mw
