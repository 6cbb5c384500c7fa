// The time series of a job: per interval (--interval, default 1 s), ops ok and failed and a
// compact latency histogram of the successful ones. Memory is per interval, not per op: a
// 1-hour run at 1 s keeps 3,600 sparse histograms whatever the op count.
#pragma once
#include <algorithm>
#include <cstdint>
#include <functional>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

namespace mw {

// The HdrHistogram layout with 2 significant figures (256 sub-buckets: values within 1%) over
// 1 ns .. 1 h; the driver's exact histogram has 3. Indexes are stable: merging adds counts.
struct CompactLayout {
  static constexpr int kHalfMagnitude = 7;
  static constexpr int64_t kHalf = 1 << kHalfMagnitude;  // 128
  static constexpr int64_t kMask = 2 * kHalf - 1;        // 255
  static constexpr int64_t kMaxValue = 3600LL * 1000 * 1000 * 1000;
  static constexpr int kBuckets = 35;  // 256 << 34 > 1 h
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
  // An interval as a result file keeps it (counts, p50, p99, max): buckets that give those back.
  static SeriesInterval from_percentiles(uint64_t ok, uint64_t failed, int64_t p50, int64_t p99, int64_t max);
};

// Where every client of a job hands its closed intervals (under a lock, once per interval).
class SeriesSink {
 public:
  void add(size_t k, const SeriesInterval& iv);
  std::vector<SeriesInterval> take();
  // Also hands every interval to `f`, under the sink's lock (--metrics-listen's live figures).
  void watch(std::function<void(const SeriesInterval&)> f) { watch_ = std::move(f); }

 private:
  std::mutex m_;
  std::vector<SeriesInterval> intervals_;
  std::function<void(const SeriesInterval&)> watch_;
};

// One client's series: the successful ops of each second (per_second) and, once started, its
// current interval. add() is on the hot path: one unsigned compare to see whether the op is
// still in the current segment (the stretch up to the next second or interval boundary), an
// index, a count and a max. Segment ends, once a second or interval, do the rest.
class SeriesRecorder {
 public:
  void start(int64_t interval_ns, SeriesSink* sink);
  [[gnu::always_inline]] void add(int64_t rel, int64_t latency, bool ok) {
    if (static_cast<uint64_t>(rel - seg_begin_) >= static_cast<uint64_t>(seg_len_)) [[unlikely]]
      roll(rel);
    if (ok) [[likely]] {
      latency = std::clamp<int64_t>(latency, 0, CompactLayout::kMaxValue);
      ++counts_[CompactLayout::index_of(latency)];
      ++ok_;
      max_ = std::max(max_, latency);
    } else {
      ++failed_;
    }
  }
  void finish();  // counts the open segment, hands the open interval to the sink
  // Successful ops completed in each second since the phase start (rel 0); ops before it count
  // in second 0. Complete after finish().
  const std::vector<uint64_t>& per_second() const { return per_second_; }

 private:
  void roll(int64_t rel);
  void close_segment();
  void flush();
  SeriesSink* sink_ = nullptr;
  int64_t interval_ = 0;                 // 0: not started, seconds alone
  int64_t seg_begin_ = 0, seg_len_ = 0;  // empty: the first op rolls
  int64_t begin_ = 0, end_ = INT64_MAX;  // the current interval
  size_t k_ = 0, sec_ = 0;
  std::vector<uint64_t> counts_ = std::vector<uint64_t>(CompactLayout::kLen, 0);
  std::vector<uint64_t> per_second_;
  uint64_t ok_ = 0, failed_ = 0, seg_ok_base_ = 0;  // ok_, failed_: in the current interval
  int64_t max_ = 0;
};

// "throughput fell 40% from the first third to the last (...)" when the run never settled, or
// "" (fewer than 6 whole intervals, or within 20%). The last, partial interval is left out.
std::string settle_warning(const std::vector<SeriesInterval>& series, double interval_s, double elapsed_s);
// What it judges: the change of throughput from the first third to the last, as a share of the
// first (0 when fewer than 6 whole intervals, or none completed in the first third); it warns
// from kSettleChange on. `first_rps`, `last_rps`, `intervals`: the thirds' rates and the whole
// intervals judged, when it is not 0.
constexpr double kSettleChange = 0.2;
double settle_change(const std::vector<SeriesInterval>& series, double interval_s, double elapsed_s,
                     double* first_rps = nullptr, double* last_rps = nullptr, size_t* intervals = nullptr);

}  // namespace mw
