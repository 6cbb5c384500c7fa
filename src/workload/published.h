// Published workloads (--workload twitter:N): the clusters of Twitter's cache traces (Yang, Yue,
// Vinayak, "A large scale analysis of hundreds of in-memory cache clusters at Twitter", OSDI '20),
// each one the facts of its row of the published table (github twitter/cache-trace,
// stat/2020Mar.md, CC-BY): op mix, Zipf alpha, mean key and value sizes, the most common TTL and
// the request rate. A preset sets what a workload takes of them (mix, keys, value size); the rest
// is shown beside it.
#pragma once
#include <span>
#include <string>

namespace mw {

struct TwitterCluster {
  int cluster;          // the table's clusterN
  const char* ops;      // its operation column, e.g. "get:0.93 set:0.07"
  double alpha;         // Zipf alpha (0: uniform)
  unsigned key_size;    // mean bytes
  unsigned value_size;  // mean bytes
  const char* ttl;      // the most common TTL and its share, e.g. "240s:1.00"
  double kqps;          // request rate, thousands per second
};

// The clusters with an op mix and an alpha in the table (5, 43 and 46 have none).
std::span<const TwitterCluster> twitter_clusters();

// What --workload twitter:N sets, as option values (the workload's own names).
struct PublishedWorkload {
  std::string mix;         // "read:93,update:7": get/gets read, set/add/cas/prepend update, incr rmw
  std::string keys;        // zipfian, or uniform at alpha 0
  std::string zipf_theta;  // the alpha
  std::string value_size;  // the mean value size
  std::string ttl;         // the most common TTL (--ttl), for every write
  std::string source;      // "twitter:4 (twitter/cache-trace stat/2020Mar.md, cluster4: ...)"
};

// --workload's value: "twitter:N". Throws SetupError naming --workload and the valid values.
PublishedWorkload published_workload(const std::string& name);

}  // namespace mw
