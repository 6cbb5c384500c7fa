// --crash power against the real backends: the store on the page-cache layer (src/pagecache/),
// killed, its unsynced bytes dropped, restarted and checked. The known truths come from each
// backend's documentation: Redis appendfsync always and SQLite synchronous=full fsync before they
// acknowledge; SQLite synchronous=off and Tokyo Cabinet's put leave it to the OS.
#include <doctest/doctest.h>
#include <stdlib.h>

#include <map>
#include <nlohmann/json.hpp>
#include <string>

#include "adapters/gearman/crash.h"
#include "adapters/sqlite/sqlite.h"
#include "config/config.h"
#include "core/runner.h"
#include "report/report.h"
#include "results/results.h"
#include "tests/helpers.h"

using namespace mw;

namespace {

JobResult run_crash(const std::string& kind, const std::string& adapter, const std::string& op, uint64_t n, int clients,
                    std::map<std::string, std::string> opts, int pipeline = 1) {
  Job j = test::make_job(adapter, op, n, clients);
  j.pipeline = pipeline;
  j.opts = {{"crash", kind}, {"crash-at", "50%"}, {"expect", "durable"}};
  for (auto& [k, v] : opts) j.opts[k] = v;
  return run_one(j, false);
}

JobResult run_power(const std::string& adapter, const std::string& op, uint64_t n, int clients,
                    std::map<std::string, std::string> opts, int pipeline = 1) {
  return run_crash("power", adapter, op, n, clients, std::move(opts), pipeline);
}

using test::exit_of;

// A power-cut job of n writes: it ran, through the model, and its counts add up.
const DurabilityResult& counted(const JobResult& r, uint64_t n, const std::string& kind = "power") {
  REQUIRE_MESSAGE(r.state == JobResult::State::Done, r.message);
  const DurabilityResult& d = r.durability;
  CHECK(crash_name(d.crash) == kind);
  CHECK(d.model == (kind == "torn" ? "mwbench-pagecache-torn-2" : "mwbench-pagecache-1"));
  CHECK(d.acked + d.in_doubt + d.never_sent == n);
  CHECK(d.lost <= d.acked);
  return d;
}

JobResult redis_power(const std::string& persistence, const std::string& at, const std::string& expect = "durable") {
  return run_power("redis", "set", 20000, 4,
                   {{"keyspace", "20000"}, {"persistence", persistence}, {"crash-at", at}, {"expect", expect}}, 16);
}

}  // namespace

TEST_CASE("power redis: appendfsync always loses nothing acknowledged on a power cut") {
  JobResult r = redis_power("aof-always", "50%");
  const DurabilityResult& d = counted(r, 20000);
  CHECK(d.acked >= 10000);
  CHECK(d.lost == 0);
  CHECK(d.corrupt == 0);
  CHECK(exit_of(r) == 0);
}

TEST_CASE("power redis: without persistence everything is lost; at 100% nothing is in doubt") {
  JobResult none = redis_power("none", "50%");
  const DurabilityResult& d = counted(none, 20000);
  CHECK(d.acked >= 10000);
  CHECK(d.lost == d.acked);
  CHECK(exit_of(none) == 1);
  JobResult all = redis_power("aof-always", "100%");
  const DurabilityResult& a = counted(all, 20000);
  CHECK(a.acked == 20000);
  CHECK(a.in_doubt == 0);
  CHECK(a.lost == 0);
}

TEST_CASE("power redis: everysec and rdb lose at most what they left unsynced, and say so") {
  for (const char* p : {"aof-everysec", "rdb"}) {
    CAPTURE(p);
    JobResult r = redis_power(p, "50%", "any");
    const DurabilityResult& d = counted(r, 20000);
    CHECK(d.expect == Expectation::Any);
    CHECK(exit_of(r) == 0);  // a loss is a finding, not a failure
    CHECK(d.acked >= 10000);
    CHECK(d.corrupt == 0);
    CHECK(d.level == p);
    if (d.lost) {  // the loss window: no older than the run, and never nothing
      CHECK(d.loss_window_s > 0);
      CHECK(d.loss_window_s <= r.elapsed_s + d.recovery_s);
    }
  }
}

TEST_CASE("power redis: appendfsync no may lose what it never synced; a loss is a finding, its contract os-buffer") {
  // The layer drops what no fsync covered, and appendfsync no leaves the fsync to the OS; but
  // redis still fsyncs the AOF at moments of its own (an AOF rewrite), so no loss is asserted:
  // what is certain is the verdict, the counts and the contract.
  JobResult r = redis_power("aof-no", "50%", "any");
  const DurabilityResult& d = counted(r, 20000);
  CHECK(d.expect == Expectation::Any);
  CHECK(d.level == "aof-no");
  CHECK(d.acked >= 10000);
  CHECK(d.corrupt == 0);
  CHECK(exit_of(r) == 0);  // a loss is a finding, not a failure
  REQUIRE(r.contract);
  CHECK(contract_label(*r.contract) == "os-buffer");
  CHECK(r.contract->detail == "appendfsync no");
  RunResult run;
  run.jobs.push_back(r);
  make_notes(run);  // as the runner finishes a run
  const std::string table = format_table(run, Detail::Full);
  CAPTURE(table);
  CHECK(table.find("os-buffer (appendfsync no)") != std::string::npos);
  CHECK(table.find("appendfsync no: written before each reply, never fsynced") != std::string::npos);
  CHECK(table.find(d.lost ? "lost (finding)" : "kept") != std::string::npos);
  CHECK(table.find("LOST (expected durable)") == std::string::npos);
  if (d.lost) {  // the loss in one sentence, its window no older than the run
    CHECK(table.find("aof-no lost ") != std::string::npos);
    CHECK(d.loss_window_s > 0);
    CHECK(d.loss_window_s <= r.elapsed_s + d.recovery_s);
  }
}

namespace {
JobResult sqlite_crash(const std::string& kind, const std::string& sync, const std::string& dir,
                       const std::string& journal = "delete") {
  return run_crash(
      kind, "sqlite", "insert", 600, 1,
      {{"path", dir}, {"rows", "100"}, {"journal-mode", journal}, {"synchronous", sync}, {"expect", "any"}});
}
}  // namespace

TEST_CASE("power sqlite: synchronous=full loses nothing; synchronous=off loses on a power cut what a kill keeps") {
  test::TempDir dir;
  for (const char* journal : {"delete", "wal"}) {
    CAPTURE(journal);
    JobResult full = sqlite_crash("power", "full", dir.path, journal);
    const DurabilityResult& f = counted(full, 600);
    CHECK(f.acked >= 300);
    CHECK(f.lost == 0);
    CHECK(f.corrupt == 0);

    JobResult kill = sqlite_crash("kill", "off", dir.path, journal);
    REQUIRE_MESSAGE(kill.state == JobResult::State::Done, kill.message);
    CHECK(kill.durability.acked >= 300);
    CHECK(kill.durability.lost == 0);
    JobResult off = sqlite_crash("power", "off", dir.path, journal);
    const DurabilityResult& o = counted(off, 600);
    CHECK(o.acked >= 300);
    CHECK(o.lost > 0);
  }
}

TEST_CASE("power tc: put-sync loses nothing; put, never synced, loses what it acknowledged") {
  test::TempDir dir;
  JobResult sync = run_power("tc", "put-sync", 2000, 1, {{"path", dir.path}, {"kind", "hash"}, {"keyspace", "2000"}});
  const DurabilityResult& s = counted(sync, 2000);
  CHECK(s.acked >= 1000);
  CHECK(s.lost == 0);
  JobResult put =
      run_power("tc", "put", 2000, 1, {{"path", dir.path}, {"kind", "hash"}, {"keyspace", "2000"}, {"expect", "any"}});
  const DurabilityResult& p = counted(put, 2000);
  CHECK(p.acked >= 1000);
  CHECK(p.lost > 0);
}

// gearmand's libsqlite3 queue inserts each background job into SQLite (its defaults: a rollback
// journal, synchronous=full) before it answers with the job handle; the builtin and memcached
// queues hold their jobs in memory, and a power cut takes gearmand and memcached together.
TEST_CASE("power gearman: the libsqlite3 queue keeps every queued job; memory queues lose them all") {
  JobResult sqlite = run_power("gearman", "submit-bg", 200, 2, {{"queue", "libsqlite3"}});
  const DurabilityResult& s = counted(sqlite, 200);
  CHECK(s.victim == "gearmand");
  CHECK(s.acked >= 100);
  CHECK(s.lost == 0);
  CHECK(s.corrupt == 0);
  JobResult mc = run_power("gearman", "submit-bg", 400, 2, {{"queue", "libmemcached"}, {"expect", "any"}});
  if (mc.state != JobResult::State::Skipped) {  // this gearmand has a libmemcached queue
    const DurabilityResult& m = counted(mc, 400);
    CHECK(m.victim == "gearmand and memcached");
    CHECK(m.acked >= 200);
    CHECK(m.lost == m.acked);
  }
  JobResult store = run_power("gearman", "submit-bg", 10, 1, {{"queue", "libmemcached"}, {"crash-target", "store"}});
  if (store.state != JobResult::State::Skipped)
    CHECK(store.message.find("--crash-target store is for --crash kill") != std::string::npos);
}

// gearmand's postgres queue inserts each job in a transaction of its own (synchronous_commit on)
// before it answers: the PostgreSQL mwbench starts for it keeps its data directory on the layer,
// and the power cut takes gearmand and every PostgreSQL process together.
TEST_CASE("power gearman: the postgres queue keeps every queued job") {
  JobResult pg = run_power("gearman", "submit-bg", 200, 2, {{"queue", "postgres"}});
  if (pg.state == JobResult::State::Skipped) return;  // no PostgreSQL, or no postgres queue in this gearmand
  const DurabilityResult& d = counted(pg, 200);
  CHECK(d.victim == "gearmand and postgres");
  CHECK(d.acked >= 100);
  CHECK(d.lost == 0);
  CHECK(d.corrupt == 0);
  CHECK(exit_of(pg) == 0);
  JobResult ext = run_power("gearman", "submit-bg", 10, 1,
                            {{"queue", "postgres"}, {"pg-conninfo", "host=127.0.0.1 port=1 user=postgres"}});
  if (ext.state != JobResult::State::Skipped)
    CHECK(ext.message.find("given by --pg-conninfo keeps its own files elsewhere") != std::string::npos);
}

// pouchdb-server stores through LevelDB (leveldown), whose writes are not synced unless asked:
// it answers an insert once the write reached the OS, so a power cut loses what it acknowledged.
TEST_CASE("power couchdb: pouchdb-server's unsynced LevelDB loses acknowledged inserts to a power cut") {
  JobResult r = run_power("couchdb", "insert", 1000, 2, {{"expect", "any"}});
  if (r.state == JobResult::State::Skipped) return;  // no pouchdb-server on this machine
  const DurabilityResult& d = counted(r, 1000);
  CHECK(d.victim == "pouchdb-server");
  CHECK(d.acked >= 500);
  CHECK(d.lost > 0);
  CHECK(d.corrupt == 0);
  CHECK(exit_of(r) == 0);
}

TEST_CASE("torn: redis appendfsync always and sqlite synchronous=full keep every acknowledged write") {
  JobResult r = run_crash("torn", "redis", "set", 20000, 4,
                          {{"keyspace", "20000"}, {"persistence", "aof-always"}, {"crash-at", "50%"}}, 16);
  const DurabilityResult& d = counted(r, 20000, "torn");
  CHECK(d.acked >= 10000);
  CHECK_MESSAGE(!d.unrecoverable, d.detail);
  CHECK(d.lost == 0);  // the torn write is an append not yet synced, so not yet acknowledged
  CHECK(exit_of(r) == 0);
  test::TempDir dir;
  for (const char* journal : {"delete", "wal"}) {
    CAPTURE(journal);
    JobResult s = sqlite_crash("torn", "full", dir.path, journal);
    const DurabilityResult& f = counted(s, 600, "torn");
    CHECK(f.acked >= 300);
    CHECK(!f.unrecoverable);
    CHECK(f.lost == 0);  // its journal tells a torn tail from a committed one
  }
  JobResult off = sqlite_crash("torn", "off", dir.path, "wal");  // nothing synced: lost, yet it opens
  const DurabilityResult& o = counted(off, 600, "torn");
  CHECK(o.lost > 0);
  CHECK(!o.unrecoverable);
  CHECK(exit_of(off) == 0);  // expect any: a finding
  RunResult run;
  run.jobs.push_back(r);
  make_notes(run);  // as the runner finishes a run
  const std::string table = format_table(run, Detail::Full);
  CHECK(table.find("torn power cut, redis-server at 50%") != std::string::npos);
  CHECK(table.find("mwbench-pagecache-torn-2") != std::string::npos);
}

TEST_CASE("power: an adapter whose store is not on the layer cannot be power-cut; a missing /dev/fuse is one line") {
  JobResult read = run_power("sqlite", "read-all", 10, 1, {{"rows", "10"}});
  CHECK(read.state == JobResult::State::SetupFailed);
  CHECK(read.message.find("--crash power: sqlite read-all cannot be crashed") != std::string::npos);
  setenv("MWBENCH_FUSE_DEVICE", "/nonexistent/fuse", 1);
  JobResult nofuse = redis_power("aof-always", "50%");
  unsetenv("MWBENCH_FUSE_DEVICE");
  CHECK(nofuse.state == JobResult::State::SetupFailed);
  CHECK(nofuse.message.find("--crash power: /nonexistent/fuse cannot be opened") != std::string::npos);
  CHECK(nofuse.message.find('\n') == std::string::npos);
}

namespace {

// One redis set job at --persistence `p` (no crash), as a run of its own.
RunResult redis_run(const std::string& p) {
  Job j = test::make_job("redis", "set", 300, 1);
  j.name = "redis set";
  j.opts["persistence"] = p;
  RunResult r;
  r.jobs.push_back(run_one(j, false));
  REQUIRE_MESSAGE(r.jobs[0].state == JobResult::State::Done, r.jobs[0].message);
  make_notes(r);  // as the runner finishes a run
  return r;
}

}  // namespace

TEST_CASE("contracts: in the result file, the table, compare and the HTML report; different ones are marked") {
  RunResult everysec = redis_run("aof-everysec"), always = redis_run("aof-always");
  REQUIRE(everysec.jobs[0].contract);
  CHECK(contract_label(*everysec.jobs[0].contract) == "periodic-fsync 1 s");
  nlohmann::json doc = to_json(always);
  CHECK(doc["jobs"][0]["contract"]["kind"] == "fsync-per-ack");
  CHECK(doc["jobs"][0]["contract"]["detail"] == "appendfsync always");
  CHECK(format_table(always, Detail::Full).find("contract: redis set") != std::string::npos);
  RunResult a = parse_result_json(to_json(everysec), "A.json"), b = parse_result_json(doc, "B.json");
  REQUIRE(b.jobs[0].contract);
  CHECK(b.jobs[0].contract->kind == ContractKind::FsyncPerAck);
  const std::string marked = "different durability contracts: periodic-fsync 1 s vs fsync-per-ack";
  CHECK(format_compare({a, b}).find(marked) != std::string::npos);
  CHECK(format_compare({a, a}).find("different durability contracts") == std::string::npos);
  CHECK(render_html({a, b}).find(marked) != std::string::npos);
  nlohmann::json bad = doc;
  bad["jobs"][0]["contract"]["kind"] = "fsync-sometimes";
  CHECK_THROWS_WITH_AS(parse_result_json(bad, "bad.json"), doctest::Contains("is not a durability contract"),
                       SetupError);
}

TEST_CASE("contracts: the sqlite and gearman queues declare theirs for produce") {
  test::TempDir dir;
  for (auto [sync, want] : {std::pair{"full", "fsync-per-ack"}, {"off", "os-buffer"}}) {
    Job j = test::make_job("sqlite", "produce", 20, 1);
    j.opts = {{"path", dir.path}, {"synchronous", sync}};
    JobResult r = run_one(j, false);
    REQUIRE_MESSAGE(r.state == JobResult::State::Done, r.message);
    CHECK((r.contract ? contract_label(*r.contract) : "") == want);
  }
  for (auto [queue, want] : {std::pair{"builtin", "memory"}, {"libsqlite3", "fsync-per-ack"}}) {
    Job j = test::make_job("gearman", "produce", 20, 1);
    j.opts = {{"queue", queue}};
    JobResult r = run_one(j, false);
    REQUIRE_MESSAGE(r.state == JobResult::State::Done, r.message);
    CHECK((r.contract ? contract_label(*r.contract) : "") == want);
  }
}

TEST_CASE("contracts: sqlite, tc and gearman declare theirs") {
  CHECK(contract_label(sqlite_contract("delete", "full")) == "fsync-per-ack");
  CHECK(contract_label(sqlite_contract("wal", "off")) == "os-buffer");
  CHECK(contract_label(sqlite_contract("wal", "normal")) == "os-buffer");
  CHECK(contract_label(sqlite_contract("memory", "full")) == "os-buffer");
  CHECK(contract_label(*gearman::contract_of("builtin")) == "memory");
  CHECK(contract_label(*gearman::contract_of("libsqlite3")) == "fsync-per-ack");
  CHECK_FALSE(gearman::contract_of("mysql"));
  test::TempDir dir;
  for (auto [op, want] : {std::pair{"put", "os-buffer"}, {"put-sync", "fsync-per-ack"}, {"get", ""}}) {
    Job j = test::make_job("tc", op, 50, 1);
    j.opts = {{"path", dir.path}, {"kind", "hash"}};
    JobResult r = run_one(j, false);
    REQUIRE_MESSAGE(r.state == JobResult::State::Done, r.message);
    CHECK((r.contract ? contract_label(*r.contract) : "") == want);
  }
}

// `redis --crash power --duration 4s` was refused ("give -n (at most 10000) instead of
// --duration"): a crash job's SETs now get a key each (no --keyspace given), and each value names
// its write. appendfsync always keeps every acknowledged one through the power cut.
TEST_CASE("power redis: --crash power --duration runs and is checked, one key per write") {
  std::vector<Job> jobs = expand_jobs("redis",
                                      {{"ops", {"set"}, "--ops"},
                                       {"crash", {"power"}, "--crash"},
                                       {"duration", {"2s"}, "--duration"},
                                       {"persistence", {"aof-always"}, "--persistence"},
                                       {"expect", {"durable"}, "--expect"}},
                                      "cli");
  REQUIRE(jobs.size() == 1);
  const JobResult r = run_one(jobs[0], false);
  REQUIRE_MESSAGE(r.state == JobResult::State::Done, r.message);
  const DurabilityResult& d = r.durability;
  CHECK(d.crash == CrashKind::Power);
  CHECK(d.checked);
  CHECK(d.acked > 20);  // an fsync per write through the layer: few on a loaded machine
  CHECK(d.lost == 0);
  CHECK(d.corrupt == 0);
  CHECK(r.server.at("keyspace") == "one key per write");
  CHECK(exit_of(r) == 0);
}
