#include "workload/published.h"

#include <array>
#include <cmath>
#include <cstdio>
#include <cstdlib>

#include "util/parse.h"
#include "util/status.h"
#include "util/text.h"
#include "workload/trace.h"

namespace mw {
namespace {

// Facts of the rows of twitter/cache-trace stat/2020Mar.md (commit 5ad9e4c0): cluster, operation,
// Zipf alpha, key size, value size, the first (most common) entry of common TTL, request rate.
// Clusters 5 (no figures), 43 and 46 (alpha NA) are left out.
constexpr TwitterCluster kClusters[] = {
    {1, "get:0.99", 2.6774, 80, 267, "240s:1.00", 11.40},
    {2, "get:1.00", 1.4908, 21, 68, "4d:0.59", 12.15},
    {3, "get:0.99", 1.6414, 19, 120, "7d:1.00", 1.36},
    {4, "get:0.93 set:0.07", 1.1004, 67, 2439, "60s:0.39", 5.26},
    {6, "get:0.98 set:0.02", 1.882, 44, 252, "520s:0.03", 12.61},
    {7, "get:0.82 set:0.18", 1.0666, 17, 1936, "1.8h:0.28", 1.62},
    {8, "set:0.50 get:0.50", 1.7366, 23, 9497, "1380s:0.95", 2.11},
    {9, "get:0.99", 1.6796, 32, 39, "2h:0.79", 18.83},
    {10, "add:0.50 get:0.50", 0, 22, 2333, "2h:1.00", 0.22},
    {11, "get:0.96 add:0.02 gets:0.01 cas:0.01", 1.4891, 24, 170, "5d:0.97", 4.16},
    {12, "set:0.80 get:0.20", 0.3048, 44, 1030, "300s:0.98", 4.36},
    {13, "get:0.38 set:0.62", 0.4565, 44, 4266, "300s:0.97", 1.34},
    {14, "get:0.65 delete:0.22 set:0.13", 1.2959, 96, 414, "1d:1.00", 5.81},
    {15, "set:1.00", 0.0242, 18, 102, "30s:1.00", 9.02},
    {16, "get:0.93 set:0.04 add:0.01", 1.7862, 18, 115, "1h:0.99", 17.51},
    {17, "get:0.99", 2.1106, 19, 212, "5d:1.00", 0.35},
    {18, "get:0.96 add:0.01 gets:0.01 cas:0.01", 2.0994, 18, 37, "12h:1.00", 26.40},
    {19, "get:0.75 set:0.25", 0.735, 42, 101, "7.5h:0.08", 3.31},
    {20, "get:0.96 add:0.03", 1.3699, 26, 55, "5d:0.99", 5.63},
    {21, "add:1.00", 0.0521, 25, 1, "2.2h:0.62", 2.18},
    {22, "get:0.72 incr:0.18 set:0.10", 0.7624, 54, 4, "1d:0.85", 3.24},
    {23, "set:0.31 get:0.36 incr:0.30 delete:0.02", 0.274, 35, 224, "120s:0.93", 8.69},
    {24, "get:0.99", 1.3726, 32, 699, "14d:0.71", 5.29},
    {25, "get:0.95 add:0.02 gets:0.02 cas:0.02", 0.9929, 49, 28, "30d:0.99", 18.97},
    {26, "get:0.71 set:0.29", 0.6299, 122, 1745, "60s:0.67", 0.25},
    {27, "get:0.85 set:0.15", 1.065, 66, 8, "92.6d:0.28", 24.55},
    {28, "get:0.91 set:0.03 add:0.03", 1.503, 45, 85, "3h:0.56", 9.05},
    {29, "get:0.86 set:0.13", 1.2323, 36, 799, "1h:0.67", 10.73},
    {30, "get:0.99", 1.4259, 22, 689, "12h:0.36", 3.85},
    {31, "set:0.94 get:0.06", 0, 41, 15, "60s:1.00", 2.52},
    {32, "set:0.98 get:0.02", 0, 41, 138, "60s:1.00", 7.35},
    {33, "get:0.99 set:0.01", 1.354, 24, 1118, "10.7h:0.05", 10.53},
    {34, "get:0.94 set:0.06", 1.1401, 33, 322, "10.6h:0.04", 3.40},
    {35, "get:0.96 set:0.04", 0, 19, 1796, "60s:1.00", 3.06},
    {36, "get:0.93 add:0.04 gets:0.01 cas:0.01", 1.2169, 23, 78, "30d:1.00", 9.08},
    {37, "set:0.37 get:0.63", 0.4251, 72, 20134, "20s:0.91", 4.15},
    {38, "set:0.94 get:0.06", 0, 41, 185, "60s:1.00", 2.52},
    {39, "set:0.94 get:0.06", 0, 41, 80, "60s:1.00", 2.52},
    {40, "set:0.50 get:0.50", 0.8551, 44, 155, "8h:0.95", 6.26},
    {41, "get:0.50 set:0.50", 0.8542, 44, 171, "8h:0.95", 5.18},
    {42, "get:0.96 add:0.04", 1.5974, 40, 4703, "600s:0.82", 6.84},
    {44, "get:0.98 add:0.01", 1.4084, 25, 22, "30d:1.00", 9.41},
    {45, "add:0.15 get:0.85", 0.6372, 10, 120, "15d:1.00", 0.33},
    {47, "get:1.00", 2.0637, 44, 267, "2d:1.00", 9.54},
    {48, "set:0.35 get:0.65", 0.8191, 44, 70, "1d:1.00", 1.84},
    {49, "set:0.43 get:0.57", 1.5095, 44, 10658, "1d:0.99", 1.25},
    {50, "get:0.52 set:0.48", 1.2816, 18, 67485, "900s:0.73", 0.24},
    {51, "get:0.90 set:0.10", 1.9745, 44, 221, "2d:1.00", 10.40},
    {52, "get:0.91 add:0.04 gets:0.02 cas:0.02", 1.2117, 20, 273, "1d:0.65", 24.25},
    {53, "get:0.89 set:0.03 prepend:0.09", 1.2061, 36, 9213, "30d:0.66", 1.38},
    {54, "get:0.97 set:0.03", 1.611, 19, 246, "3.8h:0.13", 0.65},
};

std::string valid_names() {
  std::string s;
  for (const TwitterCluster& c : kClusters) s += (s.empty() ? "twitter:" : ",") + std::to_string(c.cluster);
  return s;
}

// The table's op column as a --mix: each op's share in hundredths, mapped as a trace's replay
// maps it (kv_op_of), shares of one workload op added.
std::string mix_of(const char* ops) {
  std::array<int, kKvOpCount> w{};
  for (const std::string& item : split_list(ops, ' ')) {
    const size_t colon = item.find(':');
    const std::string name = item.substr(0, colon);
    for (int i = 0; i < kTraceOpCount; ++i)
      if (trace_op_name(static_cast<TraceOp>(i)) == name)
        w[static_cast<int>(kv_op_of(static_cast<TraceOp>(i)))] +=
            static_cast<int>(std::lround(std::strtod(item.c_str() + colon + 1, nullptr) * 100));
  }
  std::string mix;
  for (int i = 0; i < kKvOpCount; ++i)
    if (w[i] > 0) mix += (mix.empty() ? "" : ",") + std::string(kKvOpNames[i]) + ":" + std::to_string(w[i]);
  return mix;
}

}  // namespace

std::span<const TwitterCluster> twitter_clusters() { return kClusters; }

PublishedWorkload published_workload(const std::string& name) {
  const std::string prefix = "twitter:";
  const TwitterCluster* found = nullptr;
  if (name.compare(0, prefix.size(), prefix) == 0 && name.size() > prefix.size() && name.size() < prefix.size() + 4 &&
      name[prefix.size()] != '0' && name.find_first_not_of("0123456789", prefix.size()) == std::string::npos) {
    const int n = std::stoi(name.substr(prefix.size()));
    for (const TwitterCluster& c : kClusters)
      if (c.cluster == n) found = &c;
  }
  if (!found)
    throw SetupError("--workload: expected one of " + valid_names() + ", got '" + printable(name.substr(0, 40)) + "'");
  const TwitterCluster& c = *found;
  PublishedWorkload p;
  p.mix = mix_of(c.ops);
  p.keys = c.alpha > 0 ? "zipfian" : "uniform";
  p.zipf_theta = c.alpha > 0 ? fmt_g(c.alpha) : "";
  p.value_size = std::to_string(c.value_size);
  p.ttl = std::string(c.ttl).substr(0, std::string(c.ttl).find(':'));
  p.source = name + " (twitter/cache-trace stat/2020Mar.md, cluster" + std::to_string(c.cluster) + ": " + c.ops +
             ", alpha " + fmt_g(c.alpha) + ", key " + std::to_string(c.key_size) + " B, value " +
             std::to_string(c.value_size) + " B, TTL " + c.ttl + ", " + fmt_g(c.kqps) + " kqps)";
  return p;
}

}  // namespace mw
