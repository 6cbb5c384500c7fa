// The disk adapter on real files in a temp dir and on /dev/shm.
#include <doctest/doctest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "core/runner.h"
#include "results/writer.h"
#include "tests/helpers.h"

using namespace mw;
namespace fs = std::filesystem;

using test::TempDir;

static Job job(const std::string& adapter, const std::string& op, uint64_t n) { return test::make_job(adapter, op, n); }

TEST_CASE("disk: every pattern, blocking and io_uring, read and write sides") {
  TempDir d;
  for (const char* op : {"read", "write", "randread", "randwrite", "randrw", "cached-read", "fsync", "fdatasync"}) {
    for (int depth : {1, 8}) {
      const bool syncs = std::string(op) == "fsync" || std::string(op) == "fdatasync";
      if (syncs && depth > 1) continue;
      CAPTURE(op);
      CAPTURE(depth);
      Job j = job("disk", op, 400);
      j.opts["path"] = d.path;
      j.opts["size"] = "8M";
      j.opts["mix"] = "75";
      j.pipeline = depth;
      JobResult r = run_one(j);
      CHECK(r.message == "");
      CHECK(r.ops_ok == 400);
      CHECK(r.ops_failed == 0);
      CHECK(r.bytes == 400 * 4096);
      REQUIRE(r.sides.size() == 2);
      std::string o = op;
      bool reads = o == "read" || o == "randread" || o == "cached-read";
      bool writes = o == "write" || o == "randwrite" || syncs;
      if (reads) CHECK(r.sides[0].ops_ok == 400);
      if (writes) CHECK(r.sides[1].ops_ok == 400);
      if (o == "randrw") {
        CHECK(r.sides[0].ops_ok + r.sides[1].ops_ok == 400);
        CHECK(r.sides[0].ops_ok > 220);  // ~75% reads
        CHECK(r.sides[0].ops_ok < 380);
      }
      CHECK(r.server.at("engine") == (depth > 1 ? "io_uring" : "psync"));
    }
  }
  CHECK(fs::is_empty(d.path));
}

TEST_CASE("disk: fsync and fdatasync write through the page cache unless --direct; one at a time") {
  TempDir d;
  for (const char* op : {"fsync", "fdatasync"}) {
    CAPTURE(op);
    Job j = job("disk", op, 50);
    j.opts["path"] = d.path;
    j.opts["size"] = "1M";
    j.opts["bs"] = "8k";
    JobResult r = run_one(j);
    CHECK(r.message == "");
    CHECK(r.ops_ok == 50);
    CHECK(r.server.at("direct") == "no");  // as pg_test_fsync and etcd's fio check write
    j.opts["direct"] = "true";
    r = run_one(j);
    CHECK(r.server.at("direct") == "yes");
    j.pipeline = 2;
    r = run_one(j);
    CHECK(r.message == std::string("disk: ") + op + " is one write and one sync at a time: use -P 1");
  }
}

TEST_CASE("disk: O_DIRECT on /dev/shm is flagged as not a device figure") {
  Job j = job("disk", "randread", 200);
  j.opts["path"] = "/dev/shm";
  j.opts["size"] = "4M";
  JobResult r = run_one(j);
  CHECK(r.ops_ok == 200);
  REQUIRE(!r.warnings.empty());
  CHECK(r.warnings[0].text == "O_DIRECT on tmpfs still goes through memory: not a device figure");
  CHECK(r.warnings[0].kind == WarningKind::NotTheDevice);  // the adapter's own kind, through to the file
  RunResult run;
  run.jobs = {r};
  CHECK(to_json(run)["jobs"][0]["warning_kinds"][0] == "not-the-device");
}

TEST_CASE("disk: clear errors before the run: missing dir, unwritable dir, file larger than free space") {
  Job j = job("disk", "randread", 10);
  j.opts["path"] = "/nonexistent";
  JobResult r = run_one(j);
  CHECK(r.message == "disk: directory /nonexistent does not exist (--path)");
  j.opts["path"] = "/proc/self";
  r = run_one(j);
  CHECK(r.message.find("disk: directory /proc/self is not writable") == 0);
  j.opts["path"] = "/dev/shm";
  j.opts["size"] = "100000G";
  r = run_one(j);
  CHECK(r.state == JobResult::State::SetupFailed);
  CHECK(r.message.find("disk: a 100000.0 GiB test file does not fit in /dev/shm (") == 0);
  CHECK(r.message.find("free): lower --size") != std::string::npos);
}

TEST_CASE("disk: a write pattern on a given file needs --allow-write") {
  TempDir d;
  std::string f = d.path + "/given.dat";
  {
    std::ofstream out(f);
    out << std::string(1 << 20, 'x');
  }
  Job j = job("disk", "randwrite", 10);
  j.opts["file"] = f;
  JobResult r = run_one(j);
  CHECK(r.message == "disk: randwrite would overwrite --file " + f + ": add --allow-write");
  j.op = "randread";
  r = run_one(j);
  CHECK(r.ops_ok == 10);
  CHECK(fs::exists(f));  // a given file is never removed
}

TEST_CASE("disk: a queue io_uring refuses is a set-up error that gives back its file and buffers") {
  // -P 20000 asks io_uring for 40,000 entries (more than it takes): the client's constructor
  // throws after it opened the file and allocated 20,000 buffers. LeakSanitizer found the buffers
  // leaked; the open descriptors are counted here.
  TempDir d;
  auto open_fds = [] {
    size_t n = 0;
    for (auto& e : fs::directory_iterator("/proc/self/fd")) n += !e.path().empty();
    return n;
  };
  size_t before = open_fds();
  Job j = job("disk", "randread", 100);
  j.opts["path"] = d.path;
  j.opts["size"] = "1M";
  j.pipeline = 20000;
  JobResult r = run_one(j);
  CHECK(r.state == JobResult::State::SetupFailed);
  CHECK_MESSAGE(r.message.find("io_uring refused a queue of 40000 entries") != std::string::npos, r.message);
  CHECK(open_fds() == before);
}
