#include <algorithm>

#include "report.h"

namespace mw {

std::string format_table(const RunResult& r) {
  std::vector<std::vector<std::string>> rows{summary_header()};
  for (auto& j : r.jobs) rows.push_back(summary_row(r, j));
  std::vector<size_t> w(rows[0].size(), 0);
  for (auto& row : rows)
    for (size_t i = 0; i < row.size(); ++i) w[i] = std::max(w[i], row[i].size());
  std::string out;
  for (size_t k = 0; k < rows.size(); ++k) {
    std::string line;
    for (size_t i = 0; i < rows[k].size(); ++i) {
      const std::string& c = rows[k][i];
      bool left = i < 2 || i + 1 == rows[k].size();
      std::string pad(w[i] - c.size(), ' ');
      line += (i ? "  " : "") + (left ? c + pad : pad + c);
    }
    while (!line.empty() && line.back() == ' ') line.pop_back();
    out += line + "\n";
  }
  for (auto& n : summary_notes(r)) out += n + "\n";
  out += context_line(r.context) + "\n";
  return out;
}

std::string format_markdown(const RunResult& r) {
  auto line = [](const std::vector<std::string>& cells) {
    std::string s = "|";
    for (auto& c : cells) s += " " + c + " |";
    return s + "\n";
  };
  auto head = summary_header();
  std::string out = line(head);
  std::vector<std::string> sep;
  for (size_t i = 0; i < head.size(); ++i) sep.push_back(i < 2 || i + 1 == head.size() ? "---" : "---:");
  out += line(sep);
  for (auto& j : r.jobs) out += line(summary_row(r, j));
  auto notes = summary_notes(r);
  if (!notes.empty()) out += "\n";
  for (auto& n : notes) out += "- " + n + "\n";
  out += "\n" + context_line(r.context) + "\n";
  return out;
}

}  // namespace mw
