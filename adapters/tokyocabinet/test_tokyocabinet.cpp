// The Tokyo Cabinet adapter on real files in a temp dir.
#include <doctest/doctest.h>
#include <unistd.h>

#include <filesystem>

#include "core/runner.h"
#include "tests/helpers.h"

using namespace mw;
namespace fs = std::filesystem;

TEST_CASE("tc: every op on every kind, values checked, record count verified, file removed") {
  test::TempDir d;
  for (const char* kind : {"hash", "btree", "memory", "memtree"}) {
    for (const char* op : {"put", "get", "out", "put-sync"}) {
      bool file = std::string(kind) == "hash" || std::string(kind) == "btree";
      if (std::string(op) == "put-sync" && !file) continue;
      CAPTURE(kind);
      CAPTURE(op);
      Job j = test::make_job("tc", op, 500);
      j.opts["kind"] = kind;
      j.opts["path"] = d.path;
      j.opts["keyspace"] = "300";
      j.clients = 2;
      j.warmup_ops = 20;
      JobResult r = run_one(j);
      CHECK(r.message == "");
      CHECK(r.ops_ok == 500);
      CHECK(r.ops_failed == 0);
      CHECK(r.verify.checked);
      CHECK(r.verify.ok);
      CAPTURE(r.verify.detail);
    }
  }
  CHECK(fs::is_empty(d.path));
}

TEST_CASE("tc: put-sync on a memory store and a missing directory are clear set-up errors") {
  Job j = test::make_job("tc", "put-sync", 10);
  j.opts["kind"] = "memory";
  JobResult r = run_one(j);
  CHECK(r.state == JobResult::State::SetupFailed);
  CHECK(r.message == "tokyocabinet: put-sync needs a file (--kind hash or btree), not memory");
  j.opts["kind"] = "hash";
  j.opts["path"] = "/nonexistent";
  r = run_one(j);
  CHECK(r.message == "tokyocabinet: directory /nonexistent does not exist (--path)");
}
