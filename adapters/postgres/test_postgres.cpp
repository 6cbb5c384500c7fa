// The postgres adapter (store and queue) against one PostgreSQL started here, shared by every
// case of this binary (the managed server of the adapter itself: started once, on a free port,
// in a temp dir, stopped at exit).
#if MWBENCH_WITH_POSTGRES
#include <doctest/doctest.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "adapters/postgres/pg.h"
#include "core/runner.h"
#include "queue/queue.h"
#include "services/services.h"
#include "tests/helpers.h"
#include "tests/queue_checks.h"
#include "tests/store_checks.h"

using namespace mw;

namespace {

Job pg_job(const std::string& op, uint64_t n, int clients = 1, int pipeline = 1) {
  Job j = test::make_job("postgres", op, n, clients);
  j.pipeline = pipeline;
  j.timeout_s = 2;
  return j;
}

// The shared managed server, started by the first case that needs it.
pg::Server shared() { return pg::server_of(pg_job("select", 1), false); }

// SQL as the superuser, on the shared server.
pg::Result admin(const std::string& sql) {
  pg::Server s = shared();
  pg::Conn c(s.ep, pg::deadline(5));
  return c.exec(sql, pg::deadline(10));
}

// External: the shared server through --conninfo (its unix socket), as `user`.
Job as_external(Job j, const std::string& user) {
  pg::Server s = shared();
  j.opts["conninfo"] = "host=" + s.svc->dir() + " port=" + std::to_string(s.svc->port()) + " dbname=postgres";
  j.opts["user"] = user;
  return j;
}

void check_clean(const JobResult& r, uint64_t n) {
  CAPTURE(r.message);
  CAPTURE(r.verify.detail);
  CHECK(r.state == JobResult::State::Done);
  CHECK(r.ops_ok == n);
  CHECK(r.ops_failed == 0);
  CHECK(r.ops_not_run == 0);
  CHECK(r.verify.checked);
  CHECK(r.verify.ok);
}

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// Runs `j` on the shared server, SIGSTOPped (every process of it) 700 ms in and continued once
// the run ended.
JobResult run_frozen(const Job& j) {
  pg::Server s = shared();
  std::thread freezer([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(700));
    pg::signal_server(s.svc->pid(), SIGSTOP);
  });
  JobResult r = run_one(j);
  freezer.join();
  pg::signal_server(s.svc->pid(), SIGCONT);
  return r;
}

}  // namespace

TEST_CASE("postgres: select, update and insert, blocking and pipelined, every reply checked") {
  for (int p : {1, 8}) {
    for (const char* op : {"insert", "select", "update"}) {
      CAPTURE(op);
      CAPTURE(p);
      Job j = pg_job(op, 600, 2, p);
      j.opts["keyspace"] = "300";
      j.opts["synchronous-commit"] = p == 1 ? "on" : "off";  // off: fast, and the same statements
      JobResult r = run_one(j);
      check_clean(r, 600);
      CHECK(r.server.at("managed") == "yes");
      CHECK(r.server.at("version").rfind("1", 0) == 0);
      if (std::string(op) == "insert")
        CHECK(r.verify.detail == "row count 600 (one row per acknowledged insert)");
      else
        CHECK(r.verify.detail == "300 records, at least 300 expected; 300 keys read back");
    }
  }
}

TEST_CASE("postgres: the workload's six ops, blocking and pipelined, and the end check") {
  for (int p : {1, 16}) {
    CAPTURE(p);
    Job j = pg_job("mix", 3000, 2, p);
    j.opts["mix"] = "read:40,update:20,insert:10,delete:5,rmw:15,scan:10";
    j.opts["keyspace"] = "1000";
    j.opts["synchronous-commit"] = "off";
    JobResult r = run_one(j);
    check_clean(r, 3000);
    CHECK(r.verify.detail.find(" records; 1000 keys read back") != std::string::npos);
  }
  Job j = pg_job("mix", 2000, 2, 4);  // no deletes: every read must hit
  j.opts["mix"] = "read:50,rmw:25,scan:25";
  j.opts["keyspace"] = "500";
  j.opts["unlogged"] = "true";
  JobResult r = run_one(j);
  check_clean(r, 2000);
  CHECK(r.misses == 0);
}

// A trace's set is an upsert (an INSERT ... ON CONFLICT DO UPDATE: a key not there is written, not a
// miss), its add an INSERT of a key not there (ON CONFLICT DO NOTHING), its replace an UPDATE; not stored is
// no error.
TEST_CASE("postgres: a trace's set upserts, its add and replace store only where their condition holds") {
  test::TempDir d;
  Job j = pg_job("mix", 10000);
  test::cond_trace(j, d.path);
  test::check_cond_replay(run_one(j));
}

TEST_CASE("postgres: a row holding another key's value is a Mismatch, a changed one corrupt") {
  admin("DROP TABLE IF EXISTS mwtest_bad");
  Job ins = pg_job("insert", 300);
  ins.opts["table"] = "mwtest_bad";
  check_clean(run_one(ins), 300);
  admin("UPDATE mwtest_bad SET v = (SELECT v FROM mwtest_bad WHERE k = 1) WHERE k = 2");
  admin("UPDATE mwtest_bad SET v = overlay(v placing 'Z' from 40) WHERE k = 3");
  Job sel = pg_job("select", 3000, 1, 4);
  sel.opts["table"] = "mwtest_bad";
  sel.opts["keyspace"] = "300";
  JobResult r = run_one(sel);
  CHECK(r.errors[static_cast<int>(Status::Mismatch)] > 0);
  CHECK(r.ops_ok + r.errors[static_cast<int>(Status::Mismatch)] == 3000);
  std::string samples;
  for (auto& s : r.error_samples) samples += s + "\n";
  CHECK(samples.find("key 2 holds another key's value") != std::string::npos);
  CHECK(samples.find("key 3 holds a corrupt value (checksum)") != std::string::npos);
  CHECK(r.failed());
  admin("DELETE FROM mwtest_bad WHERE k = 7");
  r = run_one(sel);
  CHECK(r.state == JobResult::State::SetupFailed);
  CHECK(r.message.find("--table mwtest_bad holds 299 of the 300 keys") != std::string::npos);
  admin("DROP TABLE mwtest_bad");
}

TEST_CASE("postgres: the password from the environment; a wrong or missing one is a set-up error") {
  admin("DROP ROLE IF EXISTS mw_pw; CREATE ROLE mw_pw LOGIN PASSWORD 'right'; GRANT CREATE ON SCHEMA public TO mw_pw");
  pg::Server s = shared();
  Job j = pg_job("insert", 100);
  j.opts["host"] = "127.0.0.1";  // TCP: a password is asked for (the unix socket trusts)
  j.opts["port"] = std::to_string(s.svc->port());
  j.opts["user"] = "mw_pw";
  j.opts["database"] = "postgres";
  j.opts["password-env"] = "MWBENCH_TEST_PG_PW";
  unsetenv("MWBENCH_TEST_PG_PW");
  JobResult r = run_one(j);
  CHECK(r.state == JobResult::State::SetupFailed);
  CHECK(r.message.find("postgres 127.0.0.1:" + std::to_string(s.svc->port()) + ": ") == 0);
  CHECK(r.message.find("password") != std::string::npos);
  setenv("MWBENCH_TEST_PG_PW", "wrong-one", 1);
  r = run_one(j);
  CHECK(r.state == JobResult::State::SetupFailed);
  CHECK(r.message.find("password authentication failed for user \"mw_pw\"") != std::string::npos);
  CHECK(r.message.find("wrong-one") == std::string::npos);
  setenv("MWBENCH_TEST_PG_PW", "right", 1);
  check_clean(run_one(j), 100);
  unsetenv("MWBENCH_TEST_PG_PW");
  admin("DROP OWNED BY mw_pw; DROP ROLE mw_pw");
}

TEST_CASE("postgres: a read-only role's writes fail (Refused), its reads pass; exit status says so") {
  admin(
      "DROP TABLE IF EXISTS mwtest_ro; DROP ROLE IF EXISTS mw_ro; CREATE ROLE mw_ro LOGIN; "
      "ALTER ROLE mw_ro SET default_transaction_read_only = on; "
      "CREATE TABLE mwtest_ro(k bigint PRIMARY KEY, v bytea NOT NULL); GRANT ALL ON mwtest_ro TO mw_ro");
  Job ins = pg_job("insert", 200);
  ins.opts["table"] = "mwtest_ro";
  check_clean(run_one(ins), 200);
  Job up = as_external(pg_job("update", 100, 2, 4), "mw_ro");
  up.opts["table"] = "mwtest_ro";
  up.opts["keyspace"] = "200";
  JobResult r = run_one(up);
  CHECK(r.state == JobResult::State::Done);
  CHECK(r.ops_ok == 0);
  CHECK(r.errors[static_cast<int>(Status::Refused)] == 100);
  REQUIRE(!r.error_samples.empty());
  CHECK(r.error_samples[0].find("cannot execute UPDATE in a read-only transaction") != std::string::npos);
  CHECK(r.failed());
  up.op = "select";
  check_clean(run_one(up), 100);
  admin("DROP TABLE mwtest_ro; DROP ROLE mw_ro");
}

TEST_CASE("postgres: bad input is a set-up error naming the option") {
  Job j = pg_job("insert", 10);
  j.opts["table"] = "t; DROP TABLE x";
  CHECK(run_one(j).message.find("postgres: --table t; DROP TABLE x: a plain lower-case name") == 0);
  j = pg_job("insert", 10);
  j.opts["user"] = "someone";
  CHECK(run_one(j).message.find("--user, --database and --port name an external server") != std::string::npos);
  j = as_external(pg_job("insert", 10), "postgres");
  j.opts["fsync"] = "false";
  CHECK(run_one(j).message.find("postgres: --fsync sets the managed server's fsync") == 0);
  j = pg_job("select", 10);
  j.opts["crash"] = "kill";
  CHECK(run_one(j).message == "postgres: --crash needs op insert or produce, or a --mix (its writes are read back)");
  j = pg_job("consume", 10);
  j.opts["crash"] = "kill";
  CHECK(run_one(j).message == "postgres: --crash needs op insert or produce, or a --mix (its writes are read back)");
  j = pg_job("insert", 10);
  j.opts["conninfo"] = "host=127.0.0.1 port=" + std::to_string(free_port()) + " connect_timeout=2";
  JobResult r = run_one(j);
  CHECK(r.state == JobResult::State::SetupFailed);
  CHECK(r.message.find("Connection refused") != std::string::npos);
  j = pg_job("consume", 10, 2);
  j.opts["batch"] = "4";
  CHECK(run_one(j).message.find("postgres: consume with --batch > 1 runs one client (-c 1)") == 0);
}

TEST_CASE("postgres: the contract follows synchronous_commit, fsync and unlogged") {
  auto contract = [](std::map<std::string, std::string> opts) {
    Job j = pg_job("insert", 10);
    for (auto& [k, v] : opts) j.opts[k] = v;
    return test::make_adapter("postgres", j)->abilities(j).contract;
  };
  CHECK(contract({})->kind == ContractKind::FsyncPerAck);
  CHECK(contract({{"synchronous-commit", "local"}})->kind == ContractKind::FsyncPerAck);
  auto off = contract({{"synchronous-commit", "off"}});
  CHECK(off->kind == ContractKind::PeriodicFsync);
  CHECK(off->interval_s == doctest::Approx(0.6));
  CHECK(contract({{"fsync", "false"}})->kind == ContractKind::OsBuffer);
  CHECK(contract({{"unlogged", "true"}})->kind == ContractKind::Memory);
  // fsync off and asynchronous commit: acknowledged before the WAL is even written
  CHECK(contract({{"fsync", "false"}, {"synchronous-commit", "off"}})->kind == ContractKind::Memory);
  // Synchronous standbys: named by the server (an external one's own setting), or --sync-replicas
  // (remote_* alone: one) on the managed set-up; a commit that does not wait for them (local, off)
  // keeps the primary's own contract.
  pg::PgOptions o;
  o.host = "db.example";
  const Info standbys = {{"synchronous_standby_names", "ANY 1 (s1, s2)"}};
  CHECK(pg::contract_of(o, standbys).kind == ContractKind::Replicated);
  CHECK(pg::contract_of(o, standbys).detail.find("'ANY 1 (s1, s2)'") != std::string::npos);
  CHECK(pg::contract_of(o, {}).kind == ContractKind::FsyncPerAck);
  CHECK(pg::contract_of(o, {{"fsync", "on"}}).kind == ContractKind::FsyncPerAck);  // it names none
  o.synchronous_commit = "local";
  CHECK(pg::contract_of(o, standbys).kind == ContractKind::FsyncPerAck);
  pg::PgOptions m;
  m.replicas = 2;
  m.synchronous_commit = "remote_apply";
  CHECK(pg::sync_replicas_of(m) == 1);
  CHECK(pg::contract_of(m, {}).kind == ContractKind::Replicated);
  m.synchronous_commit = "on";
  CHECK(pg::sync_replicas_of(m) == 0);
  CHECK(pg::contract_of(m, {}).kind == ContractKind::FsyncPerAck);
  m.sync_replicas = 2;
  CHECK(pg::contract_of(m, {}).kind == ContractKind::Replicated);
  CHECK(pg::contract_of(m, {{"fsync", "on"}}).kind == ContractKind::FsyncPerAck);  // the server names none
  for (const char* op : {"produce", "consume", "roundtrip"}) {  // the queue's writes are the same INSERTs
    CAPTURE(op);
    auto queue = [&](std::map<std::string, std::string> opts) {
      Job j = pg_job(op, 10);
      for (auto& [k, v] : opts) j.opts[k] = v;
      return test::make_adapter("postgres", j)->abilities(j).contract;
    };
    CHECK(queue({})->kind == ContractKind::FsyncPerAck);
    CHECK(queue({{"synchronous-commit", "off"}})->kind == ContractKind::PeriodicFsync);
    CHECK(queue({{"synchronous-commit", "off"}})->interval_s == doctest::Approx(0.6));
    CHECK(queue({{"fsync", "false"}})->kind == ContractKind::OsBuffer);
    CHECK(queue({{"unlogged", "true"}})->kind == ContractKind::Memory);
  }
}

// A --mix's writes are checked too (its updates write a key again: each value names its write).
TEST_CASE("postgres: --crash kill, --mix: every acknowledged update and insert survives with synchronous_commit=on") {
  test::check_mix_crash(pg_job("mix", 2000, 2, 4));
}

TEST_CASE("postgres: --crash kill: every acknowledged insert survives with synchronous_commit=on") {
  Job j = pg_job("insert", 4000, 2, 4);
  j.opts["crash"] = "kill";
  j.opts["expect"] = "durable";
  JobResult r = run_one(j);
  CAPTURE(r.message);
  REQUIRE(r.durability.ran);
  CHECK(r.durability.acked > 0);
  CHECK(r.durability.lost == 0);
  CHECK(r.durability.corrupt == 0);
  CHECK(r.durability.victim == "postgres");
  CHECK(!r.failed());
}

// One job (a crash job's server is its own: initdb, start, recovery: seconds on a loaded machine):
// synchronous_commit=off, whose loss tells the layer's power cut from a kill.
TEST_CASE("postgres: --crash power: synchronous_commit=off loses acknowledged inserts, within 3 x wal_writer_delay") {
  Job j = pg_job("insert", 2000, 2, 4);
  j.opts["synchronous-commit"] = "off";
  test::check_power_loss(j, 0.6 + 0.5);  // the WAL writer flushes within 3 x wal_writer_delay (200 ms)
}

TEST_CASE("postgres queue: produce, consume and roundtrip exactly once, one row or a batch per take") {
  for (const char* batch : {"1", "16"}) {
    for (const char* op : {"produce", "consume", "roundtrip"}) {
      CAPTURE(batch);
      CAPTURE(op);
      const bool one = std::string(op) == "consume" && std::string(batch) != "1";
      Job j = pg_job(op, 600, one ? 1 : 2);
      j.opts["batch"] = batch;
      j.opts["consumers"] = "2";
      j.opts["synchronous-commit"] = "off";
      JobResult r = run_one(j);
      check_clean(r, 600);
      REQUIRE(r.queue);
      CHECK(r.queue->exactly_once());
      CHECK(r.queue->consumed == r.queue->produced);
      CHECK(r.verify.detail.find("every message exactly once") != std::string::npos);
      // The managed server's directory is the job's path: the profile counts its device's I/O.
      REQUIRE(r.profile.taken);
      REQUIRE(r.profile.disks.size() == 1);
      CHECK(r.profile.disks[0].path.find("mwbench-svc-") != std::string::npos);
    }
  }
}

// Message i goes to table i mod N: each table holds only its ids (read from each row's header),
// and consume and roundtrip take from every table, one row or a batch per take.
TEST_CASE("postgres queue: --queues 3: message i in table i mod 3, produce, consume and roundtrip exactly once") {
  for (const char* batch : {"1", "8"}) {
    CAPTURE(batch);
    Job j = pg_job("produce", 300);
    j.opts["batch"] = batch;
    j.opts["synchronous-commit"] = "off";
    test::check_three_queues(j, "table", [](Adapter& a, const std::string& t, int k) {
      CHECK(a.describe().at("tables") == "3");
      // the id: the 16 hex digits after "mwq1 "
      pg::Result c = admin(
          "SELECT count(*), count(*) FILTER (WHERE ('x' || encode(substring(msg from 6 for 16), "
          "'escape'))::bit(64)::bigint % 3 <> " +
          std::to_string(k) + ") FROM " + t);
      CHECK(std::string(PQgetvalue(c.get(), 0, 0)) == "100");
      CHECK(std::string(PQgetvalue(c.get(), 0, 1)) == "0");
    });
  }
}

// Mid-run, someone else takes two rows off the table for good and puts one of them back with a
// byte changed: the ledger finds both lost and the altered one corrupt, and the job fails (exit 1).
TEST_CASE("postgres queue: rows taken by a foreign consumer are lost, one altered by a foreign producer corrupt") {
  Job j = pg_job("produce", 0);
  j.duration_s = 1;
  j.opts["synchronous-commit"] = "off";
  auto a = test::make_adapter("postgres", j);
  a->prepare(j);
  const std::string t = a->describe().at("table");
  JobResult r = test::measure_while(j, *a, 300, [&] {
    admin("WITH gone AS (DELETE FROM " + t + " WHERE id IN (SELECT id FROM " + t +
          " ORDER BY id LIMIT 2) RETURNING id, msg) INSERT INTO " + t +
          "(msg) SELECT overlay(msg placing 'y'::bytea from length(msg)) FROM gone ORDER BY id LIMIT 1");
  });
  REQUIRE(r.ops_ok > 2);
  CHECK(r.ops_failed == 0);
  r.verify = a->verify(j, {r.ops_ok, 0, 0, 0});
  auto* qa = dynamic_cast<QueueAdapter*>(a.get());
  CAPTURE(r.verify.detail);
  CHECK(!r.verify.ok);
  CHECK(qa->figures().lost == 2);
  CHECK(qa->figures().corrupt == 1);
  CHECK(r.verify.detail.find("2 lost, 0 duplicated, 0 never acknowledged, 1 corrupt") != std::string::npos);
  CHECK(r.failed());  // exit 1
  a->teardown();
}

// The queue's table dropped mid-run: every op after it fails with the server's reason, counted.
TEST_CASE("postgres queue: a table dropped mid-run fails the ops that follow, naming the table") {
  for (const char* op : {"produce", "roundtrip"}) {
    CAPTURE(op);
    Job j = pg_job(op, 0, 2);
    // Dropped 0.3 s in; a clean CI's loaded machine got the DROP's lock only after a 1 s roundtrip
    // run had ended (its producers never failed): 2.5 s leave it time.
    j.duration_s = 2.5;
    j.opts["synchronous-commit"] = "off";
    auto a = test::make_adapter("postgres", j);
    a->prepare(j);
    const std::string t = a->describe().at("table");
    JobResult r = test::measure_while(j, *a, 300, [&] { admin("DROP TABLE " + t); });
    r.verify = a->verify(j, {r.ops_ok, r.ops_failed, 0, 0});
    a->teardown();
    CAPTURE(r.verify.detail);
    CHECK(r.ops_ok > 0);
    CHECK(r.ops_failed > 0);
    CHECK(r.errors[static_cast<int>(Status::Error)] == r.ops_failed);
    REQUIRE(!r.error_samples.empty());
    CHECK(r.error_samples.front().find("relation \"" + t + "\" does not exist") != std::string::npos);
    CHECK(!r.verify.ok);
    CHECK(r.failed());
  }
}

// Messages of 64 bytes, 4 KiB and 70,000 (TOAST's, out of line) by weight: each row holds its
// message intact at the size drawn for its id, and produce, consume and roundtrip take every one
// exactly once.
TEST_CASE("postgres queue: --message-size 64:50,4k:30,70000:20: each message at its own size, exactly once") {
  Job j = pg_job("produce", 300);
  j.opts["synchronous-commit"] = "off";
  test::check_message_sizes(j, "64:50,4k:30,70000:20", [](Adapter& a) {
    pg::Result r = admin("SELECT convert_from(msg, 'UTF8') FROM " + a.describe().at("table") + " ORDER BY id");
    std::vector<std::string> out;
    for (int i = 0; i < PQntuples(r.get()); ++i)
      out.emplace_back(PQgetvalue(r.get(), i, 0), static_cast<size_t>(PQgetlength(r.get(), i, 0)));
    return out;
  });
}

// The server stopped mid-run: an op that waited out the timeout asks whether the server answers
// (a count of the queue's rows on a fresh connection), and the count's failure names it. The
// count's error was once taken for "cannot say" (-1): the probe found nothing wrong.
TEST_CASE("postgres queue: a server that stops answering (SIGSTOP): the probe's count says so, the run ends") {
  Job j = pg_job("produce", 0, 2);
  j.duration_s = 20;
  j.timeout_s = 0.5;
  j.opts["synchronous-commit"] = "off";
  auto t0 = std::chrono::steady_clock::now();
  JobResult r = run_frozen(j);
  CAPTURE(r.message);
  CAPTURE(r.verify.detail);
  CHECK(seconds_since(t0) < 8);
  CHECK(r.ops_ok > 0);
  CHECK(r.errors[static_cast<int>(Status::Timeout)] > 0);
  std::string samples;
  for (auto& e : r.error_samples) samples += e + "\n";
  CAPTURE(samples);
  CHECK(samples.find("; the server did not answer a probe: postgres ") != std::string::npos);
  CHECK(!r.verify.ok);
  CHECK(r.failed());
}

namespace {
// A queue produce job of n messages killed at half of them: checked, its counts add up, nothing
// came back altered, and the job's verdict (expect) holds.
DurabilityResult crash_kill_produce(Job j) {
  j.opts["crash"] = "kill";
  JobResult r = run_one(j);
  CAPTURE(r.message);
  const DurabilityResult d = r.durability;
  CAPTURE(d.detail);
  REQUIRE(d.ran);
  CHECK(d.checked);
  CHECK(d.victim == "postgres");
  CHECK(d.acked > 0);
  CHECK(d.acked + d.in_doubt >= j.n / 2);  // killed at half the ops done
  CHECK(d.acked + d.in_doubt + d.never_sent == j.n);
  CHECK(d.corrupt == 0);
  CHECK(!r.failed());
  return d;
}
}  // namespace

// PostgreSQL acknowledges a commit under synchronous_commit=on once its WAL is flushed (the
// documentation's "WAL Configuration"/"Asynchronous Commit"): a kill keeps every message whose
// INSERT committed.
TEST_CASE("postgres: --crash kill, queue produce: every message whose INSERT committed survives (commit on)") {
  Job j = pg_job("produce", 1000, 2);
  j.opts["expect"] = "durable";
  CHECK(crash_kill_produce(j).lost == 0);
}

// synchronous_commit=off acknowledges a commit before its WAL leaves the server's buffers: "an
// immediate-mode shutdown is equivalent to a server crash, and will therefore cause loss of any
// unflushed asynchronous commits"; the WAL writer flushes within 3 x wal_writer_delay (200 ms).
// A kill is enough: the commits lost are in shared memory, not yet in the page cache. How many is
// the kill's timing: the WAL writer writes each page once full, so a kill just after one was
// written loses none (runs here lost 4 of 1,503 at 17,000/s, and more under load): what is pinned
// is the bound, never a loss older than that.
TEST_CASE("postgres: --crash kill, queue produce: synchronous_commit=off loses at most 3 x wal_writer_delay") {
  Job j = pg_job("produce", 3000, 2);
  j.opts["synchronous-commit"] = "off";  // expect any: a loss is a finding
  const DurabilityResult d = crash_kill_produce(j);
  CHECK(d.lost <= d.acked);
  CHECK(d.loss_window_s <= 0.6 + 0.5);
}

// The data directory on the page-cache layer, the power cut between the kill and the restart:
// synchronous_commit=on flushed (fsynced) the WAL of every acknowledged INSERT.
TEST_CASE("postgres: --crash power, queue produce: every message whose INSERT committed survives (commit on)") {
  const DurabilityResult d = test::power_cut(pg_job("produce", 1000, 2));
  CHECK(d.victim == "postgres");
  CHECK(d.lost == 0);
}

// The shared server's table in a tablespace on a 2 MiB tmpfs (as root: the server's own files stay
// where they are, so it keeps running): the inserts past the space fail, each counted, the
// server's message naming the cause; those that committed are the table's rows.
TEST_CASE("postgres: a table on a filesystem that fills up: the inserts fail, counted, naming the cause; exit 1") {
  test::SmallFs fs(2 << 20);
  if (!fs.mounted) {  // a file-size limit of this process does not reach the server
    MESSAGE("not root: no tmpfs to fill, the full-disk case is not run");
    return;
  }
  pg::Server s = shared();
  struct stat data {};
  REQUIRE(stat((s.svc->dir() + "/data").c_str(), &data) == 0);
  const std::string ts = fs.dir.path + "/ts";  // a tablespace's directory: empty, the server's user's
  REQUIRE(mkdir(ts.c_str(), 0700) == 0);
  REQUIRE(chown(ts.c_str(), data.st_uid, data.st_gid) == 0);
  admin("DROP TABLE IF EXISTS mwtest_full");
  admin("DROP TABLESPACE IF EXISTS mwtest_full");
  admin("CREATE TABLESPACE mwtest_full LOCATION '" + ts + "'");
  admin(
      "CREATE TABLE mwtest_full(k bigint PRIMARY KEY USING INDEX TABLESPACE mwtest_full, v bytea NOT NULL) "
      "TABLESPACE mwtest_full");
  Job j = pg_job("insert", 3000);  // about 3.4 MB of heap pages
  j.opts["table"] = "mwtest_full";
  j.opts["value-size"] = "1000";
  j.opts["synchronous-commit"] = "off";
  auto t0 = std::chrono::steady_clock::now();
  JobResult r = run_one(j);
  CHECK(seconds_since(t0) < 10);
  const std::string rows = PQgetvalue(admin("SELECT count(*) FROM mwtest_full").get(), 0, 0);
  test::check_filled_up(r, 3000, std::stoull(rows));
  REQUIRE(!r.error_samples.empty());
  CHECK_MESSAGE(r.error_samples[0].find("could not extend file") != std::string::npos, r.error_samples[0]);
  CHECK_MESSAGE(r.error_samples[0].find("Check free disk space") != std::string::npos, r.error_samples[0]);
  bool enospc = false;  // a write of part of a page says "wrote only N of 8192 bytes" instead
  for (auto& e : r.error_samples) enospc |= e.find("No space left on device") != std::string::npos;
  CHECK(enospc);
  admin("DROP TABLE mwtest_full");
  admin("DROP TABLESPACE mwtest_full");
}

TEST_CASE("postgres: a server that stops answering (SIGSTOP): timeouts, the run ends in about two") {
  Job j = pg_job("mix", 100'000'000, 2, 4);
  j.opts["mix"] = "read:100";
  j.opts["keyspace"] = "100";
  j.opts["synchronous-commit"] = "off";  // a load of 100 rows well within the 700 ms
  j.timeout_s = 0.5;
  auto t0 = std::chrono::steady_clock::now();
  JobResult r = run_frozen(j);
  CAPTURE(r.message);
  CHECK(seconds_since(t0) < 6);
  CHECK(r.ops_ok > 0);
  CHECK(r.errors[static_cast<int>(Status::Timeout)] > 0);
  CHECK(r.errors[static_cast<int>(Status::Timeout)] <= 8);
  CHECK(r.ops_not_run > 0);
  CHECK(r.failed());
}

// Last: it kills the shared server (a later case would start a fresh one).
TEST_CASE("postgres: a server killed mid-run: failures counted, the rest not run, no hang") {
  pg::Server s = shared();
  Job j = pg_job("mix", 100'000'000, 2, 4);
  j.opts["mix"] = "read:50,update:50";
  j.opts["keyspace"] = "100";
  j.opts["synchronous-commit"] = "off";  // a load of 100 rows well within the 700 ms
  std::thread killer([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(700));
    pg::signal_server(s.svc->pid(), SIGKILL);
  });
  auto t0 = std::chrono::steady_clock::now();
  JobResult r = run_one(j);
  killer.join();
  CAPTURE(r.message);
  CHECK(seconds_since(t0) < 10);
  CHECK(r.ops_ok > 0);
  CHECK(r.ops_failed <= 8);
  CHECK(r.ops_not_run > 0);
  CHECK(r.failed());
  stop_shared_services();
}
#endif
