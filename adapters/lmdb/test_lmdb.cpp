// The lmdb adapter on real LMDB environments in temp dirs: every op, the end checks, the
// workload, --crash kill, bad input, a corrupt environment and a filesystem that fills up.
#include <doctest/doctest.h>

#if MWBENCH_WITH_LMDB
#include <lmdb.h>
#include <filesystem>
#include <fstream>

#include "core/runner.h"
#include "tests/helpers.h"
#include "tests/store_checks.h"

using namespace mw;
using test::check_done;
using test::exit_of;
namespace fs = std::filesystem;

namespace {
Job lmdb_job(const std::string& op, uint64_t n, const std::string& dir, std::map<std::string, std::string> opts = {}) {
  Job j = test::make_job("lmdb", op, n);
  j.opts = {{"path", dir}, {"sync", "nosync"}, {"keyspace", "600"}};
  for (auto& [k, v] : opts) j.opts[k] = v;
  return j;
}
}  // namespace

TEST_CASE("lmdb: put, get, del, scan, batched and not, every sync level; values checked, counts verified") {
  test::TempDir d;
  for (const char* op : {"put", "get", "del", "scan"}) {
    for (const char* batch : {"1", "7"}) {
      CAPTURE(op);
      CAPTURE(batch);
      Job j = lmdb_job(op, 300, d.path, {{"batch", batch}});
      j.clients = 2;
      j.warmup_ops = 10;
      JobResult r = run_one(j);
      check_done(r, 300);
      if (std::string(op) == "put")
        CHECK(r.verify.detail ==
              (batch == std::string("1") ? "310 records, expected 310" : "600 records, expected 600"));
      if (std::string(op) == "del")  // 310 ops x batch keys, out of a key space of max(600, that)
        CHECK(r.verify.detail == (batch == std::string("1") ? "290 records, expected 290" : "0 records, expected 0"));
      CHECK(r.server.at("batch") == batch);
    }
  }
  for (const char* sync : {"full", "nometasync", "nosync"}) {
    CAPTURE(sync);
    JobResult r = run_one(lmdb_job("put", 60, d.path, {{"sync", sync}, {"writemap", "true"}}));
    check_done(r, 60);
    CHECK(r.server.at("contract").find(std::string(sync) == "full" ? "fsync-per-ack" : "os-buffer") == 0);
  }
  CHECK(fs::is_empty(d.path));
}

TEST_CASE("lmdb: the workload's every abstract op, 2 clients; without deletes every read hits") {
  test::TempDir d;
  test::check_every_kv_op(lmdb_job("mix", 4000, d.path));
}

TEST_CASE("lmdb: another key's value or a corrupt one, written behind mwbench's back, is a Mismatch") {
  test::TempDir d;
  JobResult r = run_one(lmdb_job("put", 600, d.path, {{"keep", "true"}}));
  check_done(r, 600);
  const std::string dir = r.server.at("dir");
  {  // swap keys 7 and 8's values and flip a byte of key 9's, with LMDB's own calls
    MDB_env* env = nullptr;
    MDB_txn* t = nullptr;
    MDB_dbi dbi = 0;
    REQUIRE(mdb_env_create(&env) == 0);
    REQUIRE(mdb_env_open(env, dir.c_str(), 0, 0644) == 0);
    REQUIRE(mdb_txn_begin(env, nullptr, 0, &t) == 0);
    REQUIRE(mdb_dbi_open(t, nullptr, 0, &dbi) == 0);
    auto get = [&](uint64_t k) {
      std::string key = KeyValues::key(k);
      MDB_val kv{key.size(), key.data()}, v{};
      REQUIRE(mdb_get(t, dbi, &kv, &v) == 0);
      return std::string(static_cast<char*>(v.mv_data), v.mv_size);
    };
    auto put = [&](uint64_t k, std::string v) {
      std::string key = KeyValues::key(k);
      MDB_val kv{key.size(), key.data()}, vv{v.size(), v.data()};
      REQUIRE(mdb_put(t, dbi, &kv, &vv, 0) == 0);
    };
    std::string v7 = get(7), v8 = get(8), v9 = get(9);
    v9.back() ^= 1;
    put(7, v8), put(8, v7), put(9, v9);
    REQUIRE(mdb_txn_commit(t) == 0);
    mdb_env_close(env);
  }
  r = run_one(lmdb_job("mix", 3000, d.path, {{"db", dir}, {"mix", "read:100"}, {"load", "false"}}));
  CHECK(r.ops_failed > 0);
  CHECK(r.ops_failed < 40);  // 3 bad keys of 600, each drawn about 5 times
  CHECK(r.errors[static_cast<int>(Status::Mismatch)] == r.ops_failed);
  CHECK(r.ops_ok + r.ops_failed == 3000);
  CHECK(exit_of(r) == 1);
  fs::remove_all(dir);
}

TEST_CASE("lmdb: --crash kill during puts; the parent reopens the environment and finds every commit") {
  test::TempDir d;
  for (const char* sync : {"full", "nosync"}) {
    CAPTURE(sync);
    Job j = lmdb_job("put", 600, d.path,
                     {{"sync", sync},
                      {"keyspace", "3000"},
                      {"batch", "5"},
                      {"crash", "kill"},
                      {"crash-at", "50%"},
                      {"expect", "durable"}});
    JobResult r = run_one(j, false);
    REQUIRE_MESSAGE(r.state == JobResult::State::Done, r.message);
    const DurabilityResult& dr = r.durability;
    CHECK(dr.victim == "writer process (lmdb)");
    CHECK(dr.acked >= 300);
    CHECK(dr.acked < 600);
    CHECK(dr.lost == 0);  // a process kill: committed transactions are in the file or the page cache
    CHECK(dr.corrupt == 0);
    CHECK(dr.acked + dr.in_doubt + dr.never_sent == 600);
    CHECK(exit_of(r) == 0);
  }
}

TEST_CASE("lmdb: --crash power: sync full keeps every commit, nometasync all but the last, nosync none") {
  // nometasync: each commit syncs the data pages, and with them the previous commit's meta page;
  // its own meta page stays unsynced until the next commit, so a cut undoes at most that commit
  // (none when it falls after the next commit's sync).
  test::TempDir d;
  using test::PowerKeeps;
  for (auto row : {std::pair{"full", PowerKeeps::All}, std::pair{"nometasync", PowerKeeps::AllButLast},
                   std::pair{"nosync", PowerKeeps::None}}) {
    const char* sync = row.first;  // not a structured binding: clang 14 cannot capture one (CAPTURE)
    const PowerKeeps keeps = row.second;
    CAPTURE(sync);
    test::check_power_puts(lmdb_job("put", 200, d.path, {{"sync", sync}, {"keyspace", "1000"}, {"batch", "5"}}), keeps);
  }
  CHECK(fs::is_empty(d.path));  // the layer and the environment are gone
}

TEST_CASE("lmdb: a key space larger than --map-size allows, --batch with --mix: set-up errors naming the option") {
  test::TempDir d;
  JobResult r = run_one(lmdb_job("put", 10, d.path, {{"keyspace", "1000000"}, {"map-size", "16M"}}));
  CHECK(r.state == JobResult::State::SetupFailed);
  CHECK(r.message ==
        "lmdb: --keyspace 1000000 of values up to 100 B needs a map of about 545 MiB, more than "
        "--map-size 16 MiB: raise --map-size or lower --keyspace");
  CHECK(exit_of(r) == 2);
  r = run_one(lmdb_job("put", 10, d.path, {{"keyspace", "1000000000000"}}));
  CHECK(r.message.find("more than the 64 TiB mwbench maps: lower --keyspace") != std::string::npos);
  r = run_one(lmdb_job("mix", 10, d.path, {{"mix", "read:1"}, {"batch", "2"}}));
  CHECK(r.message.find("lmdb: --batch groups native put and del") == 0);
  CHECK(fs::is_empty(d.path));
}

TEST_CASE("lmdb: a corrupt environment at open is a set-up error naming its path") {
  test::TempDir d;
  const std::string db = d.path + "/env";
  fs::create_directory(db);
  std::ofstream(db + "/data.mdb") << std::string(64 * 1024, 'x');
  JobResult r = run_one(lmdb_job("get", 10, d.path, {{"db", db}}));
  CHECK(r.state == JobResult::State::SetupFailed);
  CHECK(r.message.find("lmdb: cannot open " + db + ": ") == 0);
  CHECK(r.message.find("not an LMDB environment, or a corrupt one") != std::string::npos);
  CHECK(exit_of(r) == 2);
}

TEST_CASE("lmdb: a filesystem that fills up fails the writes, counted, exit 1; --writemap says so up front") {
  test::SmallFs fs(2 << 20);
  JobResult r = run_one(lmdb_job("put", 3000, fs.dir.path, {{"keyspace", "3000"}, {"value-size", "1000"}}));
  CHECK_MESSAGE(r.state == JobResult::State::Done, r.message);
  CHECK(r.ops_failed > 0);
  CHECK(r.ops_ok > 0);
  CHECK(r.ops_ok + r.ops_failed + r.ops_not_run == 3000);
  CHECK(r.errors[static_cast<int>(Status::Error)] > 0);
  REQUIRE(!r.error_samples.empty());
  CHECK_MESSAGE(r.error_samples[0].find("lmdb: ") != std::string::npos, r.error_samples[0]);
  CHECK(exit_of(r) == 1);
  if (fs.mounted) {  // a file-size limit is not a full filesystem to posix_fallocate
    r = run_one(lmdb_job("put", 10, fs.dir.path, {{"keyspace", "3000"}, {"writemap", "true"}}));
    CHECK(r.state == JobResult::State::SetupFailed);
    CHECK_MESSAGE(r.message.find("lmdb: --writemap writes through the map, so its 66 MiB are allocated in ") == 0,
                  r.message);
  }
}

#endif
