// The mariadb adapter against one mariadbd started here, shared by every case of this binary (the
// managed server of the adapter itself: installed once in a temp dir, on a free port, stopped at
// exit); the crash case has a server of its own, as the adapter gives a crash job.
#if MWBENCH_WITH_MARIADB
#include <doctest/doctest.h>
#include <signal.h>

#include <chrono>
#include <string>
#include <thread>

#include "adapters/mariadb/my.h"
#include "core/runner.h"
#include "services/services.h"
#include "tests/helpers.h"
#include "tests/store_checks.h"

using namespace mw;

namespace {

Job my_job(const std::string& op, uint64_t n, int clients = 1) {
  Job j = test::make_job("mariadb", op, n, clients);
  j.timeout_s = 2;
  return j;
}

// The shared managed server, started by the first case that needs it.
mdb::Server shared() { return mdb::server_of(my_job("select", 1), false); }

// SQL as root on the shared server, one statement each.
void admin(std::initializer_list<std::string> sql) {
  mdb::Server s = shared();
  mdb::Conn c(s.ep);
  for (auto& q : sql) c.exec(q);
}

// External: the shared server over TCP, as `user` (its password from MWBENCH_TEST_MY_PW).
Job as_external(Job j, const std::string& user) {
  j.opts["host"] = "127.0.0.1";
  j.opts["port"] = std::to_string(shared().svc->port());
  j.opts["user"] = user;
  j.opts["database"] = "mwbench";
  j.opts["password-env"] = "MWBENCH_TEST_MY_PW";
  return j;
}

void check_clean(const JobResult& r, uint64_t n) {
  CAPTURE(r.message);
  CAPTURE(r.verify.detail);
  if (!r.error_samples.empty()) CAPTURE(r.error_samples[0]);
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

std::string samples_of(const JobResult& r) {
  std::string s;
  for (auto& e : r.error_samples) s += e + "\n";
  return s;
}

}  // namespace

TEST_CASE("mariadb: select, update and insert, every reply checked, the end check") {
  for (const char* op : {"insert", "select", "update"}) {
    CAPTURE(op);
    Job j = my_job(op, 600, 2);
    j.opts["keyspace"] = "300";
    j.opts["flush-log-at-trx-commit"] = "1";
    JobResult r = run_one(j);
    check_clean(r, 600);
    CHECK(r.server.at("managed") == "yes");
    CHECK(r.server.at("version").rfind("1", 0) == 0);
    CHECK(r.server.at("innodb_flush_log_at_trx_commit") == "1");
    if (std::string(op) == "insert")
      CHECK(r.verify.detail == "row count 600 (one row per acknowledged insert)");
    else
      CHECK(r.verify.detail == "300 records, at least 300 expected; 300 keys read back");
  }
}

TEST_CASE("mariadb: the workload's six ops and the end check") {
  Job j = my_job("mix", 3000, 2);
  j.opts["mix"] = "read:40,update:20,insert:10,delete:5,rmw:15,scan:10";
  j.opts["keyspace"] = "1000";
  JobResult r = run_one(j);
  check_clean(r, 3000);
  CHECK(r.verify.detail.find(" records; 1000 keys read back") != std::string::npos);
  CHECK(r.misses > 0);         // deletes: some reads miss
  j = my_job("mix", 2000, 2);  // no deletes: every read must hit
  j.opts["mix"] = "read:50,rmw:25,scan:25";
  j.opts["keyspace"] = "500";
  j.opts["value-size"] = "10-70000";  // past the client's 64 KiB buffer too
  r = run_one(j);
  check_clean(r, 2000);
  CHECK(r.misses == 0);
}

// A trace's set is an upsert (an INSERT ... ON DUPLICATE KEY UPDATE: a key not there is written, not a
// miss), its add an INSERT of a key not there (INSERT IGNORE), its replace an UPDATE; not stored is
// no error.
TEST_CASE("mariadb: a trace's set upserts, its add and replace store only where their condition holds") {
  test::TempDir d;
  Job j = my_job("mix", 10000);
  test::cond_trace(j, d.path);
  test::check_cond_replay(run_one(j));
}

TEST_CASE("mariadb: a row holding another key's value is a Mismatch, a changed one corrupt") {
  admin({"DROP TABLE IF EXISTS mwbench.mwtest_bad"});
  Job ins = my_job("insert", 300);
  ins.opts["table"] = "mwtest_bad";
  check_clean(run_one(ins), 300);
  admin(
      {"UPDATE mwbench.mwtest_bad SET v = (SELECT v FROM (SELECT v FROM mwbench.mwtest_bad WHERE k = 1) o) "
       "WHERE k = 2",
       "UPDATE mwbench.mwtest_bad SET v = INSERT(v, 40, 1, 'Z') WHERE k = 3"});
  Job sel = my_job("select", 3000, 2);
  sel.opts["table"] = "mwtest_bad";
  sel.opts["keyspace"] = "300";
  JobResult r = run_one(sel);
  const uint64_t bad = r.errors[static_cast<int>(Status::Mismatch)];
  CHECK(bad > 0);
  CHECK(r.ops_ok + bad == 3000);
  CHECK(samples_of(r).find("key 2 holds another key's value") != std::string::npos);
  CHECK(samples_of(r).find("key 3 holds a corrupt value (checksum)") != std::string::npos);
  CHECK(r.failed());
  admin({"DELETE FROM mwbench.mwtest_bad WHERE k = 7"});
  r = run_one(sel);
  CHECK(r.state == JobResult::State::SetupFailed);
  CHECK(r.message.find("--table mwtest_bad holds 299 of the 300 keys") != std::string::npos);
  admin({"DROP TABLE mwbench.mwtest_bad"});
}

TEST_CASE("mariadb: a missing --table is created, loaded and kept; the next job uses it as it is") {
  admin({"DROP TABLE IF EXISTS mwbench.mwtest_keep"});
  Job sel = my_job("select", 3000, 2);
  sel.opts["table"] = "mwtest_keep";
  sel.opts["keyspace"] = "200";
  check_clean(run_one(sel), 3000);
  admin({"UPDATE mwbench.mwtest_keep SET v = INSERT(v, 40, 1, '!') WHERE k = 5"});  // kept: not loaded again
  JobResult r = run_one(sel);
  CHECK(r.errors[static_cast<int>(Status::Mismatch)] > 0);
  CHECK(samples_of(r).find("key 5 holds a corrupt value (checksum)") != std::string::npos);
  admin({"DROP TABLE mwbench.mwtest_keep"});
}

TEST_CASE("mariadb: the password from the environment; a wrong or missing one is a set-up error") {
  admin({"DROP USER IF EXISTS 'mw_pw'@'%'", "CREATE USER 'mw_pw'@'%' IDENTIFIED BY 'right'",
         "GRANT ALL ON mwbench.* TO 'mw_pw'@'%'"});
  Job j = as_external(my_job("insert", 100), "mw_pw");
  unsetenv("MWBENCH_TEST_MY_PW");
  JobResult r = run_one(j);
  CHECK(r.state == JobResult::State::SetupFailed);
  CHECK(r.message.find("mariadb 127.0.0.1:" + j.opts["port"] + ": Access denied for user 'mw_pw'") == 0);
  CHECK(r.message.find("(using password: NO)") != std::string::npos);
  setenv("MWBENCH_TEST_MY_PW", "wrong-one", 1);
  r = run_one(j);
  CHECK(r.state == JobResult::State::SetupFailed);
  CHECK(r.message.find("(using password: YES)") != std::string::npos);
  CHECK(r.message.find("wrong-one") == std::string::npos);
  setenv("MWBENCH_TEST_MY_PW", "right", 1);
  check_clean(run_one(j), 100);
  unsetenv("MWBENCH_TEST_MY_PW");
  admin({"DROP USER 'mw_pw'@'%'"});
}

TEST_CASE("mariadb: a read-only server refuses the writes (Refused), the reads pass; exit status says so") {
  admin({"DROP TABLE IF EXISTS mwbench.mwtest_ro", "DROP USER IF EXISTS 'mw_ro'@'%'", "CREATE USER 'mw_ro'@'%'",
         "GRANT ALL ON mwbench.* TO 'mw_ro'@'%'"});
  Job ins = my_job("insert", 200);
  ins.opts["table"] = "mwtest_ro";
  check_clean(run_one(ins), 200);
  admin({"SET GLOBAL read_only = 1"});
  Job up = as_external(my_job("update", 100, 2), "mw_ro");
  up.opts["table"] = "mwtest_ro";
  up.opts["keyspace"] = "200";
  JobResult r = run_one(up);
  admin({"SET GLOBAL read_only = 0"});
  CHECK(r.state == JobResult::State::Done);
  CHECK(r.ops_ok == 0);
  CHECK(r.errors[static_cast<int>(Status::Refused)] == 100);
  CHECK(samples_of(r).find("running with the --read-only option") != std::string::npos);
  CHECK(r.failed());
  up.op = "select";
  check_clean(run_one(up), 100);
  admin({"DROP TABLE mwbench.mwtest_ro", "DROP USER 'mw_ro'@'%'"});
}

TEST_CASE("mariadb: bad input is a set-up error naming the option") {
  Job j = my_job("insert", 10);
  j.opts["table"] = "t; DROP TABLE x";
  CHECK(run_one(j).message.find("mariadb: --table t; DROP TABLE x: a plain lower-case name") == 0);
  j = my_job("insert", 10);
  j.opts["user"] = "someone";
  CHECK(run_one(j).message.find("mariadb: --user, --database and --port name an external server") == 0);
  j = my_job("select", 10);
  j.opts["socket"] = "/nonexistent/mysqld.sock";
  j.opts["database"] = "mwbench";
  CHECK(run_one(j).message.find("mariadb /nonexistent/mysqld.sock: Can't connect to local server through socket") == 0);
  j = as_external(my_job("insert", 10), "root");
  j.opts["flush-log-at-trx-commit"] = "2";
  CHECK(run_one(j).message.find("mariadb: --flush-log-at-trx-commit sets the managed server's setting") == 0);
  j = as_external(my_job("insert", 10), "root");
  j.opts.erase("database");
  CHECK(run_one(j).message == "mariadb: an external server needs --database (where the table is)");
  j = my_job("select", 10);
  j.opts["crash"] = "kill";
  CHECK(run_one(j).message == "mariadb: --crash needs op insert or a --mix (its writes are read back)");
  j = as_external(my_job("insert", 10), "root");
  j.opts["port"] = std::to_string(free_port());
  JobResult r = run_one(j);
  CHECK(r.state == JobResult::State::SetupFailed);
  CHECK(r.message.find("Can't connect to server on '127.0.0.1'") != std::string::npos);
}

TEST_CASE("mariadb: the contract follows innodb_flush_log_at_trx_commit") {
  auto contract = [](const char* flush) {
    Job j = my_job("insert", 10);
    j.opts["flush-log-at-trx-commit"] = flush;
    return *test::make_adapter("mariadb", j)->abilities(j).contract;
  };
  CHECK(contract("1").kind == ContractKind::FsyncPerAck);
  CHECK(contract("2").kind == ContractKind::PeriodicFsync);
  CHECK(contract("2").interval_s == doctest::Approx(1));
  CHECK(contract("2").detail.find("a kill keeps it") != std::string::npos);
  CHECK(contract("0").kind == ContractKind::PeriodicFsync);
  CHECK(contract("0").detail.find("a kill can lose those commits too") != std::string::npos);
}

// A --mix's writes are checked too (its updates write a key again: each value names its write).
TEST_CASE("mariadb: --crash kill, --mix: every acknowledged update and insert survives (flush at commit)") {
  test::check_mix_crash(my_job("mix", 2000, 2));
}

TEST_CASE("mariadb: --crash kill: every acknowledged insert survives (flush at commit, binary log synced)") {
  Job j = my_job("insert", 3000, 2);
  j.opts["crash"] = "kill";
  j.opts["expect"] = "durable";
  j.opts["sync-binlog"] = "1";
  JobResult r = run_one(j);
  CAPTURE(r.message);
  REQUIRE(r.durability.ran);
  CHECK(r.durability.acked > 0);
  CHECK(r.durability.lost == 0);
  CHECK(r.durability.corrupt == 0);
  CHECK(r.durability.victim == "mariadbd");
  CHECK(r.server.at("log_bin") == "ON");
  CHECK(r.server.at("sync_binlog") == "1");
  CHECK(!r.failed());
}

// One job (a crash job's server is its own: install, start, recovery: seconds on a loaded machine):
// flush each second, whose loss tells the layer's power cut from a kill (which keeps it).
TEST_CASE("mariadb: --crash power: flush-log-at-trx-commit=2 loses the last acknowledged inserts, within a second") {
  Job j = my_job("insert", 2000, 2);
  j.opts["flush-log-at-trx-commit"] = "2";
  test::check_power_loss(j, 1 + 0.5);  // written to the OS at each commit, flushed once a second
}

// The shared server's table with its InnoDB file (DATA DIRECTORY) on a 2 MiB tmpfs (as root: the
// server's own files stay where they are, so it keeps running): the inserts past the space fail,
// each counted, the message naming the cause; those that committed are the table's rows.
TEST_CASE("mariadb: a table on a filesystem that fills up: the inserts fail, counted, naming the cause; exit 1") {
  test::SmallFs fs(2 << 20);
  if (!fs.mounted) {  // a file-size limit of this process does not reach the server
    MESSAGE("not root: no tmpfs to fill, the full-disk case is not run");
    return;
  }
  admin({"DROP TABLE IF EXISTS mwbench.mwtest_full",
         "CREATE TABLE mwbench.mwtest_full (k BIGINT NOT NULL PRIMARY KEY, v MEDIUMBLOB NOT NULL) ENGINE=InnoDB "
         "DATA DIRECTORY = '" +
             fs.dir.path + "'",
         "SET GLOBAL innodb_flush_log_at_trx_commit = 2"});  // no fsync per commit: quick
  Job j = my_job("insert", 3000);                            // about 4 MB of pages
  j.opts["table"] = "mwtest_full";
  j.opts["value-size"] = "1000";
  auto t0 = std::chrono::steady_clock::now();
  JobResult r = run_one(j);
  admin({"SET GLOBAL innodb_flush_log_at_trx_commit = 1"});
  CHECK(seconds_since(t0) < 10);
  mdb::Conn c(shared().ep);
  test::check_filled_up(r, 3000, std::stoull(c.rows("SELECT COUNT(*) FROM mwbench.mwtest_full").at(0).at(0)));
  REQUIRE(!r.error_samples.empty());
  CHECK_MESSAGE(r.error_samples[0].find("The table 'mwtest_full' is full (1114): the table's file could not grow: "
                                        "no space left on its filesystem (disk full)") != std::string::npos,
                r.error_samples[0]);
  c.exec("DROP TABLE mwbench.mwtest_full");
}

TEST_CASE("mariadb: a server that stops answering (SIGSTOP): timeouts, the run ends within a few seconds") {
  mdb::Server s = shared();
  Job j = my_job("mix", 100'000'000, 2);
  j.opts["mix"] = "read:100";
  j.opts["keyspace"] = "100";
  j.timeout_s = 1;  // libmariadb's unit: whole seconds
  std::thread freezer([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(700));
    ::kill(s.svc->pid(), SIGSTOP);
  });
  auto t0 = std::chrono::steady_clock::now();
  JobResult r = run_one(j);
  freezer.join();
  ::kill(s.svc->pid(), SIGCONT);
  CAPTURE(r.message);
  CAPTURE(samples_of(r));
  CHECK(seconds_since(t0) < 6);
  CHECK(r.ops_ok > 0);
  CHECK(r.errors[static_cast<int>(Status::Timeout)] > 0);
  CHECK(r.errors[static_cast<int>(Status::Timeout)] <= 4);
  CHECK(r.ops_not_run > 0);
  CHECK(r.failed());
}

// Last: it kills the shared server (a later case would start a fresh one).
TEST_CASE("mariadb: a server killed mid-run: failures counted, the rest not run, no hang") {
  mdb::Server s = shared();
  Job j = my_job("mix", 100'000'000, 2);
  j.opts["mix"] = "read:50,update:50";
  j.opts["keyspace"] = "100";
  std::thread killer([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(700));
    ::kill(s.svc->pid(), SIGKILL);
  });
  auto t0 = std::chrono::steady_clock::now();
  JobResult r = run_one(j);
  killer.join();
  CAPTURE(r.message);
  CHECK(seconds_since(t0) < 10);
  CHECK(r.ops_ok > 0);
  CHECK(r.ops_failed > 0);
  CHECK(r.ops_failed <= 4);
  CHECK(r.ops_not_run > 0);
  CHECK(r.failed());
  stop_shared_services();
}
#endif
