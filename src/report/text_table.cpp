#include "report/text_table.h"

#include <algorithm>

namespace mw {

size_t display_width(const std::string& s) {
  size_t n = 0;
  for (unsigned char c : s) n += (c & 0xC0) != 0x80;
  return n;
}

std::string render_table(const std::vector<std::vector<std::string>>& rows, const std::function<bool(size_t)>& left) {
  std::vector<size_t> w;
  for (auto& row : rows) {
    if (row.size() > w.size()) w.resize(row.size(), 0);
    for (size_t i = 0; i < row.size(); ++i) w[i] = std::max(w[i], display_width(row[i]));
  }
  std::string out;
  for (auto& row : rows) {
    std::string line;
    for (size_t i = 0; i < row.size(); ++i) {
      std::string pad(w[i] - display_width(row[i]), ' ');
      if (i) line += "  ";
      line += left(i) ? row[i] + pad : pad + row[i];
    }
    while (!line.empty() && line.back() == ' ') line.pop_back();
    out += line + "\n";
  }
  return out;
}

}  // namespace mw
