// The default run's lines under the table (report.h: glance_notes): at most one a job, the most
// important thing it has to say, as redis-benchmark -q, wrk and fio summarise; -v prints every note.
#include "report/report.h"
#include "results/notes.h"
#include "util/text.h"

namespace mw {

namespace {

bool is_failure(NoteKind k) {
  return k == NoteKind::Skipped || k == NoteKind::SetupError || k == NoteKind::Interrupted || k == NoteKind::Failed ||
         k == NoteKind::VerifyFailed;
}

// A limited-by verdict that names a resource: "not determined" and a rate that was met say nothing
// the table's column does not.
bool names_a_limit(const Profile& p) {
  return p.taken && !p.limited_by.empty() && p.limited_by != "not determined" &&
         p.limited_by != "the rate you asked for" && p.limited_by != "the offered rate";
}

// --fault: each fault's window and the writes it lost (when read back), in one line ("fault: NAME:
// restart@40%: unavailable 0.412 s, 0 acknowledged writes lost; stop@70%/1s: unavailable 1.020 s").
std::string faults_line(const JobResult& j) {
  std::string s = "fault: " + note_name(j) + ": ";
  for (size_t i = 0; i < j.faults.size(); ++i) {
    const FaultResult& f = j.faults[i];
    s += (i ? "; " : "") + f.fault + ": ";
    if (f.at_s == 0 && f.done_s == 0 && !f.error.empty()) {
      s += f.error;
      continue;
    }
    s += "unavailable " + fmt(f.window_s(), 3) + " s" + (f.back ? "" : ", never back");
    if (f.lost >= 0) s += ", " + std::to_string(f.lost) + " acknowledged writes lost";  // -1: not read back
    if (f.messages_lost >= 0)
      s += ", " + std::to_string(f.messages_lost) + " acknowledged messages lost, " +
           std::to_string(f.messages_duplicated) + " duplicated, " + std::to_string(f.messages_reordered) +
           " out of order";
    if (!f.error.empty()) s += ", " + f.error;
  }
  return s;
}

// A job's lines that say something went wrong or is suspect, most important first: a failure (with
// its first error sample), a missed SLO, a search that found no rate, its faults, its warnings.
std::vector<std::string> wrong_lines(const JobResult& j) {
  std::vector<std::string> out;
  const std::vector<Note>& notes = j.notes;
  for (size_t i = 0; i < notes.size(); ++i) {
    if (!is_failure(notes[i].kind)) continue;
    std::string s = notes[i].text;
    if (notes[i].kind == NoteKind::Failed && i + 1 < notes.size() && notes[i + 1].kind == NoteKind::ErrorSample) {
      std::string sample = notes[i + 1].text;
      sample.erase(0, sample.find_first_not_of(' '));
      s += "; first: " + sample;
    }
    out.push_back(std::move(s));
  }
  for (auto& n : notes)
    if (n.kind == NoteKind::SloMissed) out.push_back(n.text);
  if (j.capacity && j.capacity->verdict != CapacityVerdict::Found)
    for (auto& n : notes)
      if (n.kind == NoteKind::Capacity) out.push_back(n.text);
  if (!j.faults.empty()) out.push_back(faults_line(j));
  // a job that did not run has no figures to warn of
  if (j.state != JobResult::State::Skipped && j.state != JobResult::State::SetupFailed)
    for (auto& w : j.warnings) out.push_back("warning: " + note_name(j) + ": " + w.text);
  return out;
}

}  // namespace

std::string glance_line(const JobResult& j) {
  std::vector<std::string> wrong = wrong_lines(j);
  if (!wrong.empty()) {
    if (wrong.size() > 1) wrong[0] += " (" + std::to_string(wrong.size() - 1) + " more: -v)";
    return printable(wrong[0]);
  }
  if (j.capacity)  // what the search found
    for (auto& n : j.notes)
      if (n.kind == NoteKind::Capacity) return printable(n.text);
  for (auto& n : j.notes)  // --reconnect-every: its opens, which its table row does not show
    if (n.kind == NoteKind::Connect) return printable(n.text);
  if (names_a_limit(j.profile)) return printable(limited_by_line(note_name(j), j.profile));
  return "";
}

std::vector<std::string> glance_notes(const RunResult& r) {
  std::vector<std::string> out;
  for (auto& j : r.jobs)
    if (std::string line = glance_line(j); !line.empty()) out.push_back(std::move(line));
  for (auto& note : r.notes)  // what the table's req/s cells mean under --repeat
    if (note.kind == NoteKind::Repeats) out.push_back(printable(note.text));
  for (auto& w : r.context.warnings) out.push_back(printable("warning: " + w.text));
  return out;
}

}  // namespace mw
