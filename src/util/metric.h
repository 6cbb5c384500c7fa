// A protocol-level figure of a job (HTTP responses by status, connect times, evictions, docs/s):
// typed, so adapters hand over numbers and units and never format, and `mwbench merge` adds up
// what adds up without parsing text back.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace mw {

struct Metric {
  // How the figures of several load machines (MPI ranks, merged files) combine: counts and
  // rates add up; a fact (a document's length) or a statistic (a percentile) is kept only when
  // every part shows the same value.
  enum class Merge : uint8_t { Sum, Same };
  std::string name;  // "connections opened", "HTTP 200 responses", "connect p50"
  double value = 0;
  std::string unit;  // "" for a count, "bytes", "ms", "kB/s", "docs/s"
  Merge merge = Merge::Sum;
};
using Metrics = std::vector<Metric>;

inline Metric count_metric(std::string name, uint64_t n) {
  return {std::move(name), static_cast<double>(n), "", Metric::Merge::Sum};
}

const char* merge_name(Metric::Merge m);                    // "sum", "same"
bool parse_merge(std::string_view text, Metric::Merge* m);  // false: not a merge rule

// A metric by name, or null.
const Metric* find_metric(const Metrics& m, std::string_view name);

// "1204", "0.250 ms", "84 bytes": whole numbers without decimals, others with three.
std::string format_metric_value(const Metric& m);

// The lines shown under a job's row: one per metric, except that consecutive metrics of one
// unit whose names differ only in their last word (connect min / avg / p50 / p99 / max) share a
// line: "connect: min 0.012, avg 0.020, p50 0.015, p99 0.100, max 0.300 ms".
std::vector<std::string> metric_lines(const Metrics& m);

}  // namespace mw
