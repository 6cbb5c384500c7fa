// Redis adapter against real redis-servers started here on free loopback ports.
#include <doctest/doctest.h>
#include <hiredis/hiredis.h>
#include <signal.h>

#include <chrono>
#include <thread>

#include "driver.h"
#include "helpers.h"
#include "runner.h"
#include "services.h"

using namespace mw;

namespace {

ServiceSpec plain_redis(std::vector<std::string> extra = {}) {
  ServiceSpec s;
  s.name = "redis-server";
  s.binary = "redis-server";
  s.args = {"--port", "{port}", "--bind", "127.0.0.1", "--dir", "{dir}", "--save", "", "--appendonly", "no",
            "--logfile", "redis.log"};
  s.args.insert(s.args.end(), extra.begin(), extra.end());
  s.probe = [](int port) -> std::string {
    redisContext* c = redisConnect("127.0.0.1", port);
    bool ok = c && !c->err;
    redisFree(c);
    return ok ? "" : "not yet";
  };
  return s;
}

Job redis_job(const std::string& op, uint64_t n, int clients = 1, int pipeline = 1) {
  Job j = test::make_job("redis", op, n, clients);
  j.pipeline = pipeline;
  j.opts["keyspace"] = "1000";
  return j;
}

Job external(Job j, int port) {
  j.opts["host"] = "127.0.0.1";
  j.opts["port"] = std::to_string(port);
  return j;
}

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace

TEST_CASE("redis: set, get and ping on a managed server, every reply checked") {
  for (auto [c, p] : {std::pair{1, 1}, std::pair{8, 1}, std::pair{4, 16}}) {
    for (const char* op : {"set", "get", "ping"}) {
      CAPTURE(op);
      CAPTURE(c);
      CAPTURE(p);
      Job j = redis_job(op, 5000, c, p);
      j.opts["value-size"] = "100";
      j.warmup_ops = 100;
      JobResult r = run_one(j);
      CHECK(r.state == JobResult::State::Done);
      CHECK(r.message == "");
      CHECK(r.ops_ok == 5000);
      CHECK(r.ops_failed == 0);
      CHECK(r.ops_not_run == 0);
      CHECK(r.rps == doctest::Approx(5000 / r.elapsed_s));
      CHECK(r.server.at("managed") == "yes");
      CHECK(r.server.at("version").size() >= 5);
      CHECK(r.target.rfind("127.0.0.1:", 0) == 0);
      if (std::string(op) == "set") {
        CHECK(r.verify.checked);
        CHECK(r.verify.ok);
        CHECK(r.verify.detail.find(" keys read back hold the value that was set") != std::string::npos);
      }
    }
  }
  stop_shared_services();
}

TEST_CASE("redis: a GET that finds another value is a Mismatch, a missing key NotFound") {
  Service srv(plain_redis());
  Job j = external(redis_job("get", 1000), srv.port());
  auto a = find_adapter("redis")->make(j);
  a->prepare(j);  // loads keys 0..999
  redisContext* c = redisConnect("127.0.0.1", srv.port());
  for (int k = 0; k < 10; ++k) freeReplyObject(redisCommand(c, "SET mwbench:%03d other", k));
  freeReplyObject(redisCommand(c, "DEL mwbench:999"));
  redisFree(c);
  JobResult r;
  measure(j, *a, r);
  CHECK(r.errors[static_cast<int>(Status::Mismatch)] == 10);
  CHECK(r.errors[static_cast<int>(Status::NotFound)] == 1);
  CHECK(r.ops_ok == 989);
  REQUIRE(!r.error_samples.empty());
  CHECK(r.error_samples[0] == "Mismatch: GET mwbench:000 returned a value that was not set (5 bytes)");
}

TEST_CASE("redis: an unreachable port is a clear set-up error naming host:port") {
  int port = free_port();
  JobResult r = run_one(external(redis_job("ping", 10), port));
  CHECK(r.state == JobResult::State::SetupFailed);
  CHECK(r.message == "redis 127.0.0.1:" + std::to_string(port) + ": cannot connect: Connection refused");
}

TEST_CASE("redis: password from the environment; wrong or missing password is a clear error") {
  Service srv(plain_redis({"--requirepass", "s3cret"}));
  Job j = external(redis_job("set", 200), srv.port());
  j.opts["password-env"] = "MWBENCH_TEST_REDIS_PW";
  unsetenv("MWBENCH_TEST_REDIS_PW");
  JobResult r = run_one(j);
  CHECK(r.state == JobResult::State::SetupFailed);
  CHECK(r.message.find("the server wants a password") != std::string::npos);
  setenv("MWBENCH_TEST_REDIS_PW", "wrong", 1);
  r = run_one(j);
  CHECK(r.state == JobResult::State::SetupFailed);
  CHECK(r.message.find("redis 127.0.0.1:" + std::to_string(srv.port()) + ": AUTH failed: WRONGPASS") == 0);
  CHECK(r.message.find(": wrong") == std::string::npos);  // never echoes the password
  setenv("MWBENCH_TEST_REDIS_PW", "s3cret", 1);
  j.pipeline = 8;
  r = run_one(j);
  CHECK(r.ops_ok == 200);
  CHECK(r.verify.ok);
  unsetenv("MWBENCH_TEST_REDIS_PW");
}

TEST_CASE("redis: a server killed mid-run: failures counted, the rest not run, no hang") {
  Service srv(plain_redis());
  Job j = external(redis_job("set", 50'000'000, 4, 8), srv.port());
  std::thread killer([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    kill(srv.pid(), SIGKILL);
  });
  auto t0 = std::chrono::steady_clock::now();
  JobResult r = run_one(j);
  killer.join();
  CHECK(seconds_since(t0) < 10);
  CHECK(r.ops_ok > 0);
  CHECK(r.ops_failed <= 32);  // at most the requests in flight
  CHECK(r.ops_ok + r.ops_failed + r.ops_not_run == 50'000'000);
  CHECK(r.ops_not_run > 0);
  CHECK(r.failed());
  bool named = false;
  for (auto& s : r.error_samples) named |= s.find("127.0.0.1:" + std::to_string(srv.port())) != std::string::npos;
  CHECK((r.ops_failed == 0 || named));
}

TEST_CASE("redis: a server that stops answering: requests time out, no hang") {
  Service srv(plain_redis());
  Job j = external(redis_job("ping", 1'000'000, 2, 4), srv.port());
  j.timeout_s = 0.5;
  std::thread freezer([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    kill(srv.pid(), SIGSTOP);
  });
  auto t0 = std::chrono::steady_clock::now();
  JobResult r = run_one(j);
  freezer.join();
  kill(srv.pid(), SIGCONT);
  CHECK(seconds_since(t0) < 5);
  CHECK(r.errors[static_cast<int>(Status::Timeout)] > 0);
  CHECK(r.errors[static_cast<int>(Status::Timeout)] <= 8);
  CHECK(r.ops_not_run > 0);
}
