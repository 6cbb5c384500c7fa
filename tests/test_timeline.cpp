// The timeline against real servers started here on free loopback ports: a redis-server that
// snapshots every 2 s, one stopped by SIGSTOP for 1.5 s, one whose core a CPU hog takes, an idle
// one; a PostgreSQL checkpointing often, a RocksDB whose writes stall; every episode read back
// from the result file as written. And the probes' parsers on the servers' own text.
#include <doctest/doctest.h>
#include <hiredis/hiredis.h>
#include <sched.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <thread>

#include "adapters/redis/events.h"
#include "adapters/redis/queues.h"
#if MWBENCH_WITH_POSTGRES
#include "adapters/postgres/pg.h"
#endif
#if MWBENCH_WITH_NATS
#include "adapters/nats/server.h"
#endif
#if MWBENCH_WITH_GEARMAN
#include "adapters/gearman/gearman.h"
#endif
#include "core/runner.h"
#include "results/results.h"
#include "results/writer.h"
#include "services/services.h"
#include "tests/helpers.h"

using namespace mw;

namespace {

// The managed server's spec (no persistence), with `extra` arguments after its own (the last wins).
ServiceSpec redis_spec(std::vector<std::string> extra = {}) {
  ServiceSpec s = redis::service_of(test::make_job("redis", "set", 0));
  s.args.insert(s.args.end(), extra.begin(), extra.end());
  return s;
}

// A job on the external server at `port`, for `seconds`, with intervals of 100 ms.
Job redis_job(int port, const std::string& op, double seconds, int clients, int pipeline) {
  Job j = test::make_job("redis", op, 0, clients);
  j.pipeline = pipeline;
  j.duration_s = seconds;
  j.interval_s = 0.1;
  j.opts["host"] = "127.0.0.1";
  j.opts["port"] = std::to_string(port);
  return j;
}

// The job as the result file holds it, read back: what every test here judges.
JobResult written_and_read(const JobResult& r) {
  RunResult run;
  run.suite = "timeline";
  run.jobs = {r};
  RunResult back = parse_result_json(nlohmann::json::parse(to_json(run).dump()), "timeline.json");
  REQUIRE(back.jobs.size() == 1);
  const JobResult& b = back.jobs[0];
  CHECK(b.episodes_judged == r.episodes_judged);
  REQUIRE(b.episodes.size() == r.episodes.size());
  for (size_t i = 0; i < b.episodes.size(); ++i) {
    CHECK(b.episodes[i].what == r.episodes[i].what);
    CHECK(b.episodes[i].causes.size() == r.episodes[i].causes.size());
  }
  CHECK(b.events.size() == r.events.size());
  return b;
}

// Every episode in words, for the test's messages.
std::string story(const JobResult& r) {
  std::string s;
  for (auto& e : r.episodes) {
    s += std::to_string(e.start_s) + "-" + std::to_string(e.end_s) + " s: " + e.what + ":";
    for (auto& c : e.causes) s += " [" + c.source + " " + c.event + ": " + c.evidence + "]";
    s += e.unexplained + "\n";
  }
  return s.empty() ? "no episode" : s;
}

bool any_cause(const JobResult& r, const std::vector<std::string>& events, const std::string& source = "") {
  for (auto& e : r.episodes)
    for (auto& c : e.causes)
      if ((source.empty() || c.source == source) && std::find(events.begin(), events.end(), c.event) != events.end())
        return true;
  return false;
}

// Whether one of `events` of `source` was seen (a nonzero reading) in the job's timeline.
bool any_event(const JobResult& r, const std::vector<std::string>& events, const std::string& source) {
  for (auto& t : r.events)
    if (t.source == source && std::find(events.begin(), events.end(), t.name) != events.end())
      for (double v : t.values)
        if (v > 0) return true;
  return false;
}

// Every episode's first cause is the machine's CPU load (mwbench's or the server's threads waiting for a CPU, the
// machine's CPU pressure): the run's noise outweighed whatever the server did.
bool cpu_bound_episodes(const JobResult& r) {
  for (auto& e : r.episodes)
    if (e.causes.empty() || (e.causes[0].event != "cpu_wait" && e.causes[0].event != "process_cpu_wait" &&
                             e.causes[0].event != "psi_cpu_some" && e.causes[0].event != "steal"))
      return false;
  return true;
}

// The event was read in the timeline; an episode, when the machine let the event show in the
// latency (not every run on a busy 2-core machine does: the run's own noise can be as large, and
// then its episodes are the CPU load's), names it.
void event_seen_and_named(const JobResult& r, const std::vector<std::string>& events, const std::string& source) {
  CHECK(any_event(r, events, source));
  if (r.episodes.empty()) return;
  if (cpu_bound_episodes(r)) {
    MESSAGE("every episode was the machine's CPU load: whether one names the event is not judged");
    return;
  }
  CHECK(any_cause(r, events, source));
}

// The reading named `name` of `out`, or null.
const EventReading* reading(const std::vector<EventReading>& out, const std::string& name) {
  for (auto& r : out)
    if (r.name == name) return &r;
  return nullptr;
}

const std::vector<std::string> kSnapshot = {"rdb_bgsave_in_progress", "total_forks", "rdb_saves", "fork_ms"};

}  // namespace

TEST_CASE("timeline: redis-server saving every 2 s under 1 KB SETs: an episode names the snapshot; saving off, none") {
  for (bool saving : {true, false}) {
    CAPTURE(saving);
    // a data set whose fork and snapshot cost something: 300,000 keys of 1 KB before the run
    Service srv(redis_spec({"--save", saving ? "2 1" : "", "--enable-debug-command", "yes"}));
    redisContext* c = redisConnect("127.0.0.1", srv.port());
    REQUIRE(c);
    freeReplyObject(redisCommand(c, "DEBUG POPULATE 300000 mwbench:pre 1024"));
    redisFree(c);
    Job j = redis_job(srv.port(), "set", 5, 4, 8);
    j.opts["value-size"] = "1024";
    j.opts["keyspace"] = "300000";
    j.opts["keys"] = "random";
    const JobResult r = written_and_read(run_one(j));
    INFO(story(r));
    REQUIRE(r.state == JobResult::State::Done);
    CHECK(r.ops_failed == 0);
    REQUIRE(r.episodes_judged);
    if (saving)
      CHECK(any_cause(r, kSnapshot, "redis-server"));
    else
      CHECK_FALSE(any_cause(r, kSnapshot));
  }
}

TEST_CASE(
    "timeline: a redis-server stopped for 1.5 s: an episode covering it says it stopped answering and did not run") {
  Service srv(redis_spec({"--save", ""}));
  Job j = redis_job(srv.port(), "set", 4, 2, 4);
  std::thread freezer([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(1200));
    kill(srv.pid(), SIGSTOP);
    std::this_thread::sleep_for(std::chrono::milliseconds(1500));
    kill(srv.pid(), SIGCONT);
  });
  const JobResult r = written_and_read(run_one(j));
  freezer.join();
  INFO(story(r));
  REQUIRE(r.state == JobResult::State::Done);
  CHECK(r.ops_failed == 0);
  const Episode* stop = nullptr;
  // the stop's 1.5 s, measured from the phase's start, which a busy machine's set-up delays
  for (auto& e : r.episodes)
    if (e.start_s <= 2 && e.end_s - e.start_s >= 1.0 && !stop) stop = &e;
  REQUIRE(stop);
  CHECK(stop->throughput);
  REQUIRE_FALSE(stop->causes.empty());
  CHECK(stop->causes[0].source == "redis-server");
  CHECK(stop->causes[0].event == "stopped");
  CHECK(stop->causes[0].evidence.find("redis-server stopped answering and did not run") == 0);
}

TEST_CASE("timeline: a CPU hog on the server's core mid-run: CPU pressure or the server's wait for a CPU named") {
  REQUIRE(sysconf(_SC_NPROCESSORS_ONLN) >= 2);
  Service srv(redis_spec({"--save", ""}));
  cpu_set_t server_cpu, client_cpu, was;
  CPU_ZERO(&server_cpu);
  CPU_SET(1, &server_cpu);
  CPU_ZERO(&client_cpu);
  CPU_SET(0, &client_cpu);
  REQUIRE(sched_getaffinity(0, sizeof was, &was) == 0);
  REQUIRE(sched_setaffinity(srv.pid(), sizeof server_cpu, &server_cpu) == 0);
  REQUIRE(sched_setaffinity(0, sizeof client_cpu, &client_cpu) == 0);  // the driver's threads inherit it
  Job j = redis_job(srv.port(), "set", 4, 4, 4);
  std::vector<pid_t> hogs;
  std::thread starter([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(1500));
    for (int i = 0; i < 4; ++i) {
      const pid_t p = fork();
      if (p == 0) {
        sched_setaffinity(0, sizeof server_cpu, &server_cpu);
        for (uint64_t spin = 0;; ++spin) asm volatile("" : "+r"(spin));  // a core kept busy
      }
      hogs.push_back(p);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(1500));
    for (pid_t p : hogs)
      if (p > 0) kill(p, SIGKILL), waitpid(p, nullptr, 0);
  });
  const JobResult r0 = run_one(j);
  starter.join();
  sched_setaffinity(0, sizeof was, &was);
  const JobResult r = written_and_read(r0);
  INFO(story(r));
  REQUIRE(r.state == JobResult::State::Done);
  CHECK(any_cause(r, {"psi_cpu_some", "steal", "process_cpu_wait"}));
}

TEST_CASE("timeline: a quiet run on an idle server has no episode") {
  Service srv(redis_spec({"--save", ""}));
  Job j = redis_job(srv.port(), "set", 3, 2, 1);
  j.rate = 2000;
  const JobResult r = written_and_read(run_one(j));
  INFO(story(r));
  REQUIRE(r.state == JobResult::State::Done);
  CHECK(r.episodes_judged);
  // The machine's CPU pressure in the run's median interval (PSI: some task waiting for a CPU).
  // Where other work kept the client or the server waiting for a CPU for a stretch (a CI runner
  // running other jobs beside this one), that is a real episode, and it is said as such: its
  // first cause a wait for a CPU. An episode with no cause is allowed only where every interval
  // waited (the wait may not stand out then). Any other story is one where nothing happened.
  std::vector<double> psi;
  for (auto& t : r.events)
    if (t.name == "psi_cpu_some")
      for (double v : t.values)
        if (std::isfinite(v)) psi.push_back(v);
  std::sort(psi.begin(), psi.end());
  const double pressure = psi.empty() ? 0 : psi[psi.size() / 2];
  CAPTURE(pressure);
  for (auto& e : r.episodes) {
    if (e.causes.empty()) {
      CHECK(pressure >= 0.5);
      CHECK(e.unexplained.find("no event read moved with it") == 0);
    } else {
      CHECK(std::set<std::string>{"psi_cpu_some", "cpu_wait", "process_cpu_wait", "steal"}.count(e.causes[0].event));
    }
  }
  // the machine and the server's process were read every interval, the server's own events too
  bool machine = false, process = false, server = false;
  for (auto& t : r.events) {
    machine |= t.origin == "machine", process |= t.origin == "process", server |= t.origin == "server";
    CHECK(t.values.size() == r.series.size());
  }
  CHECK(machine);
  CHECK(process);
  CHECK(server);
}

#if MWBENCH_WITH_POSTGRES
TEST_CASE(
    "timeline: PostgreSQL checkpointing (a small max_wal_size, a CHECKPOINT) under updates: an episode names it") {
  // checkpoints every 32 MB of WAL, each written at once and synced: the updates' commits wait
  // behind its writes and flushes. A machine too busy for the updates to fill 32 MB in the run
  // still has one: a CHECKPOINT 2.5 s in (a requested one, as max_wal_size's are).
  ServiceSpec spec = pg::service_spec(true);
  for (const char* c : {"max_wal_size=32MB", "min_wal_size=32MB", "checkpoint_timeout=30s",
                        "checkpoint_completion_target=0", "shared_buffers=64MB", "log_checkpoints=on"})
    spec.args.insert(spec.args.end(), {"-c", c});
  Service srv(spec);
  Job j = test::make_job("postgres", "update", 0, 4);
  j.pipeline = 4;
  j.duration_s = 6;
  j.interval_s = 0.1;
  j.timeout_s = 5;
  j.opts = {{"host", "127.0.0.1"},  {"port", std::to_string(srv.port())},
            {"user", "postgres"},   {"database", "postgres"},
            {"value-size", "2000"}, {"keyspace", "20000"}};
  std::string refused;  // why the CHECKPOINT failed, if it did
  std::thread checkpoint([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(2500));
    try {
      pg::Endpoint ep;
      ep.params = {
          {"host", "127.0.0.1"}, {"port", std::to_string(srv.port())}, {"user", "postgres"}, {"dbname", "postgres"}};
      pg::Conn c(ep, pg::deadline(5));
      c.exec("CHECKPOINT", pg::deadline(30));
    } catch (const std::exception& e) {
      refused = e.what();
    }
  });
  const JobResult r0 = run_one(j);
  checkpoint.join();
  CHECK(refused == "");
  const JobResult r = written_and_read(r0);
  INFO(story(r));
  CAPTURE(r.message);
  REQUIRE(r.state == JobResult::State::Done);
  CHECK(r.ops_failed == 0);
  REQUIRE(r.episodes_judged);
  event_seen_and_named(r, {"checkpoints_requested", "checkpoints_timed", "checkpoint_buffers", "checkpoint_active"},
                       "postgres");
}
#endif

#if MWBENCH_WITH_ROCKSDB
TEST_CASE("timeline: RocksDB with a tiny write buffer and low level-0 triggers under puts: the write stall named") {
  Job j = test::make_job("rocksdb", "put", 0, 2);
  j.duration_s = 5;
  j.interval_s = 0.1;
  j.opts = {{"write-buffer-size", "262144"}, {"level0-slowdown", "2"}, {"level0-stop", "3"},
            {"value-size", "1024"},          {"keyspace", "1000000"},  {"keys", "random"}};
  const JobResult r = written_and_read(run_one(j));
  INFO(story(r));
  CAPTURE(r.message);
  REQUIRE(r.state == JobResult::State::Done);
  CHECK(r.ops_failed == 0);
  REQUIRE(r.episodes_judged);
  event_seen_and_named(r, {"write_stopped", "write_delayed", "stall_ms"}, "rocksdb");
}
#endif

TEST_CASE("timeline: the probes read the servers' own text: INFO, LATENCY LATEST, /varz, status") {
  double forks = NAN;
  std::vector<EventReading> a = redis::info_events(
      "# Persistence\r\nrdb_bgsave_in_progress:1\r\nrdb_saves:3\r\n# Stats\r\ntotal_forks:4\r\n"
      "latest_fork_usec:41000\r\nevicted_keys:x\r\n",
      forks);
  REQUIRE(reading(a, "rdb_bgsave_in_progress"));
  CHECK(reading(a, "rdb_bgsave_in_progress")->value == 1);
  CHECK(reading(a, "rdb_bgsave_in_progress")->kind == EventReading::Kind::Level);
  CHECK(reading(a, "total_forks")->kind == EventReading::Kind::Counter);
  CHECK_FALSE(reading(a, "evicted_keys"));   // not a number: left out
  CHECK(reading(a, "fork_ms")->value == 0);  // the first reading: no fork seen yet
  a = redis::info_events("total_forks:5\r\nlatest_fork_usec:41000\r\n", forks);
  CHECK(reading(a, "fork_ms")->value == doctest::Approx(41));  // a fork since: its time
  a = redis::info_events("total_forks:5\r\nlatest_fork_usec:41000\r\n", forks);
  CHECK(reading(a, "fork_ms")->value == 0);

  redis::Limits lim;
  std::map<std::string, double> spikes;
  std::vector<EventReading> out;
  const std::string first = "*1\r\n*4\r\n$7\r\ncommand\r\n:1000\r\n:48\r\n:48\r\n";
  REQUIRE(redis::latency_events(first, lim, spikes, out));
  REQUIRE(out.size() == 1);
  CHECK(out[0].name == "latency_command");
  CHECK(out[0].value == 0);  // its first reading: the time it had before the run
  out.clear();
  REQUIRE(redis::latency_events("*1\r\n*4\r\n$7\r\ncommand\r\n:1001\r\n:12\r\n:48\r\n", lim, spikes, out));
  CHECK(out[0].value == 12);  // a new spike
  out.clear();
  CHECK_FALSE(redis::latency_events("-ERR unknown command\r\n", lim, spikes, out));
  CHECK(out.empty());
  std::string many = "*40\r\n";  // a server's names: at most 32 kept, each printable
  for (int i = 0; i < 40; ++i) many += "*4\r\n$3\r\n\x1b" + std::to_string(10 + i) + "\r\n:1\r\n:1\r\n:1\r\n";
  std::map<std::string, double> none_yet;
  REQUIRE(redis::latency_events(many, lim, none_yet, out));
  CHECK(out.size() == 32);
  CHECK(out[0].name.find('\x1b') == std::string::npos);

#if MWBENCH_WITH_NATS
  out = nats::monitor_events(R"({"slow_consumers": 3, "mem": 10})", R"({"api": {"total": 9, "errors": 2}})");
  REQUIRE(out.size() == 2);
  CHECK(reading(out, "slow_consumers")->value == 3);
  CHECK(reading(out, "api_errors")->value == 2);
  CHECK(nats::monitor_events(R"({"slow_consumers": "3"})", "[1]").empty());
  CHECK(nats::monitor_events("not json", "").empty());
#endif
#if MWBENCH_WITH_GEARMAN
  out = gearman::status_events("a\t3\t1\t2\nb\t10\t0\t1\nbroken\tx\n.\n");
  CHECK(reading(out, "jobs_queued")->value == 13);
  CHECK(reading(out, "jobs_running")->value == 1);
  CHECK(reading(out, "workers")->value == 3);
#endif
}
