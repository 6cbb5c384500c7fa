#include <algorithm>
#include <cstdio>

#include "report/report.h"
#include "util/text.h"

namespace mw {

namespace {

std::string ms(int64_t ns) { return fmt(static_cast<double>(ns) / 1e6, 3); }

std::string errors_cell(const JobResult& j) {
  if (j.state == JobResult::State::Skipped) return "skipped";
  if (j.state == JobResult::State::SetupFailed) return "set-up error";
  if (!j.repeats.empty()) {  // failures of any run are never hidden behind the median
    uint64_t failed = 0, not_run = 0;
    int bad = 0;
    for (auto& r : j.repeats) failed += r.ops_failed, not_run += r.ops_not_run, bad += r.failed_once();
    if (bad == 0) return "0";
    return std::to_string(failed) + " failed, " + std::to_string(not_run) + " not run, in " + std::to_string(bad) +
           " of " + std::to_string(j.repeats.size()) + " runs";
  }
  std::string s = std::to_string(j.ops_failed);
  std::string kinds;
  for (int k = 1; k < kStatusCount; ++k)
    if (j.errors[k])
      kinds += (kinds.empty() ? "" : ", ") + std::string(status_name(static_cast<Status>(k))) + " " +
               std::to_string(j.errors[k]);
  if (!kinds.empty()) s += " (" + kinds + ")";
  if (j.ops_not_run) s += ", " + std::to_string(j.ops_not_run) + " not run";
  if (j.verify.checked && !j.verify.ok) s += ", verify FAILED";
  return s;
}

std::string rps_cell(const JobResult& j) {
  std::optional<RpsRange> range = rps_range(j);
  if (!range) return fmt(j.rps, 1);
  return fmt(j.rps, 1) + " (" + fmt(range->min, 0) + "-" + fmt(range->max, 0) + ")";
}

std::string target_cell(const RunResult& r, const JobResult& j) {
  std::string t = j.target;
  if (j.paths.size() == 1) {
    auto it = r.context.paths.find(j.paths[0]);
    if (it != r.context.paths.end()) t += " (" + it->second.first + ")";
  }
  return t;
}

}  // namespace

std::vector<std::string> summary_header(const RunResult& r) {
  std::vector<std::string> h{"job",    "target", "ops",    "c",      "P",      "time s", "req/s",
                             "min ms", "avg ms", "p50 ms", "p99 ms", "max ms", "errors"};
  if (any_profile(r)) h.push_back("limited by");
  if (has_capacity(r)) h.push_back("max at SLO");  // --find-max: req/s found (repeats' min-max)
  return h;
}

namespace {

// Names, targets, messages and samples come from outside: shown, never obeyed by the terminal.
std::vector<std::string> visible(std::vector<std::string> cells) {
  for (auto& c : cells) c = printable(c);
  return cells;
}

std::vector<std::string> row_cells(const RunResult& r, const JobResult& j) {
  if (j.state == JobResult::State::Skipped || j.state == JobResult::State::SetupFailed)
    return {j.job.name,
            target_cell(r, j),
            "-",
            std::to_string(j.job.clients),
            std::to_string(j.job.pipeline),
            "-",
            "-",
            "-",
            "-",
            "-",
            "-",
            "-",
            errors_cell(j)};
  const Histogram& h = *j.latency;
  bool any = h.count() > 0;
  return {j.job.name,
          target_cell(r, j),
          std::to_string(j.ops_ok),
          std::to_string(j.job.clients),
          std::to_string(j.job.pipeline),
          fmt(j.elapsed_s, 3),
          rps_cell(j),
          any ? ms(h.min()) : "-",
          any ? fmt(h.mean() / 1e6, 3) : "-",
          any ? ms(h.percentile(50)) : "-",
          any ? ms(h.percentile(99)) : "-",
          any ? ms(h.max()) : "-",
          errors_cell(j)};
}

}  // namespace

std::vector<std::string> summary_row(const RunResult& r, const JobResult& j) {
  std::vector<std::string> cells = row_cells(r, j);
  // A figure that misses the job's SLO is marked where it stands (summary_header's columns).
  static const std::pair<const char*, size_t> columns[] = {{"rps", 6},  {"min", 7},  {"mean", 8},   {"p50", 9},
                                                           {"p99", 10}, {"max", 11}, {"errors", 12}};
  for (auto& [metric, col] : columns)
    if (j.slo.violated(metric)) cells[col] += " !";
  if (any_profile(r)) cells.push_back(j.profile.taken ? j.profile.limited_by + (j.profile.suspect ? " !" : "") : "-");
  if (has_capacity(r)) cells.push_back(capacity_cell(j));
  return visible(std::move(cells));
}

std::string context_line(const Context& c) {
  std::string s = c.host + ": " + c.cpu + ", " + std::to_string(c.cores) + " cores, " +
                  fmt(static_cast<double>(c.memory_bytes) / (1024.0 * 1024 * 1024), 1) + " GiB, " + c.kernel +
                  ", virtualization " + c.virtualization + ", " + c.build_type + " build";
  for (auto& [path, fs] : c.paths) s += "; " + path + " on " + fs.first + (fs.second.empty() ? "" : " " + fs.second);
  return printable(s);
}

std::vector<std::string> summary_notes(const RunResult& r) {
  std::vector<std::string> out;
  for (auto& j : r.jobs) {
    for (auto& note : j.notes)
      if (!under_durability(note)) out.push_back(note.text);
    // a job that did not run has no figures to warn of
    if (j.state == JobResult::State::Skipped || j.state == JobResult::State::SetupFailed) continue;
    const std::string n = note_name(j);
    for (auto& w : j.warnings) out.push_back("warning: " + n + ": " + w.text);
  }
  for (auto& note : r.notes)
    if (!under_durability(note)) out.push_back(note.text);
  for (auto& w : r.context.warnings) out.push_back("warning: " + w.text);
  return visible(std::move(out));
}

std::vector<std::string> quiet_notes(const RunResult& r) {
  auto wrong_or_found = [](const Note& n) {
    switch (n.kind) {
      case NoteKind::Skipped:
      case NoteKind::SetupError:
      case NoteKind::Interrupted:
      case NoteKind::Failed:
      case NoteKind::ErrorSample:
      case NoteKind::VerifyFailed:
      case NoteKind::SloMissed:
      case NoteKind::Capacity:
      case NoteKind::Fault: return true;
      default: return false;
    }
  };
  std::vector<std::string> out;
  for (auto& j : r.jobs)
    for (auto& note : j.notes)
      if (wrong_or_found(note)) out.push_back(note.text);
  for (auto& note : r.notes)
    if (wrong_or_found(note)) out.push_back(note.text);
  return visible(std::move(out));
}

}  // namespace mw
