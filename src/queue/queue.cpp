#include "queue/queue.h"

#include <algorithm>
#include <charconv>
#include <chrono>

#include "api/options.h"
#include "api/stop.h"

namespace mw {

std::vector<OpSpec> queue_op_specs() {
  return {{"produce", QueueOp::Produce}, {"consume", QueueOp::Consume}, {"roundtrip", QueueOp::Roundtrip}};
}

bool is_queue_op(const std::string& op) { return op == "produce" || op == "consume" || op == "roundtrip"; }

const char* delivery_name(Delivery d) {
  switch (d) {
    case Delivery::AtMostOnce: return "at-most-once";
    case Delivery::AtLeastOnce: return "at-least-once";
    case Delivery::ExactlyOnce: return "exactly-once";
  }
  return "?";
}

std::optional<Delivery> parse_delivery(const std::string& s) {
  for (Delivery d : {Delivery::AtMostOnce, Delivery::AtLeastOnce, Delivery::ExactlyOnce})
    if (s == delivery_name(d)) return d;
  return std::nullopt;
}

std::vector<OptionSpec> queue_option_specs() {
  using O = QueueOptions;
  return {opt(&O::consumers,
              {.name = "consumers", .help = "roundtrip: consumers beside the -c producers", .min = 1, .max = 10000}),
          opt(&O::message_size, {.name = "message-size",
                                 .help = "bytes per message (produce, consume, roundtrip): 64, 64-4096 (uniform) or "
                                         "64:90,65536:10 (size:weight); each from " +
                                         std::to_string(queue::kHeader) + " to 16M"}),
          opt(&O::expect, {.name = "expect",
                           .help = "the delivery the end check demands of every acknowledged message: "
                                   "exactly-once, at-least-once (duplicates allowed) or at-most-once (losses "
                                   "allowed, counted); any: what the broker promises under the job's settings",
                           .choices = {"any", "exactly-once", "at-least-once", "at-most-once"}})};
}

namespace queue {
namespace {

constexpr std::string_view kMagic = "mwq1 ";
constexpr uint64_t kLow40 = (uint64_t{1} << 40) - 1;

uint64_t mix(uint64_t x) {  // splitmix64's finaliser: ids to well-spread checksum terms
  x ^= x >> 30;
  x *= 0xbf58476d1ce4e5b9ULL;
  x ^= x >> 27;
  x *= 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

uint32_t check_of(uint64_t id, int64_t stamp, size_t size) {
  return static_cast<uint32_t>(mix(id ^ mix(static_cast<uint64_t>(stamp) ^ mix(size))) >> 32);
}

void hex(char* out, uint64_t v, int digits) {
  static constexpr char kDigits[] = "0123456789abcdef";
  for (int i = digits - 1; i >= 0; --i, v >>= 4) out[i] = kDigits[v & 15];
}

bool unhex(std::string_view s, uint64_t& v) {
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v, 16);
  return ec == std::errc() && p == s.data() + s.size();
}

}  // namespace

SizeDist message_sizes(const std::string& text) {
  SizeDist d = SizeDist::parse(text, "--message-size");
  if (d.min() < kHeader || d.max() > kMaxMessage)
    throw SetupError("--message-size: a message is " + std::to_string(kHeader) + " (its id, stamp and checksum) to " +
                     std::to_string(kMaxMessage) + " bytes (16M); '" + text + "' has a size of " +
                     std::to_string(d.min() < kHeader ? d.min() : d.max()));
  return d;
}

std::string encode(uint64_t id, int64_t stamp_ns, size_t size) {
  std::string m;
  encode_into(m, id, stamp_ns, size);
  return m;
}

void encode_into(std::string& m, uint64_t id, int64_t stamp_ns, size_t size) {
  size = std::max(size, kHeader);
  m.resize(size, 'x');  // the padding: what a longer message before left past the header is 'x' too
  m.replace(0, kMagic.size(), kMagic);
  hex(m.data() + 5, id, 16);
  m[21] = ' ';
  hex(m.data() + 22, static_cast<uint64_t>(stamp_ns), 16);
  m[38] = ' ';
  hex(m.data() + 39, check_of(id, stamp_ns, size), 8);
  m[47] = ' ';
}

namespace {
// The header's fields into d's id and stamp and `check`, when they are ours (the magic, the
// separators, hex digits, a stamp after the clock's epoch); the checksum is not compared.
bool parse(std::string_view m, Decoded& d, uint64_t& check) {
  uint64_t stamp = 0;
  if (m.size() < kHeader || m.substr(0, 5) != kMagic || m[21] != ' ' || m[38] != ' ' || m[47] != ' ') return false;
  if (!unhex(m.substr(5, 16), d.id) || !unhex(m.substr(22, 16), stamp) || !unhex(m.substr(39, 8), check)) return false;
  if (stamp > static_cast<uint64_t>(INT64_MAX)) return false;  // before the clock's epoch: never a stamp of ours
  d.stamp_ns = static_cast<int64_t>(stamp);
  return true;
}
}  // namespace

Decoded decode(std::string_view m) {
  Decoded d;
  uint64_t check = 0;
  if (!parse(m, d, check)) return d;
  d.header = check == check_of(d.id, d.stamp_ns, m.size());
  d.ok = d.header && m.find_first_not_of('x', kHeader) == std::string_view::npos;
  return d;
}

std::optional<uint64_t> id_of(std::string_view m, const SizeDist& sizes) {
  Decoded d;
  uint64_t check = 0;
  if (!parse(m, d, check)) return std::nullopt;
  for (size_t size : {m.size(), std::max(size_of(sizes, d.id), kHeader)})  // as encode_into sizes it
    if (check == check_of(d.id, d.stamp_ns, size)) return d.id;
  return std::nullopt;
}

void ReadBack::add(std::string_view msg, bool damaged) {
  if (const Decoded d = decode(msg); d.ok && !damaged)
    intact_.insert(d.id);
  else if (const auto id = id_of(msg, sizes_))
    damaged_.insert(*id);
}

std::vector<WriteState> ReadBack::states(std::span<const uint64_t> seqs) const {
  std::vector<WriteState> out;
  out.reserve(seqs.size());
  for (uint64_t s : seqs)
    out.push_back(intact_.count(s)    ? WriteState::Present
                  : damaged_.count(s) ? WriteState::Corrupt
                                      : WriteState::Missing);
  return out;
}

size_t queue_of(std::string_view msg, size_t n) {
  if (n <= 1) return 0;
  const Decoded d = decode(msg);
  return d.header ? static_cast<size_t>(d.id % n) : 0;
}

namespace {
constexpr uint8_t kAcked = 0x80, kSent = 0x40, kTimes = 0x3f;
}

uint8_t& Ledger::slot(uint64_t id) {
  const size_t b = id >> 40, i = id & kLow40;
  if (b >= buckets_.size()) buckets_.resize(b + 1);
  auto& v = buckets_[b];
  if (i >= v.size()) v.resize(std::max<size_t>(i + 1, v.size() * 2), 0);
  return v[i];
}

uint8_t* Ledger::find(uint64_t id) {
  const size_t b = id >> 40, i = id & kLow40;
  if (b >= buckets_.size() || i >= buckets_[b].size()) return nullptr;
  uint8_t* s = &buckets_[b][i];
  return (*s & kSent) ? s : nullptr;
}

uint64_t Ledger::times(uint64_t id, uint8_t s) const {
  if ((s & kTimes) < kTimes) return s & kTimes;
  auto it = more_.find(id);
  return kTimes + (it == more_.end() ? 0 : it->second);
}

size_t Ledger::footprint() {
  std::lock_guard lk(mu_);
  size_t n = buckets_.capacity() * sizeof(std::vector<uint8_t>) + more_.size() * 32;
  for (auto& v : buckets_) n += v.capacity();
  return n;
}

void Ledger::count(std::vector<uint64_t>& per_s, int64_t t) {
  if (t0_ == 0 || t < t0_) return;  // before the clients start (a prefill): the backlog's base
  const auto k = static_cast<size_t>((t - t0_) / 1000000000);
  if (k >= per_s.size()) per_s.resize(k + 1, 0);
  ++per_s[k];
}

void Ledger::sent(uint64_t id) {
  std::lock_guard lk(mu_);
  slot(id) |= kSent;
}

void Ledger::produced(uint64_t id) {
  const int64_t t = now_ns();
  std::lock_guard lk(mu_);
  uint8_t& s = slot(id);
  if (s & kAcked) return;  // one id is produced once
  s |= kAcked | kSent;
  ++figures_.produced;
  figures_.sum_produced += mix(id);
  count(prod_s_, t);
  n_produced_.fetch_add(1, std::memory_order_relaxed);
}

Decoded Ledger::consumed(std::string_view msg, bool timed, bool draining, bool redelivery, bool damaged, Order* order) {
  const int64_t t = now_ns();
  Decoded d = decode(msg);
  d.ok = d.ok && !damaged;
  std::lock_guard lk(mu_);
  ++figures_.consumed;
  if (draining)
    ++figures_.drained;
  else
    count(cons_s_, t);
  n_consumed_.fetch_add(1, std::memory_order_relaxed);
  if (!d.ok) {
    ++figures_.corrupt;
    return d;
  }
  const bool ours = d.stamp_ns >= born_ && d.stamp_ns <= t;  // checked before any arithmetic on it
  if (uint8_t* s = ours ? find(d.id) : nullptr; !s) {
    ++stray_;  // not sent by this run: counted, never stored
    figures_.sum_consumed += mix(d.id);
    return d;
  } else if (redelivery && (*s & kTimes) > 0) {
    ++figures_.redelivered;  // taken before, handed out again as a redelivery: allowed, counted apart
  } else if ((*s & kTimes) < kTimes) {
    dup_live_ += (*s & kTimes) > 0;
    if (order && !redelivery && (*s & kTimes) == 0 && order->late(d.id)) ++figures_.reordered;
    ++*s;
  } else {
    ++dup_live_;
    ++more_[d.id];  // at most one entry per id mwbench sent
  }
  figures_.sum_consumed += mix(d.id);
  if (timed) roundtrip_.record(t - d.stamp_ns);  // born_ <= stamp <= t: no overflow
  if (timed && windowed_) window_.record(t - d.stamp_ns);
  return d;
}

Ledger::Live Ledger::live() {
  std::lock_guard lk(mu_);
  return {figures_.produced, figures_.consumed, dup_live_, figures_.corrupt, stray_};
}

Histogram Ledger::take_window() {
  std::lock_guard lk(mu_);
  windowed_ = true;
  Histogram out;
  std::swap(out, window_);
  return out;
}

Figures Ledger::finish() {
  std::lock_guard lk(mu_);
  Figures f = figures_;
  f.duplicates = f.lost = 0;
  f.unexpected = stray_;
  for (size_t b = 0; b < buckets_.size(); ++b)
    for (size_t i = 0; i < buckets_[b].size(); ++i) {
      const uint8_t s = buckets_[b][i];
      const uint64_t n = times((uint64_t{b} << 40) | i, s);
      if ((s & kAcked) && n == 0) ++f.lost;
      if (!(s & kAcked) && n > 0) f.unexpected += n;
      if ((s & kAcked) && n > 1) f.duplicates += n - 1;
    }
  if (roundtrip_.count()) f.roundtrip = std::make_shared<Histogram>(roundtrip_);
  const size_t len = std::max(prod_s_.size(), cons_s_.size());
  int64_t level = static_cast<int64_t>(f.prefilled);
  for (size_t k = 0; k < len; ++k) {
    level += static_cast<int64_t>(k < prod_s_.size() ? prod_s_[k] : 0);
    level -= static_cast<int64_t>(k < cons_s_.size() ? cons_s_[k] : 0);
    f.backlog.push_back(level);
  }
  return f;
}

}  // namespace queue
}  // namespace mw
