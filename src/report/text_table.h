// The terminal tables (the run's table, compare's table): columns padded to their widest cell,
// two spaces apart, no trailing blanks. Widths are display widths: one cell per UTF-8 sequence,
// so bars (U+2588...) and escaped names line up.
#pragma once
#include <cstddef>
#include <functional>
#include <string>
#include <vector>

namespace mw {

size_t display_width(const std::string& s);

// One line per row (each ended by "\n"); `left(i)` says whether column i is left-aligned (text)
// or right-aligned (numbers). Rows may be shorter than the widest.
std::string render_table(const std::vector<std::vector<std::string>>& rows, const std::function<bool(size_t)>& left);

}  // namespace mw
