// The rocksdb adapter on real RocksDB databases in temp dirs: every op, the end checks, the
// workload, --crash kill, bad input, a corrupt database and a filesystem that fills up.
#include <doctest/doctest.h>

#if MWBENCH_WITH_ROCKSDB
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
Job rocks_job(const std::string& op, uint64_t n, const std::string& dir, std::map<std::string, std::string> opts = {}) {
  Job j = test::make_job("rocksdb", op, n);
  j.opts = {{"path", dir}, {"keyspace", "600"}};
  for (auto& [k, v] : opts) j.opts[k] = v;
  return j;
}
}  // namespace

TEST_CASE("rocksdb: put, get, delete, scan, batched and not; values checked, counts verified") {
  test::TempDir d;
  for (const char* op : {"put", "get", "delete", "scan"}) {
    for (const char* batch : {"1", "7"}) {
      CAPTURE(op);
      CAPTURE(batch);
      Job j = rocks_job(op, 300, d.path, {{"batch", batch}});
      j.clients = 2;
      j.warmup_ops = 10;
      JobResult r = run_one(j);
      check_done(r, 300);
      if (std::string(op) == "put")
        CHECK(r.verify.detail ==
              (batch == std::string("1") ? "310 records, expected 310" : "600 records, expected 600"));
      if (std::string(op) == "delete")
        CHECK(r.verify.detail == (batch == std::string("1") ? "290 records, expected 290" : "0 records, expected 0"));
      CHECK(r.server.at("batch") == batch);
    }
  }
  // each durability setting, and no block cache
  // No structured binding here: clang 14 cannot capture one in CAPTURE (the sanitizer build).
  for (auto setting : {std::pair<const char*, const char*>{"sync", "fsync-per-ack"},
                       {"disable-wal", "memory"},
                       {"block-cache", "os-buffer"}}) {
    const char* opt = setting.first;
    const char* contract = setting.second;
    CAPTURE(opt);
    JobResult r = run_one(rocks_job("put", 60, d.path, {{opt, std::string(opt) == "block-cache" ? "0" : "true"}}));
    check_done(r, 60);
    CHECK(r.server.at("contract").find(contract) == 0);
  }
  CHECK(fs::is_empty(d.path));
}

TEST_CASE("rocksdb: the workload's every abstract op, 2 clients; without deletes every read hits") {
  test::TempDir d;
  test::check_every_kv_op(rocks_job("mix", 4000, d.path));
}

TEST_CASE("rocksdb: --crash kill during puts; the parent reopens the database and finds every write") {
  test::TempDir d;
  for (const char* sync : {"true", "false"}) {
    CAPTURE(sync);
    Job j = rocks_job("put", 2000, d.path,
                      {{"sync", sync},
                       {"keyspace", "10000"},
                       {"batch", "5"},
                       {"crash", "kill"},
                       {"crash-at", "50%"},
                       {"expect", "durable"}});
    JobResult r = run_one(j, false);
    REQUIRE_MESSAGE(r.state == JobResult::State::Done, r.message);
    const DurabilityResult& dr = r.durability;
    CHECK(dr.victim == "writer process (rocksdb)");
    CHECK(dr.acked >= 1000);
    CHECK(dr.acked < 2000);
    CHECK(dr.lost == 0);  // a process kill: the WAL is in the file or the page cache
    CHECK(dr.corrupt == 0);
    CHECK(dr.acked + dr.in_doubt + dr.never_sent == 2000);
    CHECK(exit_of(r) == 0);
  }
  Job two = rocks_job("put", 100, d.path, {{"crash", "kill"}});
  two.clients = 2;
  JobResult r = run_one(two, false);
  CHECK(r.message == "rocksdb: --crash runs the puts in one writer process: give -c 1");
}

TEST_CASE("rocksdb: --crash power: --sync keeps every write, the unsynced WAL loses what it acknowledged") {
  test::TempDir d;
  for (const char* sync : {"true", "false"}) {
    CAPTURE(sync);
    test::check_power_puts(rocks_job("put", 200, d.path, {{"sync", sync}, {"keyspace", "1000"}, {"batch", "5"}}),
                           std::string(sync) == "true" ? test::PowerKeeps::All : test::PowerKeeps::None);
  }
  CHECK(std::filesystem::is_empty(d.path));  // the layer and the database are gone
}

TEST_CASE("rocksdb: bad combinations are set-up errors naming the options") {
  test::TempDir d;
  JobResult r = run_one(rocks_job("put", 10, d.path, {{"sync", "true"}, {"disable-wal", "true"}}));
  CHECK(r.message == "rocksdb: --sync syncs the WAL, which --disable-wal turns off: give one");
  CHECK(exit_of(r) == 2);
  r = run_one(rocks_job("mix", 10, d.path, {{"mix", "read:1"}, {"batch", "2"}}));
  CHECK(r.message.find("rocksdb: --batch groups native put and delete") == 0);
  CHECK(fs::is_empty(d.path));
}

TEST_CASE("rocksdb: a corrupt database at open is a set-up error naming its path") {
  test::TempDir d;
  JobResult r = run_one(rocks_job("put", 100, d.path, {{"keep", "true"}}));
  check_done(r, 100);
  const std::string db = r.server.at("dir");
  for (auto& e : fs::directory_iterator(db))
    if (e.path().filename().string().rfind("MANIFEST-", 0) == 0) std::ofstream(e.path()) << std::string(4096, 'x');
  r = run_one(rocks_job("get", 10, d.path, {{"db", db}}));
  CHECK(r.state == JobResult::State::SetupFailed);
  CHECK_MESSAGE(r.message.find("rocksdb: cannot open " + db + ": Corruption: ") == 0, r.message);
  CHECK(exit_of(r) == 2);
  fs::remove_all(db);
}

TEST_CASE("rocksdb: a filesystem that fills up fails the writes, counted, exit 1") {
  test::SmallFs fs(2 << 20);
  JobResult r = run_one(rocks_job("put", 3000, fs.dir.path, {{"keyspace", "3000"}, {"value-size", "1000"}}));
  CHECK_MESSAGE(r.state == JobResult::State::Done, r.message);
  CHECK(r.ops_failed > 0);
  CHECK(r.ops_ok > 0);
  CHECK(r.ops_ok + r.ops_failed + r.ops_not_run == 3000);
  REQUIRE(!r.error_samples.empty());
  CHECK_MESSAGE(r.error_samples[0].find("rocksdb: IO error: No space left on device") != std::string::npos,
                r.error_samples[0]);
  CHECK(exit_of(r) == 1);
}

#endif
