#include <algorithm>
#include <cmath>

#include "report/report.h"
#include "report/text_table.h"

namespace mw {

namespace {

// A bar of `width` cells for v out of max, in eighths of a cell.
std::string bar(double v, double max, int width = 10) {
  static const char* eighths[] = {"", "\u258f", "\u258e", "\u258d", "\u258c", "\u258b", "\u258a", "\u2589"};
  if (max <= 0 || v <= 0) return "";
  int units = static_cast<int>(std::lround(v / max * width * 8));
  std::string out;
  for (int i = 0; i < units / 8; ++i) out += "\u2588";
  return out + eighths[units % 8];
}

}  // namespace

std::string format_table(const RunResult& r, Detail detail) {
  const bool full = detail == Detail::Full;
  std::vector<std::vector<std::string>> rows{summary_header(r)};
  double max_rps = 0;
  for (auto& j : r.jobs) max_rps = std::max(max_rps, j.rps);
  rows[0].insert(rows[0].begin() + 7, "");
  for (auto& j : r.jobs) {
    rows.push_back(summary_row(r, j));
    rows.back().insert(rows.back().begin() + 7, bar(j.rps, max_rps));
  }
  // left: job, target, the bar (7), errors (13), limited by
  std::string out = render_table(rows, [](size_t i) { return i < 2 || i == 7 || i >= 13; });
  for (auto& n : full ? summary_notes(r) : glance_notes(r)) out += n + "\n";
  if (auto c = capacity_rows(r); full && !c.empty()) {
    const size_t ccols = c[0].size();
    out += "\n" + render_table(c, [ccols](size_t i) { return i < 2 || i + 1 == ccols; });
  }
  if (auto d = durability_rows(r); !d.empty()) {
    const size_t dcols = d[0].size();
    out += "\n" + render_table(d, [dcols](size_t i) { return i < 2 || i + 2 >= dcols; });
    if (full)
      for (auto& n : durability_notes(r)) out += n + "\n";
  }
  if (r.decide) {
    out += "\n";
    for (auto& line : decision_lines(*r.decide, !full)) out += printable(line) + "\n";
  }
  if (full) out += context_line(r.context) + "\n";
  return out;
}

std::string format_markdown(const RunResult& r, Detail detail) {
  const bool full = detail == Detail::Full;
  auto line = [](const std::vector<std::string>& cells) {  // a | inside a cell is \| (not a column)
    std::string s = "|";
    for (auto& c : cells) {
      s += " ";
      for (char ch : c) s += ch == '|' ? std::string("\\|") : std::string(1, ch);
      s += " |";
    }
    return s + "\n";
  };
  auto head = summary_header(r);
  std::string out = line(head);
  std::vector<std::string> sep;
  for (size_t i = 0; i < head.size(); ++i) sep.push_back(i < 2 || i >= 12 ? "---" : "---:");  // 12: errors
  out += line(sep);
  for (auto& j : r.jobs) out += line(summary_row(r, j));
  auto notes = full ? summary_notes(r) : glance_notes(r);
  if (!notes.empty()) out += "\n";
  for (auto& n : notes) out += "- " + n + "\n";
  if (auto d = durability_rows(r); !d.empty()) {
    out += "\n" + line(d[0]);
    out += line(std::vector<std::string>(d[0].size(), "---"));
    for (size_t k = 1; k < d.size(); ++k) out += line(d[k]);
    if (full) {
      out += "\n";
      for (auto& n : durability_notes(r)) out += "- " + n + "\n";
    }
  }
  if (r.decide) {
    out += "\n";
    for (auto& said : decision_lines(*r.decide, !full)) out += "- " + printable(said) + "\n";
  }
  if (full) out += "\n" + context_line(r.context) + "\n";
  return out;
}

}  // namespace mw
