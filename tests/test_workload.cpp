// The shared workload: op mixes, key distributions against theory, value sizes, value checks.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <unordered_map>

#include "status.h"
#include "workload.h"

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
  OpMix read_only = OpMix::parse("read:1");
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
  for (double theta : {0.99, 0.5}) {
    KeySpec s;
    s.dist = KeyDist::Zipfian;
    s.keyspace = 100000;
    s.theta = theta;
    KeyChooser z(s, 3);
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

TEST_CASE("zipfian: zeta is exact for small n and close for large n") {
  double exact = 0;
  for (int i = 1; i <= 1000; ++i) exact += std::pow(i, -0.99);
  CHECK(Zipfian::zeta(1000, 0.99) == doctest::Approx(exact).epsilon(1e-12));
  // YCSB's constant for 10^10 items at theta 0.99
  CHECK(Zipfian::zeta(10000000000ULL, 0.99) == doctest::Approx(26.46902820178302).epsilon(1e-6));
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

TEST_CASE("key distributions: bad input") {
  CHECK_THROWS_AS(KeySpec::parse_dist("zipf"), SetupError);
  KeySpec s;
  s.keyspace = 0;
  CHECK_THROWS_AS(KeyChooser(s, 1), SetupError);
  s.keyspace = 10;
  s.dist = KeyDist::Zipfian;
  for (double t : {0.0, 1.0, -1.0, double(NAN), 2.0}) {
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
