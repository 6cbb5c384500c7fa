// The shared workload: op mixes, key distributions against theory, value sizes, value checks.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <numeric>
#include <set>
#include <unordered_map>

#include "util/status.h"
#include "workload/workload.h"

using namespace mw;

TEST_CASE("op mix: per-op counts within 1% of the weights over 1M draws") {
  OpMix m = OpMix::parse("read:50,update:30,insert:10,delete:5,rmw:4,scan:1");
  CHECK(m.text() == "read:50,update:30,insert:10,delete:5,rmw:4,scan:1");
  Rng rng(42);
  std::array<uint64_t, kKvOpCount> n{};
  const uint64_t N = 1000000;
  for (uint64_t i = 0; i < N; ++i) ++n[static_cast<int>(m.pick(rng.next()))];
  for (int i = 0; i < kKvOpCount; ++i) {
    double want = m.share(static_cast<KvOp>(i)) * N;
    CHECK(std::abs(static_cast<double>(n[i]) - want) <= 0.01 * want + 0.01 * N * 0.01);
  }
  CHECK(m.scale == 100);
  CHECK(OpMix::parse("read:50,update:50").scale == 2);  // the weights' sum over their gcd
  OpMix read_only = OpMix::parse("read:1");
  CHECK(read_only.scale == 1);
  for (int i = 0; i < 1000; ++i) CHECK(read_only.pick(rng.next()) == KvOp::Read);
  CHECK(read_only.reads());
  CHECK_FALSE(OpMix::parse("insert:1").reads());
}

TEST_CASE("op mix: bad input names the option") {
  auto fails = [](const std::string& text, const std::string& msg) {
    try {
      OpMix::parse(text);
      FAIL("accepted " << text);
    } catch (const SetupError& e) {
      CHECK_MESSAGE(std::string(e.what()).find(msg) != std::string::npos, e.what());
      CHECK(std::string(e.what()).rfind("--mix", 0) == 0);
    }
  };
  fails("reed:95,update:5", "unknown op 'reed'");
  fails("read:0", "weight of read");
  fails("read:-5", "weight of read");
  fails("read:abc", "weight of read");
  fails("read:1.5", "weight of read");
  fails("read", "has no weight");
  fails("read:1,read:2", "given twice");
  fails("", "unknown op");
}

TEST_CASE("uniform and sequential keys stay in range and cover it") {
  KeySpec s;
  s.keyspace = 1000;
  s.dist = KeyDist::Uniform;
  KeyChooser u(s, 1);
  Rng rng(7);
  std::vector<uint64_t> n(1000);
  for (int i = 0; i < 1000000; ++i) {
    uint64_t k = u.next(rng, i, 1000);
    REQUIRE(k < 1000);
    ++n[k];
  }
  double chi = 0;
  for (auto c : n) chi += (c - 1000.0) * (c - 1000.0) / 1000.0;
  CHECK(chi < 1150);  // 999 degrees of freedom: p ~ 0.0006 above this
  s.dist = KeyDist::Sequential;
  KeyChooser q(s, 1);
  for (uint64_t i = 0; i < 3000; ++i) CHECK(q.next(rng, i, 1000) == i % 1000);
}

TEST_CASE("zipfian: each key's frequency matches theory (chi-square over the top ranks)") {
  // 10^5 keys: drawn from the table of keys; 2^33: past it, a rank then its permutation
  for (auto row :
       {std::pair{0.99, uint64_t{100000}}, std::pair{0.5, uint64_t{100000}}, std::pair{0.99, uint64_t{1} << 33},
        std::pair{1.6, uint64_t{100000}}, std::pair{1.2, uint64_t{1} << 33}, std::pair{2.68, uint64_t{1000}}}) {
    const double theta = row.first;  // not a structured binding: clang 14 cannot capture one (CAPTURE)
    const uint64_t keyspace = row.second;
    CAPTURE(theta);
    CAPTURE(keyspace);
    KeySpec s;
    s.dist = KeyDist::Zipfian;
    s.keyspace = keyspace;
    s.theta = theta;
    KeyChooser z(s, 3);
    CHECK(z.keyed_table() == (keyspace < (uint64_t{1} << 32)));
    Rng rng(11);
    const int N = 1000000;
    std::unordered_map<uint64_t, uint64_t> n;
    for (int i = 0; i < N; ++i) {
      uint64_t k = z.next(rng, i, s.keyspace);
      REQUIRE(k < s.keyspace);
      ++n[k];
    }
    // the key of rank r is perm(r): compare the observed count of the top 100 ranks with theory
    double chi = 0;
    int cells = 0;
    double rest_expected = N, rest_seen = N;
    for (uint64_t r = 0; r < 100; ++r) {
      double want = z.zipfian().probability(r) * N;
      double seen = static_cast<double>(n[z.permutation()(r)]);
      chi += (seen - want) * (seen - want) / want;
      ++cells;
      rest_expected -= want, rest_seen -= seen;
    }
    chi += (rest_seen - rest_expected) * (rest_seen - rest_expected) / rest_expected;
    // 100 degrees of freedom: the 0.999 quantile is 149.4
    CHECK_MESSAGE(chi < 149.4, "theta " << theta << " chi-square " << chi);
    // the most frequent key is rank 0's (at theta 0.99; at 0.5 the top ranks are too close to
    // tell apart in 1M draws), with its count within 4 standard deviations of theory
    uint64_t top = 0, top_n = 0;
    for (auto& [k, c] : n)
      if (c > top_n) top = k, top_n = c;
    if (theta > 0.9) CHECK(top == z.permutation()(0));
    double want0 = z.zipfian().probability(0) * N;
    CHECK(std::abs(static_cast<double>(n[z.permutation()(0)]) - want0) < 4 * std::sqrt(want0));
  }
}

TEST_CASE("zipfian: the table of keys gives the key of the rank the zipfian table picks, word for word") {
  // Whatever the word, the keyed draw is the permutation of the rank drawn from the same word
  // (and, for a tail bucket, the same further draws): the table changes the cost, not the keys.
  for (uint64_t keyspace : {uint64_t{1000}, uint64_t{1000000}, uint64_t{3000000}}) {
    CAPTURE(keyspace);
    KeySpec s;
    s.dist = KeyDist::Zipfian;
    s.keyspace = keyspace;
    KeyChooser z(s, 9);
    REQUIRE(z.keyed_table());
    Rng words(21), a(22), b(22);
    uint64_t tail = 0;
    for (int i = 0; i < 300000; ++i) {
      const uint64_t w = words.next();
      const uint64_t rank = z.zipfian().rank(w, b);
      tail += rank >= z.zipfian().head();
      REQUIRE(z.next(w, a, 0, keyspace) == z.permutation()(rank));
    }
    if (keyspace > 65536) CHECK(tail > 30000);  // the tail's buckets were drawn too
  }
}

TEST_CASE("one word for the op and the key: each op's keys have the distribution's frequencies") {
  // RequestGen picks the op from a word and draws the key from what the word has left
  // (OpMix::rest): the keys of each op must follow the distribution as if drawn alone.
  for (const char* mix : {"read:50,update:50", "read:95,update:5", "read:3,update:7,rmw:1"}) {
    for (KeyDist dist : {KeyDist::Zipfian, KeyDist::Uniform}) {
      const std::string mix_text = mix;
      const int dist_index = static_cast<int>(dist);
      CAPTURE(mix_text);
      CAPTURE(dist_index);
      Workload w;
      w.mix = OpMix::parse(mix);
      KeySpec s;
      s.dist = dist;
      s.keyspace = 1000000;
      w.keys = KeyChooser(s, w.seed);
      RequestGen g(w, 0, 1);
      const int N = 1000000;
      std::unordered_map<uint64_t, size_t> top;  // zipfian: the keys of the top 100 ranks
      if (dist == KeyDist::Zipfian)
        for (uint64_t rank = 0; rank < 100; ++rank) top[w.keys.permutation()(rank)] = rank;
      std::array<uint64_t, kKvOpCount> ops{};
      // per op: zipfian, the count of each top rank's key; uniform, of each band of 10,000 keys
      std::array<std::vector<uint64_t>, kKvOpCount> cells;
      for (auto& c : cells) c.assign(100, 0);
      for (int i = 0; i < N; ++i) {
        const Request r = g.next(static_cast<uint64_t>(i));
        REQUIRE(r.key < s.keyspace);
        const int op = static_cast<int>(r.op);
        ++ops[op];
        if (dist == KeyDist::Uniform)
          ++cells[op][r.key / 10000];
        else if (auto t = top.find(r.key); t != top.end())
          ++cells[op][t->second];
      }
      for (int op = 0; op < kKvOpCount; ++op) {
        const double share = w.mix.share(static_cast<KvOp>(op));
        CHECK(std::abs(static_cast<double>(ops[op]) - share * N) < 4 * std::sqrt(share * (1 - share) * N) + 1);
        if (ops[op] == 0) continue;
        CAPTURE(op);
        const double m = static_cast<double>(ops[op]);
        double chi = 0;
        if (dist == KeyDist::Zipfian) {
          // the top 100 ranks of this op's keys, and the rest as one cell (100 d.o.f.)
          double rest_want = m, rest_seen = m;
          for (uint64_t rank = 0; rank < 100; ++rank) {
            const double want = w.keys.zipfian().probability(rank) * m;
            const double seen = static_cast<double>(cells[op][rank]);
            chi += (seen - want) * (seen - want) / want;
            rest_want -= want, rest_seen -= seen;
          }
          chi += (rest_seen - rest_want) * (rest_seen - rest_want) / rest_want;
          CHECK_MESSAGE(chi < 149.4, "chi-square " << chi);  // the 0.999 quantile
        } else {
          for (uint64_t c : cells[op]) chi += (c - m / 100) * (c - m / 100) / (m / 100);
          CHECK_MESSAGE(chi < 148.2, "chi-square " << chi);  // 99 d.o.f.: the 0.999 quantile
        }
      }
    }
  }
}

TEST_CASE("the request path's table of top bytes gives the general path's requests, word for word") {
  // next() takes most words inline from a table of their top byte; general() is the one path for
  // every word. The same seed through both must give the same requests, field by field. 20,000
  // requests per case: about 4,000 zipfian tail draws over 10^6 keys, and every top byte about
  // 80 times. The fields are compared without an assertion each (doctest's cost per assertion
  // would be most of the test's time); the first request that differs is named.
  struct Dist {
    KeyDist dist;
    uint64_t keyspace;
  };
  for (const char* mix : {"read:50,update:50", "read:95,update:5", "read:3,update:7,rmw:1", "update:1",
                          "read:50,update:30,insert:10,delete:5,rmw:4,scan:1"}) {
    for (Dist d : {Dist{KeyDist::Uniform, 1000000}, Dist{KeyDist::Zipfian, 1000000}, Dist{KeyDist::Zipfian, 1000},
                   Dist{KeyDist::Hotspot, 1000}, Dist{KeyDist::Latest, 1000}}) {
      for (const char* sizes : {"100", "10-100"}) {
        const std::string mix_text = mix, size_text = sizes;
        const int dist_index = static_cast<int>(d.dist);
        CAPTURE(mix_text);
        CAPTURE(dist_index);
        CAPTURE(d.keyspace);
        CAPTURE(size_text);
        Workload w;
        w.mix = OpMix::parse(mix);
        w.sizes = SizeDist::parse(sizes);
        KeySpec s;
        s.dist = d.dist;
        s.keyspace = d.keyspace;
        w.keys = KeyChooser(s, w.seed);
        RequestGen fast(w, 1, 3), general(w, 1, 3);
        // inline: every byte no threshold cuts, when the key space is uniform or a keyed zipfian
        const bool inline_dist = d.dist == KeyDist::Uniform || d.dist == KeyDist::Zipfian;
        if (mix_text == "read:50,update:50" && size_text == "100") CHECK(fast.fast_steps() == (inline_dist ? 256 : 0));
        if (mix_text == "read:95,update:5" && size_text == "100") CHECK(fast.fast_steps() == (inline_dist ? 255 : 0));
        if (!inline_dist) CHECK(fast.fast_steps() == 0);
        int64_t first_differing = -1;
        for (uint64_t seq = 0; seq < 20000 && first_differing < 0; ++seq) {
          const Request a = fast.next(seq), b = general.next_general(seq);
          if (a.seq != b.seq || a.op != b.op || a.key != b.key || a.value_size != b.value_size ||
              a.version != b.version || a.scan_len != b.scan_len || a.must_exist != b.must_exist || a.cond != b.cond)
            first_differing = static_cast<int64_t>(seq);
        }
        CHECK_MESSAGE(first_differing == -1, "request " << first_differing << " differs");
      }
    }
  }
}

TEST_CASE("zipfian: the tail's buckets give each band of ranks its exact share (chi-square)") {
  // Past the 2^16-entry table the ranks come from buckets and a keep test; count draws in 60
  // bands of ranks spread over the tail (band edges not on bucket edges) and in the head.
  for (double theta : {0.99, 0.6}) {
    const uint64_t n = 3000000;
    Zipfian z(n, theta);
    CHECK(z.buckets() > 100);
    Rng rng(5);
    const int N = 2000000, bands = 60;
    const uint64_t first = 64000, width = (n - first) / bands;
    std::vector<double> seen(bands + 1, 0), want(bands + 1, 0);
    for (int i = 0; i < N; ++i) {
      const uint64_t r = z.rank(rng);
      REQUIRE(r < n);
      seen[r < first ? bands : std::min<uint64_t>((r - first) / width, bands - 1)] += 1;
    }
    for (uint64_t r = first; r < n; ++r)
      want[std::min<uint64_t>((r - first) / width, bands - 1)] += z.probability(r) * N;
    want[bands] = N * (Zipfian::zeta(first, theta) / Zipfian::zeta(n, theta));
    double chi = 0;
    for (int b = 0; b <= bands; ++b) chi += (seen[b] - want[b]) * (seen[b] - want[b]) / want[b];
    CHECK_MESSAGE(chi < 99.6, "theta " << theta << " chi-square " << chi);  // 60 d.o.f.: 0.999 quantile
  }
  // 2^40 ranks (the largest --keyspace): the last buckets are wider than 2^32 and draw their keep
  // test's fraction apart. 40 bands with geometric edges, their shares from zeta.
  {
    const uint64_t n = uint64_t{1} << 40;
    Zipfian z(n, 0.99);
    Rng rng(6);
    const int N = 2000000, bands = 40;
    std::vector<uint64_t> edge(bands + 1);
    for (int b = 0; b <= bands; ++b)
      edge[b] = b == bands ? n : static_cast<uint64_t>(64000 * std::pow(static_cast<double>(n) / 64000, b / 40.0));
    std::vector<double> seen(bands + 1, 0);
    for (int i = 0; i < N; ++i) {
      const uint64_t r = z.rank(rng);
      REQUIRE(r < n);
      seen[r < edge[0] ? bands
                       : static_cast<size_t>(std::upper_bound(edge.begin(), edge.end(), r) - edge.begin() - 1)] += 1;
    }
    const double zn = Zipfian::zeta(n, 0.99);
    double chi = 0;
    for (int b = 0; b <= bands; ++b) {
      const double want = b == bands ? N * Zipfian::zeta(edge[0], 0.99) / zn
                                     : N * (Zipfian::zeta(edge[b + 1], 0.99) - Zipfian::zeta(edge[b], 0.99)) / zn;
      chi += (seen[b] - want) * (seen[b] - want) / want;
    }
    CHECK_MESSAGE(chi < 73.4, "2^40 ranks: chi-square " << chi);  // 40 d.o.f.: 0.999 quantile
  }
  // A vast key space still fits its tail in the table.
  Zipfian huge(UINT64_MAX / 2, 0.99);
  CHECK(huge.buckets() <= 1024);
  Rng rng(7);
  for (int i = 0; i < 10000; ++i) REQUIRE(huge.rank(rng) < UINT64_MAX / 2);
}

// Within a bucket, a key k is kept with probability (lo/k)^theta. Above theta 1 that is below
// lo/k, so a shortcut that keeps every key with a fraction under lo/k (right up to theta 1) gave
// the bucket's keys the weights of theta 1: the mean rank of its draws moves by about 0.2% of its
// width at theta 2.68, 7 standard deviations of 1,000,000 draws.
TEST_CASE("zipfian: a bucket's keys have their own theta's weights, above theta 1 too") {
  for (double theta : {0.6, 0.99, 1.6, 2.68}) {
    CAPTURE(theta);
    Zipfian z(uint64_t{1} << 33, theta);
    REQUIRE(z.buckets() > 20);
    const size_t i = 10;
    const auto [first, last] = z.bucket_ranks(i);
    REQUIRE(last - first > 500);
    double w = 0, m = 0, m2 = 0;  // the law within the bucket: weight (k + 1)^-theta
    for (uint64_t k = first; k <= last; ++k) {
      const double p = std::pow(static_cast<double>(k + 1), -theta);
      w += p, m += p * static_cast<double>(k - first), m2 += p * static_cast<double>(k - first) * (k - first);
    }
    const double mean = m / w, sd = std::sqrt(m2 / w - mean * mean);
    Rng rng(11);
    double sum = 0;
    int count = 0;
    for (int d = 0; d < 1000000; ++d) {
      const uint64_t r = z.tail_rank(rng, z.head() + i);
      if (r < first || r > last) continue;  // refused, drawn again elsewhere
      sum += static_cast<double>(r - first), ++count;
    }
    REQUIRE(count > 900000);
    CHECK(std::abs(sum / count - mean) < 4 * sd / std::sqrt(count));
  }
}

TEST_CASE("zipfian: zeta is exact for small n and close for large n") {
  double exact = 0;
  for (int i = 1; i <= 1000; ++i) exact += std::pow(i, -0.99);
  CHECK(Zipfian::zeta(1000, 0.99) == doctest::Approx(exact).epsilon(1e-12));
  // YCSB's constant for 10^10 items at theta 0.99
  CHECK(Zipfian::zeta(10000000000ULL, 0.99) == doctest::Approx(26.4690282017515).epsilon(1e-12));
  // Past the exact terms, Euler-Maclaurin agrees with the exact sum (and with mpmath:
  // zeta(0.99) - zeta(0.99, 10^6 + 1) = 15.3918497460368, the same for 0.5: 1998.54014549115).
  for (double theta : {0.5, 0.8, 0.99, 0.999999})
    for (uint64_t n : {4097ull, 5000ull, 123457ull}) {
      double sum = 0;
      for (uint64_t i = n; i >= 1; --i) sum += std::pow(static_cast<double>(i), -theta);
      CAPTURE(theta);
      CAPTURE(n);
      CHECK(Zipfian::zeta(n, theta) == doctest::Approx(sum).epsilon(1e-13));
    }
  CHECK(Zipfian::zeta(1000000, 0.99) == doctest::Approx(15.3918497460368).epsilon(1e-13));
  CHECK(Zipfian::zeta(1000000, 0.5) == doctest::Approx(1998.54014549115).epsilon(1e-13));
}

TEST_CASE("the scrambling permutation is a bijection") {
  for (uint64_t n : {1ull, 2ull, 3ull, 7ull, 1000ull, 65536ull, 100003ull}) {
    Permutation p(n, 5);
    std::vector<bool> seen(n);
    for (uint64_t x = 0; x < n; ++x) {
      uint64_t y = p(x);
      REQUIRE(y < n);
      CHECK_FALSE(seen[y]);
      seen[y] = true;
    }
  }
  // the hot ranks are spread, not clustered at the start
  Permutation p(1000000, 5);
  uint64_t low = 0;
  for (uint64_t r = 0; r < 100; ++r) low += p(r) < 100000;
  CHECK(low < 30);
}

TEST_CASE("latest favours the newest keys") {
  KeySpec s;
  s.dist = KeyDist::Latest;
  s.keyspace = 10000;
  KeyChooser l(s, 1);
  Rng rng(3);
  uint64_t newest = 0, N = 200000;
  for (uint64_t i = 0; i < N; ++i) {
    uint64_t k = l.next(rng, i, 12000);
    REQUIRE(k < 12000);
    newest += k == 11999;
  }
  const double want = l.zipfian().probability(0) * N;  // rank 0 of latest is the newest key
  CHECK(std::abs(static_cast<double>(newest) - want) < 4 * std::sqrt(want));
}

TEST_CASE("hotspot: 20% of the keys get 80% of the ops") {
  KeySpec s;
  s.dist = KeyDist::Hotspot;
  s.keyspace = 100000;
  s.parse_hotspot("0.2:0.8");
  KeyChooser h(s, 1);
  CHECK(h.hot_keys() == 20000);
  Rng rng(9);
  const uint64_t N = 1000000;
  uint64_t hot = 0;
  std::vector<uint64_t> n(100);  // coarse buckets of 1000 keys
  for (uint64_t i = 0; i < N; ++i) {
    uint64_t k = h.next(rng, i, s.keyspace);
    REQUIRE(k < s.keyspace);
    hot += k < 20000;
    ++n[k / 1000];
  }
  CHECK(std::abs(static_cast<double>(hot) / N - 0.8) < 0.003);
  // inside each set, uniform: every hot bucket gets 0.8/20, every cold one 0.2/80
  double chi = 0;
  for (int b = 0; b < 100; ++b) {
    double want = (b < 20 ? 0.8 / 20 : 0.2 / 80) * N;
    chi += (n[b] - want) * (n[b] - want) / want;
  }
  CHECK(chi < 148);  // 99 degrees of freedom, 0.999 quantile
  for (auto bad : {"0.2", "0:0.8", "1:0.5", "0.2:x", "-0.1:0.5"}) CHECK_THROWS_AS(s.parse_hotspot(bad), SetupError);
}

TEST_CASE("hot shift: each period moves the hot keys, every rank keeps its frequency") {
  Workload w;
  w.mix = OpMix::parse("read:1");
  w.load = false;
  KeySpec s;
  s.keyspace = 100000;
  const uint64_t N = 400000;
  // The key each draw gives in period K, counted: the most frequent key and its share.
  auto top = [&](RequestGen& g, uint64_t k) {
    g.shift(static_cast<int64_t>(k) * w.hot_shift_ns + 1);
    REQUIRE(g.period() == k);
    std::unordered_map<uint64_t, uint64_t> n;
    for (uint64_t i = 0; i < N; ++i) ++n[g.next(i).key];
    auto best = std::max_element(n.begin(), n.end(), [](auto& a, auto& b) { return a.second < b.second; });
    return std::pair{best->first, static_cast<double>(best->second) / N};
  };
  SUBCASE("zipfian: the top key moves, its share stays the rank's") {
    s.dist = KeyDist::Zipfian;
    w.keys = KeyChooser(s, 1);
    w.move_hot_keys(1'000'000'000);
    const double p0 = w.keys.zipfian().probability(0);
    RequestGen g(w, 0, 1), plain(w, 0, 1);
    auto [k0, share0] = top(g, 0);
    CHECK(k0 == w.keys.permutation()(0));  // period 0 is the workload as given
    CHECK(std::abs(share0 - p0) < 0.004);
    std::set<uint64_t> tops{k0};
    for (uint64_t k : {1, 2, 7}) {
      auto [key, share] = top(g, k);
      CHECK(std::abs(share - p0) < 0.004);
      tops.insert(key);
    }
    CHECK(tops.size() == 4);    // each period its own hot key
    RequestGen again(w, 0, 1);  // the same seed moves them the same way
    CHECK(top(again, 7).first == top(g, 7).first);
    CHECK(top(g, 0).first == k0);  // back to period 0: its keys again
    CHECK(g.fast_steps() == 256);  // the request path's table serves every period
  }
  SUBCASE("hotspot: the hot set moves, 80% of the ops still go to 20% of the keys") {
    s.dist = KeyDist::Hotspot;
    s.parse_hotspot("0.2:0.8");
    w.keys = KeyChooser(s, 1);
    w.move_hot_keys(1'000'000'000);
    RequestGen g(w, 0, 1);
    std::set<uint64_t> first;
    for (uint64_t k : {0, 3}) {
      g.shift(static_cast<int64_t>(k) * w.hot_shift_ns);
      std::vector<uint64_t> n(100);  // buckets of 1000 keys
      for (uint64_t i = 0; i < N; ++i) ++n[g.next(i).key / 1000];
      std::vector<uint64_t> idx(100);
      std::iota(idx.begin(), idx.end(), 0);
      std::sort(idx.begin(), idx.end(), [&](auto a, auto b) { return n[a] > n[b]; });
      uint64_t hot = 0;
      for (int b = 0; b < 21; ++b) hot += n[idx[b]];
      CHECK(static_cast<double>(hot) / N > 0.79);  // 21 buckets (two cut by the moved set's edges) hold 80%
      if (k == 0) first.insert(idx.begin(), idx.begin() + 10);
      if (k == 0) CHECK(*std::max_element(idx.begin(), idx.begin() + 19) < 20);  // the set as given
      if (k == 3) CHECK(std::count_if(idx.begin(), idx.begin() + 10, [&](auto b) { return first.count(b); }) < 10);
    }
  }
  SUBCASE("uniform and latest have no hot keys to move") {
    for (KeyDist d : {KeyDist::Uniform, KeyDist::Latest, KeyDist::Sequential}) {
      s.dist = d;
      w.keys = KeyChooser(s, 1);
      CHECK_THROWS_AS(w.move_hot_keys(1'000'000'000), SetupError);
    }
  }
}

TEST_CASE("key distributions: bad input") {
  CHECK_THROWS_AS(KeySpec::parse_dist("zipf"), SetupError);
  KeySpec s;
  s.keyspace = 0;
  CHECK_THROWS_AS(KeyChooser(s, 1), SetupError);
  s.keyspace = 10;
  s.dist = KeyDist::Zipfian;
  for (double t : {0.0, -1.0, double(NAN), 3.5, double(INFINITY)}) {
    s.theta = t;
    CHECK_THROWS_AS(KeyChooser(s, 1), SetupError);
  }
}

TEST_CASE("value sizes: fixed, ranges and weighted lists") {
  Rng rng(1);
  SizeDist f = SizeDist::parse("100");
  CHECK(f.next(rng) == 100);
  CHECK(f.text() == "100");
  SizeDist r = SizeDist::parse("100-1000");
  CHECK(r.min() == 100);
  CHECK(r.max() == 1000);
  uint32_t lo = UINT32_MAX, hi = 0;
  double sum = 0;
  for (int i = 0; i < 100000; ++i) {
    uint32_t v = r.next(rng);
    lo = std::min(lo, v), hi = std::max(hi, v), sum += v;
  }
  CHECK(lo == 100);
  CHECK(hi == 1000);
  CHECK(sum / 100000 == doctest::Approx(550).epsilon(0.01));
  SizeDist w = SizeDist::parse("32:50,1024:40,65536:10");
  CHECK(w.text() == "32:50,1024:40,65536:10");
  CHECK(w.mean() == doctest::Approx(32 * 0.5 + 1024 * 0.4 + 65536 * 0.1).epsilon(1e-6));
  std::map<uint32_t, int> n;
  for (int i = 0; i < 1000000; ++i) ++n[w.next(rng)];
  CHECK(n.size() == 3);
  CHECK(std::abs(n[32] / 1e6 - 0.5) < 0.005);
  CHECK(std::abs(n[1024] / 1e6 - 0.4) < 0.005);
  CHECK(std::abs(n[65536] / 1e6 - 0.1) < 0.005);
  for (auto bad : {"0", "-5", "1000-100", "abc", "100-", "32:0", "32:50,x:1", "99999999999", "32;50"})
    CHECK_THROWS_AS(SizeDist::parse(bad), SetupError);
}

TEST_CASE("values carry their key and a checksum") {
  for (size_t len : {1, 8, 16, 24, 32, 33, 100, 4096}) {
    std::string v = make_value(12345, 7, len);
    CHECK(v.size() == len);
    uint32_t version = 0;
    CHECK(check_value(12345, v.data(), v.size(), &version) == ValueCheck::Ok);
    if (len >= 24) CHECK(version == 7);
    std::string other = make_value(12346, 7, len);
    CHECK(check_value(12345, other.data(), other.size()) == ValueCheck::OtherKey);
    if (len > kValueHeader) {
      std::string bad = v;
      bad[len - 1] = bad[len - 1] == 'A' ? 'B' : 'A';
      CHECK(check_value(12345, bad.data(), bad.size()) == ValueCheck::Corrupt);
    }
    for (unsigned char c : v) CHECK((c >= 0x20 && c < 0x7f));  // printable: safe in JSON and text protocols
  }
  std::string v = make_value(1, 1, 100), w = make_value(1, 2, 100);
  CHECK(v != w);  // an update changes the bytes
}

TEST_CASE("values: every change of one byte, anywhere, is caught; a cut or a longer value too") {
  // The header's hex is parsed by a table and the filler's checksum taken eight bytes at a time:
  // each byte position of each word, with every other byte value, must still be seen.
  for (size_t len : {33, 40, 41, 47, 100, 257}) {
    const std::string v = make_value(987654321, 3, len);
    REQUIRE(check_value(987654321, v.data(), v.size()) == ValueCheck::Ok);
    size_t caught = 0, tried = 0;
    for (size_t i = 0; i < len; ++i)
      for (int b = 0; b < 256; ++b) {
        if (static_cast<unsigned char>(v[i]) == b) continue;
        std::string bad = v;
        bad[i] = static_cast<char>(b);
        ++tried;
        caught += check_value(987654321, bad.data(), bad.size()) != ValueCheck::Ok;
      }
    CHECK(caught == tried);
    if (len - 1 > kValueHeader) CHECK(check_value(987654321, v.data(), len - 1) != ValueCheck::Ok);
    const std::string longer = v + "A";
    CHECK(check_value(987654321, longer.data(), longer.size()) != ValueCheck::Ok);
  }
  // Upper-case hex in the header is not what a writer wrote.
  std::string v = make_value(5, 1, 100);
  for (size_t i = 0; i < kValueHeader; ++i)
    if (v[i] >= 'a' && v[i] <= 'f') {
      std::string up = v;
      up[i] = static_cast<char>(v[i] - 'a' + 'A');
      CHECK(check_value(5, up.data(), up.size()) != ValueCheck::Ok);
    }
}

// ---- The workload through the driver: an in-memory keyed store, blocking and pollable ----
#include <fcntl.h>
#include <unistd.h>

#include <deque>
#include <fstream>
#include <functional>
#include <mutex>

#include "config/workload_spec.h"
#include "core/driver.h"
#include "core/runner.h"
#include "tests/helpers.h"
#include "util/clock.h"
#include "workload/published.h"

namespace {

// A keyed store in memory that checks every value it is handed and every value it returns,
// as a real adapter does. `lose_every` drops every K-th write after the load (a store that loses
// acknowledged data).
struct Store {
  std::mutex mu;
  std::map<uint64_t, std::string> data;
  uint64_t lose_every = 0, writes = 0;
  OpResult apply(const Request& r) {
    std::lock_guard lk(mu);
    switch (r.op) {
      case KvOp::Read:
      case KvOp::Rmw: {
        auto it = data.find(r.key);
        if (it == data.end()) return {Status::NotFound, 0, "no such key"};
        if (check_value(r.key, it->second.data(), it->second.size()) != ValueCheck::Ok)
          return {Status::Mismatch, 0, "wrong value"};
        if (r.op == KvOp::Rmw) it->second = make_value(r.key, r.version, r.value_size);
        return {};
      }
      case KvOp::Update:
      case KvOp::Insert:
        if (lose_every && r.version && ++writes % lose_every == 0) {
          data.erase(r.key);
          return {};
        }
        data[r.key] = make_value(r.key, r.version, r.value_size);
        return {};
      case KvOp::Delete: return data.erase(r.key) ? OpResult{} : OpResult{Status::NotFound, 0, "no such key"};
      default: return {Status::Unsupported, 0, "scan"};
    }
  }
};

// A client that runs each request through `apply` (a Store's, or a test's own), blocking or pollable.
class StoreClient final : public Client {
 public:
  StoreClient(std::function<OpResult(const Request&)> apply, bool pollable)
      : apply_(std::move(apply)), pollable_(pollable) {
    if (pollable_ && pipe2(p_, O_NONBLOCK | O_CLOEXEC) != 0) throw SetupError("pipe");
  }
  ~StoreClient() override {
    if (pollable_) close(p_[0]), close(p_[1]);
  }
  OpResult run(uint64_t) override { return {Status::Unsupported, 0, "native"}; }
  OpResult run_request(const Request& r) override { return apply_(r); }
  int fd() const override { return pollable_ ? p_[0] : -1; }
  void submit_request(const Request& r) override { done_.push_back({r.seq, apply_(r)}); }
  void flush() override {
    if (write(p_[1], "x", 1) != 1) {}
  }
  size_t reap(std::span<Completion> out) override {
    char buf[64];
    while (read(p_[0], buf, sizeof buf) > 0) {}
    size_t k = 0;
    while (!done_.empty() && k < out.size()) out[k++] = done_.front(), done_.pop_front();
    if (!done_.empty() && write(p_[1], "x", 1) != 1) {}
    return k;
  }

 private:
  std::function<OpResult(const Request&)> apply_;
  bool pollable_;
  int p_[2] = {-1, -1};
  std::deque<Completion> done_;
};

class StoreAdapter final : public Adapter {
 public:
  StoreAdapter(Store& s, bool pollable) : s_(s), pollable_(pollable) {}
  std::unique_ptr<Client> open(const Job&, int) override {
    return std::make_unique<StoreClient>([this](const Request& r) { return s_.apply(r); }, pollable_);
  }
  std::string target() const override { return "memory"; }

 private:
  Store& s_;
  bool pollable_;
};

AdapterSpec store_spec() {
  AdapterSpec s;
  s.name = "store";
  s.kv_ops = {KvOp::Read, KvOp::Update, KvOp::Insert, KvOp::Delete, KvOp::Rmw};
  return s;
}

Job mix_job(const std::string& mix, uint64_t n, int clients, int pipeline = 1) {
  Job j = test::make_job("store", "mix", n, clients);
  j.pipeline = pipeline;
  j.opts = {{"mix", mix}, {"keyspace", "1000"}, {"keys", "zipfian"}, {"value-size", "10-200"}};
  return j;
}

const OpFigures* op_of(const JobResult& r, const std::string& op) {
  for (auto& o : r.per_op)
    if (o.op == op) return &o;
  return nullptr;
}

}  // namespace

TEST_CASE("workload through the driver: load, per-op counts, values checked (blocking and pollable)") {
  for (bool pollable : {false, true}) {
    CAPTURE(pollable);
    Store store;
    StoreAdapter a(store, pollable);
    Job j = mix_job("read:70,update:20,rmw:10", 30000, 3, pollable ? 8 : 1);
    auto w = workload_of(j, store_spec());
    REQUIRE(w);
    CHECK(w->load);  // the mix reads: load by default
    JobResult r;
    r = measure(j, a, {}, w.get());
    REQUIRE(r.load);
    CHECK(r.load->ops_ok == 1000);  // every key of the key space, once
    CHECK(r.load->job.op == "load");
    CHECK(r.ops_ok == 30000);
    CHECK(r.ops_failed == 0);
    CHECK(r.misses == 0);  // loaded and never deleted: every read hits
    REQUIRE(r.per_op.size() == 3);
    uint64_t sum = 0;
    for (auto& o : r.per_op) {
      sum += o.ops_ok;
      CHECK(o.latency->count() == o.ops_ok);
    }
    CHECK(sum == r.ops_ok);
    CHECK(r.latency->count() == r.ops_ok);
    CHECK(std::abs(static_cast<double>(op_of(r, "read")->ops_ok) / 30000 - 0.7) < 0.02);
    CHECK(std::abs(static_cast<double>(op_of(r, "rmw")->ops_ok) / 30000 - 0.1) < 0.02);
  }
}

TEST_CASE("workload: a miss is counted apart, unless the key must exist (then it is lost data)") {
  Store store;
  StoreAdapter a(store, false);
  SUBCASE("deletes in the mix: misses are not failures") {
    Job j = mix_job("read:50,delete:50", 20000, 2);
    auto w = workload_of(j, store_spec());
    JobResult r;
    r = measure(j, a, {}, w.get());
    CHECK(r.ops_failed == 0);
    CHECK(r.misses > 1000);
    CHECK(op_of(r, "read")->misses + op_of(r, "delete")->misses == r.misses);
  }
  SUBCASE("no load: every read misses, none fails") {
    Job j = mix_job("read:100", 5000, 1);
    j.opts["load"] = "false";
    auto w = workload_of(j, store_spec());
    JobResult r;
    r = measure(j, a, {}, w.get());
    CHECK_FALSE(r.load);
    CHECK(r.ops_failed == 0);
    CHECK(r.misses == 5000);
  }
  SUBCASE("a store that loses acknowledged writes: reads of loaded keys fail") {
    store.lose_every = 10;
    Job j = mix_job("read:50,update:50", 20000, 2);
    auto w = workload_of(j, store_spec());
    JobResult r;
    r = measure(j, a, {}, w.get());
    CHECK(r.ops_failed > 0);
    CHECK(r.errors[static_cast<int>(Status::NotFound)] == r.ops_failed);
    CHECK(r.misses == 0);
  }
}

TEST_CASE("workload: the same seed gives the same requests per client, another seed others") {
  Job j = mix_job("read:50,update:30,insert:10,delete:10", 0, 4);
  auto w1 = workload_of(j, store_spec());
  auto w2 = workload_of(j, store_spec());
  j.opts["seed"] = "2";
  auto w3 = workload_of(j, store_spec());
  for (int c = 0; c < 4; ++c) {
    RequestGen a(*w1, c, 4), b(*w2, c, 4), d(*w3, c, 4);
    int same = 0;
    for (uint64_t s = 0; s < 1000; ++s) {
      Request x = a.next(s), y = b.next(s), z = d.next(s);
      CHECK(x.op == y.op);
      CHECK(x.key == y.key);
      CHECK(x.value_size == y.value_size);
      same += x.key == z.key && x.op == z.op;
    }
    CHECK(same < 500);
  }
  // inserts go past the loaded range, disjoint per client
  std::set<uint64_t> inserted;
  for (int c = 0; c < 4; ++c) {
    RequestGen g(*w1, c, 4);
    for (uint64_t s = 0; s < 2000; ++s) {
      Request r = g.next(s);
      if (r.op != KvOp::Insert) continue;
      CHECK(r.key >= 1000);
      CHECK(inserted.insert(r.key).second);
    }
  }
}

TEST_CASE("workload: bad options name the option") {
  auto fails = [](std::map<std::string, std::string> opts, const std::string& msg) {
    Job j = mix_job("read:95,update:5", 10, 1);
    for (auto& [k, v] : opts) j.opts[k] = v;
    try {
      workload_of(j, store_spec());
      FAIL("accepted");
    } catch (const SetupError& e) {
      CHECK_MESSAGE(std::string(e.what()).find(msg) != std::string::npos, e.what());
    }
  };
  fails({{"mix", "read:95,scan:5"}}, "--mix: store cannot run 'scan'");
  fails({{"mix", "read:x"}}, "--mix weight of read");
  fails({{"keyspace", "0"}}, "--keyspace");
  fails({{"value-size", "1000-100"}}, "--value-size: inverted range");
  fails({{"keys", "zipf"}}, "--keys");
  fails({{"zipf-theta", "3.5"}}, "--zipf-theta");
  fails({{"hotspot", "0.2"}}, "--hotspot");
  fails({{"scan-length", "0"}}, "--scan-length");
  fails({{"hot-shift", "0"}}, "--hot-shift: expected a time from 10ms to 24h");
  fails({{"hot-shift", "soon"}}, "--hot-shift: expected a time");
  fails({{"hot-shift", "25h"}}, "--hot-shift: expected a time");
  fails({{"hot-shift", "1s"}, {"keys", "uniform"}}, "--hot-shift: needs --keys zipfian or hotspot");
}

namespace {
class KeyLogAdapter final : public Adapter {
 public:
  explicit KeyLogAdapter(bool pollable) : pollable_(pollable) {}
  // Records when each request ran and on which key; a miss (nothing loaded).
  std::unique_ptr<Client> open(const Job&, int) override {
    return std::make_unique<StoreClient>(
        [this](const Request& r) {
          std::lock_guard lk(mu);
          log.emplace_back(now_ns(), r.key);
          return OpResult{Status::NotFound, 0, "no such key"};
        },
        pollable_);
  }
  std::string target() const override { return "memory"; }
  std::vector<std::pair<int64_t, uint64_t>> log;
  std::mutex mu;

 private:
  bool pollable_;
};
}  // namespace

TEST_CASE("hot shift through the driver: the hot key of each period is another, its share the rank's") {
  for (std::string rate : {"0", "20000"})
    for (bool pollable : {false, true}) {
      CAPTURE(rate);
      CAPTURE(pollable);
      KeyLogAdapter a(pollable);
      Job j = test::make_job("store", "mix", 0, 2);
      j.opts = {
          {"mix", "read:100"}, {"keyspace", "1000"}, {"keys", "zipfian"}, {"load", "false"}, {"hot-shift", "400ms"}};
      j.duration_s = 1.6;
      j.rate = std::stod(rate);
      auto w = workload_of(j, store_spec());
      REQUIRE(w);
      CHECK(w->text().find("hot keys move every 0.4s") != std::string::npos);
      JobResult r = measure(j, a, {}, w.get());
      REQUIRE(a.log.size() > 1000);
      // Periods by each op's time from the first op's (the phase's start, give or take a few ms);
      // ops within 50 ms of a boundary are left out.
      const int64_t t0 = a.log.front().first, every = 400'000'000;
      std::vector<std::map<uint64_t, uint64_t>> n(4);
      std::vector<uint64_t> total(4);
      for (auto [t, k] : a.log) {
        const int64_t d = t - t0, p = d / every, in = d % every;
        if (p > 3 || in < 50'000'000 || in > every - 50'000'000) continue;
        ++n[p][k], ++total[p];
      }
      const double p0 = Zipfian(1000, 0.99).probability(0);
      std::set<uint64_t> tops;
      int judged = 0;
      for (int p = 0; p < 4; ++p) {
        CAPTURE(p);
        if (total[p] < 2000) continue;  // a slow machine: too few to judge this period
        ++judged;
        auto best = std::max_element(n[p].begin(), n[p].end(), [](auto& x, auto& y) { return x.second < y.second; });
        const double share = static_cast<double>(best->second) / static_cast<double>(total[p]);
        CHECK(std::abs(share - p0) < 4 * std::sqrt(p0 * (1 - p0) / static_cast<double>(total[p])) + 0.005);
        tops.insert(best->first);
        if (p == 0) CHECK(best->first == w->keys.permutation()(0));
      }
      CHECK(judged >= 2);
      CHECK(tops.size() == static_cast<size_t>(judged));  // each period's hot key another
    }
}

// ---- The workload on real stores: SQLite and Tokyo Cabinet ----

namespace {

Job store_mix(const std::string& adapter, const std::string& mix, uint64_t n, int clients) {
  Job j = test::make_job(adapter, "mix", n, clients);
  j.opts = {{"mix", mix}, {"keyspace", "2000"}, {"keys", "zipfian"}, {"value-size", "20-300"}};
  return j;
}

void check_mix_result(const JobResult& r, uint64_t n) {
  CHECK_MESSAGE(r.state == JobResult::State::Done, r.message);
  CHECK(r.ops_ok == n);
  CHECK(r.ops_failed == 0);
  for (auto& e : r.error_samples) MESSAGE(e);
  CHECK_MESSAGE(r.verify.checked, r.verify.detail);
  CHECK_MESSAGE(r.verify.ok, r.verify.detail);
  uint64_t sum = 0;
  for (auto& o : r.per_op) sum += o.ops_ok;
  CHECK(sum == r.ops_ok);
}

}  // namespace

TEST_CASE("workload on sqlite and tc: every abstract op, values checked, the store verified") {
  test::TempDir d;
  const std::string all = "read:40,update:20,insert:10,rmw:10,delete:10,scan:10";
  SUBCASE("sqlite, 2 clients, WAL") {
    Job j = store_mix("sqlite", all, 3000, 2);
    j.opts["path"] = d.path;
    j.opts["journal-mode"] = "wal";
    j.opts["synchronous"] = "off";
    JobResult r = run_one(j);
    check_mix_result(r, 3000);
    REQUIRE(r.load);
    CHECK(r.load->ops_ok == 2000);
    CHECK(r.misses > 0);  // deleted keys are read again
  }
  for (std::string kind : {"btree", "memtree"}) {
    CAPTURE(kind);
    Job j = store_mix("tc", all, 5000, 2);
    j.opts["path"] = d.path;
    j.opts["kind"] = kind;
    check_mix_result(run_one(j), 5000);
  }
  for (std::string kind : {"hash", "memory"}) {  // no deletes: every read must hit
    CAPTURE(kind);
    Job j = store_mix("tc", "read:80,update:10,rmw:10", 5000, 2);
    j.opts["path"] = d.path;
    j.opts["kind"] = kind;
    JobResult r = run_one(j);
    check_mix_result(r, 5000);
    CHECK(r.misses == 0);
  }
}

TEST_CASE("workload on tc: a scan needs an ordered store") {
  test::TempDir d;
  Job j = store_mix("tc", "read:90,scan:10", 100, 1);
  j.opts["path"] = d.path;
  j.opts["kind"] = "hash";
  JobResult r = run_one(j);
  CHECK(r.state == JobResult::State::SetupFailed);
  CHECK(r.message.find("scan needs an ordered store") != std::string::npos);
}

TEST_CASE("workload: another key's value or a corrupt one is a Mismatch, counted as a failure") {
  Store store;
  StoreAdapter a(store, true);
  Job j = mix_job("read:100", 4000, 2, 4);
  j.opts["keys"] = "uniform";
  auto w = workload_of(j, store_spec());
  // load by hand, then swap two values and corrupt a third
  RequestGen g(*w, 0, 1);
  for (uint64_t k = 0; k < 1000; ++k) store.apply(g.load(k, k));
  std::swap(store.data[7], store.data[8]);
  store.data[9].back() ^= 1;
  j.opts["load"] = "false";
  auto w2 = workload_of(j, store_spec());
  JobResult r;
  r = measure(j, a, {}, w2.get());
  CHECK(r.ops_failed > 0);
  CHECK(r.errors[static_cast<int>(Status::Mismatch)] == r.ops_failed);
  CHECK(r.ops_ok + r.ops_failed == 4000);
  // each of the 3 bad keys is drawn about 4000/1000 times
  CHECK(r.ops_failed < 40);
}

TEST_CASE("workload D (read latest, insert): every read finds its key, whatever the other clients did") {
  for (bool pollable : {false, true}) {
    Store store;
    StoreAdapter a(store, pollable);
    Job j = mix_job("read:90,insert:10", 20000, 3, pollable ? 4 : 1);
    j.opts["keys"] = "latest";
    auto w = workload_of(j, store_spec());
    JobResult r;
    r = measure(j, a, {}, w.get());
    CHECK(r.ops_ok == 20000);
    CHECK(r.ops_failed == 0);
    CHECK(r.misses == 0);
    CHECK(store.data.size() == 1000 + op_of(r, "insert")->ops_ok);
  }
}

TEST_CASE("workload: native keys and values share the workload's layout; a key that is not one is refused") {
  KeyValues kv;
  kv.sizes = SizeDist::parse("10-200");
  for (uint64_t k : {uint64_t{0}, uint64_t{7}, uint64_t{999999999999}}) {
    uint64_t back = 1;
    REQUIRE(KeyValues::key_of(KeyValues::key(k), &back));
    CHECK(back == k);
    std::string v = kv.value(k);
    CHECK(v.size() == kv.size_of(k));
    CHECK(check_value(k, v.data(), v.size()) == ValueCheck::Ok);
    CHECK(v == kv.value(k));  // drawn from the key alone
  }
  CHECK(KeyValues::key(12) < KeyValues::key(100));  // numeric order is key order
  uint64_t k = 0;
  CHECK_FALSE(KeyValues::key_of("key-00000000012x", &k));
  CHECK_FALSE(KeyValues::key_of("key-0000000012", &k));
  CHECK_FALSE(KeyValues::key_of("kex-000000000012", &k));
}

TEST_CASE("one key and value layout: keys zero-padded to a width, native values caught under another key or changed") {
  CHECK(make_key("p:", 42, 5) == "p:00042");
  CHECK(make_key("p:", 123456, 5) == "p:123456");  // past the width: all its digits
  CHECK(make_key("mwbench:", 0) == "mwbench:0");
  CHECK(make_key("key-", UINT64_MAX, 12) == "key-18446744073709551615");
  CHECK(KeyValues::key(7) == "key-000000000007");
  uint64_t k = 0;
  CHECK(KeyValues::key_of(KeyValues::key(123), &k));
  CHECK(k == 123);
  CHECK(decimal_digits(0) == 1);
  CHECK(decimal_digits(99999) == 5);
  CHECK(decimal_digits(100000) == 6);
  CHECK(native_key(5, 100, false) == 5);
  CHECK(native_key(105, 100, false) == 5);
  CHECK(native_key(5, 100, true) == mix64(5) % 100);

  NativeValues v;
  v.resize(100);
  for (size_t size : {size_t{0}, size_t{1}, size_t{16}, size_t{100}}) {
    CAPTURE(size);
    std::string a = v.value(7, size);
    CHECK(a.size() == size);
    CHECK(v.check(7, a.data(), a.size()) == ValueCheck::Ok);
    if (size >= 4) CHECK(v.check(8, a.data(), a.size()) == ValueCheck::OtherKey);
    if (size > 16) {
      a[size - 1] ^= 1;
      CHECK(v.check(7, a.data(), a.size()) == ValueCheck::Corrupt);
    }
  }
  std::string big(101, 'a');
  CHECK(v.check(7, big.data(), big.size()) != ValueCheck::Ok);  // longer than any value written
}

TEST_CASE(
    "--workload twitter:N: the preset's op mix, alpha and value size reach the run; a flag given beside it wins") {
  Job j = test::make_job("null", "mix", 40000, 2);
  j.opts = {{"workload", "twitter:23"}, {"keyspace", "1000"}};  // set:0.31 get:0.36 incr:0.30 delete:0.02, alpha 0.274
  auto w = workload_of(j, *find_adapter("null"));
  REQUIRE(w);
  CHECK(w->mix.text() == "read:36,update:31,delete:2,rmw:30");
  CHECK(w->keys.spec().dist == KeyDist::Zipfian);
  CHECK(w->keys.spec().theta == doctest::Approx(0.274));
  CHECK(w->sizes.text() == "224");
  JobResult r = run_one(j);
  CHECK_MESSAGE(r.state == JobResult::State::Done, r.message);
  CHECK(r.workload.find("twitter:23 (twitter/cache-trace stat/2020Mar.md, cluster23") != std::string::npos);
  CHECK(r.workload.find("zipfian theta 0.274") != std::string::npos);
  const double total = static_cast<double>(r.ops_ok + r.ops_failed);
  REQUIRE(total > 0);
  // (a pair, not a structured binding: clang 14 cannot capture one in CAPTURE's lambda)
  for (const auto& want :
       {std::pair{"read", 36 / 99.0}, {"update", 31 / 99.0}, {"delete", 2 / 99.0}, {"rmw", 30 / 99.0}}) {
    CAPTURE(want.first);
    const OpFigures* o = op_of(r, want.first);
    REQUIRE(o);
    CHECK(std::abs(static_cast<double>(o->ops_ok + o->ops_failed) / total - want.second) < 0.02);
  }
  SUBCASE("a flag beside the preset wins") {
    j.opts["mix"] = "read:1";
    j.opts["zipf-theta"] = "0.9";
    j.opts["value-size"] = "10";
    auto own = workload_of(j, *find_adapter("null"));
    CHECK(own->mix.text() == "read:1");
    CHECK(own->keys.spec().theta == doctest::Approx(0.9));
    CHECK(own->sizes.text() == "10");
  }
  SUBCASE("alpha 0 is uniform, above 1 a steeper zipfian") {
    j.opts["workload"] = "twitter:31";
    CHECK(workload_of(j, *find_adapter("null"))->keys.spec().dist == KeyDist::Uniform);
    j.opts["workload"] = "twitter:1";
    CHECK(workload_of(j, *find_adapter("null"))->keys.spec().theta == doctest::Approx(2.6774));
  }
  SUBCASE("an unknown cluster lists the valid ones") {
    for (std::string bad : {"twitter:5", "twitter:55", "twitter:", "twitter:x", "facebook:1", "twitter:0012"}) {
      j.opts["workload"] = bad;
      try {
        workload_of(j, *find_adapter("null"));
        FAIL("accepted " << bad);
      } catch (const SetupError& e) {
        CHECK(std::string(e.what()).find("--workload: expected one of twitter:1,2,3,4,6,") == 0);
      }
    }
  }
}

TEST_CASE("--workload twitter:N: every preset makes a workload that draws its keys") {
  for (const TwitterCluster& c : twitter_clusters()) {
    CAPTURE(c.cluster);
    Job j = test::make_job("null", "mix", 1000, 1);
    j.opts = {{"workload", "twitter:" + std::to_string(c.cluster)}, {"keyspace", "100000"}};
    auto w = workload_of(j, *find_adapter("null"));
    REQUIRE(w);
    CHECK(w->keys.spec().dist == (c.alpha > 0 ? KeyDist::Zipfian : KeyDist::Uniform));
    if (c.alpha > 0) CHECK(w->keys.spec().theta == doctest::Approx(c.alpha));
    // the hottest key's share of 20,000 draws is its rank's probability (alpha 2.68: about 0.78)
    RequestGen gen(*w, 0, 1);
    std::map<uint64_t, int> seen;
    for (uint64_t i = 0; i < 20000; ++i) ++seen[gen.next(i).key];
    int top = 0;
    for (auto& [k, n] : seen) top = std::max(top, n);
    const double expect = c.alpha > 0 ? Zipfian(100000, c.alpha).probability(0) : 1e-5;
    CHECK(std::abs(top / 20000.0 - expect) < 0.02);
  }
}

TEST_CASE("--workload twitter:N: the docs list every preset as the code has it") {
  std::ifstream in(std::string(MWBENCH_SOURCE_DIR) + "/docs/guide/workloads.md");
  const std::string doc((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  for (const TwitterCluster& c : twitter_clusters()) {
    const PublishedWorkload p = published_workload("twitter:" + std::to_string(c.cluster));
    const std::string row = "| `twitter:" + std::to_string(c.cluster) + "` | " + c.ops + " | `" + p.mix + "` | ";
    CHECK_MESSAGE(doc.find(row) != std::string::npos, row);
  }
}

TEST_CASE("--ttl: a time, a range or a weighted list of whole seconds; anything else one clear error") {
  CHECK(parse_ttl("0").max() == 0);
  CHECK(parse_ttl("3600").text() == "3600");
  CHECK(parse_ttl("90s").text() == "90");
  CHECK(parse_ttl("1h").text() == "3600");
  CHECK(parse_ttl("2d").text() == "172800");
  CHECK(parse_ttl("92.6d").text() == "8000640");  // a published TTL: whole seconds, though not in floating point
  CHECK(parse_ttl("60-3600").text() == "60-3600");
  CHECK(parse_ttl("60:1,1h:3").sizes == std::vector<uint32_t>{60, 3600});
  CHECK(parse_ttl("0:1,1h:3").sizes == std::vector<uint32_t>{0, 3600});  // a quarter of the writes never expire
  CHECK(parse_ttl("0:1").max() == 0);
  CHECK(parse_ttl("500d:1,0:1", true).sizes == std::vector<uint32_t>{kMaxTtl, 0});  // a model's: clamped
  for (std::string bad : {"", "-1", "0.5", "1.5s", "400d", "1h-1m", "x", "60:0", "-5:1", "1h,2h", "500ms"}) {
    CAPTURE(bad);
    try {
      parse_ttl(bad);
      FAIL("accepted");
    } catch (const SetupError& e) {
      CHECK(std::string(e.what()).rfind("--ttl", 0) == 0);
    }
  }
}

TEST_CASE("--ttl: every write of the workload carries a drawn TTL, reads none; the key space is then not kept") {
  AdapterSpec spec = store_spec();
  spec.expiry = true;
  Job j = mix_job("read:50,update:30,rmw:20", 1000, 1);
  j.opts["ttl"] = "60:1,1h:3";
  auto w = workload_of(j, spec);
  REQUIRE(w);
  CHECK(w->expires());
  CHECK_FALSE(w->guaranteed());  // an expired key is a miss, not lost data
  CHECK_MESSAGE(w->text().find("keys expire after 60:25,3600:75 (seconds:percent)") != std::string::npos, w->text());
  RequestGen gen(*w, 0, 1);
  int short_ttl = 0, writes = 0;
  for (uint64_t i = 0; i < 20000; ++i) {
    const Request r = gen.next(i);
    CHECK_FALSE(r.must_exist);
    if (r.op == KvOp::Read) {
      CHECK(r.ttl == 0);
      continue;
    }
    ++writes;
    CHECK((r.ttl == 60 || r.ttl == 3600));
    short_ttl += r.ttl == 60;
  }
  CHECK(std::abs(static_cast<double>(short_ttl) / writes - 0.25) < 0.02);
  // one TTL: the request path's table still takes the writes inline, each with it
  j.opts["ttl"] = "1h";
  j.opts["value-size"] = "100";
  w = workload_of(j, spec);
  RequestGen fixed(*w, 0, 1);
  j.opts["ttl"] = "0";
  auto none = workload_of(j, spec);
  CHECK_FALSE(none->expires());
  CHECK(fixed.fast_steps() == RequestGen(*none, 0, 1).fast_steps());
  CHECK(fixed.fast_steps() > 250);
  for (uint64_t i = 0; i < 1000; ++i) {
    const Request r = fixed.next(i);
    CHECK(r.ttl == (r.op == KvOp::Read ? 0u : 3600u));
  }
}

TEST_CASE("--ttl: refused where it cannot apply; a preset's TTL is then left out and said") {
  AdapterSpec spec = store_spec();  // keeps keys for ever
  Job j = mix_job("read:50,update:50", 1000, 1);
  j.opts["ttl"] = "1h";
  auto refused = [&](const AdapterSpec& s, const std::string& want) {
    try {
      workload_of(j, s);
      FAIL("accepted");
    } catch (const SetupError& e) {
      CHECK_MESSAGE(std::string(e.what()).find(want) != std::string::npos, e.what());
    }
  };
  refused(spec, "--ttl: store's keys do not expire");
  spec.expiry = true;
  j.opts["crash"] = "kill";
  refused(spec, "--ttl: --crash reads back every acknowledged write");
  j.opts.erase("crash");
  j.opts["trace"] = "/nonexistent";
  refused(spec, "--ttl: a trace's replay uses the trace's own TTLs");
  j.opts.erase("trace");
  j.opts.erase("ttl");
  j.opts["workload"] = "twitter:23";  // TTL 120s
  j.opts.erase("mix");
  auto w = workload_of(j, spec);
  CHECK(w->ttls.text() == "120");
  w = workload_of(j, store_spec());
  CHECK_FALSE(w->expires());
  CHECK(w->text().find("; its TTL not applied: store's keys do not expire") != std::string::npos);
}
