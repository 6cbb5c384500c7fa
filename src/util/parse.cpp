#include "util/parse.h"

#include <cmath>
#include <cstdlib>

#include "util/status.h"

namespace mw {

std::vector<std::string> split_list(const std::string& s, char sep) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start <= s.size()) {
    size_t end = s.find(sep, start);
    if (end == std::string::npos) end = s.size();
    std::string item = s.substr(start, end - start);
    while (!item.empty() && item.front() == ' ') item.erase(0, 1);
    while (!item.empty() && item.back() == ' ') item.pop_back();
    if (!item.empty()) out.push_back(item);
    start = end + 1;
  }
  return out;
}

double parse_number(const std::string& s, size_t* used) {
  const char* b = s.c_str();
  char* e = nullptr;
  double v = std::strtod(b, &e);
  *used = static_cast<size_t>(e - b);
  return v;
}

double parse_duration(const std::string& s, const std::string& what) {
  size_t used = 0;
  double v = parse_number(s, &used);
  std::string unit = s.substr(used);
  double mult = 0;
  if (unit.empty() || unit == "s")
    mult = 1;
  else if (unit == "ms")
    mult = 1e-3;
  else if (unit == "us")
    mult = 1e-6;
  else if (unit == "m" || unit == "min")
    mult = 60;
  else if (unit == "h")
    mult = 3600;
  else if (unit == "d")
    mult = 86400;
  if (used == 0 || mult == 0 || !(v >= 0) || std::isinf(v))
    throw SetupError(what + ": expected a duration like 10s, 500ms or 2m, got '" + s + "'");
  return v * mult;
}

int64_t parse_size(const std::string& s, const std::string& what) {
  size_t used = 0;
  double v = parse_number(s, &used);
  std::string unit = s.substr(used);
  double mult = 0;
  if (unit.empty() || unit == "b" || unit == "B")
    mult = 1;
  else if (unit == "k" || unit == "K" || unit == "KiB" || unit == "kB")
    mult = 1024.0;
  else if (unit == "m" || unit == "M" || unit == "MiB")
    mult = 1024.0 * 1024;
  else if (unit == "g" || unit == "G" || unit == "GiB")
    mult = 1024.0 * 1024 * 1024;
  if (used == 0 || mult == 0 || !(v >= 0) || v * mult > 9e18 || v * mult != std::floor(v * mult))
    throw SetupError(what + ": expected a whole number, optionally with k, M or G, got '" + s + "'");
  return static_cast<int64_t>(v * mult);
}

}  // namespace mw
