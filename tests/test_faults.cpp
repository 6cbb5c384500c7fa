// --fault (docs/guide/faults.md): the schedule's grammar and its refusals, and faults injected into
// real redis-servers (and a cut into a memcached) while the load runs: the unavailable window, the
// failures by kind, the recovery, and the acknowledged writes read back.
#include <doctest/doctest.h>

#include <atomic>
#include <chrono>
#include <map>
#include <string>
#include <thread>

#include "adapters/redis/queues.h"
#include "adapters/redis/sentinel.h"
#include "api/fault.h"
#include "config/config.h"
#include "core/runner.h"
#include "report/report.h"
#include "results/notes.h"
#include "results/results.h"
#include "results/writer.h"
#include "tests/fault_checks.h"
#include "tests/helpers.h"

using namespace mw;

namespace {

uint64_t failed(const FaultResult& f) {
  uint64_t n = 0;
  for (auto& [k, c] : f.failed) n += c;
  return n;
}

// The one fault of a job that ran to its end: done without an error, the clients back, ops after it.
const FaultResult& ridden_out(const JobResult& r, const char* kind) {
  REQUIRE_MESSAGE(r.state == JobResult::State::Done, r.message);
  REQUIRE(r.faults.size() == 1);
  const FaultResult& f = r.faults[0];
  CHECK_MESSAGE(f.error.empty(), f.error);
  CHECK(f.kind == kind);
  CHECK(f.back);
  CHECK(f.ops_after > 0);
  return f;
}

// A SET job (or `op`) of `adapter`, 4 clients, `seconds` long with the faults given, on a server of its own.
JobResult fault_run(const std::string& adapter, const std::string& faults, std::map<std::string, std::string> opts,
                    double seconds = 6, double timeout_s = 5, const std::string& op = "set") {
  Job j = test::make_job(adapter, op, 0, 4);
  j.duration_s = seconds;
  j.timeout_s = timeout_s;
  j.faults = parse_faults(faults);
  j.reconnect_backoff_s = 0.2;
  j.opts = std::move(opts);
  return run_one(j, false);
}

// ... on redis, every write's key distinct (so that each acknowledged write can be read back).
JobResult redis_fault(const std::string& faults, const std::string& persistence, double seconds = 6,
                      double timeout_s = 5) {
  return fault_run("redis", faults, {{"persistence", persistence}, {"keyspace", "100000000"}}, seconds, timeout_s);
}

// A cut@40%/2s through the proxy in a 6 s run: the window covers the cut (generously: a loaded
// machine), the clients failed in it and reconnected after it.
const FaultResult& check_cut(const JobResult& r) {
  REQUIRE_MESSAGE(r.state == JobResult::State::Done, r.message);
  REQUIRE(r.faults.size() == 1);
  const FaultResult& f = r.faults[0];
  CHECK_MESSAGE(f.error.empty(), f.error);
  CHECK(f.back);
  CHECK(f.window_s() >= 1.5);
  CHECK(f.window_s() < 5);
  CHECK(failed(f) > 0);
  CHECK(f.ops_after > 0);
  CHECK(r.server.at("proxy").find(" -> 127.0.0.1:") != std::string::npos);
  return f;
}

using test::exit_of;

std::string setup_error(const std::string& adapter, std::vector<Setting> settings) {
  try {
    expand_jobs(adapter, settings, "cli");
  } catch (const SetupError& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE("faults: KIND@AT[/FOR] parses, and a bad value is one line naming it") {
  auto f = parse_faults("restart@40%\nstop@2s/1.5s\nslow@10%/5s:+5ms");
  REQUIRE(f.size() == 3);
  CHECK(f[0].kind == FaultKind::Restart);
  CHECK(f[0].at_s(10) == doctest::Approx(4));
  CHECK(f[1].kind == FaultKind::Stop);
  CHECK(f[1].at_s(10) == doctest::Approx(2));
  CHECK(f[1].for_s == doctest::Approx(1.5));
  CHECK(f[2].delay_s == doctest::Approx(0.005));
  for (const char* bad : {"kill", "nuke@50%", "kill@150%", "kill@50%/2s", "stop@40%", "slow@40%/5s", "slow@40%/5s:+0ms",
                          "slow@40%/5s:+61s", "restart@x"}) {
    CAPTURE(bad);
    CHECK_THROWS_AS(parse_faults(bad), SetupError);
  }
}

TEST_CASE("faults: refused before any job runs: after the run's end, a kind the set-up cannot do, an external server") {
  const Setting dur{"duration", {"10s"}, "--duration"};
  CHECK(setup_error("redis", {{"fault", {"restart@12s"}, "--fault"}, dur}).find("after the run's end") !=
        std::string::npos);
  CHECK(setup_error("redis", {{"fault", {"restart@40%"}, "--fault"}}).find("needs --duration") != std::string::npos);
  CHECK(setup_error("memcached", {{"fault", {"kill-primary@40%"}, "--fault"}, dur})
            .find("memcached cannot do kill-primary") != std::string::npos);
  CHECK(setup_error("redis", {{"fault", {"stop@40%/1s"}, "--fault"}, dur, {"host", {"10.0.0.1"}, "--host"}})
            .find("drop --host") != std::string::npos);
  CHECK(setup_error("null", {{"fault", {"kill@40%"}, "--fault"}, dur}).find("null cannot take faults") !=
        std::string::npos);
  CHECK(setup_error("redis", {{"fault", {"stop@8s/2s"}, "--fault"}, dur}).find("past the run's end") !=
        std::string::npos);
  CHECK(setup_error("sqlite", {{"fault", {"cut@40%/1s"}, "--fault"}, dur}).find("sqlite has none") !=
        std::string::npos);
  auto jobs = expand_jobs(
      "redis", {{"ops", {"set"}, "--ops"}, {"fault", {"restart@40%", "stop@60%/1s"}, "--fault"}, dur}, "cli");
  REQUIRE(jobs.size() == 1);
  CHECK(jobs[0].faults.size() == 2);
  CHECK(jobs[0].reconnect_backoff_s == doctest::Approx(kDefaultReconnectBackoff));
}

// A server whose stop takes 0.3 s to take effect (PostgreSQL's: the postmaster, then each backend,
// one signal at a time on a loaded machine), answering meanwhile: the fault counts from when it was
// stopped, so the window starts at it, not at a success after the fault's time.
namespace {
struct SlowStopServer {
  std::atomic<bool> stopped{false};
};

class SlowStopClient final : public Client {
 public:
  explicit SlowStopClient(SlowStopServer& s) : s_(s) {}
  OpResult run(uint64_t) override {
    while (s_.stopped) std::this_thread::sleep_for(std::chrono::microseconds(200));
    std::this_thread::sleep_for(std::chrono::microseconds(50));
    return {Status::Ok, 1, {}};
  }

 private:
  SlowStopServer& s_;
};

class SlowStop final : public Crashable {
 public:
  explicit SlowStop(SlowStopServer& s) : s_(s) {}
  std::string victim() const override { return "slow-stop-server"; }
  void kill() override {}
  void restart() override {}
  bool pause(bool on) override {
    if (on) std::this_thread::sleep_for(std::chrono::milliseconds(300));
    s_.stopped = on;
    return true;
  }

 private:
  SlowStopServer& s_;
};

class SlowStopAdapter final : public Adapter {
 public:
  explicit SlowStopAdapter(SlowStopServer& s) : s_(s), crash_(s) {}
  std::unique_ptr<Client> open(const Job&, int) override { return std::make_unique<SlowStopClient>(s_); }
  std::string target() const override { return "slow-stop"; }
  Abilities abilities(const Job&) override { return {.crash = &crash_}; }

 private:
  SlowStopServer& s_;
  SlowStop crash_;
};
}  // namespace

TEST_CASE("faults: a stop counts from when every process was stopped, not from when its signals began") {
  SlowStopServer s;
  Job j = test::make_job("null", "nop", 0, 2);
  j.duration_s = 3;
  j.timeout_s = 5;
  j.faults = parse_faults("stop@30%/1s");
  const JobResult r = run_one_with(
      j, [&](const Job&) { return std::make_unique<SlowStopAdapter>(s); }, false);
  REQUIRE_MESSAGE(r.state == JobResult::State::Done, r.message);
  REQUIRE(r.faults.size() == 1);
  const FaultResult& f = r.faults[0];
  CHECK_MESSAGE(f.error.empty(), f.error);
  CHECK(f.at_s >= 0.9 + 0.29);  // the stop's time (30% of 3 s) and the 0.3 s its signals took
  CHECK(f.window_start_s <= f.at_s + 0.01);
  CHECK(f.window_s() >= 0.95);
  CHECK(f.window_end_s >= f.done_s - 0.01);
  CHECK(f.ops_after > 0);
}

TEST_CASE("faults redis: appendfsync always restarted mid-run: a short window, ops after it, nothing acked lost") {
  JobResult r = redis_fault("restart@40%", "aof-always");
  REQUIRE_MESSAGE(r.state == JobResult::State::Done, r.message);
  REQUIRE(r.faults.size() == 1);
  const FaultResult& f = r.faults[0];
  CHECK(f.error.empty());
  CHECK(f.back);
  CHECK(f.window_s() > 0);
  CHECK(f.window_s() < 5);
  CHECK(f.ops_after > 0);
  CHECK(f.lost == 0);
  CHECK(f.p99_before_ns > 0);
  CHECK(exit_of(r) == 0);
  // read back from the result file as written, and shown one line per fault
  RunResult run;
  run.suite = "t";
  run.jobs.push_back(r);
  make_notes(run);
  RunResult back = parse_result(result_text(run), "t.json");
  REQUIRE(back.jobs[0].faults.size() == 1);
  CHECK(back.jobs[0].faults[0].window_s() == doctest::Approx(f.window_s()));
  CHECK(back.jobs[0].faults[0].lost == 0);
  CHECK(back.jobs[0].faults[0].failed == f.failed);
  CHECK(format_table(back).find("fault: redis set") != std::string::npos);
  CHECK(render_html({back}).find("class=\"fault-marker\"") != std::string::npos);
}

TEST_CASE("faults redis: without persistence a restart loses the acknowledged writes, counted") {
  JobResult r = redis_fault("restart@40%", "none");
  REQUIRE_MESSAGE(r.state == JobResult::State::Done, r.message);
  REQUIRE(r.faults.size() == 1);
  CHECK(r.faults[0].lost > 0);
  CHECK(r.faults[0].ops_after > 0);
}

TEST_CASE("faults redis: SIGSTOP for 1.5 s: the window covers it") {
  JobResult r = redis_fault("stop@40%/1.5s", "none");
  REQUIRE_MESSAGE(r.state == JobResult::State::Done, r.message);
  REQUIRE(r.faults.size() == 1);
  const FaultResult& f = r.faults[0];
  CHECK(f.window_s() >= 1.4);
  CHECK(f.window_start_s <= f.at_s + 0.05);  // a reply already on its way at the SIGSTOP may land just after
  // done_s is read after kill(SIGCONT) returns: the server may answer before that read
  CHECK(f.window_end_s >= f.done_s - 0.05);
  CHECK(f.back);
  CHECK(f.lost == 0);
}

TEST_CASE("faults redis: a server that never comes back ends the run at --timeout, the figures kept") {
  JobResult r = redis_fault("kill@30%", "none", 20, 1);
  REQUIRE(r.faults.size() == 1);
  const FaultResult& f = r.faults[0];
  CHECK(!f.back);
  CHECK(f.error.find("did not answer again within --timeout") != std::string::npos);
  CHECK(r.ops_ok > 0);
  CHECK(failed(f) > 0);
  CHECK(r.elapsed_s < 12);  // 6 s in, killed; ended about a timeout later, not at 20 s
  CHECK(exit_of(r) == 1);
}

TEST_CASE("faults redis: cut@40%/2s through the proxy: the window covers the cut, failures by kind, ops after it") {
  JobResult r = redis_fault("cut@40%/2s", "none");
  const FaultResult& f = check_cut(r);
  CHECK(f.failed.count("Error") == 1);
  CHECK(r.ops_failed > 0);  // what was in flight is failed, never a success
  CHECK(f.lost == 0);       // a cut touches no data: every acknowledged write is there
}

// The delay is added each way, so an op during the slow takes twice DELAY at least whatever the load;
// before it, a loaded CI machine (an ASan build beside it on 2 cores) keeps p99 under DELAY/2.
TEST_CASE("faults redis: slow@30%/2s:+40ms through the proxy: p99 during at least the delay, before under half") {
  Job j = test::make_job("redis", "set", 0, 1);
  j.duration_s = 6;
  j.timeout_s = 5;
  j.interval_s = 0.1;
  j.faults = parse_faults("slow@30%/2s:+40ms");
  j.reconnect_backoff_s = 0.2;
  j.opts = {{"persistence", "none"}, {"keyspace", "100000000"}};
  JobResult r = run_one(j, false);
  REQUIRE_MESSAGE(r.state == JobResult::State::Done, r.message);
  REQUIRE(r.faults.size() == 1);
  const FaultResult& f = r.faults[0];
  CHECK(f.delay_s == doctest::Approx(0.04));
  CHECK(f.p99_during_ns >= 40e6);
  CHECK(f.p99_before_ns < 20e6);
  CHECK(f.back);
  CHECK(failed(f) == 0);
  CHECK(f.ops_after > 0);
}

TEST_CASE("faults memcached: cut@40%/2s through the proxy on the memcached it starts: clients reconnect after it") {
  JobResult r = fault_run("memcached", "cut@40%/2s", {{"keyspace", "1000"}});
  const FaultResult& f = check_cut(r);
  CHECK(f.lost == -1);  // memcached keeps nothing to read back: said, not counted as 0
}

// A replicated set-up mwbench starts: a primary, `replicas` and three Sentinels (down after 1 s),
// 1 KB SETs at -c 4 for 8 s, kill-primary at 40%: the clients ask the Sentinels where the primary
// is and follow the promoted replica; the window is the failover (1 s to notice, an election, the
// promotion: a few seconds, 7 s allowed on a loaded machine), and ops succeed after it. `opts`: more.
namespace {
JobResult failover(const std::string& replicas, std::map<std::string, std::string> opts) {
  opts.insert({{"persistence", "none"}, {"value-size", "1024"}, {"replicas", replicas}, {"sentinel", "true"}});
  JobResult r = fault_run("redis", "kill-primary@40%", std::move(opts), 8, 8);
  const FaultResult& f = ridden_out(r, "kill-primary");
  CHECK(f.window_s() > 0.5);  // the Sentinels wait 1 s without an answer before they agree it is down
  CHECK(f.window_s() < 7);
  CHECK(failed(f) > 0);
  CHECK_MESSAGE(f.promoted.rfind("replica ", 0) == 0, f.promoted);
  CHECK_MESSAGE(f.lost >= 0, f.lost_note);
  CHECK(static_cast<uint64_t>(std::max<int64_t>(f.lost, 0)) <= r.ops_ok);
  CHECK(r.server.at("keyspace") == "one key per write");
  CHECK(r.server.at("replication").find("3 Sentinels (quorum 2") != std::string::npos);
  CHECK(exit_of(r) == 0);
  return r;
}
}  // namespace

// Asynchronous replication may lose acknowledged writes: counted, a figure, not a failure.
TEST_CASE("faults redis sentinel: kill-primary fails over to the replica, the clients follow, lost writes counted") {
  JobResult r = failover("1", {});
  const FaultResult& f = r.faults[0];
  CHECK(f.promoted.rfind("replica 1 (127.0.0.1:", 0) == 0);
  RunResult run;
  run.suite = "t";
  run.jobs.push_back(r);
  make_notes(run);
  RunResult back = parse_result(result_text(run), "t.json");
  CHECK(back.jobs[0].faults[0].promoted == f.promoted);
  CHECK(format_table(back, Detail::Full).find("primary now replica 1") != std::string::npos);
}

// --wait-replicas 1: each SET acknowledged once WAIT says a replica has it, so the failover loses
// none (a loss would fail the job); with two replicas the promoted one still has one to wait for.
TEST_CASE("faults redis sentinel: with WAIT 1 after each SET, kill-primary loses no acknowledged write") {
  JobResult r = failover("2", {{"wait-replicas", "1"}});
  CHECK_MESSAGE(r.faults[0].lost == 0, r.faults[0].lost_note);
  REQUIRE(r.contract);
  CHECK(r.contract->kind == ContractKind::Replicated);
}

// switchover@40%: the Sentinels asked to fail over (SENTINEL FAILOVER) while the primary runs; the
// clients see the new primary named (the watch) and follow it; a request in flight on the old one
// that gets no answer fails at --timeout (2 s here, so that the run sees the clients back).
TEST_CASE("faults redis sentinel: switchover fails over a live primary, the clients follow") {
  JobResult r =
      fault_run("redis", "switchover@40%",
                {{"persistence", "none"}, {"value-size", "1024"}, {"replicas", "1"}, {"sentinel", "true"}}, 8, 2);
  const FaultResult& f = ridden_out(r, "switchover");
  CHECK(f.window_s() < 6);
  CHECK_MESSAGE(f.promoted.rfind("replica 1 (127.0.0.1:", 0) == 0, f.promoted);
  CHECK_MESSAGE(f.lost >= 0, f.lost_note);
  CHECK(exit_of(r) == 0);
}

// An external set-up, named by its Sentinels (--sentinels, --master-name): here one the test starts
// with the adapter's own pieces, taken by address as a user's would be. The clients follow the
// primary they name; switchover is the fault it takes, and the node promoted is told by address.
TEST_CASE("faults redis sentinels: an external set-up by its Sentinels' addresses, switched over mid-run") {
  Job base = test::make_job("redis", "set", 0, 1);
  base.opts["persistence"] = "none";
  const ServiceSpec spec = redis::service_of(base);
  auto primary = std::make_shared<Service>(spec);
  redis::ReplicaSet set(primary, spec, 1, true, 10);
  std::string list;
  for (const auto& [host, port] : set.sentinels()->at)
    list += (list.empty() ? "" : ",") + host + ":" + std::to_string(port);
  JobResult r = fault_run("redis", "switchover@40%",
                          {{"sentinels", list}, {"master-name", "mwbench"}, {"value-size", "1024"}}, 8, 2);
  REQUIRE_MESSAGE(r.state == JobResult::State::Done, r.message);
  REQUIRE(r.faults.size() == 1);
  const FaultResult& f = r.faults[0];
  CHECK_MESSAGE(f.error.empty(), f.error);
  CHECK(f.back);
  CHECK(f.ops_after > 0);
  CHECK(r.ops_ok > 0);
  // promoted: the replica's address (mwbench did not start it, so it has no name of its own here)
  REQUIRE(set.sentinels());
  CHECK_MESSAGE(f.promoted.rfind("127.0.0.1:", 0) == 0, f.promoted);
  CHECK(f.promoted != "127.0.0.1:" + std::to_string(primary->server_port()));
  CHECK_MESSAGE(f.lost >= 0, f.lost_note);
  CHECK(r.server.at("managed") == "no");
  CHECK(r.server.at("replication").find("3 Sentinels (127.0.0.1:") != std::string::npos);
  CHECK(r.server.at("replication").find(") of mwbench") != std::string::npos);
}

namespace {
// A 4 s job of `adapter` and `op` with these options and faults, refused at its set-up: its message
// (one line, exit 2).
std::string refused_job(const std::string& adapter, const std::string& op, std::map<std::string, std::string> opts,
                        const std::string& faults) {
  return test::refused_fault_job(test::make_job(adapter, op, 0, 1), opts, faults);
}
}  // namespace

TEST_CASE("faults redis sentinel: bad input is one line and exit 2, before any op") {
  auto refused = [](std::map<std::string, std::string> opts, const std::string& faults) {
    return refused_job("redis", "set", std::move(opts), faults);
  };
  CHECK(refused({{"sentinel", "true"}}, "").find("--sentinel needs --replicas") != std::string::npos);
  CHECK(refused({}, "kill-primary@40%").find("kill-primary@40% needs --replicas N and --sentinel") !=
        std::string::npos);
  CHECK(refused({{"replicas", "1"}}, "kill-primary@40%").find("needs --replicas N and --sentinel") !=
        std::string::npos);
  CHECK(refused({{"replicas", "1"}, {"sentinel", "true"}, {"host", "10.0.0.1"}}, "").find("drop --host") !=
        std::string::npos);
  CHECK(refused({{"replicas", "1"}, {"sentinel", "true"}}, "stop@40%/1s").find("takes kill-primary") !=
        std::string::npos);
  CHECK(refused({{"replicas", "1"}, {"wait-replicas", "2"}}, "").find("--wait-replicas 2 needs --replicas 2") !=
        std::string::npos);
  CHECK(refused({}, "switchover@40%").find("switchover@40% needs --replicas N and --sentinel") != std::string::npos);
  // an external set-up: taken by its Sentinels, never signalled
  const std::string s3 = "127.0.0.1:1,127.0.0.1:2";
  CHECK(refused({{"sentinels", s3}}, "kill-primary@40%").find("cannot be signalled; it takes switchover") !=
        std::string::npos);
  CHECK(refused({{"sentinels", s3}, {"host", "10.0.0.1"}}, "").find("drop --host, --replicas and --sentinel") !=
        std::string::npos);
  CHECK(refused({{"sentinels", "127.0.0.1"}}, "").find("--sentinels expects HOST:PORT[,HOST:PORT...]") !=
        std::string::npos);
  CHECK(refused({{"sentinels", "127.0.0.1:26379,:5"}}, "").find("got ':5'") != std::string::npos);
  // none answers: a set-up error naming what each said, within the timeout
  CHECK(refused({{"sentinels", s3}}, "").find("no Sentinel named the primary of mymaster") != std::string::npos);
}

// ---- PostgreSQL: the server it starts, and a primary with streaming replicas ----

namespace {
// INSERTs (a row per write, key = its seq) at -c 4 on a PostgreSQL of the job's own, `seconds`
// long with the faults given.
JobResult pg_fault(const std::string& faults, std::map<std::string, std::string> opts, double seconds = 6,
                   double timeout_s = 8) {
  return fault_run("postgres", faults, std::move(opts), seconds, timeout_s, "insert");
}
}  // namespace

// synchronous_commit on, fsync on: each commit's WAL flushed before it is acknowledged, so a kill
// and a restart on the same data directory lose none; the clients reconnect by themselves. (A
// restart is a start-up and a crash recovery: seconds on a loaded machine, so a longer run.)
TEST_CASE("faults postgres: restarted mid-run: a short window, ops after it, nothing acknowledged lost") {
  JobResult r = pg_fault("restart@30%", {}, 10);
  REQUIRE_MESSAGE(r.state == JobResult::State::Done, r.message);
  REQUIRE(r.faults.size() == 1);
  const FaultResult& f = r.faults[0];
  CHECK_MESSAGE(f.error.empty(), f.error);
  CHECK(f.back);
  CHECK(f.window_s() > 0);
  CHECK(f.window_s() < 6.5);
  CHECK(f.window_end_s >= f.done_s - 0.05);  // none answered before it was up again
  CHECK(failed(f) > 0);
  CHECK(f.ops_after > 0);
  CHECK_MESSAGE(f.lost == 0, f.lost_note);
  CHECK(exit_of(r) == 0);
}

TEST_CASE("faults postgres: SIGSTOP of the postmaster and its backends for 1.5 s: the window covers it") {
  JobResult r = pg_fault("stop@30%/1500ms", {});
  REQUIRE_MESSAGE(r.state == JobResult::State::Done, r.message);
  REQUIRE(r.faults.size() == 1);
  const FaultResult& f = r.faults[0];
  CHECK_MESSAGE(f.error.empty(), f.error);
  CHECK(f.window_s() >= 1.4);
  // A backend may finish its commit while the others are being stopped, one signal at a time.
  CHECK(f.window_start_s <= f.at_s + 0.05);
  CHECK(f.window_end_s >= f.done_s - 0.05);
  CHECK(f.ops_after > 0);
  CHECK_MESSAGE(f.lost == 0, f.lost_note);
}

TEST_CASE("faults postgres: cut@40%/2s through the proxy: the clients reconnect over TCP after it") {
  JobResult r = pg_fault("cut@40%/2s", {});
  const FaultResult& f = check_cut(r);
  CHECK_MESSAGE(f.lost == 0, f.lost_note);  // a cut connection's commit is in doubt, never lost
}

// A primary, `replicas` streaming replicas, mwbench watching the primary (1 s without an answer):
// kill-primary at 40% of an 8 s run; the replica with the most WAL is promoted and the clients,
// naming every node and asking for a read-write session, find it.
namespace {
JobResult pg_failover(std::map<std::string, std::string> opts) {
  JobResult r = pg_fault("kill-primary@40%", std::move(opts), 8, 10);
  const FaultResult& f = ridden_out(r, "kill-primary");
  CHECK(f.window_s() > 0.5);  // a second without an answer before the failover starts
  CHECK(f.window_s() < 7);
  CHECK(failed(f) > 0);
  CHECK_MESSAGE(f.promoted.rfind("replica ", 0) == 0, f.promoted);
  CHECK(r.server.at("replication").find("failover by mwbench") != std::string::npos);
  return r;
}
}  // namespace

// Asynchronous: a commit acknowledged before a replica has it may be lost: counted, not a failure.
TEST_CASE("faults postgres replica: asynchronous, kill-primary promotes the replica, lost writes counted") {
  JobResult r = pg_failover({{"replicas", "1"}});
  const FaultResult& f = r.faults[0];
  CHECK_MESSAGE(f.error.empty(), f.error);
  CHECK_MESSAGE(f.lost >= 0, f.lost_note);
  CHECK(static_cast<uint64_t>(std::max<int64_t>(f.lost, 0)) <= r.ops_ok);
  REQUIRE(r.contract);
  CHECK(r.contract->kind == ContractKind::FsyncPerAck);
  CHECK(r.server.at("replication").find("asynchronous") != std::string::npos);
  CHECK(exit_of(r) == 0);
}

// remote_apply with a synchronous replica: each commit applied on it before it is acknowledged, so
// the promoted replica holds every acknowledged write (a loss would fail the job).
TEST_CASE("faults postgres replica: remote_apply, kill-primary loses no acknowledged write") {
  JobResult r = pg_failover({{"replicas", "1"}, {"synchronous-commit", "remote_apply"}});
  const FaultResult& f = r.faults[0];
  CHECK_MESSAGE(f.error.empty(), f.error);
  CHECK_MESSAGE(f.lost == 0, f.lost_note);
  REQUIRE(r.contract);
  CHECK(r.contract->kind == ContractKind::Replicated);
  CHECK(r.contract->detail.find("applied on") != std::string::npos);
  CHECK(r.server.at("replication").find("1 synchronous") != std::string::npos);
  CHECK(exit_of(r) == 0);
}

// switchover at 40% of an 8 s asynchronous run: the primary shut down cleanly ships its WAL to the
// replica before it is promoted, so nothing acknowledged is lost even without synchronous commit;
// the old primary then streams from the new one (the fault fails if it does not).
TEST_CASE(
    "faults postgres replica: switchover promotes the replica, nothing acknowledged lost, the old primary rejoins") {
  JobResult r = pg_fault("switchover@40%", {{"replicas", "1"}}, 8, 10);
  const FaultResult& f = ridden_out(r, "switchover");
  CHECK(f.window_s() > 0);
  CHECK(f.window_s() < 7);
  CHECK_MESSAGE(f.promoted.rfind("replica 1 ", 0) == 0, f.promoted);
  CHECK_MESSAGE(f.lost == 0, f.lost_note);
  CHECK(exit_of(r) == 0);
}

TEST_CASE("faults postgres replica: bad input is one line and exit 2, before any op") {
  auto refused = [](std::map<std::string, std::string> opts, const std::string& faults, const char* op = "insert") {
    return refused_job("postgres", op, std::move(opts), faults);
  };
  CHECK(refused({}, "kill-primary@40%").find("kill-primary@40% needs --replicas N") != std::string::npos);
  CHECK(refused({}, "switchover@40%").find("switchover@40% needs --replicas N") != std::string::npos);
  CHECK(refused({{"replicas", "1"}}, "restart@40%").find("takes kill-primary") != std::string::npos);
  CHECK(refused({{"replicas", "1"}, {"host", "10.0.0.1"}}, "").find("drop --host") != std::string::npos);
  CHECK(refused({{"replicas", "1"}, {"sync-replicas", "2"}}, "").find("--sync-replicas 2 needs --replicas 2") !=
        std::string::npos);
  CHECK(refused({}, "restart@40%", "produce").find("not the queue op produce") != std::string::npos);
}
