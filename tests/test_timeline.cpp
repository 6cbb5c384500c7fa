// The timeline against real servers started here on free loopback ports: a redis-server that
// snapshots every 2 s, one stopped by SIGSTOP for 1.5 s, one whose core a CPU hog takes, an idle
// one; every episode read back from the result file as written.
#include <doctest/doctest.h>
#include <hiredis/hiredis.h>
#include <sched.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <nlohmann/json.hpp>
#include <thread>

#include "adapters/redis/queues.h"
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
  for (auto& e : r.episodes)
    if (e.start_s <= 1.5 && e.end_s >= 2.5) stop = &e;
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
        for (volatile uint64_t spin = 0;; spin = spin + 1) {}
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
  CHECK(r.episodes.empty());
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
