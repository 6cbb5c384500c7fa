#include "workload/workload.h"

#include <algorithm>
#include <array>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <numeric>
#include <stdexcept>

#include "util/parse.h"
#include "util/status.h"
#include "util/text.h"

namespace mw {
namespace {

// A whole number in [lo, hi] (k, M, G suffixes allowed), or a SetupError naming `what`.
uint64_t whole(const std::string& s, uint64_t lo, uint64_t hi, const std::string& what) {
  int64_t v = -1;
  try {
    if (!s.empty() && s[0] != '-' && s[0] != '+') v = parse_size(s, what);
  } catch (const SetupError&) {}
  if (v < 0 || static_cast<uint64_t>(v) < lo || static_cast<uint64_t>(v) > hi)
    throw SetupError(what + ": expected a whole number from " + std::to_string(lo) + " to " + std::to_string(hi) +
                     " (k, M suffixes allowed), got '" + s + "'");
  return static_cast<uint64_t>(v);
}

double fraction(const std::string& s, const std::string& what) {
  char* end = nullptr;
  double v = s.empty() ? NAN : std::strtod(s.c_str(), &end);
  if (s.empty() || !end || *end || !(v > 0) || !(v < 1))
    throw SetupError(what + ": expected a fraction between 0 and 1 (exclusive), got '" + s + "'");
  return v;
}

std::vector<std::string> items(const std::string& s) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start <= s.size()) {
    size_t end = s.find(',', start);
    if (end == std::string::npos) end = s.size();
    std::string item = s.substr(start, end - start);
    item.erase(0, item.find_first_not_of(' '));
    item.erase(item.find_last_not_of(' ') + 1);
    out.push_back(item);
    start = end + 1;
  }
  return out;
}

// Cumulative thresholds over 2^64 for integer weights (the last threshold is never compared).
std::vector<uint64_t> thresholds(const std::vector<uint64_t>& w) {
  unsigned __int128 total = 0;
  for (auto x : w) total += x;
  std::vector<uint64_t> cut(w.size(), UINT64_MAX);
  unsigned __int128 run = 0;
  for (size_t i = 0; i + 1 < w.size(); ++i) {
    run += w[i];
    cut[i] = static_cast<uint64_t>((run << 64) / total > UINT64_MAX ? UINT64_MAX : (run << 64) / total);
  }
  return cut;
}

}  // namespace

OpMix OpMix::parse(const std::string& text, const std::string& what) {
  OpMix m;
  std::string names;
  for (auto n : kKvOpNames) names += (names.empty() ? "" : ", ") + std::string(n);
  for (auto& item : items(text)) {
    size_t colon = item.find(':');
    std::string name = item.substr(0, colon);
    int op = -1;
    for (int i = 0; i < kKvOpCount; ++i)
      if (kKvOpNames[i] == name) op = i;
    if (op < 0) throw SetupError(what + ": unknown op '" + name + "'; expected op:weight with op one of " + names);
    if (colon == std::string::npos)
      throw SetupError(what + ": '" + item + "' has no weight; expected op:weight, e.g. read:95,update:5");
    if (m.weight[op]) throw SetupError(what + ": op '" + name + "' given twice");
    m.weight[op] = whole(item.substr(colon + 1), 1, 1000000, what + " weight of " + name);
  }
  std::vector<uint64_t> w(m.weight.begin(), m.weight.end());
  for (int i = 0; i < kKvOpCount; ++i)
    if (m.weight[i]) m.last = i;
  if (m.last < 0) throw SetupError(what + ": expected op:weight, e.g. read:95,update:5");
  auto cut = thresholds(w);
  for (int i = 0; i < kKvOpCount; ++i) m.cut[i] = cut[i];
  uint64_t sum = 0, gcd = 0;
  for (auto x : w) sum += x, gcd = std::gcd(gcd, x);
  m.scale = sum / gcd;
  return m;
}

double OpMix::share(KvOp op) const {
  uint64_t total = 0;
  for (auto w : weight) total += w;
  return total ? static_cast<double>(weight[static_cast<int>(op)]) / static_cast<double>(total) : 0;
}

std::string OpMix::text() const {
  std::string s;
  for (int i = 0; i < kKvOpCount; ++i)
    if (weight[i]) s += (s.empty() ? "" : ",") + std::string(kKvOpNames[i]) + ":" + std::to_string(weight[i]);
  return s;
}

KeyDist KeySpec::parse_dist(const std::string& text, const std::string& what) {
  static const std::pair<const char*, KeyDist> names[] = {
      {"uniform", KeyDist::Uniform}, {"random", KeyDist::Uniform}, {"sequential", KeyDist::Sequential},
      {"zipfian", KeyDist::Zipfian}, {"latest", KeyDist::Latest},  {"hotspot", KeyDist::Hotspot}};
  for (auto& [n, d] : names)
    if (text == n) return d;
  throw SetupError(what + ": expected one of uniform, sequential, zipfian, latest, hotspot; got '" + text + "'");
}

void KeySpec::parse_hotspot(const std::string& text, const std::string& what) {
  size_t colon = text.find(':');
  if (colon == std::string::npos)
    throw SetupError(what + ": expected KEYS:OPS fractions, e.g. 0.2:0.8 (20% of keys get 80% of ops), got '" + text +
                     "'");
  hot_keys = fraction(text.substr(0, colon), what + " (hot keys)");
  hot_ops = fraction(text.substr(colon + 1), what + " (hot ops)");
}

std::string KeySpec::text() const {
  switch (dist) {
    case KeyDist::Uniform: return "uniform";
    case KeyDist::Sequential: return "sequential";
    case KeyDist::Zipfian: return "zipfian theta " + fmt_g(theta);
    case KeyDist::Latest: return "latest theta " + fmt_g(theta);
    case KeyDist::Hotspot: return "hotspot " + fmt_g(hot_keys) + ":" + fmt_g(hot_ops);
  }
  return "";
}

double Zipfian::zeta(uint64_t n, double theta) {
  // The first terms exactly (smallest first), the rest by Euler-Maclaurin: the integral, the end
  // terms and three derivative corrections. Past 4,096 terms the next correction is below
  // 1e-30 of the sum, so the result is exact to double precision for every n, at a cost of 4,096
  // pow() calls instead of one per key (a large keyspace took seconds to set up that way:
  // docs/measurements/from-code.md).
  const uint64_t exact = std::min<uint64_t>(n, 4096);
  double sum = 0;
  for (uint64_t i = exact; i >= 1; --i) sum += std::pow(static_cast<double>(i), -theta);
  if (n <= exact) return sum;
  const double a = static_cast<double>(exact + 1), b = static_cast<double>(n), t = theta;
  auto f = [t](double x) { return std::pow(x, -t); };
  // The integral of x^-t from a to b, stable near t = 1: a^(1-t) * expm1((1-t) ln(b/a)) / (1-t).
  const double l = std::log(b / a), u = (1 - t) * l;
  const double integral = std::pow(a, 1 - t) * (std::abs(u) > 1e-12 ? std::expm1(u) / (1 - t) : l * (1 + u / 2));
  // d^k/dx^k x^-t = (-1)^k t (t+1) ... (t+k-1) x^(-t-k)
  auto d = [t](double x, int k) {
    double c = 1;
    for (int j = 0; j < k; ++j) c *= -(t + j);
    return c * std::pow(x, -t - k);
  };
  const double corr = (d(b, 1) - d(a, 1)) / 12 - (d(b, 3) - d(a, 3)) / 720 + (d(b, 5) - d(a, 5)) / 30240;
  return sum + integral + (f(a) + f(b)) / 2 + corr;
}

Zipfian::Zipfian(uint64_t n, double theta) : n_(std::max<uint64_t>(n, 1)), theta_(theta) {
  zetan_ = zeta(n_, theta_);
  const size_t H = size_t{1} << kBits;
  auto f = [theta](double x) { return std::pow(x, -theta); };
  std::vector<double> w;  // the table's weights: ranks, then buckets' envelopes
  if (n_ <= H) {
    head_ = n_;
  } else {
    head_ = H - kMaxBuckets;
    // Bucket bounds grow by `ratio`: 1 + 1/64, or what fits the tail in kMaxBuckets buckets.
    const double span = std::log(static_cast<double>(n_) / static_cast<double>(head_ + 1));
    const double ratio = std::max(1.0 + 1.0 / 64, std::exp(span / (kMaxBuckets - 8)));
    for (uint64_t lo = head_ + 1; lo <= n_;) {  // 1-based
      const double next = std::ceil(static_cast<double>(lo) * ratio);
      uint64_t hi = next >= static_cast<double>(n_) ? n_ : std::max<uint64_t>(lo, static_cast<uint64_t>(next) - 1);
      // (lo/hi)^theta, the least keep probability in the bucket, over 2^64 (a hair under)
      const double least = std::pow(static_cast<double>(lo) / static_cast<double>(hi), theta) * (1 - 0x1.0p-40);
      buckets_.push_back({lo, hi - lo + 1, static_cast<double>(lo), static_cast<uint64_t>(least * 0x1.0p64)});
      if (hi == n_) break;
      lo = hi + 1;
    }
  }
  if (head_ + buckets_.size() > H) throw std::logic_error("zipfian: too many tail buckets");
  w.reserve(H);
  for (uint64_t k = 0; k < head_; ++k) w.push_back(f(static_cast<double>(k + 1)));
  for (const Bucket& b : buckets_) w.push_back(static_cast<double>(b.width) * f(b.lo_real));
  w.resize(H, 0.0);
  double total = 0;
  for (double x : w) total += x;
  // Walker's alias table over the weights.
  alias_.assign(H, {UINT32_MAX, 0});
  std::vector<double> scaled(H);
  std::vector<uint32_t> small, large;
  for (size_t i = 0; i < H; ++i) {
    scaled[i] = w[i] / total * static_cast<double>(H);
    (scaled[i] < 1 ? small : large).push_back(static_cast<uint32_t>(i));
  }
  while (!small.empty() && !large.empty()) {
    uint32_t s = small.back(), l = large.back();
    small.pop_back();
    alias_[s] = {scaled[s] >= 1 ? UINT32_MAX : static_cast<uint32_t>(scaled[s] * 0x1.0p32), static_cast<uint32_t>(l)};
    scaled[l] -= 1 - scaled[s];
    if (scaled[l] < 1) large.pop_back(), small.push_back(l);
  }
  for (auto i : small) alias_[i] = {UINT32_MAX, i};  // rounding leftovers: keep themselves
  for (auto i : large) alias_[i] = {UINT32_MAX, i};
}

bool Zipfian::kept(const Bucket& b, uint64_t k, uint64_t f) const {
  if (f < b.keep_all) return true;  // below every key's keep probability
  const double u = static_cast<double>(f >> 11) * 0x1.0p-53, kd = static_cast<double>(k);
  // lo/k is below (lo/k)^theta up to theta 1 (a key it keeps is kept); past 1, above it
  return (theta_ <= 1 && u * kd < b.lo_real) || u < std::pow(b.lo_real / kd, theta_);
}

uint64_t Zipfian::tail_rank(Rng& rng, uint64_t j) const {
  for (;;) {  // j is a bucket: a key of it, kept with probability (lo/k)^theta, else draw again
    const Bucket& b = buckets_[j - head_];
    // One word gives the key (the word times the width, its high half) and the keep test's
    // fraction f (the low half: given the key, it runs over [0, 2^64) in steps of the width, as
    // fine as the alias table's 32-bit thresholds up to a width of 2^32; a wider bucket draws f).
    const unsigned __int128 x = static_cast<unsigned __int128>(rng.next()) * b.width;
    const uint64_t k = b.lo + static_cast<uint64_t>(x >> 64);
    const uint64_t f = b.width <= (uint64_t{1} << 32) ? static_cast<uint64_t>(x) : rng.next();
    if (kept(b, k, f)) return k - 1;
    j = table_pick(rng.next());
    if (j < head_) return j;
  }
}

uint64_t Zipfian::tail_after(Rng& rng, uint64_t i, uint64_t k, uint64_t f) const {
  if (kept(buckets_[i], k, f)) return k - 1;
  const uint64_t j = table_pick(rng.next());
  return j < head_ ? j : tail_rank(rng, j);
}

// tail_rank's first try, word for word: a keyed table's buckets are narrower than 2^32 keys (its
// key space is), so the word's low half is the keep test's fraction.
uint64_t KeyChooser::tail_key(Rng& rng, uint32_t v) const {
  const uint64_t i = v - kFirstBucket;
  const Zipfian::Bucket& b = buckets_[i];
  const unsigned __int128 x = static_cast<unsigned __int128>(rng.next()) * b.width;
  const uint64_t k = b.lo + static_cast<uint64_t>(x >> 64);
  if (static_cast<uint64_t>(x) < b.keep_all) [[likely]]
    return perm_.wide(k - 1);
  return tail_key_after(rng, i, k, static_cast<uint64_t>(x));
}

uint64_t KeyChooser::tail_key_after(Rng& rng, uint64_t i, uint64_t k, uint64_t f) const {
  return perm_(zipf_->tail_after(rng, i, k, f));
}

double Zipfian::probability(uint64_t r) const { return std::pow(static_cast<double>(r + 1), -theta_) / zetan_; }

Permutation::Permutation(uint64_t n, uint64_t seed) : n_(std::max<uint64_t>(n, 1)) {
  int bits = 1;
  while (bits < 64 && (uint64_t{1} << bits) < n_) ++bits;
  mask_ = bits == 64 ? UINT64_MAX : (uint64_t{1} << bits) - 1;
  shift_ = std::max(1, bits / 2);
  a_ = mix64(seed) | 1, b_ = mix64(seed + 1) | 1, c_ = mix64(seed + 2);
}

KeyChooser::KeyChooser(const KeySpec& spec, uint64_t seed) : spec_(spec), seed_(seed) {
  if (spec_.keyspace == 0) throw SetupError("--keyspace: expected at least 1 key");
  if (spec_.dist == KeyDist::Zipfian || spec_.dist == KeyDist::Latest) {
    if (!(spec_.theta > 0 && spec_.theta <= kMaxTheta))
      throw SetupError("--zipf-theta: expected a number above 0, at most " + fmt_g(kMaxTheta) + ", got " +
                       fmt_g(spec_.theta));
    zipf_ = std::make_shared<const Zipfian>(spec_.keyspace, spec_.theta);
    perm_ = Permutation(spec_.keyspace, seed);
  }
  switch (spec_.dist) {
    case KeyDist::Sequential: draw_ = Draw::Sequential; break;
    case KeyDist::Uniform: draw_ = Draw::Uniform; break;
    case KeyDist::Zipfian: draw_ = spec_.keyspace <= kFirstBucket ? Draw::KeyedZipfian : Draw::Zipfian; break;
    case KeyDist::Latest: draw_ = Draw::Latest; break;
    case KeyDist::Hotspot: draw_ = Draw::Hotspot; break;
  }
  if (draw_ == Draw::KeyedZipfian) make_keyed_table();
  if (spec_.dist == KeyDist::Hotspot) {
    const double h = std::floor(static_cast<double>(spec_.keyspace) * spec_.hot_keys);
    hot_n_ = std::clamp<uint64_t>(static_cast<uint64_t>(h), 1, spec_.keyspace > 1 ? spec_.keyspace - 1 : 1);
    if (spec_.keyspace < 2) throw SetupError("--hotspot: needs a key space of at least 2 keys");
  }
}

void KeyChooser::make_keyed_table() {
  const Zipfian& z = *zipf_;
  const uint64_t head = z.head();
  auto key = [&](uint64_t j) { return static_cast<uint32_t>(j < head ? perm_(j) : kFirstBucket + (j - head)); };
  auto t = std::make_shared<std::vector<KeyAlias>>();
  t->reserve(z.table().size());
  for (uint64_t i = 0; i < z.table().size(); ++i) {
    const Zipfian::Alias& a = z.table()[i];
    const uint32_t other = key(a.other);
    if (a.threshold == 0)
      t->push_back({0, other, other});  // weight 0: its own entry is never taken
    else
      t->push_back({a.threshold, key(i), a.threshold == UINT32_MAX ? key(i) : other});
  }
  keyed_ = t->data();
  keyed_table_ = std::move(t);
  buckets_ = z.buckets_.data();
}

KeyChooser::KeyChooser(const KeyChooser& base, uint64_t k) : KeyChooser(base) {
  if (k == 0) return;
  const uint64_t s = mix64(seed_ ^ mix64(0x484f54ULL + k));  // period k's own draw ("HOT")
  if (spec_.dist == KeyDist::Zipfian) {
    perm_ = Permutation(spec_.keyspace, s);
    if (draw_ == Draw::KeyedZipfian) make_keyed_table();
  } else if (spec_.dist == KeyDist::Hotspot) {
    draw_ = Draw::MovedHotspot;
    offset_ = static_cast<uint64_t>((static_cast<unsigned __int128>(s) * spec_.keyspace) >> 64);
  }
}

SizeDist SizeDist::parse(const std::string& text, const std::string& what) {
  constexpr uint64_t kMax = 64ull << 20;  // 64 MiB per value
  const std::string range = "a size (1 to " + std::to_string(kMax) + "), LO-HI, or SIZE:WEIGHT,... e.g. 32:50,1024:40";
  SizeDist d;
  size_t dash = text.find('-');
  if (text.find(':') == std::string::npos && text.find(',') == std::string::npos) {
    if (dash == std::string::npos) {
      d.sizes.push_back(static_cast<uint32_t>(whole(text, 1, kMax, what)));
      return d;
    }
    uint64_t lo = whole(text.substr(0, dash), 1, kMax, what + " (low end of " + text + ")");
    uint64_t hi = whole(text.substr(dash + 1), 1, kMax, what + " (high end of " + text + ")");
    if (lo > hi) throw SetupError(what + ": inverted range '" + text + "'; expected LO-HI with LO <= HI");
    d.range = lo != hi;
    d.sizes = d.range ? std::vector<uint32_t>{static_cast<uint32_t>(lo), static_cast<uint32_t>(hi)}
                      : std::vector<uint32_t>{static_cast<uint32_t>(lo)};
    return d;
  }
  std::vector<uint64_t> w;
  for (auto& item : items(text)) {
    size_t colon = item.find(':');
    if (colon == std::string::npos) throw SetupError(what + ": '" + item + "': expected " + range);
    d.sizes.push_back(static_cast<uint32_t>(whole(item.substr(0, colon), 1, kMax, what + " size")));
    w.push_back(whole(item.substr(colon + 1), 1, 1000000, what + " weight of " + item.substr(0, colon)));
  }
  d.cut = thresholds(w);
  return d;
}

namespace {
// One TTL of --ttl: whole seconds from 1 (0 when `zero`) to kMaxTtl (s, m, h, d suffixes).
uint32_t ttl_seconds(const std::string& t, bool zero, bool clamp) {
  double s = -1;
  try {
    s = parse_duration(t, "ttl");
  } catch (const SetupError&) {}
  if (clamp && s > kMaxTtl) s = kMaxTtl;
  if (!(s >= (zero ? 0 : 1) && s <= kMaxTtl) || std::abs(s - std::round(s)) > 1e-6)
    throw SetupError("--ttl: expected whole seconds from 1 to 365d (3600, 90s, 1h, 2d), got '" + printable(t) + "'");
  return static_cast<uint32_t>(std::lround(s));
}
}  // namespace

SizeDist parse_ttl(const std::string& text, bool clamp) {
  SizeDist d;
  if (text == "0") {
    d.sizes = {0};
    return d;
  }
  if (text.find(':') == std::string::npos && text.find(',') == std::string::npos) {
    const size_t dash = text.find('-');
    if (dash == std::string::npos) {
      d.sizes = {ttl_seconds(text, false, clamp)};
      return d;
    }
    const uint32_t lo = ttl_seconds(text.substr(0, dash), false, clamp),
                   hi = ttl_seconds(text.substr(dash + 1), false, clamp);
    if (lo > hi) throw SetupError("--ttl: inverted range '" + printable(text) + "'; expected LO-HI with LO <= HI");
    d.range = lo != hi;
    d.sizes = d.range ? std::vector<uint32_t>{lo, hi} : std::vector<uint32_t>{lo};
    return d;
  }
  std::vector<uint64_t> w;
  for (auto& item : items(text)) {
    const size_t colon = item.find(':');
    if (colon == std::string::npos)
      throw SetupError("--ttl: '" + printable(item) + "': expected TIME:WEIGHT, e.g. 60:1,1h:3");
    d.sizes.push_back(ttl_seconds(item.substr(0, colon), true, clamp));
    w.push_back(whole(item.substr(colon + 1), 1, 1000000, "--ttl weight of " + item.substr(0, colon)));
  }
  d.cut = thresholds(w);
  return d;
}

uint32_t SizeDist::max() const { return *std::max_element(sizes.begin(), sizes.end()); }
uint32_t SizeDist::min() const { return *std::min_element(sizes.begin(), sizes.end()); }

double SizeDist::mean() const {
  if (range) return (static_cast<double>(sizes[0]) + sizes[1]) / 2;
  if (sizes.size() == 1) return sizes[0];
  double m = 0, prev = 0;
  for (size_t i = 0; i < sizes.size(); ++i) {
    double c = i + 1 < sizes.size() ? static_cast<double>(cut[i]) / 0x1.0p64 : 1.0;
    m += sizes[i] * (c - prev);
    prev = c;
  }
  return m;
}

std::string SizeDist::text() const {
  if (range) return std::to_string(sizes[0]) + "-" + std::to_string(sizes[1]);
  if (sizes.size() == 1) return std::to_string(sizes[0]);
  std::string s;
  double prev = 0;
  for (size_t i = 0; i < sizes.size(); ++i) {
    double c = i + 1 < sizes.size() ? static_cast<double>(cut[i]) / 0x1.0p64 : 1.0;
    s += (s.empty() ? "" : ",") + std::to_string(sizes[i]) + ":" + fmt_g(std::round((c - prev) * 1000) / 10);
    prev = c;
  }
  return s;
}

namespace {

constexpr char kHex[] = "0123456789abcdef";

void put_hex(uint64_t v, char* out, int digits) {
  for (int i = digits - 1; i >= 0; --i, v >>= 4) out[i] = kHex[v & 15];
}

// Eight lower-case hex digits (the header's only alphabet) parsed eight at a time in one word:
// each byte is checked to be 0-9 or a-f with a per-byte range test (no byte may carry a carry
// into the next, since every byte is first checked to be below 0x80), then turned into its
// value and the nibbles packed, most significant digit first.
[[gnu::always_inline]] inline bool get_hex8(const char* in, uint64_t* v) {
  constexpr uint64_t kOnes = 0x0101010101010101ULL, kHigh = 0x8080808080808080ULL;
  uint64_t x;
  std::memcpy(&x, in, 8);
  x = __builtin_bswap64(x);  // in[0], the most significant digit, in the top byte
  const uint64_t ge_0 = x + kOnes * (0x80 - '0'), le_9 = ~(x + kOnes * (0x80 - '9' - 1));
  const uint64_t ge_a = x + kOnes * (0x80 - 'a'), le_f = ~(x + kOnes * (0x80 - 'f' - 1));
  if ((x & kHigh) != 0 || (((ge_0 & le_9) | (ge_a & le_f)) & kHigh) != kHigh) return false;
  uint64_t d = (x & (kOnes * 0x0f)) + 9 * ((x >> 6) & kOnes);  // '0'-'9': 0-9, 'a'-'f': 10-15
  d = (d | d >> 4) & 0x00ff00ff00ff00ffULL;
  d = (d | d >> 8) & 0x0000ffff0000ffffULL;
  *v = (d | d >> 16) & 0xffffffffULL;
  return true;
}

template <int Digits>
[[gnu::always_inline]] inline bool get_hex(const char* in, uint64_t* v) {
  static_assert(Digits == 8 || Digits == 16);
  if constexpr (Digits == 8) {
    return get_hex8(in, v);
  } else {
    uint64_t hi = 0, lo = 0;
    if (!get_hex8(in, &hi) || !get_hex8(in + 8, &lo)) return false;
    *v = hi << 32 | lo;
    return true;
  }
}

// A 64-bit multiply-xorshift over the bytes, eight at a time (the last word zero-padded, the
// length mixed in), folded to 32 bits. Each step is a bijection of the state, so a change
// confined to one word always changes the 64-bit state; 32 bits of it are kept. About a
// tenth of the cost of the byte-wise FNV-1a it replaced, on the read path of every checked value.
uint32_t checksum(const char* p, size_t n, uint64_t seed) {
  uint64_t h = 0xcbf29ce484222325ULL ^ seed ^ (static_cast<uint64_t>(n) << 40);
  auto step = [&h](uint64_t w) {
    h = (h ^ w) * 0x9e3779b97f4a7c15ULL;
    h ^= h >> 29;
  };
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    uint64_t w;
    std::memcpy(&w, p + i, 8);
    step(w);
  }
  if (i < n) {
    uint64_t w = 0;
    std::memcpy(&w, p + i, n - i);
    step(w);
  }
  h *= 0xbf58476d1ce4e5b9ULL;
  return static_cast<uint32_t>(h ^ (h >> 32));
}

// Printable filler from (key, version): 64 bits of state give 10 letters at a time.
void fill(uint64_t key, uint32_t version, char* out, size_t n) {
  uint64_t state = mix64(key * 0x9e3779b97f4a7c15ULL + version);
  for (size_t i = 0; i < n;) {
    uint64_t r = state = mix64(state);
    for (int k = 0; k < 10 && i < n; ++k, ++i, r >>= 6) out[i] = static_cast<char>('A' + (r & 31));
  }
}

}  // namespace

void write_value(uint64_t key, uint32_t version, char* out, size_t len) {
  char head[kValueHeader];
  put_hex(mix64(key), head, 16);
  put_hex(version, head + 16, 8);
  if (len <= kValueHeader) {  // too short for a checksum: a prefix of the header, checked byte for byte
    put_hex(0, head + 24, 8);
    std::memcpy(out, head, len);
    return;
  }
  fill(key, version, out + kValueHeader, len - kValueHeader);
  uint32_t sum = checksum(out + kValueHeader, len - kValueHeader, key * 31 + version);
  put_hex(sum, head + 24, 8);
  std::memcpy(out, head, kValueHeader);
}

std::string make_key(std::string_view prefix, uint64_t k, size_t width) {
  std::string s;
  append_key(s, prefix, k, width);
  return s;
}

void NativeValues::resize(size_t max_size) {
  block_.resize(max_size);
  for (size_t i = 0; i < block_.size(); ++i) block_[i] = static_cast<char>('a' + mix64(i + 7) % 26);
}

std::string NativeValues::value(uint64_t k, size_t size) const {
  std::string s(size, '\0');
  write(k, s.data(), size);
  return s;
}

ValueCheck NativeValues::check(uint64_t k, const char* data, size_t size) const {
  char h[16];
  const size_t head = std::min<size_t>(size, 16);
  hash_hex(k, h, head);
  if (std::memcmp(data, h, head) != 0) return ValueCheck::OtherKey;
  if (size > block_.size() || std::memcmp(data + head, block_.data() + head, size - head) != 0)
    return ValueCheck::Corrupt;
  return ValueCheck::Ok;
}

bool KeyValues::key_of(std::string_view s, uint64_t* k) {
  if (s.size() != 16 || s.substr(0, 4) != "key-") return false;
  uint64_t v = 0;
  for (char c : s.substr(4)) {
    if (c < '0' || c > '9') return false;
    v = v * 10 + static_cast<uint64_t>(c - '0');
  }
  *k = v;
  return true;
}

std::string make_value(uint64_t key, uint32_t version, size_t len) {
  std::string s(len, '\0');
  write_value(key, version, s.data(), len);
  return s;
}

ValueCheck check_value(uint64_t key, const char* data, size_t len, uint32_t* version) {
  if (len <= kValueHeader) {
    char head[kValueHeader];
    put_hex(mix64(key), head, 16);
    // the version is not known to the reader: compare what can be compared (the key digits)
    size_t k = std::min<size_t>(len, 16);
    if (std::memcmp(data, head, k) != 0) return ValueCheck::OtherKey;
    for (size_t i = 16; i < len; ++i)
      if (!((data[i] >= '0' && data[i] <= '9') || (data[i] >= 'a' && data[i] <= 'f'))) return ValueCheck::Corrupt;
    if (len >= 24 && version) {
      uint64_t v = 0;
      get_hex<8>(data + 16, &v);
      *version = static_cast<uint32_t>(v);
    }
    return ValueCheck::Ok;
  }
  uint64_t k = 0, v = 0, sum = 0;
  if (!get_hex<16>(data, &k) || !get_hex<8>(data + 16, &v) || !get_hex<8>(data + 24, &sum)) return ValueCheck::Corrupt;
  if (k != mix64(key)) return ValueCheck::OtherKey;
  if (checksum(data + kValueHeader, len - kValueHeader, key * 31 + v) != sum) return ValueCheck::Corrupt;
  if (version) *version = static_cast<uint32_t>(v);
  return ValueCheck::Ok;
}

std::string Workload::text() const {
  std::string s = mix.text() + " " + keys.spec().text() + " over " + std::to_string(keys.spec().keyspace) +
                  " keys, values " + sizes.text() + " B";
  if (ttls.max() > 0) s += ", keys expire after " + ttls.text() + (ttls.cut.empty() ? " s" : " (seconds:percent)");
  if (trace_ttls) s += ", keys expire as the trace's TTLs say";
  if (hot_shift_ns > 0) s += ", hot keys move every " + fmt_g(static_cast<double>(hot_shift_ns) / 1e9) + "s";
  if (!load) s += ", no load";
  if (!source.empty()) s += "; from " + source;
  if (!note.empty()) s += "; " + note;
  return s;
}

// The periods of a hot shift made so far, while a client still draws from them.
struct HotPeriods {
  std::mutex m;
  std::vector<std::pair<uint64_t, std::weak_ptr<const Workload>>> made;
};

void Workload::move_hot_keys(int64_t every_ns) {
  if (!KeyChooser::movable(keys.spec().dist))
    throw SetupError("--hot-shift: needs --keys zipfian or hotspot (" + keys.spec().text() +
                     " has no hot keys to move)");
  hot_shift_ns = every_ns;
  periods = std::make_shared<HotPeriods>();
}

std::shared_ptr<const Workload> Workload::period(uint64_t k) const {
  std::lock_guard lock(periods->m);
  auto& made = periods->made;
  std::erase_if(made, [](const auto& e) { return e.second.expired(); });
  for (const auto& [p, w] : made)
    if (auto held = w.lock(); p == k && held) return held;
  auto w = std::make_shared<Workload>(*this);
  w->keys = KeyChooser(keys, k);
  made.emplace_back(k, w);
  return w;
}

RequestGen::RequestGen(const Workload& w, int client, int clients)
    : w_(&w),
      rng_(mix64(w.seed) ^ mix64(0x10000 + static_cast<uint64_t>(client))),
      client_(static_cast<uint64_t>(client)),
      clients_(static_cast<uint64_t>(clients)),
      n_(w.keys.spec().keyspace),
      fixed_size_(w.sizes.range || w.sizes.sizes.size() != 1 ? 0 : w.sizes.sizes[0]),
      fixed_ttl_(w.ttls.range || w.ttls.sizes.size() != 1 ? 0 : w.ttls.sizes[0]),
      ttl_fixed_(!w.ttls.range && w.ttls.sizes.size() == 1),
      base_(&w) {
  const bool latest = w.keys.spec().dist == KeyDist::Latest;  // keys drawn from the newest (YCSB's)
  for (int i = 0; i < kKvOpCount; ++i) {
    const KvOp op = static_cast<KvOp>(i);
    plan_[i].must = w.guaranteed() && op != KvOp::Scan;
    plan_[i].drawn = op != KvOp::Insert && !latest;
    plan_[i].writes = op == KvOp::Update || op == KvOp::Insert || op == KvOp::Rmw;
  }
  // pick() is monotone in the word: a top byte whose first and last words pick the same op picks
  // it for every word between.
  for (uint64_t b = 0; b < 256; ++b) {
    const KvOp op = w.mix.pick(b << 56), last = w.mix.pick((b << 56) | ((uint64_t{1} << 56) - 1));
    const Plan& p = plan_[static_cast<int>(op)];
    const bool fast =
        op == last && p.drawn && op != KvOp::Scan && (!p.writes || (fixed_size_ != 0 && ttl_fixed_)) && w.keys.fast();
    step_[b] = {op, p.must, fast, p.writes};
  }
}

int64_t RequestGen::shift(int64_t elapsed) {
  const int64_t every = base_->hot_shift_ns;
  if (every <= 0) return INT64_MAX;
  const auto k = static_cast<uint64_t>(std::max<int64_t>(elapsed, 0) / every);
  if (k != period_) {
    held_ = k ? base_->period(k) : nullptr;
    w_ = k ? held_.get() : base_;
    period_ = k;
  }
  return k + 1 >= static_cast<uint64_t>(INT64_MAX / every) ? INT64_MAX : static_cast<int64_t>(k + 1) * every;
}

int RequestGen::fast_steps() const {
  return static_cast<int>(std::count_if(step_.begin(), step_.end(), [](const Step& s) { return s.fast; }));
}

Request RequestGen::general(uint64_t seq, uint64_t word) {
  Request r;
  r.seq = seq;
  r.op = w_->mix.pick(word);
  const Plan p = plan_[static_cast<int>(r.op)];
  const uint64_t n = n_;
  if (p.drawn) {  // a key of the loaded key space (below n)
    r.key = w_->keys.next(w_->mix.rest(word), rng_, seq, n);
    r.must_exist = p.must;
  } else if (r.op == KvOp::Insert) {  // new keys past the loaded range, disjoint per client
    r.key = n + client_ + clients_ * inserted_++;
  } else {
    // latest: the newest keys this client knows exist: the loaded ones, then its own inserts
    // (another client's newest may not be written yet).
    const uint64_t i = w_->keys.next(w_->mix.rest(word), rng_, seq, n + inserted_);
    r.key = i < n ? i : n + client_ + clients_ * (i - n);
    r.must_exist = p.must;
  }
  if (p.writes) {
    r.value_size = fixed_size_ ? fixed_size_ : w_->sizes.next(rng_);
    r.version = write_version(seq);
    r.ttl = ttl_fixed_ ? fixed_ttl_ : w_->ttls.next(rng_);
  }
  if (r.op == KvOp::Scan) r.scan_len = 1 + static_cast<uint32_t>(rng_.below(w_->scan_max));
  return r;
}

}  // namespace mw
