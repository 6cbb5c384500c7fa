// The time series of a job: per interval (--interval, default 1 s), ops ok and failed and a
// compact latency histogram of the successful ones. Memory is per interval, not per op: a
// 1-hour run at 1 s keeps 3,600 sparse histograms whatever the op count.
#pragma once
#include <cstdint>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

namespace mw {

// The HdrHistogram layout with 2 significant figures (256 sub-buckets: values within 1%) over
// 1 ns .. 1 h; the driver's exact histogram has 3. Indexes are stable: merging adds counts.
struct CompactLayout {
  static constexpr int kHalfMagnitude = 7;
  static constexpr int64_t kHalf = 1 << kHalfMagnitude;        // 128
  static constexpr int64_t kMask = 2 * kHalf - 1;              // 255
  static constexpr int64_t kMaxValue = 3600LL * 1000 * 1000 * 1000;
  static constexpr int kBuckets = 35;                          // 256 << 34 > 1 h
  static constexpr int kLen = (kBuckets + 1) * static_cast<int>(kHalf);
  static int index_of(int64_t v) {
    int pow2ceiling = 64 - __builtin_clzll(static_cast<uint64_t>(v) | kMask);
    int bucket = pow2ceiling - (kHalfMagnitude + 1);
    return static_cast<int>(((bucket + 1) << kHalfMagnitude) + ((v >> bucket) - kHalf));
  }
  static int64_t lowest_at(int index);
  static int64_t highest_at(int index);
};

// One interval: successful and failed ops completed in it, the latency of the successful ones
// as sparse (index, count) pairs in index order, and their exact max.
struct SeriesInterval {
  uint64_t ok = 0, failed = 0;
  int64_t max = 0;
  std::vector<std::pair<uint16_t, uint64_t>> buckets;
  int64_t percentile(double p) const;  // highest value equivalent to the one at that rank
  void merge(const SeriesInterval& o);
};

// Where every client of a job hands its closed intervals (under a lock, once per interval).
class SeriesSink {
 public:
  void add(size_t k, const SeriesInterval& iv);
  std::vector<SeriesInterval> take();

 private:
  std::mutex m_;
  std::vector<SeriesInterval> intervals_;
};

// One client's current interval. add() is on the hot path: a compare, an index and a count.
class SeriesRecorder {
 public:
  void start(int64_t interval_ns, SeriesSink* sink);
  [[gnu::always_inline]] void add(int64_t rel, int64_t latency, bool ok) {
    if (rel >= end_ || rel < begin_) [[unlikely]] roll(rel);
    if (ok) [[likely]] {
      latency = latency < 0 ? 0 : latency > CompactLayout::kMaxValue ? CompactLayout::kMaxValue : latency;
      ++counts_[CompactLayout::index_of(latency)];
      ++ok_;
      if (latency > max_) max_ = latency;
    } else {
      ++failed_;
    }
  }
  void finish();  // hands the open interval to the sink

 private:
  void roll(int64_t rel);
  void flush();
  SeriesSink* sink_ = nullptr;
  int64_t interval_ = 0, begin_ = INT64_MIN, end_ = INT64_MAX;  // not started: nothing rolls
  size_t k_ = 0;
  std::vector<uint64_t> counts_ = std::vector<uint64_t>(CompactLayout::kLen, 0);
  uint64_t ok_ = 0, failed_ = 0;
  int64_t max_ = 0;
};

// "throughput fell 40% from the first third to the last (...)" when the run never settled, or
// "" (fewer than 6 whole intervals, or within 20%). The last, partial interval is left out.
std::string settle_warning(const std::vector<SeriesInterval>& series, double interval_s, double elapsed_s);

}  // namespace mw
