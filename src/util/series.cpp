#include "util/series.h"

#include <algorithm>
#include <cmath>
#include <map>

#include "util/text.h"

namespace mw {

int64_t CompactLayout::lowest_at(int index) {
  if (index < 2 * kHalf) return index;
  int bucket = (index >> kHalfMagnitude) - 1;
  return ((index & (kHalf - 1)) + kHalf) << bucket;
}

int64_t CompactLayout::highest_at(int index) {
  if (index < 2 * kHalf) return index;
  int bucket = (index >> kHalfMagnitude) - 1;
  return lowest_at(index) + (int64_t{1} << bucket) - 1;
}

int64_t SeriesInterval::percentile(double p) const {
  if (ok == 0) return 0;
  auto rank = static_cast<uint64_t>(std::ceil(p / 100 * static_cast<double>(ok)));
  rank = std::clamp<uint64_t>(rank, 1, ok);
  uint64_t seen = 0;
  for (auto& [index, count] : buckets) {
    seen += count;
    if (seen >= rank) return std::min(CompactLayout::highest_at(index), max);
  }
  return max;
}

namespace {
uint64_t rank_of(double p, uint64_t ok) {
  return std::clamp<uint64_t>(static_cast<uint64_t>(std::ceil(p / 100 * static_cast<double>(ok))), 1, ok);
}
}  // namespace

SeriesInterval SeriesInterval::from_percentiles(uint64_t ok, uint64_t failed, int64_t p50, int64_t p99, int64_t max) {
  SeriesInterval iv;
  iv.ok = ok, iv.failed = failed, iv.max = std::clamp<int64_t>(max, 0, CompactLayout::kMaxValue);
  if (ok == 0) return iv;
  // The ranks percentile() looks at: the first r50 ops at p50's index, up to r99 at p99's, the rest at max's.
  uint64_t r50 = rank_of(50, ok), r99 = rank_of(99, ok);
  std::map<int, uint64_t> counts;
  auto at = [&](int64_t v) { return CompactLayout::index_of(std::clamp<int64_t>(v, 0, iv.max)); };
  counts[at(p50)] += r50;
  counts[at(p99)] += r99 - r50;
  counts[at(iv.max)] += ok - r99;
  for (auto [index, n] : counts)
    if (n) iv.buckets.emplace_back(static_cast<uint16_t>(index), n);
  return iv;
}

void SeriesInterval::merge(const SeriesInterval& o) {
  ok += o.ok;
  failed += o.failed;
  max = std::max(max, o.max);
  std::vector<std::pair<uint16_t, uint64_t>> out;
  out.reserve(buckets.size() + o.buckets.size());
  size_t i = 0, j = 0;
  while (i < buckets.size() || j < o.buckets.size()) {
    if (j == o.buckets.size() || (i < buckets.size() && buckets[i].first < o.buckets[j].first)) {
      out.push_back(buckets[i++]);
    } else if (i == buckets.size() || o.buckets[j].first < buckets[i].first) {
      out.push_back(o.buckets[j++]);
    } else {
      out.push_back({buckets[i].first, buckets[i].second + o.buckets[j].second});
      ++i;
      ++j;
    }
  }
  buckets = std::move(out);
}

void SeriesSink::add(size_t k, const SeriesInterval& iv) {
  std::lock_guard lk(m_);
  if (k >= intervals_.size()) intervals_.resize(k + 1);
  intervals_[k].merge(iv);
  if (watch_) watch_(iv);
}

std::vector<SeriesInterval> SeriesSink::take() {
  std::lock_guard lk(m_);
  return std::move(intervals_);
}

void SeriesRecorder::start(int64_t interval_ns, SeriesSink* sink) {
  close_segment();
  flush();  // nothing recorded before the start is in an interval
  interval_ = std::max<int64_t>(interval_ns, 1);
  sink_ = sink;
  k_ = 0;
  begin_ = 0;
  end_ = interval_;
  seg_begin_ = 0;
  seg_len_ = 0;  // the next op opens its segment
}

void SeriesRecorder::flush() {
  if (sink_ && (ok_ != 0 || failed_ != 0)) {
    SeriesInterval iv;
    iv.ok = ok_;
    iv.failed = failed_;
    iv.max = max_;
    for (int i = 0; i < CompactLayout::kLen; ++i)
      if (counts_[i]) iv.buckets.push_back({static_cast<uint16_t>(i), counts_[i]});
    sink_->add(k_, iv);
  }
  std::fill(counts_.begin(), counts_.end(), 0);
  ok_ = failed_ = seg_ok_base_ = 0;
  max_ = 0;
}

// The successful ops of the segment that ends go to its second.
void SeriesRecorder::close_segment() {
  if (ok_ == seg_ok_base_) return;
  if (sec_ >= per_second_.size()) per_second_.resize(sec_ + 1, 0);
  per_second_[sec_] += ok_ - seg_ok_base_;
  seg_ok_base_ = ok_;
}

void SeriesRecorder::roll(int64_t rel) {
  close_segment();
  rel = std::max<int64_t>(rel, 0);
  constexpr int64_t kSec = 1'000'000'000;
  sec_ = static_cast<size_t>(rel / kSec);
  int64_t sec_begin = static_cast<int64_t>(sec_) * kSec;
  if (interval_ > 0 && (rel >= end_ || rel < begin_)) {
    flush();
    k_ = static_cast<size_t>(rel / interval_);
    begin_ = static_cast<int64_t>(k_) * interval_;
    end_ = begin_ + interval_;
  }
  // The segment: where this second and the current interval (if started) overlap.
  seg_begin_ = interval_ > 0 ? std::max(sec_begin, begin_) : sec_begin;
  int64_t seg_end = interval_ > 0 ? std::min(sec_begin + kSec, end_) : sec_begin + kSec;
  seg_len_ = seg_end - seg_begin_;
}

void SeriesRecorder::finish() {
  close_segment();
  flush();
}

double settle_change(const std::vector<SeriesInterval>& series, double interval_s, double elapsed_s, double* first_rps,
                     double* last_rps, size_t* intervals) {
  if (interval_s <= 0) return 0;
  auto whole = static_cast<size_t>(std::floor(elapsed_s / interval_s + 1e-9));
  whole = std::min(whole, series.size());
  if (whole < 6) return 0;
  size_t third = whole / 3;
  double first = 0, last = 0;
  for (size_t k = 0; k < third; ++k) first += static_cast<double>(series[k].ok);
  for (size_t k = whole - third; k < whole; ++k) last += static_cast<double>(series[k].ok);
  first /= static_cast<double>(third) * interval_s;
  last /= static_cast<double>(third) * interval_s;
  if (first <= 0) return 0;
  if (first_rps) *first_rps = first;
  if (last_rps) *last_rps = last;
  if (intervals) *intervals = whole;
  return (last - first) / first;
}

std::string settle_warning(const std::vector<SeriesInterval>& series, double interval_s, double elapsed_s) {
  double first = 0, last = 0;
  size_t whole = 0;
  const double change = settle_change(series, interval_s, elapsed_s, &first, &last, &whole);
  if (std::abs(change) < kSettleChange) return "";
  return std::string("throughput ") + (change < 0 ? "fell " : "rose ") + fmt(std::abs(change) * 100, 0) +
         "% from the first third to the last (" + fmt(first, 1) + " to " + fmt(last, 1) + " req/s over " +
         std::to_string(whole) + " intervals of " + fmt(interval_s, 3) +
         " s): the run never settled (burst credits, noisy neighbours, throttling, a warm-up too short?)";
}

}  // namespace mw
