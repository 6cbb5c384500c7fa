// Log-linear latency histogram in the HdrHistogram layout: 3 significant figures over
// 1 ns .. 1 h, constant memory whatever the count. Merged exactly by adding counts.
#pragma once
#include <algorithm>
#include <cstdint>
#include <utility>
#include <vector>

namespace mw {

class Histogram {
 public:
  static constexpr int kSubBucketHalfMagnitude = 10;  // 2048 sub-buckets: 3 sig. figs
  static constexpr int64_t kSubBucketHalf = 1 << kSubBucketHalfMagnitude;
  static constexpr int64_t kSubBucketMask = 2 * kSubBucketHalf - 1;
  static constexpr int64_t kMaxValue = 3600LL * 1000 * 1000 * 1000;  // 1 h in ns
  static constexpr int kBucketCount = 32;                            // 2048 << 31 > 1 h
  static constexpr int kCountsLen = (kBucketCount + 1) * kSubBucketHalf;

  Histogram() : counts_(kCountsLen, 0) {}

  void record(int64_t v) { record_n(v, 1); }
  void record_n(int64_t v, uint64_t n) {
    if (v < 0) v = 0;
    if (v > kMaxValue) {
      v = kMaxValue;
      ++clamped_;
    }
    const int i = index_of(v);
    counts_[i] += n;
    total_ += n;
    sum_ += static_cast<unsigned __int128>(v) * n;
    if (v < min_) min_ = v, lo_ = std::min(lo_, i);
    if (v > max_) max_ = v, hi_ = std::max(hi_, i);
  }
  void merge(const Histogram& o);
  void reset();

  uint64_t count() const { return total_; }
  int64_t min() const { return total_ ? min_ : 0; }
  int64_t max() const { return total_ ? max_ : 0; }
  double mean() const { return total_ ? static_cast<double>(sum_) / static_cast<double>(total_) : 0; }
  uint64_t clamped() const { return clamped_; }
  unsigned __int128 sum() const { return sum_; }  // of every value recorded, exact
  // Value at percentile p (0..100): the highest value equivalent to the one at that rank,
  // never above the exact max. Relative error below 0.1%.
  int64_t percentile(double p) const;

  // Non-empty buckets as (lowest equivalent value, count): enough to rebuild exactly.
  std::vector<std::pair<int64_t, uint64_t>> buckets() const;
  // The histogram those buckets came from, with its exact min, max and sum (the buckets alone
  // give them to 3 significant figures). Values are clamped to [0, kMaxValue].
  static Histogram restore(const std::vector<std::pair<int64_t, uint64_t>>& buckets, int64_t min, int64_t max,
                           unsigned __int128 sum);
  // The same, added to this one (no histogram built in between).
  void merge_restored(const std::vector<std::pair<int64_t, uint64_t>>& buckets, int64_t min, int64_t max,
                      unsigned __int128 sum);

  static int index_of(int64_t v) {
    int pow2ceiling = 64 - __builtin_clzll(static_cast<uint64_t>(v) | kSubBucketMask);
    int bucket = pow2ceiling - (kSubBucketHalfMagnitude + 1);
    int64_t sub = v >> bucket;
    return static_cast<int>(((bucket + 1) << kSubBucketHalfMagnitude) + (sub - kSubBucketHalf));
  }
  static int64_t lowest_at(int index);
  static int64_t highest_at(int index);

 private:
  std::vector<uint64_t> counts_;
  uint64_t total_ = 0;
  uint64_t clamped_ = 0;
  unsigned __int128 sum_ = 0;  // exact, and cheaper than long double on the hot path
  int64_t min_ = INT64_MAX;
  int64_t max_ = 0;
  // The counters outside [lo_, hi_] are zero: the scans (percentile, buckets) read only this range
  // (a restored histogram's exact min and max need not share the buckets' indices).
  int lo_ = kCountsLen;
  int hi_ = -1;
};

}  // namespace mw
