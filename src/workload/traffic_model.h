// A workload model fitted to a trace (issue 43, `mwbench model TRACE`): what a team can share
// instead of its trace. One pass over the trace, in bounded memory, fits the op mix, the keys'
// popularity (a Zipf alpha by maximum likelihood over the frequency ranks, and how well a power
// law fits), the value and key sizes as SIZE:WEIGHT lists, the arrival rate and its burstiness,
// the working set, the one-hit wonders and the TTLs. The model is written as a small versioned
// JSON file (docs/reference/model-file.md) that `--workload-model FILE` runs on any keyed store.
#pragma once
#include <array>
#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "workload/trace.h"
#include "workload/workload.h"

namespace mw {

constexpr int kModelVersion = 1;
// Distinct keys counted one by one; past this the keys are sampled by their hash (halving the
// share kept each time the table fills): a table of 2^24 slots of 12 bytes, about 200 MB.
constexpr uint64_t kMaxModelKeys = (uint64_t{1} << 23) + (uint64_t{1} << 22);
constexpr int kModelSizeBuckets = 16;  // at most this many SIZE:WEIGHT entries per size list
constexpr int kModelTtls = 16;         // the most common TTLs kept; the rest summed in ttl_other
// --workload-model: the key space a model sets is its working set, at most this (--keyspace
// gives more: the load phase writes every key).
constexpr uint64_t kMaxModelKeyspace = 10'000'000;

struct TrafficModel {
  std::string name;    // the trace's file name, or model --name
  std::string format;  // the trace's format (twitter, monitor, csv)
  uint64_t requests = 0;
  uint64_t skipped = 0;                       // malformed lines skipped (--skip-bad)
  std::array<uint64_t, kTraceOpCount> ops{};  // requests per trace op
  std::array<double, kKvOpCount> mix{};       // shares of the workload's ops (read, update, delete, rmw)
  // Key popularity: the Zipf alpha by maximum likelihood over ranks 1..fit_ranks (0: uniform):
  // the keys seen at least kR2MinCount times, or every key when fewer than kMinFitRanks were; and
  // its fit quality: R^2 of log count against log rank at log-spaced ranks 1..r2_ranks (the keys
  // seen at least kR2MinCount times), whose least-squares slope is alpha_ls.
  double alpha = 0, r2 = 0, alpha_ls = 0;
  uint64_t fit_ranks = 0, r2_ranks = 0;
  bool alpha_capped = false;  // the likelihood still rose at kMaxTheta
  uint64_t distinct = 0;      // distinct keys counted (of the sample)
  uint64_t working_set = 0;   // distinct keys of the trace (distinct / key_sample when sampled)
  double key_sample = 1;      // share of the keys counted: 1, or 2^-k when the table filled
  double one_hit = 0;         // keys seen once / distinct keys
  std::string value_size;     // SIZE:WEIGHT (requests with a value size), "" when none has one
  std::string key_size;       // SIZE:WEIGHT
  double value_mean = 0, key_mean = 0;
  double rate = 0;        // mean requests per second: over the whole seconds spanned, or first to last request
  double dispersion = 0;  // variance / mean of the per-second counts (1: Poisson; 0 below 2 seconds)
  uint64_t seconds = 0;   // whole seconds spanned (first request's to last's)
  std::string ttl;        // TTL:WEIGHT of the writes (0: no TTL), the most common kModelTtls
  double ttl_other = 0;   // share of the writes whose TTL is not listed

  std::string mix_text() const;  // --mix: "read:930000,update:70000" (parts per million)
};

constexpr uint32_t kR2MinCount = 5;
constexpr uint64_t kMinFitRanks = 10;

// Counts requests as they come (add), fits at the end (finish). Memory: the key table (up to
// max_keys keys), two size histograms of 8 MiB and the TTLs (up to 4,096 distinct).
class ModelFit {
 public:
  explicit ModelFit(uint64_t max_keys = kMaxModelKeys);
  void add(const TraceRecord& r);
  uint64_t requests() const { return requests_; }
  // The model of what was added (at least one request).
  TrafficModel finish(const std::string& name, const std::string& format) const;

 private:
  void count_key(uint64_t key);
  void grow();
  void halve();  // keep the keys of the next sample level only
  uint64_t max_keys_;
  std::vector<uint64_t> keys_;  // open addressing, 0 = empty (a key id of 0 is counted as 1)
  std::vector<uint32_t> counts_;
  uint64_t used_ = 0;
  int level_ = 0;  // keys kept: those below 2^(64 - level)
  uint64_t requests_ = 0;
  std::array<uint64_t, kTraceOpCount> ops_{};
  std::vector<uint64_t> value_hist_, key_hist_;  // per size (clamped to kMaxTraceValue)
  std::unordered_map<uint32_t, uint64_t> ttls_;
  uint64_t ttl_writes_ = 0, ttl_dropped_ = 0;
  bool started_ = false, whole_ = true;  // whole_: every timestamp a whole second
  double first_t_ = 0, last_t_ = 0;
  int64_t second_ = 0;
  uint64_t in_second_ = 0, seconds_ = 0;
  double sum_ = 0, sum_sq_ = 0;  // per-second counts
};

// The fitted alpha of a discrete power law over ranks 1..K from counts sorted in descending
// order (maximum likelihood, golden section over [0, kMaxTheta]); `capped` when it is kMaxTheta.
double fit_zipf_alpha(const std::vector<uint32_t>& sorted_counts, bool* capped = nullptr);

// Up to `buckets` SIZE:WEIGHT entries from a histogram (hist[s]: requests of size s; s = 0 left
// out): quantile buckets of the requests, each the mean size of its range (which lies in it).
std::string size_list(const std::vector<uint64_t>& hist, int buckets, double* mean = nullptr);

std::string model_json(const TrafficModel& m);                  // the model file's text
std::vector<std::string> model_summary(const TrafficModel& m);  // the lines `mwbench model` prints

// A model file: untrusted, every field checked. Throws SetupError "LABEL: what was expected".
constexpr size_t kMaxModelBytes = 1 << 20;
TrafficModel parse_model(std::string_view text, const std::string& label);
TrafficModel load_model(const std::string& path);  // the file read (at most kMaxModelBytes) and parsed

}  // namespace mw
