// kv_bare: the library calls of mwbench's lmdb and rocksdb native get and put in a bare loop, with
// no driver (no threads, clock per op, histogram, result): what the driver's share of an op is
// measured against (scripts/compare-kv). With `clock`, the loop also reads the clock after each op
// and counts the op's time in a log2 histogram: the least any tool that reports per-op latency
// does, so that the driver's share can be told apart from the clock's. Same keys (key-<12 digits>, in order over the
// key space), the same self-checking values written and checked (workload.h), the same library settings as the
// adapters' defaults (lmdb --sync nosync is given to both; rocksdb: WAL on, no sync, 32 MiB LRU block cache, paranoid
// checks).
//
//   kv_bare lmdb|rocksdb get|put N KEYSPACE DIR [clock]
//   prints "<engine> <op> <N> ops <s> s <ops/s> ops/s"
#include <array>
#include <bit>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>

#include <unistd.h>

#include "workload/workload.h"

#if MWBENCH_WITH_LMDB
#include <lmdb.h>
#endif
#if MWBENCH_WITH_ROCKSDB
#include <rocksdb/c.h>
#endif

namespace {

using mw::KeyValues;

[[noreturn]] void die(const std::string& why) {
  std::fprintf(stderr, "kv_bare: %s\n", why.c_str());
  std::exit(2);
}

// Per-op time, when asked: a steady_clock read after each op (the end of one op is the start of
// the next, as in mwbench's closed loop) counted in a log2 histogram of nanoseconds.
struct OpClock {
  bool on = false;
  std::chrono::steady_clock::time_point last{};
  std::array<uint64_t, 64> count{};
  void start() {
    if (on) last = std::chrono::steady_clock::now();
  }
  void tick() {
    if (!on) return;
    const auto t = std::chrono::steady_clock::now();
    const auto ns = static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(t - last).count());
    ++count[static_cast<size_t>(std::bit_width(ns))];
    last = t;
  }
  uint64_t total() const {
    uint64_t n = 0;
    for (uint64_t c : count) n += c;
    return n;
  }
};

struct Keys {
  KeyValues kv;
  char buf[48];
  std::string value;
  std::string_view key(uint64_t k) { return {buf, mw::write_key("key-", k, 12, buf)}; }
  std::string_view make(uint64_t k) {  // the value native put writes: version 0, size from the key
    value.resize(kv.size_of(k));
    mw::write_value(k, 0, value.data(), value.size());
    return value;
  }
  void check(uint64_t k, const char* p, size_t n) {
    uint32_t version = 1;
    if (mw::check_value(k, p, n, &version) != mw::ValueCheck::Ok || version != 0 || n != kv.size_of(k))
      die("key " + std::to_string(k) + " holds a wrong value");
  }
};

#if MWBENCH_WITH_LMDB
void lmdb_loop(bool get, uint64_t n, Keys& keys, const std::string& dir, OpClock& clock) {
  MDB_env* env = nullptr;
  MDB_txn* t = nullptr;
  MDB_dbi dbi = 0;
  if (mdb_env_create(&env) || mdb_env_set_mapsize(env, size_t{1} << 30) ||
      mdb_env_open(env, dir.c_str(), MDB_NOTLS | MDB_NORDAHEAD | MDB_NOSYNC, 0644) ||
      mdb_txn_begin(env, nullptr, 0, &t) || mdb_dbi_open(t, nullptr, 0, &dbi) || mdb_txn_commit(t))
    die("lmdb: cannot open " + dir);
  auto put = [&](uint64_t k) {
    std::string_view key = keys.key(k), v = keys.make(k);
    MDB_val kv{key.size(), const_cast<char*>(key.data())}, vv{v.size(), const_cast<char*>(v.data())};
    if (mdb_txn_begin(env, nullptr, 0, &t) || mdb_put(t, dbi, &kv, &vv, 0) || mdb_txn_commit(t))
      die("lmdb: put failed");
  };
  if (get)
    for (uint64_t k = 0; k < keys.kv.space; ++k) put(k);
  MDB_txn* r = nullptr;
  if (mdb_txn_begin(env, nullptr, MDB_RDONLY, &r)) die("lmdb: no read transaction");
  mdb_txn_reset(r);
  const auto t0 = std::chrono::steady_clock::now();
  clock.start();
  for (uint64_t seq = 0; seq < n; ++seq) {
    const uint64_t k = seq % keys.kv.space;
    if (!get) {
      put(k);
      clock.tick();
      continue;
    }
    std::string_view key = keys.key(k);
    MDB_val kv{key.size(), const_cast<char*>(key.data())}, v{};
    if (mdb_txn_renew(r) || mdb_get(r, dbi, &kv, &v)) die("lmdb: get failed");
    keys.check(k, static_cast<const char*>(v.mv_data), v.mv_size);
    mdb_txn_reset(r);
    clock.tick();
  }
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::printf("lmdb %s %llu ops %.6f s %.1f ops/s\n", get ? "get" : "put", static_cast<unsigned long long>(n), s,
              n / s);
  mdb_txn_abort(r);
  mdb_env_close(env);
}
#endif

#if MWBENCH_WITH_ROCKSDB
void rocksdb_loop(bool get, uint64_t n, Keys& keys, const std::string& dir, OpClock& clock) {
  rocksdb_options_t* o = rocksdb_options_create();
  rocksdb_options_set_create_if_missing(o, 1);
  rocksdb_options_set_paranoid_checks(o, 1);
  rocksdb_block_based_table_options_t* table = rocksdb_block_based_options_create();
  rocksdb_cache_t* cache = rocksdb_cache_create_lru(32 << 20);
  rocksdb_block_based_options_set_block_cache(table, cache);
  rocksdb_options_set_block_based_table_factory(o, table);
  char* err = nullptr;
  rocksdb_t* db = rocksdb_open(o, dir.c_str(), &err);
  if (err) die(std::string("rocksdb: ") + err);
  rocksdb_readoptions_t* ro = rocksdb_readoptions_create();
  rocksdb_writeoptions_t* wo = rocksdb_writeoptions_create();
  rocksdb_writebatch_t* batch = rocksdb_writebatch_create();
  auto put = [&](uint64_t k) {
    std::string_view key = keys.key(k), v = keys.make(k);
    rocksdb_writebatch_clear(batch);
    rocksdb_writebatch_put(batch, key.data(), key.size(), v.data(), v.size());
    rocksdb_write(db, wo, batch, &err);
    if (err) die(std::string("rocksdb: ") + err);
  };
  if (get)
    for (uint64_t k = 0; k < keys.kv.space; ++k) put(k);
  const auto t0 = std::chrono::steady_clock::now();
  clock.start();
  for (uint64_t seq = 0; seq < n; ++seq) {
    const uint64_t k = seq % keys.kv.space;
    if (!get) {
      put(k);
      clock.tick();
      continue;
    }
    std::string_view key = keys.key(k);
    rocksdb_pinnableslice_t* p = rocksdb_get_pinned(db, ro, key.data(), key.size(), &err);
    if (err || !p) die("rocksdb: get failed");
    size_t len = 0;
    const char* v = rocksdb_pinnableslice_value(p, &len);
    keys.check(k, v, len);
    rocksdb_pinnableslice_destroy(p);
    clock.tick();
  }
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::printf("rocksdb %s %llu ops %.6f s %.1f ops/s\n", get ? "get" : "put", static_cast<unsigned long long>(n), s,
              n / s);
  rocksdb_writebatch_destroy(batch);
  rocksdb_writeoptions_destroy(wo);
  rocksdb_readoptions_destroy(ro);
  rocksdb_close(db);
  rocksdb_options_destroy(o);
  rocksdb_block_based_options_destroy(table);
  rocksdb_cache_destroy(cache);
}
#endif

}  // namespace

int main(int argc, char** argv) {
  if (argc != 6 && !(argc == 7 && std::string(argv[6]) == "clock"))
    die("usage: kv_bare lmdb|rocksdb get|put N KEYSPACE DIR [clock]");
  OpClock clock;
  clock.on = argc == 7;
  const std::string engine = argv[1], op = argv[2];
  const uint64_t n = std::strtoull(argv[3], nullptr, 10);
  Keys keys;
  keys.kv.space = std::strtoull(argv[4], nullptr, 10);
  if (op != "get" && op != "put") die("op: get or put, not " + op);
  if (n == 0 || keys.kv.space == 0) die("N and KEYSPACE: whole numbers from 1");
  const std::string dir = std::string(argv[5]) + "/kv_bare-" + std::to_string(getpid());
  std::filesystem::create_directory(dir);
#if MWBENCH_WITH_LMDB
  if (engine == "lmdb") lmdb_loop(op == "get", n, keys, dir, clock);
#endif
#if MWBENCH_WITH_ROCKSDB
  if (engine == "rocksdb") rocksdb_loop(op == "get", n, keys, dir, clock);
#endif
  std::filesystem::remove_all(dir);
  if (clock.on && clock.total() != n)
    die("the clock counted " + std::to_string(clock.total()) + " ops, not " + argv[3]);
  if (engine != "lmdb" && engine != "rocksdb") die("engine: lmdb or rocksdb (when built), not " + engine);
  return 0;
}
