#include "util/metric.h"

#include <cmath>
#include <cstdio>

namespace mw {

const char* merge_name(Metric::Merge m) { return m == Metric::Merge::Sum ? "sum" : "same"; }

bool parse_merge(std::string_view text, Metric::Merge* m) {
  if (text == "sum")
    *m = Metric::Merge::Sum;
  else if (text == "same")
    *m = Metric::Merge::Same;
  else
    return false;
  return true;
}

const Metric* find_metric(const Metrics& m, std::string_view name) {
  for (auto& x : m)
    if (x.name == name) return &x;
  return nullptr;
}

namespace {
bool whole(double v) { return std::isfinite(v) && std::abs(v) < 1e15 && v == std::floor(v); }
std::string number(double v, bool decimals) {
  char b[64];
  std::snprintf(b, sizeof b, decimals ? "%.3f" : "%.0f", v);
  return b;
}
std::string_view head_of(const std::string& name) {  // the name up to its last word
  size_t sp = name.rfind(' ');
  return sp == std::string::npos ? std::string_view{} : std::string_view(name).substr(0, sp);
}
}  // namespace

std::string format_metric_value(const Metric& m) {
  std::string s = number(m.value, !whole(m.value));
  if (!m.unit.empty()) s += " " + m.unit;
  return s;
}

std::vector<std::string> metric_lines(const Metrics& m) {
  std::vector<std::string> out;
  for (size_t i = 0; i < m.size();) {
    std::string_view head = head_of(m[i].name);
    size_t j = i + 1;
    while (!head.empty() && j < m.size() && head_of(m[j].name) == head && m[j].unit == m[i].unit) ++j;
    if (j - i < 2) {
      out.push_back(m[i].name + ": " + format_metric_value(m[i]));
      i = j;
      continue;
    }
    bool decimals = false;  // one format for the whole line: "min 0.000, avg 0.010"
    for (size_t k = i; k < j; ++k) decimals |= !whole(m[k].value);
    std::string line = std::string(head) + ":";
    for (size_t k = i; k < j; ++k)
      line += (k == i ? " " : ", ") + m[k].name.substr(head.size() + 1) + " " + number(m[k].value, decimals);
    if (!m[i].unit.empty()) line += " " + m[i].unit;
    out.push_back(line);
    i = j;
  }
  return out;
}

}  // namespace mw
