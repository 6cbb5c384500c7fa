// The workload every keyed adapter runs (YCSB's CoreWorkload, memtier's --ratio/--key-pattern):
// which abstract op comes next (a weighted mix), which key it works on (a distribution over the
// key space), and how large a value it writes. All of it is drawn here, in the core, from a
// per-client seeded generator: an adapter is handed the result and never draws a random number.
#pragma once
#include <algorithm>
#include <array>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "util/keys.h"

namespace mw {

// The abstract ops of a keyed store. `insert` writes keys past the loaded range; `rmw` reads a
// key, then writes it back changed; `scan` reads a short range of keys where the store can.
enum class KvOp : uint8_t { Read, Update, Insert, Delete, Rmw, Scan, Count };
constexpr int kKvOpCount = static_cast<int>(KvOp::Count);
constexpr std::array<std::string_view, kKvOpCount> kKvOpNames = {"read", "update", "insert", "delete", "rmw", "scan"};
constexpr std::string_view kv_op_name(KvOp op) { return kKvOpNames[static_cast<int>(op)]; }

// A small, fast generator, one per client: wyrand (a Weyl sequence through a 64x64->128 multiply
// folded by xor; it passes BigCrush and PractRand). Four instructions and one word of state per
// draw, where xoshiro256** took about twenty on the request path (its four words live in memory
// between calls): the zipfian mix draws two or three numbers per op. Its period, 2^64 per stream,
// is far beyond any run; clients start at seeds spread by splitmix64.
class Rng {
 public:
  explicit Rng(uint64_t seed = 1) : s_(mix64(seed)) {}
  uint64_t next() {
    s_ += 0xa0761d6478bd642fULL;
    const unsigned __int128 t = static_cast<unsigned __int128>(s_) * (s_ ^ 0xe7037ed1a0b428dbULL);
    return static_cast<uint64_t>(t >> 64) ^ static_cast<uint64_t>(t);
  }
  // Uniform in [0, n) without a division (Lemire's multiply-shift; bias below 2^-64 * n).
  uint64_t below(uint64_t n) { return static_cast<uint64_t>((static_cast<unsigned __int128>(next()) * n) >> 64); }
  double unit() { return static_cast<double>(next() >> 11) * 0x1.0p-53; }  // [0, 1)

 private:
  uint64_t s_;
};

// --mix read:95,update:5. Parse errors name the option and what was expected.
struct OpMix {
  std::array<uint64_t, kKvOpCount> weight{};  // as given
  std::array<uint64_t, kKvOpCount> cut{};     // cumulative thresholds over 2^64 (last = max)
  int last = -1;                              // index of the last op with a weight
  uint64_t scale = 1;                         // the weights' sum over their gcd (rest())

  static OpMix parse(const std::string& text, const std::string& what = "--mix");
  bool has(KvOp op) const { return weight[static_cast<int>(op)] > 0; }
  bool reads() const { return has(KvOp::Read) || has(KvOp::Rmw) || has(KvOp::Scan); }
  bool writes() const { return has(KvOp::Update) || has(KvOp::Insert) || has(KvOp::Delete) || has(KvOp::Rmw); }
  double share(KvOp op) const;  // fraction of ops
  std::string text() const;     // "read:95,update:5"
  KvOp pick(uint64_t r) const {
    for (int i = 0; i < last; ++i)
      if (r < cut[i]) return static_cast<KvOp>(i);
    return static_cast<KvOp>(last);
  }
  // What the word R has left after pick(R), as a word of its own: R * scale (mod 2^64). Given
  // the op, R runs over an interval of weight/sum * 2^64 words; times scale, that interval wraps
  // around 2^64 once per unit of the op's (reduced) weight, in steps of scale. So any range of
  // the rest has its share to within 2 * scale / 2^64, and the key is drawn from the same word.
  uint64_t rest(uint64_t r) const { return r * scale; }
};

// Key index distributions over a key space of n keys (YCSB's request distributions).
enum class KeyDist : uint8_t { Uniform, Sequential, Zipfian, Latest, Hotspot };

// Zipfian skew up to 3: YCSB's 0.99, and the alphas of published cache traces (Twitter's reach 2.7).
constexpr double kMaxTheta = 3;

struct KeySpec {
  KeyDist dist = KeyDist::Uniform;
  uint64_t keyspace = 100000;
  double theta = 0.99;    // zipfian / latest skew
  double hot_keys = 0.2;  // hotspot: this fraction of the keys...
  double hot_ops = 0.8;   // ...gets this fraction of the ops
  static KeyDist parse_dist(const std::string& text, const std::string& what = "--keys");
  // "0.2:0.8" -> hot_keys, hot_ops
  void parse_hotspot(const std::string& text, const std::string& what = "--hotspot");
  std::string text() const;
};

// Draws zipfian ranks over [0, n): rank r has probability (r+1)^-theta / zeta(n, theta), exactly.
// One alias table (Walker) of 2^16 entries holds the most frequent ranks one by one and, past
// them, the tail cut into buckets whose bounds grow geometrically (a ratio of 1 + 1/64, or more
// when the key space is vast). A draw that picks a rank returns it (about 80% of the draws at
// theta 0.99 over 10^6 keys); one that picks a bucket takes a key of it uniformly and keeps it
// with probability (lo/k)^theta, which the bucket's weight (its width times lo^-theta) makes exact;
// a refused key draws again (about 1 draw in 130). The keep test is first made against the
// bucket's least keep probability, then against lo/k, below (lo/k)^theta, so a pow() is needed in
// about 1 tail draw in 100: no transcendental call per draw.
// The table's pick takes 48 bits of one word: the entry from the top 16, the alias test from the
// next 32. YCSB's generator (after Gray et al.) approximates: it draws rank 2 about 19% too often.
class Zipfian {
 public:
  static constexpr int kBits = 16;
  static constexpr size_t kMaxBuckets = 1024;
  Zipfian() = default;
  Zipfian(uint64_t n, double theta);
  // The table's ranks (most draws) inline; a bucket's draw and keep test out of line.
  uint64_t rank(Rng& rng) const { return rank(rng.next(), rng); }
  // The same from the random word WORD first (rng only for a bucket's draw).
  [[gnu::always_inline]] uint64_t rank(uint64_t word, Rng& rng) const {
    const uint64_t j = table_pick(word);
    return j < head_ ? j : tail_rank(rng, j);
  }
  uint64_t n() const { return n_; }
  // zeta(n, theta) = sum_{i=1..n} i^-theta, exact to double precision (Euler-Maclaurin past 4,096 terms).
  static double zeta(uint64_t n, double theta);
  // Probability of rank r (0-based): what a test of the frequencies compares with.
  double probability(uint64_t r) const;
  size_t buckets() const { return buckets_.size(); }  // the tail's buckets (0: every rank in the table)
  uint64_t head() const { return head_; }             // ranks [0, head) stand in the table one by one
  // The 0-based ranks [first, last] of tail bucket I (I < buckets()).
  std::pair<uint64_t, uint64_t> bucket_ranks(size_t i) const {
    return {buckets_[i].lo - 1, buckets_[i].lo + buckets_[i].width - 2};
  }
  struct Alias {
    uint32_t threshold;  // keep i when the draw's fraction is below it, else take `other`
    uint32_t other;
  };
  const std::vector<Alias>& table() const { return alias_; }  // 2^kBits entries: ranks, buckets, weight 0
  // J: the table's pick, a bucket (head() + its index). A rank of it, or of a new draw if refused.
  [[gnu::noinline]] uint64_t tail_rank(Rng& rng, uint64_t j) const;

 private:
  friend class KeyChooser;
  struct Bucket;
  // Bucket I's keep test of key K (1-based) with the fraction F (over 2^64).
  bool kept(const Bucket& b, uint64_t k, uint64_t f) const;
  // The rest of a draw from bucket I whose first try (key K, fraction F) F did not keep outright
  // (F >= keep_all): the keep test, then a new draw. KeyChooser's tail takes the first try inline.
  [[gnu::noinline]] uint64_t tail_after(Rng& rng, uint64_t i, uint64_t k, uint64_t f) const;
  // The alias table's pick for the random word R: a rank of the head, or head_ + a tail bucket.
  [[gnu::always_inline]] uint64_t table_pick(uint64_t r) const {
    const uint64_t i = r >> (64 - kBits);
    const Alias& a = alias_[i];
    return static_cast<uint32_t>(r >> 16) < a.threshold || a.threshold == UINT32_MAX ? i : a.other;
  }
  struct Bucket {  // 1-based ranks [lo, lo + width)
    uint64_t lo, width;
    double lo_real;
    uint64_t keep_all;  // a keep test's fraction below this (over 2^64) keeps any key of the bucket
  };
  std::vector<Alias> alias_;  // 2^kBits entries: head_ ranks, then the buckets, then weight 0
  std::vector<Bucket> buckets_;
  uint64_t head_ = 0;
  uint64_t n_ = 1;
  double theta_ = 0.99, zetan_ = 1;
};

// A bijection of [0, n): multiply by an odd constant and xor-shift, both invertible modulo the
// next power of two, cycle-walked into range. "Scrambled" zipfian spreads the hot ranks over the
// key space without merging any two of them, so each key's frequency is exactly the zipfian
// probability of its rank (YCSB's hash-mod scrambling merges ranks).
class Permutation {
 public:
  Permutation() = default;
  Permutation(uint64_t n, uint64_t seed);
  [[gnu::always_inline]] uint64_t operator()(uint64_t x) const {
    if (n_ <= 2) return x;
    return wide(x);
  }
  // The same for a key space known to hold more than 2 keys (a zipfian's tail: more than 2^16).
  [[gnu::always_inline]] uint64_t wide(uint64_t x) const {
    do {
      x = (x * a_ + c_) & mask_;
      x ^= x >> shift_;
      x = (x * b_) & mask_;
      x ^= x >> shift_;
    } while (x >= n_);
    return x;
  }

 private:
  uint64_t n_ = 1, mask_ = 1, a_ = 1, b_ = 1, c_ = 0;
  int shift_ = 1;
};

// One client's key chooser. `limit` is how many keys exist now (keyspace plus the keys inserted
// so far): `latest` favours the newest of them.
//
// Scrambled zipfian over a key space below 2^32 - 1024 keys draws from a copy of the zipfian's
// alias table that holds keys: each entry names the key of its rank (already permuted) and its
// alias's, or a tail bucket. A hot key costs one table entry, neither the rank's pick nor the
// permutation; only a tail draw (about 1 in 5 at theta 0.99 over 10^6 keys) permutes its rank.
class KeyChooser {
 public:
  KeyChooser(const KeySpec& spec, uint64_t seed);
  // --hot-shift: BASE's distribution with its hot keys moved for period K (0: BASE itself).
  // Zipfian scrambles its ranks over the keys by a permutation drawn from (seed, K), sharing
  // BASE's alias table; hotspot rotates its hot set by an offset drawn from them. Its shape, and
  // so every rank's frequency, stays the same. Uniform, sequential and latest have no hot set to move.
  KeyChooser(const KeyChooser& base, uint64_t k);
  static bool movable(KeyDist d) { return d == KeyDist::Zipfian || d == KeyDist::Hotspot; }
  // The key for the random word WORD (all of it for uniform and for the table's keys; a zipfian
  // tail draw and hotspot's pick in the hot or cold set take more from rng).
  [[gnu::always_inline]] uint64_t next(uint64_t word, Rng& rng, uint64_t seq, uint64_t limit) const {
    switch (draw_) {
      case Draw::Sequential: return seq % spec_.keyspace;
      case Draw::Uniform: return static_cast<uint64_t>((static_cast<unsigned __int128>(word) * spec_.keyspace) >> 64);
      case Draw::KeyedZipfian: {
        const KeyAlias& a = keyed_[word >> (64 - Zipfian::kBits)];
        const uint32_t v = static_cast<uint32_t>(word >> 16) < a.threshold ? a.key : a.other;
        if (v < kFirstBucket) [[likely]]
          return v;
        return tail_key(rng, v);
      }
      case Draw::Zipfian: return perm_(zipf_->rank(word, rng));
      case Draw::Latest: {
        uint64_t r = zipf_->rank(word, rng);
        return r < limit ? limit - 1 - r : 0;
      }
      case Draw::Hotspot: return hotspot(word, rng);
      case Draw::MovedHotspot: {  // the hot set from offset_ on, wrapping around the key space
        const uint64_t k = hotspot(word, rng) + offset_;
        return k >= spec_.keyspace ? k - spec_.keyspace : k;
      }
    }
    return 0;
  }
  uint64_t next(Rng& rng, uint64_t seq, uint64_t limit) const { return next(rng.next(), rng, seq, limit); }
  // Uniform and the keyed zipfian table (fast() true): the key for WORD without the switch.
  bool fast() const { return draw_ == Draw::Uniform || draw_ == Draw::KeyedZipfian; }
  [[gnu::always_inline]] uint64_t next_fast(uint64_t word, Rng& rng) const {
    if (keyed_) {
      const KeyAlias& a = keyed_[word >> (64 - Zipfian::kBits)];
      const uint32_t v = static_cast<uint32_t>(word >> 16) < a.threshold ? a.key : a.other;
      if (v < kFirstBucket) [[likely]]
        return v;
      return tail_key(rng, v);
    }
    return static_cast<uint64_t>((static_cast<unsigned __int128>(word) * spec_.keyspace) >> 64);
  }
  const KeySpec& spec() const { return spec_; }
  const Zipfian& zipfian() const { return *zipf_; }
  const Permutation& permutation() const { return perm_; }
  uint64_t hot_keys() const { return hot_n_; }
  bool keyed_table() const { return draw_ == Draw::KeyedZipfian; }

 private:
  enum class Draw : uint8_t { Sequential, Uniform, KeyedZipfian, Zipfian, Latest, Hotspot, MovedHotspot };
  [[gnu::always_inline]] uint64_t hotspot(uint64_t word, Rng& rng) const {  // the hot set first
    if (static_cast<double>(word >> 11) * 0x1.0p-53 < spec_.hot_ops) return rng.below(hot_n_);
    return hot_n_ + rng.below(spec_.keyspace - hot_n_);
  }
  // The keyed zipfian's table: the zipfian's, each rank replaced by its key (perm_).
  void make_keyed_table();
  // A keyed table's values at or past this are tail buckets (kFirstBucket + the bucket's index).
  static constexpr uint32_t kFirstBucket = UINT32_MAX - Zipfian::kMaxBuckets + 1;
  struct KeyAlias {
    uint32_t threshold;  // the zipfian table's
    uint32_t key;        // this entry's key, or its bucket
    uint32_t other;      // the alias's key, or its bucket (= key when the entry has no alias)
  };
  // A tail bucket's key (V: kFirstBucket + the bucket's index). Its first try, kept outright in
  // about 98 of 100 tail draws, and the permutation are a leaf call; the rest is tail_key_after.
  [[gnu::noinline]] uint64_t tail_key(Rng& rng, uint32_t v) const;
  [[gnu::noinline]] uint64_t tail_key_after(Rng& rng, uint64_t i, uint64_t k, uint64_t f) const;
  KeySpec spec_;
  Draw draw_ = Draw::Uniform;
  std::shared_ptr<const Zipfian> zipf_;                       // shared by the copies of a chooser (the alias table)
  std::shared_ptr<const std::vector<KeyAlias>> keyed_table_;  // KeyedZipfian: the table of keys
  const KeyAlias* keyed_ = nullptr;                           // its entries
  const Zipfian::Bucket* buckets_ = nullptr;                  // KeyedZipfian: the zipfian's tail buckets
  Permutation perm_;
  uint64_t hot_n_ = 1;
  uint64_t seed_ = 1;
  uint64_t offset_ = 0;  // MovedHotspot: where the hot set starts
};

// --value-size 100 | 100-1000 (uniform) | 32:50,1024:40,65536:10 (size:weight).
struct SizeDist {
  std::vector<uint32_t> sizes;  // one entry: fixed; two with range=true: [lo, hi]
  std::vector<uint64_t> cut;    // weighted: cumulative thresholds over 2^64
  bool range = false;
  static SizeDist parse(const std::string& text, const std::string& what = "--value-size");
  uint32_t max() const;
  uint32_t min() const;
  double mean() const;
  uint32_t next(Rng& rng) const {
    if (range) return sizes[0] + static_cast<uint32_t>(rng.below(uint64_t{sizes[1]} - sizes[0] + 1));
    if (sizes.size() == 1) return sizes[0];
    uint64_t r = rng.next();
    for (size_t i = 0; i + 1 < sizes.size(); ++i)
      if (r < cut[i]) return sizes[i];
    return sizes.back();
  }
  std::string text() const;
};

// --ttl: how long a written key lives, in whole seconds, as a SizeDist of seconds: 0 (never
// expires), a time (3600, 90s, 1h, 2d), LO-HI (uniform) or TIME:WEIGHT,... (a 0 in the list: that
// share of the writes never expires). Up to kMaxTtl; `clamp` (a model's TTLs, measured, not
// typed): a longer one is taken as kMaxTtl.
constexpr uint32_t kMaxTtl = 365 * 86400;
SizeDist parse_ttl(const std::string& text, bool clamp = false);

// Values carry their key and a checksum, so a read that returns another key's value, or a
// corrupted one, is detected by every adapter whatever the concurrency. Layout (printable, so it
// passes through JSON and text protocols unchanged):
//   "<16 hex: a hash of the key><8 hex: version><8 hex: checksum><filler>"
// The filler is drawn from (key, version); the checksum covers key, version and filler. Values
// shorter than the 32-byte header carry a prefix of it and are checked byte for byte (a 1-byte
// value tells 15 of 16 other keys apart; 4 bytes, all but one in 65,536).
constexpr size_t kValueHeader = 32;
constexpr size_t kVersionedValue = 24;  // a value this long carries its version (check_value gives it)
void write_value(uint64_t key, uint32_t version, char* out, size_t len);
std::string make_value(uint64_t key, uint32_t version, size_t len);
enum class ValueCheck : uint8_t { Ok, OtherKey, Corrupt };
// `version`, when it is not null, receives the value's version.
ValueCheck check_value(uint64_t key, const char* data, size_t len, uint32_t* version = nullptr);

// The one key layout of every keyed adapter (redis, memcached, tc; native ops and workload):
// "<prefix><k>", k in decimal zero-padded to at least `width` digits (a width of the key space's
// digits gives every key of a job one length, and keys that sort in numeric order). write_key
// needs prefix.size() + max(20, width) bytes at `out` and returns the key's length.
inline size_t decimal_digits(uint64_t k) {  // 1 for 0; compares, no division
  size_t n = 1;
  for (uint64_t p = 10; n < 20 && k >= p; p *= 10) ++n;
  return n;
}
// Inline: it is on every op's path. The digits go straight to `out`, right to left.
inline size_t write_key(std::string_view prefix, uint64_t k, size_t width, char* out) {
  std::memcpy(out, prefix.data(), prefix.size());
  const size_t n = std::max(width, decimal_digits(k));
  char* d = out + prefix.size();
  for (size_t i = n; i-- > 0; k /= 10) d[i] = static_cast<char>('0' + k % 10);
  return prefix.size() + n;
}
inline void append_key(std::string& out, std::string_view prefix, uint64_t k, size_t width = 0) {
  char d[20];
  const size_t n = static_cast<size_t>(std::to_chars(d, d + sizeof d, k).ptr - d);
  out.append(prefix);
  if (width > n) out.append(width - n, '0');
  out.append(d, n);
}
std::string make_key(std::string_view prefix, uint64_t k, size_t width = 0);

// Which key a native op's seq works on: in order, or scattered (splitmix64) over n keys.
inline uint64_t native_key(uint64_t seq, uint64_t n, bool random) { return random ? mix64(seq) % n : seq % n; }

// A value size drawn from the key alone, so a read knows the size the write used.
inline uint32_t size_of_key(const SizeDist& sizes, uint64_t k) {
  Rng r(k);
  return sizes.next(r);
}

// The values of redis's and memcached's native ops (SET/GET, set/get): the first `size` bytes
// of a fixed block of letters whose first (up to 16) bytes spell a hash of the key in hex. A
// value is written with two memcpys and checked with one memcmp (no per-byte work on the hot
// path, as redis-benchmark's fixed payload), and a value read back under another key, or with
// any byte changed, is still caught.
class NativeValues {
 public:
  void resize(size_t max_size);  // the largest value of the job
  size_t max() const { return block_.size(); }
  void write(uint64_t k, char* out, size_t size) const {  // size <= max()
    const size_t head = size < 16 ? size : 16;
    hash_hex(k, out, head);
    std::memcpy(out + head, block_.data() + head, size - head);
  }
  std::string value(uint64_t k, size_t size) const;
  ValueCheck check(uint64_t k, const char* data, size_t size) const;  // Ok, OtherKey or Corrupt

 private:
  static void hash_hex(uint64_t k, char* out, size_t n) {  // the first n (<= 16) hex digits of k's hash
    const uint64_t h = mix64(k);
    for (size_t i = 0; i < n; ++i) out[i] = "0123456789abcdef"[(h >> (60 - 4 * i)) & 15];
  }
  std::string block_;
};

// tc's native ops (put/get/out): key k is "key-" and 12 digits (so a scan from k reads k, k+1,
// ...); its value is the workload's self-checking value of version 0, its size drawn from the
// key alone. Native ops and the workload share the layout, so whichever wrote a value, it is
// checked the same way.
struct KeyValues {
  uint64_t space = 100000;
  SizeDist sizes = SizeDist::parse("100");
  static std::string key(uint64_t k) { return make_key("key-", k, 12); }
  static bool key_of(std::string_view s, uint64_t* k);  // false: not a key of this layout
  uint32_t size_of(uint64_t k) const { return size_of_key(sizes, k); }
  std::string value(uint64_t k) const { return make_value(k, 0, size_of(k)); }
};

struct HotPeriods;

// What one job runs when it is given --mix: parsed once from the job's options, shared by its
// clients (read only).
struct Workload {
  OpMix mix;
  KeyChooser keys{KeySpec{}, 1};
  SizeDist sizes = SizeDist::parse("100");
  bool load = true;  // write every key of the key space first (untimed)
  uint64_t seed = 1;
  uint32_t scan_max = 100;  // a scan reads 1..scan_max keys (uniform), as YCSB's maxscanlength
  // How long each write's key lives (--ttl, a preset's or a model's TTL): {0}, never expires.
  SizeDist ttls{{0}, {}, false};
  bool trace_ttls = false;  // a trace's replay: its writes take the trace's own TTLs
  // A trace's replay: its sets write whether the key is there or not (Cond::Upsert), and, with
  // trace_conds (the store has conditional writes), its adds and replaces their own conditions.
  bool trace = false;
  bool trace_conds = false;
  bool expires() const { return ttls.max() > 0 || trace_ttls; }
  // Keys below keyspace exist for sure (loaded, never deleted, never expired): a read that
  // misses one lost data.
  bool guaranteed() const { return load && !mix.has(KvOp::Delete) && !expires(); }
  std::string text() const;  // "read:95,update:5 zipfian theta 0.99 over 100000 keys, values 100 B"
  // --hot-shift: the hot keys move every this long, counted from each phase's start (0: never).
  int64_t hot_shift_ns = 0;
  void move_hot_keys(int64_t every_ns);  // sets hot_shift_ns (the key distribution must be movable)
  // The workload of the hot shift's period K >= 1: its keys moved (KeyChooser's period
  // constructor), all else the same. Made once per period, shared by the clients that reach it.
  std::shared_ptr<const Workload> period(uint64_t k) const;
  std::shared_ptr<HotPeriods> periods;  // the periods made and still in use
  std::string source;                   // a published workload's name and its row (--workload), or ""
  std::string note;                     // what of it does not apply here, and why, or ""
};

// The version a write of op `seq` puts in its value (the load's is 0): the seq's own, so that a
// crash check tells which of a key's writes survived (adapter.h's Held). Two writes share one only
// 2^32 - 1 ops apart.
inline uint32_t write_version(uint64_t seq) {
  const auto v = static_cast<uint32_t>(seq) + 1;
  return v ? v : 1;
}

// A write's condition (Request::cond). None: the op as the workload means it (--mix's update is
// YCSB's, an update of an existing record: on the SQL stores an UPDATE, on redis and memcached a
// set). The rest come from a trace's replay (TraceFeed) on a store with conditional writes
// (AdapterSpec::conditional_writes): Upsert, written whether the key is there or not (a trace's
// set); Absent, only if it is not (add); Present, only if it is (replace). A conditional write
// that stored nothing is Status::NotFound, counted as "not stored" (never an error).
enum class Cond : uint8_t { None, Upsert, Absent, Present };

// One request of a workload: everything an adapter needs, drawn by the core.
struct Request {
  uint64_t seq = 0;
  uint64_t key = 0;
  uint32_t value_size = 0;
  uint32_t version = 0;   // written into the value (an update changes the bytes)
  uint32_t scan_len = 0;  // scan: how many keys from `key` on
  uint32_t ttl = 0;       // a write: seconds its key lives (0: for ever), for stores with expiry
  KvOp op = KvOp::Read;
  bool must_exist = false;  // a miss on this read is lost data, not a miss
  Cond cond = Cond::None;   // a write's condition (a trace's set, add, replace)
};

// One client's stream of requests: deterministic for (seed, client), whatever the others do.
// The op and the key come from one random word (OpMix::rest); the value size, a scan's length
// and a zipfian tail draw from further words.
//
// The request path looks up the word's top byte in a table of 256 steps: where every word with
// that top byte picks the same op (all but at most one byte per threshold of the mix), the step
// holds the op and what its request needs (must its key exist, does it write), and a drawn key of
// a uniform or keyed zipfian key space is taken inline. Everything else (a byte a threshold cuts,
// inserts, latest, scans, drawn value sizes, the other key distributions) takes general(), the
// same draws from the same word: the table changes the cost, not one request.
class RequestGen {
 public:
  RequestGen(const Workload& w, int client, int clients);
  [[gnu::always_inline]] Request next(uint64_t seq) {
    const uint64_t word = rng_.next();
    const Step s = step_[word >> 56];
    if (!s.fast) [[unlikely]]
      return general(seq, word);
    Request r;
    r.seq = seq;
    r.op = s.op;
    r.must_exist = s.must;
    r.key = w_->keys.next_fast(w_->mix.rest(word), rng_);
    if (s.writes) {
      r.value_size = fixed_size_;
      r.version = write_version(seq);
      r.ttl = fixed_ttl_;
    }
    return r;
  }
  // The request for seq from its first random word WORD, by the general path (next() takes it
  // for the words its table does not cover; tests compare the two).
  [[gnu::noinline]] Request general(uint64_t seq, uint64_t word);
  Request next_general(uint64_t seq) { return general(seq, rng_.next()); }  // next() without its table
  // The load phase: key `k` of the key space, version 0.
  Request load(uint64_t seq, uint64_t k) {
    Request r;
    r.seq = seq;
    r.op = KvOp::Insert;
    r.key = k;
    r.value_size = w_->sizes.next(rng_);
    return r;
  }
  // Of the 256 top bytes of the first word, how many the request path takes inline (next()).
  int fast_steps() const;
  // --hot-shift: draws its keys as the hot shift's period of ELAPSED (ns since the phase's
  // start) has them; returns when, after the phase's start, the next period begins (INT64_MAX:
  // never, or no hot shift). The loops call it at the start and when an op passes that time.
  int64_t shift(int64_t elapsed);
  bool shifts() const { return base_->hot_shift_ns > 0; }
  uint64_t period() const { return period_; }

 private:
  struct Plan {
    bool must;    // its key, below n_, must exist (the load wrote it, nothing deletes)
    bool drawn;   // its key drawn from the key space (not an insert, not latest)
    bool writes;  // it writes a value
  };
  struct Step {  // op and must in a request's order (Request::op, must_exist): one 2-byte move
    KvOp op;
    bool must;
    bool fast;  // every word of this top byte picks op, and its request is drawn inline
    bool writes;
  };
  const Workload* w_;
  Rng rng_;
  uint64_t client_, clients_, inserted_ = 0;
  uint64_t n_;                            // the loaded key space
  uint32_t fixed_size_;                   // the value size when it is fixed, else 0
  uint32_t fixed_ttl_;                    // the TTL when it is fixed (0: none)
  bool ttl_fixed_;                        // one TTL for every write
  std::array<Plan, kKvOpCount> plan_;     // per op
  std::array<Step, 256> step_;            // per top byte of the first word
  const Workload* base_;                  // w_ in period 0
  std::shared_ptr<const Workload> held_;  // w_ in a later period of the hot shift
  uint64_t period_ = 0;
};

}  // namespace mw
