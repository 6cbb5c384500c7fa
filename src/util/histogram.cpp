#include "util/histogram.h"

#include <algorithm>
#include <cmath>

namespace mw {

int64_t Histogram::lowest_at(int index) {
  int bucket = (index >> kSubBucketHalfMagnitude) - 1;
  int64_t sub = (index & (kSubBucketHalf - 1)) + kSubBucketHalf;
  if (bucket < 0) {
    sub -= kSubBucketHalf;
    bucket = 0;
  }
  return sub << bucket;
}

int64_t Histogram::highest_at(int index) {
  int bucket = std::max(0, (index >> kSubBucketHalfMagnitude) - 1);
  return lowest_at(index) + (int64_t{1} << bucket) - 1;
}

void Histogram::merge(const Histogram& o) {
  for (int i = 0; i < kCountsLen; ++i) counts_[i] += o.counts_[i];
  total_ += o.total_;
  clamped_ += o.clamped_;
  sum_ += o.sum_;
  min_ = std::min(min_, o.min_);
  max_ = std::max(max_, o.max_);
  lo_ = std::min(lo_, o.lo_);
  hi_ = std::max(hi_, o.hi_);
}

void Histogram::reset() {
  std::fill(counts_.begin(), counts_.end(), 0);
  total_ = clamped_ = 0;
  sum_ = 0;
  min_ = INT64_MAX;
  max_ = 0;
  lo_ = kCountsLen;
  hi_ = -1;
}

int64_t Histogram::percentile(double p) const {
  if (total_ == 0) return 0;
  p = std::clamp(p, 0.0, 100.0);
  // ceil(p% of the count), tolerant of binary fractions: 99.9% of 1000 is rank 999, not 1000.
  double exact = p / 100.0 * static_cast<double>(total_);
  uint64_t rank = static_cast<uint64_t>(std::ceil(exact - 1e-9 * exact));
  if (rank == 0) rank = 1;
  // The first counter at which the running count reaches the rank, read over the occupied range
  // only, and from whichever end is nearer the rank (p99 from the top: a few counters, not 33,792).
  if (rank > total_ / 2) {
    uint64_t seen = total_;  // the count up to and including counter i
    for (int i = hi_; i >= lo_; --i) {
      if (seen - counts_[i] < rank) return std::clamp(highest_at(i), min_, max_);
      seen -= counts_[i];
    }
  } else {
    uint64_t seen = 0;
    for (int i = lo_; i <= hi_; ++i) {
      seen += counts_[i];
      if (seen >= rank) return std::clamp(highest_at(i), min_, max_);
    }
  }
  return max_;
}

std::vector<std::pair<int64_t, uint64_t>> Histogram::buckets() const {
  std::vector<std::pair<int64_t, uint64_t>> out;
  for (int i = std::max(lo_, 0); i <= hi_; ++i)
    if (counts_[i]) out.emplace_back(lowest_at(i), counts_[i]);
  return out;
}

Histogram Histogram::restore(const std::vector<std::pair<int64_t, uint64_t>>& buckets, int64_t min, int64_t max,
                             unsigned __int128 sum) {
  Histogram h;
  h.merge_restored(buckets, min, max, sum);
  return h;
}

void Histogram::merge_restored(const std::vector<std::pair<int64_t, uint64_t>>& buckets, int64_t min, int64_t max,
                               unsigned __int128 sum) {
  const uint64_t total = total_;
  const unsigned __int128 before = sum_;
  const int64_t lo = min_, hi = max_;
  for (auto& [v, n] : buckets) record_n(v, n);
  if (total_ == total) return;  // nothing added
  min = std::clamp<int64_t>(min, 0, kMaxValue);
  max = std::clamp<int64_t>(max, min, kMaxValue);
  min_ = total ? std::min(lo, min) : min;
  max_ = total ? std::max(hi, max) : max;
  sum_ = before + sum;
}

}  // namespace mw
