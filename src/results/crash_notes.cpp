// The durability table's notes (--crash): the run's caveats of what its crashes mean and each crash
// job's lines, made from the jobs' DurabilityResult with the other notes (notes.h).
#include <cstdio>
#include <map>
#include <set>
#include <sstream>

#include "pagecache/volatile_files.h"
#include "results/notes.h"
#include "util/text.h"

namespace mw {

namespace {

// What each kind of crash means, above the table's lines (%s: the page-cache model's name).
constexpr const char* kPowerCutModel =
    "a power cut is modelled by mwbench's FUSE page-cache layer (%s): file data not fsynced is dropped, "
    "metadata (create, rename, unlink, truncate) is durable at once; its figures are measured through the layer";
constexpr const char* kTornModel =
    "a torn power cut (%s) also keeps the first half of each file's last unsynced write (cut at a 512-byte "
    "sector) and drops the rest: a torn page; a store that then cannot open or answer is 'unrecoverable'";
constexpr const char* kKillIsNotPowerCut =
    "a process kill is not a power cut: the page cache survives SIGKILL, so writes the OS had not yet "
    "written to disk (fsync off, appendfsync no/everysec, synchronous=off) can look safe here and still be "
    "lost on a power loss";

std::string with_model(const char* format, const std::string& model) {
  char buf[400];
  std::snprintf(buf, sizeof buf, format, model.c_str());
  return buf;
}

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

// A crash job's lines under the table, named as its row.
std::vector<Note> crash_lines(const JobResult& j, const std::string& n) {
  std::vector<Note> out;
  auto add = [&](const std::string& text) { out.push_back({NoteKind::Durability, "  " + n + ": " + text}); };
  const DurabilityResult& d = j.durability;
  if (!d.note.empty()) add(d.note);
  if (d.lost && d.checked)
    add(loss_sentence(j.job.name, d.level, d.loss_window_s) + " (" + std::to_string(d.lost) +
        " acknowledged, the oldest " + fmt(d.loss_window_s, 3) + " s before the crash)");
  if (d.in_doubt)
    add(std::to_string(d.in_doubt_present) + " of " + std::to_string(d.in_doubt) + " writes in doubt were kept");
  if (!d.detail.empty()) add(d.detail);
  if (d.checked && d.acked == 0 && !d.unrecoverable) add(kNothingAcked);
  return out;
}

// The caveats: a process kill's first, then the power cut's model, then the torn cut's.
std::vector<Note> crash_models(const RunResult& r) {
  bool killed = false;
  std::string model, torn;  // of the power cuts
  for (auto& j : r.jobs) {
    if (!j.durability.ran) continue;
    if (j.durability.crash == CrashKind::Power)
      model = j.durability.model;
    else if (j.durability.crash == CrashKind::Torn)
      torn = j.durability.model;
    else
      killed = true;
  }
  if (!torn.empty() && model.empty()) model = pagecache::kModelName;
  std::vector<Note> out;
  auto add = [&](const std::string& text) { out.push_back({NoteKind::CrashModel, "note: " + text}); };
  if (killed) add(kKillIsNotPowerCut);
  if (!model.empty()) add(with_model(kPowerCutModel, model));
  if (!torn.empty()) add(with_model(kTornModel, torn));
  return out;
}

}  // namespace

std::string loss_window_text(uint64_t lost, double window_s) {
  if (!lost) return "-";
  return fmt(window_s, window_s >= 0.1 ? 1 : 3);
}

std::string loss_sentence(const std::string& job, const std::string& level, double window_s) {
  return (level.empty() ? job : level) + " lost " + loss_window_text(1, window_s) + " s of writes";
}

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

void make_durability_notes(RunResult& r) {
  auto ours = [](const Note& n) { return n.kind == NoteKind::Durability || n.kind == NoteKind::CrashModel; };
  std::erase_if(r.notes, ours);
  const std::vector<std::string> names = crash_row_names(r);
  for (size_t i = 0; i < r.jobs.size(); ++i) {
    JobResult& j = r.jobs[i];
    std::erase_if(j.notes, ours);
    if (!j.durability.ran) continue;
    for (Note& n : crash_lines(j, names[i])) j.notes.push_back(std::move(n));
  }
  for (Note& n : crash_models(r)) r.notes.push_back(std::move(n));
}

}  // namespace mw
