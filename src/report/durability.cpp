// The durability table of crash jobs (--crash kill, --crash power): one row per job, under the
// summary.
#include <algorithm>
#include <cstdio>
#include <map>
#include <set>
#include <sstream>

#include "durability.h"
#include "report.h"
#include "text.h"

namespace mw {

std::string crash_text(const std::string& crash, const std::string& victim, double at) {
  const char* cut = crash == "power" ? "power cut, " : crash == "torn" ? "torn power cut, " : "";
  return cut + victim + " at " + fmt(at * 100, 0) + "%";
}

std::string loss_window_text(uint64_t lost, double window_s) {
  if (!lost) return "-";
  return fmt(window_s, window_s >= 0.1 ? 1 : 3);
}

std::string loss_sentence(const std::string& job, const std::string& level, double window_s) {
  return (level.empty() ? job : level) + " lost " + loss_window_text(1, window_s) + " s of writes";
}

namespace {

// "journal-mode=wal synchronous=full" -> {journal-mode=wal, synchronous=full} (a value with a space
// stays whole: a word without '=' belongs to the one before it).
std::vector<std::pair<std::string, std::string>> split_setting(const std::string& setting) {
  std::vector<std::pair<std::string, std::string>> out;
  std::istringstream in(setting);
  for (std::string w; in >> w;) {
    const size_t eq = w.find('=');
    if (eq == std::string::npos || eq == 0) {
      if (!out.empty()) out.back().second += " " + w;
    } else {
      out.push_back({w.substr(0, eq), w.substr(eq + 1)});
    }
  }
  return out;
}

bool names_key(const std::string& name, const std::string& key) {
  std::istringstream in(name);
  for (std::string w; in >> w;)
    if (w.rfind(key + "=", 0) == 0) return true;
  return false;
}

}  // namespace

std::vector<std::string> crash_row_names(const std::vector<CrashRow>& rows) {
  // The values each setting takes among the rows of one adapter and op ("" where a row lacks it).
  std::map<std::string, std::map<std::string, std::set<std::string>>> values;
  for (const CrashRow& row : rows) {
    auto& v = values[row.adapter + " " + row.op];
    for (auto& [k, x] : split_setting(row.setting)) v[k].insert(x);
  }
  for (const CrashRow& row : rows) {
    auto& v = values[row.adapter + " " + row.op];
    std::set<std::string> keys;
    for (auto& kx : split_setting(row.setting)) keys.insert(kx.first);
    for (auto& [k, xs] : v)
      if (!keys.count(k)) xs.insert("");
  }
  std::vector<std::string> out;
  for (const CrashRow& row : rows) {
    std::string name = row.name;
    for (auto& [k, x] : split_setting(row.setting))  // once, and only what tells the rows apart
      if (!names_key(name, k) && values[row.adapter + " " + row.op][k].size() > 1) name += " " + k + "=" + x;
    out.push_back(name);
  }
  return out;
}

std::vector<std::string> crash_row_names(const RunResult& r) {
  std::vector<CrashRow> rows;
  for (auto& j : r.jobs)
    if (j.durability.ran) rows.push_back({j.job.name, j.job.adapter, j.job.op, j.durability.setting});
  const std::vector<std::string> crashed = crash_row_names(rows);
  std::vector<std::string> out;
  size_t k = 0;
  for (auto& j : r.jobs) out.push_back(j.durability.ran ? crashed[k++] : j.job.name);
  return out;
}

std::vector<std::vector<std::string>> durability_rows(const RunResult& r) {
  std::vector<std::vector<std::string>> rows;
  const std::vector<std::string> names = crash_row_names(r);
  for (size_t i = 0; i < r.jobs.size(); ++i) {
    const JobResult& j = r.jobs[i];
    const DurabilityResult& d = j.durability;
    if (!d.ran) continue;
    if (rows.empty())
      rows.push_back({"durability", "killed", "req/s", "acked", "lost", "lost s", "in doubt", "never sent", "corrupt",
                      "recovery s", "expect", "verdict"});
    std::string verdict = !d.checked            ? "not checked"
                          : d.unrecoverable     ? (d.failed() ? "UNRECOVERABLE (expected durable)"
                                                              : "unrecoverable (finding)")
                          : d.lost || d.corrupt ? (d.failed() ? "LOST (expected durable)" : "lost (finding)")
                          : d.acked == 0        ? "nothing acked"
                                                : "kept";
    rows.push_back({printable(names[i]),
                    crash_text(d.crash, d.victim, d.crash_at), fmt(j.rps, 0), std::to_string(d.acked),
                    std::to_string(d.lost), loss_window_text(d.lost, d.loss_window_s), std::to_string(d.in_doubt), std::to_string(d.never_sent),
                    std::to_string(d.corrupt), fmt(d.recovery_s, 3), d.expect, verdict});
  }
  return rows;
}

std::vector<std::string> durability_notes(const RunResult& r) {
  std::vector<std::string> out;
  const std::vector<std::string> names = crash_row_names(r);
  for (size_t i = 0; i < r.jobs.size(); ++i) {
    const JobResult& j = r.jobs[i];
    const DurabilityResult& d = j.durability;
    if (!d.ran) continue;
    const std::string& n = names[i];
    if (!d.note.empty()) out.push_back("  " + n + ": " + d.note);
    if (d.lost && d.checked)
      out.push_back("  " + n + ": " + loss_sentence(j.job.name, d.level, d.loss_window_s) + " (" +
                    std::to_string(d.lost) + " acknowledged, the oldest " + fmt(d.loss_window_s, 3) +
                    " s before the crash)");
    if (d.in_doubt) out.push_back("  " + n + ": " + std::to_string(d.in_doubt_present) + " of " +
                                  std::to_string(d.in_doubt) + " writes in doubt were kept");
    if (!d.detail.empty()) out.push_back("  " + n + ": " + d.detail);
    if (d.checked && d.acked == 0 && !d.unrecoverable)
      out.push_back("  " + n + ": " + kNothingAcked);
  }
  bool killed = false;
  std::string model, torn;  // of the power cuts
  for (auto& j : r.jobs) {
    if (!j.durability.ran) continue;
    if (j.durability.crash == "power") model = j.durability.model;
    else if (j.durability.crash == "torn") torn = j.durability.model;
    else killed = true;
  }
  if (!torn.empty()) {
    char buf[400];
    std::snprintf(buf, sizeof buf, kTornModel, torn.c_str());
    out.insert(out.begin(), std::string("note: ") + buf);
  }
  if (!torn.empty() && model.empty()) model = PageCacheMount::model();
  if (!model.empty()) {
    char buf[400];
    std::snprintf(buf, sizeof buf, kPowerCutModel, model.c_str());
    out.insert(out.begin(), std::string("note: ") + buf);
  }
  if (killed) out.insert(out.begin(), std::string("note: ") + kKillIsNotPowerCut);
  for (auto& line : out) line = printable(line);
  return out;
}

}  // namespace mw
