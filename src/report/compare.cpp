#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iterator>

#include "report.h"
#include "results.h"

namespace mw {

using nlohmann::json;

LoadedRun load_result(const std::string& file) {
  std::ifstream in(file, std::ios::binary);
  if (!in) throw SetupError(file + ": cannot read the file");
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  LoadedRun run = parse_result(text, file);
  run.label = std::filesystem::path(file).filename().string();
  return run;
}

LoadedRun parse_result(std::string_view text, const std::string& label) {
  json j = json::parse(text, nullptr, false);
  if (j.is_discarded()) throw SetupError(label + ": not JSON");
  if (!j.is_object() || !j.contains("schema_version") || !j.contains("jobs") || !j["jobs"].is_array())
    throw SetupError(label + ": not an mwbench result file (no schema_version and jobs)");
  if (j["schema_version"] != 1)
    throw SetupError(label + ": schema_version " + j["schema_version"].dump() + " is not one this mwbench reads (1)");
  return {label, std::move(j)};
}

namespace {

std::string job_key(const json& job) {
  std::string key = job.value("adapter", "") + "|" + job.value("op", "") + "|" + job.value("name", "");
  if (job.contains("params"))
    for (auto& [k, v] : job["params"].items())
      if (k != "n" && k != "duration_s" && k != "warmup_ops" && k != "warmup_s" && k != "timeout_s")
        key += "|" + k + "=" + v.dump();
  return key;
}

// The job's name, and where it ran when that tells side-by-side rows apart.
std::string display_name(const json& job) {
  std::string name = job.value("name", "?");
  if (job.contains("params") && job["params"].contains("path")) name += " " + job["params"]["path"].get<std::string>();
  if (job.contains("params") && job["params"].contains("queue")) name += " " + job["params"]["queue"].get<std::string>();
  if (job.contains("params") && job["params"].contains("kind")) name += " " + job["params"]["kind"].get<std::string>();
  if (job.contains("params")) {
    int c = job["params"].value("clients", 1), p = job["params"].value("pipeline", 1);
    if (c != 1 && name.find("clients=") == std::string::npos) name += " c=" + std::to_string(c);
    if (p != 1 && name.find("pipeline=") == std::string::npos) name += " P=" + std::to_string(p);
  }
  return name;
}

}  // namespace

std::vector<MatchedJob> match_jobs(const std::vector<LoadedRun>& runs) {
  std::vector<MatchedJob> rows;
  std::map<std::string, size_t> row_of;  // key#k (the k-th job with that key in a run) -> row
  for (size_t r = 0; r < runs.size(); ++r) {
    std::map<std::string, int> seen;
    const json& jobs = runs[r].data["jobs"];
    for (size_t i = 0; i < jobs.size(); ++i) {
      std::string key = job_key(jobs[i]);
      key += "#" + std::to_string(seen[key]++);
      auto [it, fresh] = row_of.emplace(key, rows.size());
      if (fresh) rows.push_back({display_name(jobs[i]), std::vector<int>(runs.size(), -1)});
      rows[it->second].index[r] = static_cast<int>(i);
    }
  }
  return rows;
}

std::string format_compare(const std::vector<LoadedRun>& runs) {
  std::vector<std::vector<std::string>> t;
  std::vector<std::string> head{"job"};
  for (size_t r = 0; r < runs.size(); ++r) {
    head.push_back(runs[r].label + " req/s");
    head.push_back("p99 ms");
    if (r > 0) head.push_back("ratio");
  }
  head.push_back("note");
  t.push_back(head);
  auto rps_range = [](const json& job) {
    double v = job.value("rps", 0.0);
    return std::pair{job.value("rps_min", v), job.value("rps_max", v)};
  };
  for (auto& m : match_jobs(runs)) {
    std::vector<std::string> row{m.name};
    std::string note;
    const json* base = m.index[0] >= 0 ? &runs[0].data["jobs"][static_cast<size_t>(m.index[0])] : nullptr;
    for (size_t r = 0; r < runs.size(); ++r) {
      if (m.index[r] < 0) {
        row.insert(row.end(), r > 0 ? 3 : 2, "-");
        continue;
      }
      const json& job = runs[r].data["jobs"][static_cast<size_t>(m.index[r])];
      bool ran = job.value("state", "") == "done" || job.value("state", "") == "interrupted";
      row.push_back(ran ? fmt(job.value("rps", 0.0), 1) : job.value("state", "-"));
      row.push_back(ran && job.contains("latency_ns") ? fmt(job["latency_ns"].value("p99", 0.0) / 1e6, 3) : "-");
      if (job.value("ops_failed", 0) > 0 || job.value("ops_not_run", 0) > 0) note += (note.empty() ? "" : "; ") + runs[r].label + " had failures";
      if (r == 0) continue;
      if (!base || !ran || base->value("rps", 0.0) <= 0) {
        row.push_back("-");
        continue;
      }
      row.push_back(fmt(job.value("rps", 0.0) / base->value("rps", 0.0), 2));
      if (base->contains("repeats") && job.contains("repeats")) {
        auto [alo, ahi] = rps_range(*base);
        auto [blo, bhi] = rps_range(job);
        if (blo <= ahi && alo <= bhi) note += (note.empty() ? "" : "; ") + std::string("within noise");
      }
    }
    row.push_back(note);
    t.push_back(row);
  }
  std::vector<size_t> w(head.size(), 0);
  for (auto& row : t)
    for (size_t i = 0; i < row.size(); ++i) w[i] = std::max(w[i], row[i].size());
  std::string out;
  for (auto& row : t) {
    std::string line;
    for (size_t i = 0; i < row.size(); ++i) {
      bool left = i == 0 || i + 1 == row.size();
      std::string pad(w[i] - row[i].size(), ' ');
      line += (i ? "  " : "") + (left ? row[i] + pad : pad + row[i]);
    }
    while (!line.empty() && line.back() == ' ') line.pop_back();
    out += line + "\n";
  }
  out += "ratio: req/s against " + runs[0].label + "; within noise: the min-max ranges of the repeats overlap";
  if (std::none_of(runs.begin(), runs.end(), [](const LoadedRun& r) {
        for (auto& j : r.data["jobs"])
          if (j.contains("repeats")) return true;
        return false;
      }))
    out += " (run with --repeat K to know the spread)";
  out += "\n";
  for (auto& r : runs) {
    const json& c = r.data.value("context", json::object());
    out += r.label + ": " + c.value("host", "?") + ", " + c.value("cpu", "?") + ", " + std::to_string(c.value("cores", 0)) +
           " cores, " + r.data.value("started_at", "") + "\n";
  }
  return out;
}

}  // namespace mw
