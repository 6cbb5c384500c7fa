// The durability table of crash jobs (--crash kill, --crash power): one row per job, under the
// summary, and the notes the run carries under it (results/crash_notes.cpp makes them).
#include "report/report.h"
#include "util/text.h"

namespace mw {

std::string crash_text(CrashKind crash, const std::string& victim, double at) {
  const char* cut = crash == CrashKind::Power ? "power cut, " : crash == CrashKind::Torn ? "torn power cut, " : "";
  return cut + victim + " at " + fmt(at * 100, 0) + "%";
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
    std::string verdict = !d.checked ? "not checked"
                          : d.unrecoverable
                              ? (d.failed() ? "UNRECOVERABLE (expected durable)" : "unrecoverable (finding)")
                          : d.lost || d.corrupt ? (d.failed() ? "LOST (expected durable)" : "lost (finding)")
                          : d.acked == 0        ? "nothing acked"
                                                : "kept";
    rows.push_back({printable(names[i]), crash_text(d.crash, d.victim, d.crash_at), fmt(j.rps, 0),
                    std::to_string(d.acked), std::to_string(d.lost), loss_window_text(d.lost, d.loss_window_s),
                    std::to_string(d.in_doubt), std::to_string(d.never_sent), std::to_string(d.corrupt),
                    fmt(d.recovery_s, 3), expectation_name(d.expect), verdict});
  }
  return rows;
}

bool under_durability(const Note& n) { return n.kind == NoteKind::Durability || n.kind == NoteKind::CrashModel; }

std::vector<std::string> durability_notes(const RunResult& r) {
  std::vector<std::string> out;
  for (auto& n : r.notes)  // the caveats, then each crash job's lines
    if (n.kind == NoteKind::CrashModel) out.push_back(printable(n.text));
  for (auto& j : r.jobs)
    for (auto& n : j.notes)
      if (n.kind == NoteKind::Durability) out.push_back(printable(n.text));
  return out;
}

}  // namespace mw
