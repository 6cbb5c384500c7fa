// SQLite adapter on real database files: every op and its checks, the end verification,
// a database locked by another process, and directories that cannot be used.
#include <doctest/doctest.h>
#include <sqlite3.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>

#include "core/driver.h"
#include "core/runner.h"
#include "tests/helpers.h"
#include "tests/store_checks.h"

using namespace mw;
namespace fs = std::filesystem;

namespace {

using test::TempDir;

Job sqlite_job(const std::string& op, const std::string& dir, uint64_t n, int clients = 1) {
  Job j = test::make_job("sqlite", op, n, clients);
  j.opts["path"] = dir;
  j.opts["rows"] = "500";
  return j;
}

}  // namespace

TEST_CASE("sqlite: every op succeeds, is checked, and the row count verifies") {
  TempDir d;
  for (const char* op : {"read-all", "select-by-id", "insert", "insert-batch"}) {
    CAPTURE(op);
    Job j = sqlite_job(op, d.path, 40, 2);
    j.warmup_ops = 4;
    JobResult r = run_one(j);
    CHECK(r.state == JobResult::State::Done);
    CHECK(r.ops_ok == 40);
    CHECK(r.ops_failed == 0);
    CHECK(r.bytes > 0);
    CHECK(r.verify.checked);
    CHECK(r.verify.ok);
    CAPTURE(r.verify.detail);
    CHECK(!r.failed());
    CHECK(r.server.at("sqlite") == sqlite3_libversion());
  }
  CHECK(fs::is_empty(d.path));  // the database is removed afterwards
}

TEST_CASE("sqlite: insert-batch verifies B rows per op, WAL mode works") {
  TempDir d;
  Job j = sqlite_job("insert-batch", d.path, 10);
  j.opts["batch"] = "25";
  j.opts["journal-mode"] = "wal";
  j.opts["synchronous"] = "normal";
  JobResult r = run_one(j);
  CHECK(r.ops_ok == 10);
  CHECK(r.verify.detail == "row count 750, expected 750");
  CHECK(r.verify.ok);
}

TEST_CASE("sqlite: a row that does not hold what was loaded is a Mismatch") {
  TempDir d;
  Job j = sqlite_job("select-by-id", d.path, 2000);
  j.opts["keep"] = "true";
  auto a = test::make_adapter("sqlite", j);
  a->prepare(j);
  std::string file = a->describe().at("file");
  sqlite3* db = nullptr;
  REQUIRE(sqlite3_open(file.c_str(), &db) == SQLITE_OK);
  REQUIRE(sqlite3_exec(db, "UPDATE products SET name = 'changed' WHERE id <= 50", nullptr, nullptr, nullptr) ==
          SQLITE_OK);
  sqlite3_close(db);
  JobResult r;
  r = measure(j, *a);
  CHECK(r.errors[static_cast<int>(Status::Mismatch)] > 0);
  CHECK(r.ops_ok + r.ops_failed == 2000);
  REQUIRE(!r.error_samples.empty());
  CHECK(r.error_samples[0].find("does not hold what was loaded") != std::string::npos);
}

TEST_CASE("sqlite: a database locked by another process: ops time out, are counted, nothing hangs") {
  TempDir d;
  Job j = sqlite_job("insert", d.path, 6, 2);
  j.timeout_s = 0.2;
  auto a = test::make_adapter("sqlite", j);
  a->prepare(j);
  std::string file = a->describe().at("file");
  int ready[2];
  REQUIRE(pipe(ready) == 0);
  pid_t child = fork();
  if (child == 0) {
    sqlite3* db = nullptr;
    sqlite3_open(file.c_str(), &db);
    // a writer holding its lock: readers may go on, other writers wait
    sqlite3_exec(db, "BEGIN IMMEDIATE; DELETE FROM products WHERE id = 1", nullptr, nullptr, nullptr);
    if (write(ready[1], "x", 1) != 1) _exit(1);
    sleep(5);
    _exit(0);
  }
  char c;
  REQUIRE(read(ready[0], &c, 1) == 1);
  auto t0 = std::chrono::steady_clock::now();
  JobResult r;
  r = measure(j, *a);
  double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  kill(child, SIGKILL);
  waitpid(child, nullptr, 0);
  CHECK(r.ops_ok == 0);
  CHECK(r.ops_failed == 6);
  CHECK(r.errors[static_cast<int>(Status::Timeout)] == 6);
  CHECK(took < 3.0);
  REQUIRE(!r.error_samples.empty());
  CHECK(r.error_samples[0] == "Timeout: database is locked");
  Counts counts{r.ops_ok, r.ops_failed, 0, 0};
  CHECK(a->verify(j, counts).ok);  // nothing was inserted, and nothing is claimed
  a->teardown();
}

TEST_CASE("sqlite: a directory that does not exist or cannot be written is a clear set-up error") {
  JobResult r = run_one(sqlite_job("insert", "/nonexistent/dir", 10));
  CHECK(r.state == JobResult::State::SetupFailed);
  CHECK(r.message == "sqlite: directory /nonexistent/dir does not exist (--path)");
  r = run_one(sqlite_job("insert", "/proc/self", 10));
  CHECK(r.state == JobResult::State::SetupFailed);
  CHECK(r.message.find("sqlite: directory /proc/self is not writable") == 0);
  RunResult run;
  run.jobs.push_back(r);
  CHECK(exit_code(run) == 2);
}

// A trace's set is an upsert (UPSERT: a key not there is written, not a miss), its add an INSERT
// of a key not there (ON CONFLICT DO NOTHING), its replace an UPDATE; not stored is no error.
TEST_CASE("sqlite: a trace's set upserts, its add and replace store only where their condition holds") {
  TempDir d;
  Job j = test::make_job("sqlite", "mix", 10000);
  j.opts["path"] = d.path;
  test::cond_trace(j, d.path);
  test::check_cond_replay(run_one(j));
}
