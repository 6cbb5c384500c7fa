// Redis adapter against real redis-servers started here on free loopback ports.
#include <arpa/inet.h>
#include <doctest/doctest.h>
#include <hiredis/hiredis.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
#include <mutex>
#include <nlohmann/json.hpp>
#include <set>
#include <thread>

#include "adapters/redis/conn.h"
#include "adapters/redis/reply.h"
#include "api/fault.h"
#include "core/driver.h"
#include "core/runner.h"
#include "results/notes.h"
#include "results/results.h"
#include "results/writer.h"
#include "services/services.h"
#include "tests/helpers.h"
#include "tests/reply_checks.h"

using namespace mw;

namespace {

ServiceSpec plain_redis(std::vector<std::string> extra = {}) {
  ServiceSpec s;
  s.name = "redis-server";
  s.binary = "redis-server";
  s.args = {"--port", "{port}", "--bind",       "127.0.0.1", "--dir",     "{dir}",
            "--save", "",       "--appendonly", "no",        "--logfile", "redis.log"};
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
  for (auto cp : {std::pair{1, 1}, std::pair{8, 1}, std::pair{4, 16}}) {
    const int c = cp.first, p = cp.second;  // not bindings: CAPTURE under clang 14
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
  auto a = test::make_adapter("redis", j);
  a->prepare(j);  // loads keys 0..999
  redisContext* c = redisConnect("127.0.0.1", srv.port());
  for (int k = 0; k < 10; ++k) freeReplyObject(redisCommand(c, "SET mwbench:%03d other", k));
  freeReplyObject(redisCommand(c, "DEL mwbench:999"));
  redisFree(c);
  JobResult r;
  r = measure(j, *a);
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

// ---- Replies without a socket: the bounded parser and the checker (hostile bytes) ----

namespace {

struct Fed {
  std::vector<Completion> done;
  std::vector<std::string> details;
  std::string fatal;
};

// Feeds `bytes` (in chunks of `chunk`) as the replies to `n` requests of `op`.
Fed feed(redis::Op op, const std::string& bytes, size_t n, size_t max_reply = 512 << 20, size_t chunk = 7) {
  static redis::KeySpace keys("mwbench:", 1000, false, 8);
  redis::Limits lim;
  lim.max_reply = max_reply;
  redis::ReplyChecker rc(keys, op, lim);
  for (uint64_t i = 0; i < n; ++i) rc.expect(i);
  Fed f;
  std::vector<Completion> out(64);
  for (size_t at = 0; at < bytes.size() && rc.fatal().empty(); at += chunk) {
    rc.feed(bytes.data() + at, std::min(chunk, bytes.size() - at));
    size_t k = rc.take(out, 0);
    for (size_t i = 0; i < k; ++i) {
      f.done.push_back(out[i]);
      f.details.emplace_back(out[i].result.detail);
    }
  }
  f.fatal = rc.fatal();
  return f;
}

std::string repeat(const std::string& s, int n) {
  std::string out;
  for (int i = 0; i < n; ++i) out += s;
  return out;
}

std::string value_of(uint64_t k) {
  static redis::KeySpace keys("mwbench:", 1000, false, 8);
  return keys.value(k);
}

}  // namespace

// --sentinel: a write a replica answers READONLY fails as Refused, and the connection is dropped so
// that the client asks the Sentinels for the primary again; without them it is one more error.
TEST_CASE("redis replies: READONLY fails as Refused and, following the Sentinels, drops the connection") {
  redis::KeySpace keys("mwbench:", 1000, false, 8);
  const std::string replies = "-READONLY You can't write against a read only replica.\r\n+OK\r\n";
  for (bool follow : {false, true}) {
    CAPTURE(follow);
    redis::ReplyChecker rc(keys, redis::Op::Set, redis::Limits{});
    if (follow) rc.follow_primary();
    rc.expect(0);
    rc.expect(1);
    rc.feed(replies.data(), replies.size());
    std::vector<Completion> out(4);
    const size_t k = rc.take(out, 0);
    REQUIRE(k == (follow ? 1u : 2u));
    CHECK(out[0].result.status == (follow ? Status::Refused : Status::Error));
    CHECK(std::string(out[0].result.detail).find("READONLY") == 0);
    CHECK(rc.fatal().empty() == !follow);
  }
}

// --wait-replicas 1: each SET's reply is followed by its WAIT's (the replicas that have it); the
// SET completes with the second, a success only when WAIT counts enough replicas.
TEST_CASE("redis replies: with --wait-replicas a SET is acknowledged once its WAIT counts the replicas") {
  redis::KeySpace keys("mwbench:", 1000, false, 8);
  redis::ReplyChecker rc(keys, redis::Op::Set, redis::Limits{});
  rc.wait_after_set(1);
  for (uint64_t i = 0; i < 3; ++i) rc.expect(i);
  const std::string replies = "+OK\r\n:1\r\n+OK\r\n:0\r\n-ERR no\r\n:1\r\n";
  std::vector<Completion> out(4);
  size_t k = 0;
  for (char c : replies) {  // a byte at a time: a SET's reply and its WAIT's come apart
    rc.feed(&c, 1);
    k = rc.take(out, k);
  }
  REQUIRE(k == 3);
  CHECK(out[0].result.status == Status::Ok);
  CHECK(out[1].result.status == Status::Timeout);
  CHECK(std::string(out[1].result.detail) == "WAIT: 0 of 1 replicas had the write in time");
  CHECK(out[2].result.status == Status::Error);
  CHECK(rc.pending().empty());
}

TEST_CASE("redis replies: valid replies in any chunking complete their requests") {
  std::string two_gets = "$8\r\n" + value_of(0) + "\r\n$8\r\n" + value_of(1) + "\r\n";
  for (size_t chunk : {1, 3, 7, 1000}) {
    CAPTURE(chunk);
    Fed f = feed(redis::Op::Get, two_gets, 2, 512 << 20, chunk);
    REQUIRE(f.done.size() == 2);
    CHECK(f.done[0].result.status == Status::Ok);
    CHECK(f.done[1].result.status == Status::Ok);
    CHECK(f.fatal == "");
    f = feed(redis::Op::Ping, "+PONG\r\n+PONG\r\n+PONG\r\n", 3, 512 << 20, chunk);
    CHECK(f.done.size() == 3);
    f = feed(redis::Op::Set, "+OK\r\n-NOPERM this user has no permissions to run the 'set' command\r\n", 2, 512 << 20,
             chunk);
    REQUIRE(f.done.size() == 2);
    CHECK(f.done[1].result.status == Status::Error);
    CHECK(f.details[1] == "NOPERM this user has no permissions to run the 'set' command");
  }
  Fed f = feed(redis::Op::Get, "$-1\r\n$8\r\n" + value_of(5) + "\r\n", 2);
  REQUIRE(f.done.size() == 2);
  CHECK(f.done[0].result.status == Status::NotFound);
  CHECK(f.done[1].result.status == Status::Mismatch);  // key 1's value is not key 5's
}

TEST_CASE("redis replies: hostile bytes end in a counted failure or a fatal reason, never growth or a crash") {
  struct Case {
    const char* name;
    std::string bytes;
    std::string fatal;          // substring of the fatal reason; "" when none
    Status first = Status::Ok;  // status of the first completion when there is one
  };
  std::vector<Case> cases = {
      // class 2: sizes over the limit fail at the length line, before any byte is buffered
      {"huge bulk", "$2000000000\r\n" + std::string(100000, 'x'),
       "reply larger than --max-reply (536870912 bytes): a bulk of 2000000000 bytes"},
      {"bulk over a small cap", "$2048\r\n" + std::string(2050, 'x'), "a bulk of 2048 bytes"},
      {"int64 max bulk", "$9223372036854775807\r\n", "protocol error: bad bulk length"},
      {"huge array", "*2000000000\r\n:1\r\n", "reply larger than 1024 array elements"},
      {"array of bulks over the cap", "*1000\r\n" + repeat("$1000\r\n" + std::string(1000, 'y') + "\r\n", 1000),
       "reply larger than --max-reply (100000 bytes)"},
      {"endless line", "+" + std::string(70000, 'a'), "a reply line longer than 65536 bytes"},
      {"deep nesting", repeat("*1\r\n", 20), "nested deeper than 8"},
      // protocol garbage
      {"unknown type", "hello\r\n", "protocol error: unknown reply type h"},
      {"NUL byte", std::string("\0\1\2", 3), "unknown reply type \\x00"},
      {"bare LF", "+OK\n", "not ended by CRLF"},
      {"negative bulk", "$-2\r\n", "bad bulk length '-2'"},
      {"letters as length", "$abc\r\n", "bad bulk length 'abc'"},
      {"empty length", "$\r\n", "bad bulk length ''"},
      {"bulk without CRLF", "$3\r\nabcXY", "a bulk not ended by CRLF"},
      {"bad integer", ":12a\r\n", "bad integer '12a'"},
      {"RESP3 map", "%1\r\n+a\r\n+b\r\n", "unknown reply type %"},
      // class 10: replies nobody asked for
      {"extra reply", "+PONG\r\n+PONG\r\n", "unexpected reply '+PONG' with no request waiting"},
      {"extra error", "+PONG\r\n-ERR \xff\r\n", "unexpected reply '-ERR \\xff' with no request waiting"},
      // class 1: server text is escaped before it becomes a detail
      {"invalid UTF-8 error", "-ERR \xff\xfe\r\n", "", Status::Error},
      {"wrong type", ":1\r\n", "", Status::Mismatch},
      {"nil array", "*-1\r\n", "", Status::Mismatch},
  };
  for (auto& c : cases) {
    CAPTURE(c.name);
    size_t cap = std::string(c.name) == "bulk over a small cap"
                     ? 1024
                     : (std::string(c.name) == "array of bulks over the cap" ? 100000 : 512 << 20);
    test::check_hostile_outcome(feed(redis::Op::Ping, c.bytes, 1, cap, 4096), c.fatal, c.first);
  }
  CHECK(feed(redis::Op::Ping, "-ERR \xff\xfe\r\n", 1).details.at(0) == "ERR \\xff\\xfe");
}

// ---- Hostile servers: faults a real redis-server cannot show ----

namespace {

// A Redis impostor on a free loopback port. It answers the set-up commands as redis does
// (PING, INFO, CONFIG, AUTH) unless `handler` takes the command first (returns true); every
// other command goes to `handler` too, which writes what it likes, or nothing.
class HostileRedis {
 public:
  using Handler = std::function<bool(int fd, const std::vector<std::string>& argv)>;
  explicit HostileRedis(Handler h) : handler_(std::move(h)) {
    lfd_ = test::listen_loopback(64, port);
    REQUIRE(lfd_ >= 0);
    acceptor_ = std::thread([this] { accept_loop(); });
  }
  ~HostileRedis() {
    stop_ = true;
    acceptor_.join();
    {
      std::lock_guard lk(mu_);
      for (int fd : fds_) shutdown(fd, SHUT_RDWR);  // unblocks a handler stuck in send
    }
    for (auto& t : conns_) t.join();
    for (int fd : fds_) close(fd);
    close(lfd_);
  }
  bool stopping() const { return stop_; }
  int port = 0;

  // Sends everything, unless the peer is gone or the server stops.
  static bool send_all(int fd, const std::string& s) {
    size_t off = 0;
    while (off < s.size()) {
      ssize_t n = send(fd, s.data() + off, s.size() - off, MSG_NOSIGNAL);
      if (n <= 0) return false;
      off += static_cast<size_t>(n);
    }
    return true;
  }

 private:
  void accept_loop() {
    while (!stop_) {
      pollfd p{lfd_, POLLIN, 0};
      if (poll(&p, 1, 20) != 1) continue;
      int fd = accept4(lfd_, nullptr, nullptr, SOCK_CLOEXEC);
      if (fd < 0) continue;
      std::lock_guard lk(mu_);
      fds_.push_back(fd);
      conns_.emplace_back([this, fd] { serve(fd); });
    }
  }
  // One RESP command (an array of bulks) from the front of buf, if complete.
  static bool next_command(std::string& buf, std::vector<std::string>& argv) {
    argv.clear();
    size_t at = 0;
    auto line = [&](std::string& out) {
      size_t e = buf.find("\r\n", at);
      if (e == std::string::npos) return false;
      out = buf.substr(at, e - at);
      at = e + 2;
      return true;
    };
    std::string l;
    if (!line(l) || l.empty() || l[0] != '*') return false;
    int n = std::atoi(l.c_str() + 1);
    for (int i = 0; i < n; ++i) {
      if (!line(l)) return false;
      size_t len = static_cast<size_t>(std::atol(l.c_str() + 1));
      if (buf.size() < at + len + 2) return false;
      argv.push_back(buf.substr(at, len));
      at += len + 2;
    }
    buf.erase(0, at);
    return true;
  }
  void serve(int fd) {
    serve_until_hangup(fd);
    std::lock_guard lk(mu_);  // the peer hung up: close our end (fds of this process are counted)
    fds_.erase(std::find(fds_.begin(), fds_.end(), fd));
    close(fd);
  }
  void serve_until_hangup(int fd) {
    std::string buf;
    std::vector<std::string> argv;
    char tmp[65536];
    while (!stop_) {
      pollfd p{fd, POLLIN, 0};
      if (poll(&p, 1, 20) != 1) continue;
      ssize_t n = read(fd, tmp, sizeof tmp);
      if (n <= 0) return;
      buf.append(tmp, static_cast<size_t>(n));
      while (!stop_ && next_command(buf, argv)) {
        if (handler_(fd, argv)) continue;
        const std::string& c = argv[0];
        if (c == "PING")
          send_all(fd, "+PONG\r\n");
        else if (c == "AUTH")
          send_all(fd, "+OK\r\n");
        else if (c == "INFO")
          send_all(fd, "$29\r\nredis_version:7.0.0-hostile\r\n\r\n");
        else if (c == "CONFIG")
          send_all(fd, "*2\r\n$4\r\nsave\r\n$0\r\n\r\n");
      }
    }
  }

  Handler handler_;
  int lfd_ = -1;
  std::atomic<bool> stop_{false};
  std::thread acceptor_;
  std::mutex mu_;
  std::vector<std::thread> conns_;
  std::vector<int> fds_;
};

long vm_rss_kb() {
  std::ifstream f("/proc/self/status");
  std::string line;
  while (std::getline(f, line))
    if (line.rfind("VmRSS:", 0) == 0) return std::atol(line.c_str() + 6);
  return -1;
}

size_t open_fds() {
  size_t n = 0;
  for ([[maybe_unused]] auto& e : std::filesystem::directory_iterator("/proc/self/fd")) ++n;
  return n;
}

bool has_sample(const JobResult& r, const std::string& part) {
  for (auto& s : r.error_samples)
    if (s.find(part) != std::string::npos) return true;
  return false;
}

std::string samples(const JobResult& r) {
  std::string s = r.message;
  for (auto& e : r.error_samples) s += " | " + e;
  return s;
}

}  // namespace

TEST_CASE("redis hostile (class 2): a $2000000000 reply streamed forever fails at once, memory stays flat") {
  HostileRedis srv([](int fd, const std::vector<std::string>& argv) {
    if (argv[0] != "SET") return false;
    if (!HostileRedis::send_all(fd, "$2000000000\r\n")) return true;
    std::string chunk(65536, 'x');
    for (int i = 0; i < 20000 && HostileRedis::send_all(fd, chunk); ++i) {  // up to 1.3 GB, until we hang up
    }
    return true;
  });
  for (int pipeline : {1, 3}) {
    CAPTURE(pipeline);
    Job j = external(redis_job("set", 3, 1, pipeline), srv.port);
    j.timeout_s = 2;
    long rss0 = vm_rss_kb();
    auto t0 = std::chrono::steady_clock::now();
    JobResult r = run_one(j);
    CHECK(seconds_since(t0) < 1.5);
    CHECK(vm_rss_kb() - rss0 < 100 * 1024);
    INFO(samples(r));
    CHECK(r.state == JobResult::State::Done);
    CHECK(r.ops_ok == 0);
    CHECK(r.ops_failed >= 1);
    CHECK(r.ops_failed + r.ops_not_run == 3);
    CHECK(
        has_sample(r, "Error: reply larger than --max-reply (536870912 bytes): a bulk of 2000000000 bytes (127.0.0.1:" +
                          std::to_string(srv.port) + ")"));
  }
}

TEST_CASE("redis hostile (class 2): set-up reads are capped and bounded by the timeout") {
  SUBCASE("INFO answered with a bulk of 2000000000 bytes, streamed") {
    HostileRedis srv([](int fd, const std::vector<std::string>& argv) {
      if (argv[0] != "INFO") return false;
      HostileRedis::send_all(fd, "$2000000000\r\n");
      for (int i = 0; i < 20000 && HostileRedis::send_all(fd, std::string(65536, 'i')); ++i) {}
      return true;
    });
    long rss0 = vm_rss_kb();
    auto t0 = std::chrono::steady_clock::now();
    JobResult r = run_one(external(redis_job("set", 3), srv.port));
    CHECK(seconds_since(t0) < 1.5);
    CHECK(vm_rss_kb() - rss0 < 100 * 1024);
    CHECK(r.state == JobResult::State::SetupFailed);
    CHECK(r.message ==
          "redis 127.0.0.1:" + std::to_string(srv.port) +
              ": reply larger than --max-reply (536870912 bytes): a bulk of 2000000000 bytes (answer to INFO)");
  }
  SUBCASE("INFO trickled one byte every 50 ms: the timeout bounds the whole reply") {
    HostileRedis srv([&](int fd, const std::vector<std::string>& argv) {
      if (argv[0] != "INFO") return false;
      HostileRedis::send_all(fd, "$1000\r\n");
      for (int i = 0; i < 100 && HostileRedis::send_all(fd, "i"); ++i)
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
      return true;
    });
    Job j = external(redis_job("set", 3), srv.port);
    j.timeout_s = 1;
    auto t0 = std::chrono::steady_clock::now();
    JobResult r = run_one(j);
    CHECK(seconds_since(t0) < 1.8);
    CHECK(r.state == JobResult::State::SetupFailed);
    CHECK(r.message == "redis 127.0.0.1:" + std::to_string(srv.port) + ": no answer to INFO within the timeout (1s)");
  }
  SUBCASE("a server that accepts and never answers: the handshake PING times out") {
    HostileRedis srv([](int, const std::vector<std::string>&) { return true; });
    Job j = external(redis_job("ping", 100000), srv.port);
    j.timeout_s = 1;
    auto t0 = std::chrono::steady_clock::now();
    JobResult r = run_one(j);
    CHECK(seconds_since(t0) < 1.8);
    CHECK(r.state == JobResult::State::SetupFailed);
    CHECK(r.message == "redis 127.0.0.1:" + std::to_string(srv.port) + ": no answer to PING within the timeout (1s)");
  }
}

TEST_CASE("redis (class 2): --max-reply caps replies of a real server; each over-size GET is a counted failure") {
  Service srv(plain_redis());
  Job j = external(redis_job("get", 40, 2, 4), srv.port());
  j.opts["value-size"] = "2000";
  j.opts["max-reply"] = "1k";
  JobResult r = run_one(j);
  INFO(samples(r));
  CHECK(r.state == JobResult::State::Done);
  CHECK(r.ops_ok == 0);
  CHECK(r.ops_failed >= 2);  // the requests in flight when the first over-size reply came
  CHECK(r.ops_failed + r.ops_not_run == 40);
  CHECK(has_sample(r, "Error: reply larger than --max-reply (1024 bytes): a bulk of 2000 bytes"));
  j.opts["max-reply"] = "0";
  r = run_one(j);
  CHECK(r.state == JobResult::State::SetupFailed);
  CHECK(r.message == "--max-reply: max-reply expects a whole number from 1 to 4G (k, M, G suffixes allowed), got '0'");
}

TEST_CASE("redis (class 3): a SIGSTOPped server ends the run within about one timeout plus the probe") {
  Service srv(plain_redis());
  // Enough ops that the server is stopped mid-run even on a fast idle machine (a smaller count was
  // all done before the stop on one, and the test saw no timeout).
  Job j = external(redis_job("set", 20'000'000, 4, 8), srv.port());
  j.timeout_s = 1;
  std::thread freezer([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    kill(srv.pid(), SIGSTOP);
  });
  auto t0 = std::chrono::steady_clock::now();
  JobResult r = run_one(j);
  double took = seconds_since(t0);
  freezer.join();
  kill(srv.pid(), SIGCONT);
  INFO(samples(r));
  CHECK(took < 3.2);
  CHECK(r.state == JobResult::State::Done);
  CHECK(r.errors[static_cast<int>(Status::Timeout)] > 0);
  CHECK(r.errors[static_cast<int>(Status::Timeout)] <= 32);  // what was in flight
  CHECK(r.ops_not_run > 0);
  CHECK(r.ops_ok + r.ops_failed + r.ops_not_run == 20'000'000);
  CHECK(has_sample(r, "Timeout: no reply within the timeout (127.0.0.1:" + std::to_string(srv.port()) +
                          "); a fresh connection failed too, the server is considered lost: redis 127.0.0.1:" +
                          std::to_string(srv.port()) + ": no answer to PING within the timeout (1s)"));
}

TEST_CASE("redis (class 3): a stall that fresh connections see through: the client reconnects and finishes") {
  // CLIENT PAUSE WRITE holds SET but not PING: the first timeout's probe answers, the client
  // goes on over the fresh connection, and every op is accounted for (none "not run").
  Service srv(plain_redis());
  Job j = external(redis_job("set", 20000, 2, 1), srv.port());
  j.timeout_s = 0.4;
  std::thread pauser([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(150));
    redisContext* c = redisConnect("127.0.0.1", srv.port());
    freeReplyObject(redisCommand(c, "CLIENT PAUSE 500 WRITE"));
    redisFree(c);
  });
  JobResult r = run_one(j);
  pauser.join();
  INFO(samples(r));
  CHECK(r.state == JobResult::State::Done);
  CHECK(r.errors[static_cast<int>(Status::Timeout)] >= 1);
  CHECK(r.errors[static_cast<int>(Status::Timeout)] <= 2);
  CHECK(r.ops_not_run == 0);
  CHECK(r.ops_ok + r.ops_failed == 20000);
  CHECK(r.verify.ok);
}

TEST_CASE("redis hostile (class 3): PING answers but SET never does: the client stops at its second timeout") {
  HostileRedis srv([](int, const std::vector<std::string>& argv) { return argv[0] == "SET"; });
  Job j = external(redis_job("set", 100000, 2, 4), srv.port);
  j.timeout_s = 0.5;
  auto t0 = std::chrono::steady_clock::now();
  JobResult r = run_one(j);
  INFO(samples(r));
  CHECK(seconds_since(t0) < 2.0);
  CHECK(r.errors[static_cast<int>(Status::Timeout)] == 16);  // 2 clients x 4 in flight, twice
  CHECK(r.ops_not_run == 100000 - 16);
  CHECK(has_sample(r, "again on a fresh connection, the client stops"));
}

TEST_CASE("redis hostile (class 10): an unsolicited reply, garbage or a hang-up is a counted failure with its reason") {
  struct Case {
    const char* name;
    std::string answer;  // to the first SET; later SETs get +OK
    bool close_after = false;
    std::string sample;
    uint64_t ok, failed;
  };
  std::vector<Case> cases = {
      {"extra reply", "+OK\r\n+OK\r\n", false, "Error: unexpected reply '+OK' with no request waiting (127.0.0.1:", 1,
       1},
      {"garbage", "hello\r\n", false, "Error: protocol error: unknown reply type h (127.0.0.1:", 0, 1},
      {"NUL bytes", std::string("\0\0\0\r\n", 5), false, "Error: protocol error: unknown reply type \\x00", 0, 1},
      {"error reply with invalid UTF-8", "-ERR \xff\r\n", false, "Error: ERR \\xff", 19, 1},
      {"hang-up after a reply", "+OK\r\n", true, "Error: connection closed by the server (127.0.0.1:", 1, 1},
  };
  for (auto& c : cases) {
    CAPTURE(c.name);
    std::atomic<int> sets{0};
    HostileRedis srv([&](int fd, const std::vector<std::string>& argv) {
      if (argv[0] != "SET") return false;
      HostileRedis::send_all(fd, sets++ == 0 ? c.answer : "+OK\r\n");
      if (c.close_after) shutdown(fd, SHUT_RDWR);
      return true;
    });
    Job j = external(redis_job("set", 20, 1, 1), srv.port);
    JobResult r = run_one(j);
    INFO(samples(r));
    CHECK(r.state == JobResult::State::Done);
    CHECK(r.ops_ok == c.ok);
    CHECK(r.ops_failed == c.failed);
    CHECK(r.ops_ok + r.ops_failed + r.ops_not_run == 20);
    CHECK(has_sample(r, c.sample));
  }
}

TEST_CASE("redis (class 10): failed set-ups leave no connection behind") {
  Service srv(plain_redis({"--requirepass", "s3cret"}));
  HostileRedis garbage([](int fd, const std::vector<std::string>& argv) {
    if (argv[0] != "PING") return false;
    HostileRedis::send_all(fd, "+PANG\r\n");
    return true;
  });
  Job wrong = external(redis_job("set", 10), srv.port());
  wrong.opts["password-env"] = "MWBENCH_TEST_REDIS_PW";
  setenv("MWBENCH_TEST_REDIS_PW", "wrong", 1);
  Job pang = external(redis_job("set", 10), garbage.port);
  run_one(wrong);  // warm up lazily created process state
  size_t before = open_fds();
  for (int i = 0; i < 20; ++i) {
    JobResult r = run_one(wrong);
    CHECK(r.state == JobResult::State::SetupFailed);
    r = run_one(pang);
    CHECK(r.message == "redis 127.0.0.1:" + std::to_string(garbage.port) + ": PING answered '+PANG'");
  }
  // (the impostor's thread closes its end of the last connection within a poll interval)
  for (int i = 0; i < 50 && open_fds() != before; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(20));
  CHECK(open_fds() == before);
  unsetenv("MWBENCH_TEST_REDIS_PW");
}

TEST_CASE("redis (class 10): out of file descriptors is one clear set-up error naming the ulimit") {
  Service srv(plain_redis());
  rlimit old{};
  getrlimit(RLIMIT_NOFILE, &old);
  rlimit low = old;
  low.rlim_cur = open_fds() + 12;
  REQUIRE(setrlimit(RLIMIT_NOFILE, &low) == 0);
  JobResult r = run_one(external(redis_job("ping", 1000, 50), srv.port()));
  setrlimit(RLIMIT_NOFILE, &old);
  CHECK(r.state == JobResult::State::SetupFailed);
  CHECK(r.message == "redis 127.0.0.1:" + std::to_string(srv.port()) +
                         ": cannot connect: Too many open files (ulimit -n " + std::to_string(low.rlim_cur) +
                         "; each redis client needs one connection)");
}

// ---- TLS and ACL users, against real redis-servers ----

namespace {

// A throwaway CA, a server certificate it signed (localhost, 127.0.0.1), a client certificate
// it signed, and a second CA that signed nothing here.
struct TestCa {
  test::TempDir dir;
  std::string ca, server_crt, server_key, client_crt, client_key, other_ca;
  std::string name_only_crt;  // the server's key, a certificate for DNS:localhost alone (no IP)
  TestCa() {
    auto p = [&](const char* f) { return dir.path + "/" + f; };
    ca = p("ca.crt"), server_crt = p("server.crt"), server_key = p("server.key");
    client_crt = p("client.crt"), client_key = p("client.key"), other_ca = p("other-ca.crt");
    std::string d = "cd " + dir.path + " && ";
    std::string q = " >/dev/null 2>&1";
    auto run = [&](const std::string& cmd) { REQUIRE(std::system((d + cmd + q).c_str()) == 0); };
    run("openssl req -x509 -newkey rsa:2048 -nodes -keyout ca.key -out ca.crt -days 2 -subj '/CN=mwbench test CA'");
    run("openssl req -x509 -newkey rsa:2048 -nodes -keyout other-ca.key -out other-ca.crt -days 2 -subj '/CN=other "
        "CA'");
    std::ofstream(p("san.cnf")) << "subjectAltName=DNS:localhost,IP:127.0.0.1\n";
    run("openssl req -newkey rsa:2048 -nodes -keyout server.key -out server.csr -subj '/CN=localhost'");
    run("openssl x509 -req -in server.csr -CA ca.crt -CAkey ca.key -CAcreateserial -out server.crt -days 2 -extfile "
        "san.cnf");
    std::ofstream(p("name.cnf")) << "subjectAltName=DNS:localhost\n";
    name_only_crt = p("name-only.crt");
    run("openssl x509 -req -in server.csr -CA ca.crt -CAkey ca.key -CAcreateserial -out name-only.crt -days 2 "
        "-extfile name.cnf");
    run("openssl req -newkey rsa:2048 -nodes -keyout client.key -out client.csr -subj '/CN=mwbench client'");
    run("openssl x509 -req -in client.csr -CA ca.crt -CAkey ca.key -CAcreateserial -out client.crt -days 2");
  }
};

TestCa& test_ca() {
  static TestCa ca;
  return ca;
}

ServiceSpec tls_redis(const std::string& auth_clients) {
  TestCa& ca = test_ca();
  ServiceSpec s = plain_redis({"--tls-port", "{port}", "--tls-cert-file", ca.server_crt, "--tls-key-file",
                               ca.server_key, "--tls-ca-cert-file", ca.ca, "--tls-auth-clients", auth_clients});
  s.args[1] = "0";  // no plain port
  s.probe = [&ca](int port) -> std::string {
    try {
      redis::Endpoint ep;
      ep.host = "127.0.0.1";
      ep.port = port;
      ep.timeout_s = 1;
      ep.tls = std::make_shared<redis::TlsContext>(ca.ca, ca.client_crt, ca.client_key);
      redis::Conn c(ep, redis::now_ns() + 1'000'000'000);
      return "";
    } catch (const std::exception& e) {
      return e.what();
    }
  };
  return s;
}

Job tls_job(const std::string& op, uint64_t n, int port) {
  Job j = external(redis_job(op, n, 2, 4), port);
  j.opts["tls"] = "true";
  j.opts["cacert"] = test_ca().ca;
  return j;
}

}  // namespace

TEST_CASE("redis TLS: SET, GET and PING over TLS, every reply checked, on the event loop") {
  signal(SIGPIPE, SIG_IGN);  // mwbench's main does this; OpenSSL writes with write()
  Service srv(tls_redis("no"));
  for (const char* op : {"set", "get", "ping"}) {
    CAPTURE(op);
    Job j = tls_job(op, 2000, srv.port());
    j.opts["value-size"] = "40000";  // replies span several TLS records
    JobResult r = run_one(j);
    INFO(samples(r));
    CHECK(r.state == JobResult::State::Done);
    CHECK(r.ops_ok == 2000);
    CHECK(r.ops_failed == 0);
    CHECK(r.server.at("tls").rfind("TLSv1.", 0) == 0);
    if (std::string(op) == "set") CHECK((r.verify.checked && r.verify.ok));
  }
  Job j = tls_job("ping", 10, srv.port());
  j.opts["host"] = "localhost";  // verified by name as well as by address
  CHECK(run_one(j).ops_ok == 10);
}

// --tls-resume: each new connection of --reconnect-every offers the session its job's last
// connection got, and the server resumes it; without it, or when the server keeps no sessions,
// each handshake is full. The connect figures tell the two apart.
TEST_CASE("redis TLS: --tls-resume resumes the session of each new connection, and says so") {
  signal(SIGPIPE, SIG_IGN);
  Service srv(tls_redis("no"));
  auto run_renewing = [&](bool resume) {
    Job j = tls_job("set", 400, srv.port());
    j.reconnect_every = 10;
    if (resume) j.opts["tls-resume"] = "true";
    JobResult r = run_one(j);
    INFO(samples(r), r.message);
    REQUIRE(r.state == JobResult::State::Done);
    CHECK(r.ops_ok == 400);
    REQUIRE(r.connect);
    CHECK(r.connect->count() == 40);  // one before each client's first op, then one every 10
    return r;
  };
  JobResult full = run_renewing(false);
  REQUIRE(full.connect_full);
  CHECK(full.connect_full->count() == 40);
  CHECK(!full.connect_resumed);
  CHECK(connect_line("", full).find("TLS handshakes: 0 resumed, 40 full (p50 ") != std::string::npos);

  JobResult resumed = run_renewing(true);
  REQUIRE(resumed.connect_resumed);
  CHECK(resumed.connect_resumed->count() == 40);  // each client's set-up connection got a session
  CHECK(!resumed.connect_full);
  INFO(connect_line("", resumed));
  CHECK(connect_line("", resumed).find("TLS handshakes: 40 resumed (p50 ") != std::string::npos);
  RunResult run;
  run.jobs = {resumed};
  const nlohmann::json doc = to_json(run);
  const nlohmann::json& c = doc["jobs"][0]["connect"];
  CHECK(c["tls_resumed"] == 40);
  CHECK(c["tls_full"] == 0);
  CHECK(c["tls_resumed_latency_ns"]["count"] == 40);
  CHECK(!c.contains("tls_full_latency_ns"));
  CHECK(parse_result_json(doc, "resumed.json").jobs[0].connect_resumed->count() == 40);  // read back

  Job bad = tls_job("set", 10, srv.port());
  bad.opts.erase("tls");
  bad.opts.erase("cacert");
  bad.opts["tls-resume"] = "true";
  JobResult refused = run_one(bad);
  CHECK(refused.state == JobResult::State::SetupFailed);
  CHECK(refused.message.find("--tls-resume needs --tls") != std::string::npos);
}

TEST_CASE("redis TLS: --tls-resume over TLS 1.2 resumes too") {
  signal(SIGPIPE, SIG_IGN);
  ServiceSpec spec = tls_redis("no");
  spec.args.insert(spec.args.end(), {"--tls-protocols", "TLSv1.2"});
  Service srv(spec);
  Job j = tls_job("set", 200, srv.port());
  j.reconnect_every = 10;
  j.opts["tls-resume"] = "true";
  JobResult r = run_one(j);
  INFO(samples(r), r.message);
  REQUIRE(r.state == JobResult::State::Done);
  CHECK(r.server.at("tls") == "TLSv1.2");
  REQUIRE(r.connect_resumed);
  CHECK(r.connect_resumed->count() == 20);
  CHECK(!r.connect_full);
}

// --fault slow and cut reach an external server through mwbench's relay on 127.0.0.1, the job's
// --host replaced by the relay's: the server's name sent and checked stays --host's (it became
// 127.0.0.1, which a certificate for a name alone does not match: "hostname mismatch").
TEST_CASE("redis TLS: through a proxy fault's relay the certificate is still checked against --host") {
  signal(SIGPIPE, SIG_IGN);
  ServiceSpec spec = tls_redis("no");
  auto cert = std::find(spec.args.begin(), spec.args.end(), "--tls-cert-file");
  REQUIRE(cert != spec.args.end());
  *std::next(cert) = test_ca().name_only_crt;
  spec.probe = [](int port) -> std::string {  // tls_redis's, by the name the certificate has
    try {
      redis::Endpoint ep;
      ep.host = "localhost";
      ep.port = port;
      ep.timeout_s = 1;
      ep.tls = std::make_shared<redis::TlsContext>(test_ca().ca, "", "");
      redis::Conn c(ep, redis::now_ns() + 1'000'000'000);
      return "";
    } catch (const std::exception& e) {
      return e.what();
    }
  };
  Service srv(spec);
  Job j = tls_job("ping", 0, srv.port());
  j.opts["host"] = "localhost";
  j.duration_s = 2;
  j.faults = parse_faults("slow@40%/500ms:+5ms");
  j.reconnect_backoff_s = 0.2;
  JobResult r = run_one(j);
  CHECK_MESSAGE(r.state == JobResult::State::Done, r.message);
  CHECK(r.ops_ok > 0);
  CHECK(r.ops_failed == 0);
  REQUIRE(r.faults.size() == 1);
  CHECK(r.faults[0].delay_s == doctest::Approx(0.005));
  j.opts["host"] = "127.0.0.1";  // and a name the certificate lacks is refused as without the relay
  r = run_one(j);
  CHECK(r.state == JobResult::State::SetupFailed);
  CHECK_MESSAGE(r.message.find("mismatch") != std::string::npos, r.message);
}

TEST_CASE("redis TLS: certificate and option problems are set-up errors naming the cause") {
  signal(SIGPIPE, SIG_IGN);
  Service srv(tls_redis("no"));
  std::string at = "redis 127.0.0.1:" + std::to_string(srv.port()) + ": ";
  Job j = tls_job("ping", 10, srv.port());
  j.opts["cacert"] = test_ca().other_ca;
  JobResult r = run_one(j);
  CHECK(r.state == JobResult::State::SetupFailed);
  CHECK(r.message ==
        at + "TLS: certificate verify failed: self-signed certificate in certificate chain (checked against --cacert " +
            test_ca().other_ca + ")");

  j = tls_job("ping", 10, srv.port());
  j.opts["sni"] = "redis.example.com";
  r = run_one(j);
  CHECK(r.message ==
        at + "TLS: certificate verify failed: hostname mismatch (checked against --cacert " + test_ca().ca + ")");

  j = tls_job("ping", 10, srv.port());
  j.opts["cacert"] = "/nonexistent/ca.pem";
  r = run_one(j);
  CHECK(r.message == "redis: --cacert /nonexistent/ca.pem: cannot load: No such file or directory");
  j.opts["cacert"] = test_ca().dir.path + "/san.cnf";
  r = run_one(j);
  CHECK(r.message.rfind("redis: --cacert " + test_ca().dir.path + "/san.cnf: cannot load: ", 0) == 0);

  j = tls_job("ping", 10, srv.port());
  j.opts["cert"] = test_ca().client_crt;
  CHECK(run_one(j).message == "redis: --cert and --key go together (a client certificate and its private key)");
  j.opts["key"] = test_ca().server_key;
  CHECK(run_one(j).message ==
        "redis: --key " + test_ca().server_key + " is not the private key of --cert " + test_ca().client_crt);

  j = tls_job("ping", 10, srv.port());
  j.opts.erase("tls");
  CHECK(run_one(j).message == "redis: --cacert needs --tls");
  Job managed = redis_job("ping", 10);
  managed.opts["tls"] = "true";
  CHECK(run_one(managed).message == "redis: --tls needs --host (the redis-server mwbench starts listens without TLS)");

  Service plain(plain_redis());  // TLS spoken to a plain port
  j = tls_job("ping", 10, plain.port());
  j.timeout_s = 0.5;
  r = run_one(j);
  CHECK(r.state == JobResult::State::SetupFailed);
  CHECK(r.message == "redis 127.0.0.1:" + std::to_string(plain.port()) +
                         ": no answer to the TLS handshake (is it a TLS port?) within the timeout (0.5s)");
}

namespace {
// What loading the TLS files says, in a child without a terminal, cut off after 5 s (a load that
// blocks on a FIFO or prompts for a passphrase never returns): "" when it loaded.
std::string tls_load_error(const std::string& ca, const std::string& cert, const std::string& key) {
  int p[2];
  REQUIRE(pipe(p) == 0);
  pid_t pid = fork();
  if (pid == 0) {
    close(p[0]);
    setsid();  // no controlling terminal: /dev/tty cannot be opened
    std::string m;
    try {
      redis::TlsContext t(ca, cert, key);
    } catch (const std::exception& e) {
      m = e.what();
    }
    ssize_t w = write(p[1], m.data(), m.size());
    _exit(w == static_cast<ssize_t>(m.size()) ? 0 : 1);
  }
  close(p[1]);
  std::string out;
  char buf[512];
  pollfd pf{p[0], POLLIN, 0};
  for (auto end = std::chrono::steady_clock::now() + std::chrono::seconds(5);
       std::chrono::steady_clock::now() < end && poll(&pf, 1, 100) >= 0;) {
    if (!(pf.revents & (POLLIN | POLLHUP))) continue;
    ssize_t n = read(p[0], buf, sizeof buf);
    if (n <= 0) break;
    out.append(buf, static_cast<size_t>(n));
  }
  kill(pid, SIGKILL);
  waitpid(pid, nullptr, 0);
  close(p[0]);
  return out;
}
}  // namespace

TEST_CASE("redis TLS: a FIFO or a directory as a PEM file, an encrypted key: an error at once, never a wait") {
  TestCa& ca = test_ca();
  const std::string fifo = ca.dir.path + "/ca.fifo", enc = ca.dir.path + "/client-enc.key";
  REQUIRE(mkfifo(fifo.c_str(), 0600) == 0);
  REQUIRE(std::system(
              ("openssl rsa -aes128 -passout pass:secret -in " + ca.client_key + " -out " + enc + " >/dev/null 2>&1")
                  .c_str()) == 0);
  CHECK(tls_load_error(fifo, "", "") == "redis: --cacert " + fifo + ": is a FIFO, not a PEM file");
  CHECK(tls_load_error(ca.ca, fifo, ca.client_key) == "redis: --cert " + fifo + ": is a FIFO, not a PEM file");
  CHECK(tls_load_error(ca.ca, ca.client_crt, fifo) == "redis: --key " + fifo + ": is a FIFO, not a PEM file");
  CHECK(tls_load_error(ca.dir.path, "", "") == "redis: --cacert " + ca.dir.path + ": is a directory, not a PEM file");
  CHECK(tls_load_error(ca.ca, ca.client_crt, enc) ==
        "redis: --key " + enc +
            " is encrypted: mwbench never asks for a passphrase; give it a key without one "
            "(openssl pkey -in " +
            enc + " -out plain.key)");
  CHECK(tls_load_error(ca.ca, ca.client_crt, ca.client_key) == "");  // the plain key loads
  unlink(fifo.c_str());
}

TEST_CASE("redis TLS: a server that requires client certificates: --cert and --key") {
  signal(SIGPIPE, SIG_IGN);
  Service srv(tls_redis("yes"));
  Job j = tls_job("set", 500, srv.port());
  JobResult r = run_one(j);
  CHECK(r.state == JobResult::State::SetupFailed);
  CHECK(r.message.rfind("redis 127.0.0.1:" + std::to_string(srv.port()) + ": ", 0) == 0);
  CHECK(r.message.find("(does the server require a client certificate? give --cert and --key)") != std::string::npos);
  j.opts["cert"] = test_ca().client_crt;
  j.opts["key"] = test_ca().client_key;
  r = run_one(j);
  INFO(samples(r));
  CHECK(r.ops_ok == 500);
  CHECK(r.verify.ok);
}

TEST_CASE("redis ACL users: --user with the password from the environment; NOPERM is a counted failure") {
  signal(SIGPIPE, SIG_IGN);
  Service plain(plain_redis());
  Service tls(tls_redis("no"));
  for (Service* srv : {&plain, &tls}) {
    redisContext* c = nullptr;
    if (srv == &plain) {
      c = redisConnect("127.0.0.1", srv->port());
      freeReplyObject(redisCommand(c, "ACL SETUSER alice on >alice-pw ~* +@all"));
      freeReplyObject(redisCommand(c, "ACL SETUSER bob on >bob-pw ~* +@all -set"));
      redisFree(c);
    } else {  // the TLS server: set the users up over mwbench's own TLS connection
      redis::Endpoint ep;
      ep.host = "127.0.0.1";
      ep.port = srv->port();
      ep.tls = std::make_shared<redis::TlsContext>(test_ca().ca, "", "");
      redis::Conn conn(ep, redis::now_ns() + 2'000'000'000);
      for (auto argv : {std::vector<std::string>{"ACL", "SETUSER", "alice", "on", ">alice-pw", "~*", "+@all"},
                        std::vector<std::string>{"ACL", "SETUSER", "bob", "on", ">bob-pw", "~*", "+@all", "-set"}})
        CHECK(conn.command(argv, redis::now_ns() + 2'000'000'000).str == "OK");
    }
    bool is_tls = srv == &tls;
    CAPTURE(is_tls);
    std::string at = "redis 127.0.0.1:" + std::to_string(srv->port()) + ": ";
    Job j = is_tls ? tls_job("set", 300, srv->port()) : external(redis_job("set", 300, 2, 4), srv->port());
    j.opts["user"] = "alice";
    j.opts["password-env"] = "MWBENCH_TEST_REDIS_PW";
    unsetenv("MWBENCH_TEST_REDIS_PW");
    JobResult r = run_one(j);
    CHECK(r.message == at + "--user alice needs a password: put it in the variable named by --password-env");
    setenv("MWBENCH_TEST_REDIS_PW", "alice-pw", 1);
    r = run_one(j);
    CHECK(r.ops_ok == 300);
    CHECK(r.verify.ok);
    CHECK(r.server.at("user") == "alice");
    setenv("MWBENCH_TEST_REDIS_PW", "bob-pw", 1);
    r = run_one(j);
    CHECK(r.state == JobResult::State::SetupFailed);
    CHECK(r.message == at + "AUTH failed: WRONGPASS invalid username-password pair or user is disabled.");
    j.opts["user"] = "bob";
    r = run_one(j);
    INFO(samples(r));
    CHECK(r.state == JobResult::State::Done);
    CHECK(r.ops_ok == 0);
    CHECK(r.errors[static_cast<int>(Status::Error)] == 300);
    CHECK(r.ops_not_run == 0);
    CHECK(has_sample(r, "Error: NOPERM this user has no permissions to run the 'set' command"));
    j.op = "get";  // GET is allowed, but its preload SETs are not: a set-up error naming NOPERM
    r = run_one(j);
    CHECK(r.message.rfind(at + "preload SET answered '-NOPERM", 0) == 0);
  }
  unsetenv("MWBENCH_TEST_REDIS_PW");
}

// ---- The shared workload (--mix) on redis ----
#include "config/workload_spec.h"

namespace {

Job redis_mix(const std::string& mix, uint64_t n, int clients = 1, int pipeline = 1) {
  Job j = test::make_job("redis", "mix", n, clients);
  j.pipeline = pipeline;
  j.opts = {{"mix", mix}, {"keyspace", "2000"}, {"keys", "zipfian"}, {"value-size", "20-300"}};
  return j;
}

const OpFigures* op_figures(const JobResult& r, const std::string& op) {
  for (auto& o : r.per_op)
    if (o.op == op) return &o;
  return nullptr;
}

// Replies to workload requests, fed to the checker the event loop uses.
Fed feed_workload(const std::vector<redis::Pending>& reqs, const std::string& bytes) {
  static redis::KeySpace keys("mwbench:", 1000, false, 0);
  redis::ReplyChecker rc(keys, redis::Op::Mix, redis::Limits{});
  for (auto& p : reqs) rc.expect(p);
  rc.feed(bytes.data(), bytes.size());
  std::vector<Completion> out(64);
  Fed f;
  f.done.assign(out.begin(), out.begin() + static_cast<std::ptrdiff_t>(rc.take(out, 0)));
  for (auto& c : f.done) f.details.emplace_back(c.result.detail);  // details outlive the checker
  f.fatal = rc.fatal();
  return f;
}

std::string bulk(const std::string& v) { return "$" + std::to_string(v.size()) + "\r\n" + v + "\r\n"; }

}  // namespace

TEST_CASE("redis replies to the workload: each op's reply checked against its key") {
  using redis::Kind;
  std::string corrupt = make_value(5, 0, 100);
  corrupt[60] ^= 1;
  std::vector<redis::Pending> reqs = {
      {.seq = 0, .key = 5, .kind = Kind::Read},                      // its own value
      {.seq = 1, .key = 5, .kind = Kind::Read},                      // key 6's value
      {.seq = 2, .key = 5, .kind = Kind::Read},                      // corrupt
      {.seq = 3, .key = 5, .kind = Kind::Read},                      // nil: a miss
      {.seq = 4, .key = 5, .kind = Kind::Read, .must_exist = true},  // nil: lost
      {.seq = 5, .key = 5, .size = 40, .kind = Kind::Write},         // +OK
      {.seq = 6, .key = 5, .size = 40, .kind = Kind::Write},         // an error
      {.seq = 7, .key = 5, .kind = Kind::Delete},                    // :1
      {.seq = 8, .key = 5, .kind = Kind::Delete},                    // :0
      {.seq = 9, .key = 5, .kind = Kind::Delete},                    // +OK is not DEL's reply
      {.seq = 10, .key = 5, .size = 40, .kind = Kind::Rmw},          // the old value
      {.seq = 11, .key = 5, .size = 40, .kind = Kind::Rmw},          // nil
      {.seq = 12, .key = 1234, .kind = Kind::Read},                  // an inserted key: 4 digits
  };
  std::string bytes = bulk(make_value(5, 0, 100)) + bulk(make_value(6, 0, 100)) + bulk(corrupt) + "$-1\r\n$-1\r\n" +
                      "+OK\r\n-OOM command not allowed\r\n:1\r\n:0\r\n+OK\r\n" + bulk(make_value(5, 7, 50)) +
                      "$-1\r\n" + bulk(make_value(1234, 3, 10));
  Fed f = feed_workload(reqs, bytes);
  const auto& out = f.done;
  CHECK(f.fatal == "");
  REQUIRE(out.size() == reqs.size());
  std::vector<Status> want = {Status::Ok, Status::Mismatch, Status::Mismatch, Status::NotFound, Status::NotFound,
                              Status::Ok, Status::Error,    Status::Ok,       Status::NotFound, Status::Mismatch,
                              Status::Ok, Status::NotFound, Status::Ok};
  for (size_t i = 0; i < out.size(); ++i) {
    CAPTURE(i);
    CHECK(out[i].seq == i);
    CHECK(out[i].result.status == want[i]);
  }
  CHECK(out[0].result.bytes == 100);
  CHECK(f.details[1] == "GET mwbench:005 returned another key's value (100 bytes)");
  CHECK(f.details[2] == "GET mwbench:005 returned a corrupt value (checksum; 100 bytes)");
  CHECK(f.details[3] == "GET: no such key");
  CHECK(f.details[4] == "GET mwbench:005: no such key, though it was loaded and never deleted (lost)");
  CHECK(out[5].result.bytes == 40);
  CHECK(f.details[6] == "OOM command not allowed");
  CHECK(f.details[9] == "DEL mwbench:005: unexpected reply '+OK'");
  CHECK(out[10].result.bytes == 40);
}

TEST_CASE("redis workload keys: padded to the key space, longer past it") {
  redis::KeySpace keys("p:", 100000, false, 0);
  CHECK(redis::workload_key(keys, 42) == "p:00042");
  CHECK(redis::workload_key(keys, 99999) == "p:99999");
  CHECK(redis::workload_key(keys, 100000) == "p:100000");
  CHECK(redis::workload_key(keys, UINT64_MAX) == "p:18446744073709551615");
}

TEST_CASE("redis --mix: every op, blocking and pipelined, per-op counts, values checked, verified") {
  const std::string all = "read:40,update:20,insert:10,delete:10,rmw:20";
  for (auto cp : {std::pair{1, 1}, std::pair{4, 1}, std::pair{1, 16}, std::pair{4, 16}}) {
    const int c = cp.first, p = cp.second;  // not bindings: CAPTURE under clang 14
    CAPTURE(c);
    CAPTURE(p);
    JobResult r = run_one(redis_mix(all, 20000, c, p));
    CHECK_MESSAGE(r.state == JobResult::State::Done, r.message);
    CHECK(r.ops_ok == 20000);
    CHECK(r.ops_failed == 0);
    for (auto& e : r.error_samples) MESSAGE(e);
    REQUIRE(r.load);
    CHECK(r.load->ops_ok == 2000);
    CHECK(r.load->ops_failed == 0);
    CHECK(r.load->job.pipeline >= 64);  // the load keeps a deep pipeline whatever -P
    CHECK(r.misses > 0);                // deleted keys are read, deleted and rmw'd again
    REQUIRE(r.per_op.size() == 5);
    uint64_t sum = 0;
    for (auto& o : r.per_op) sum += o.ops_ok + o.ops_failed;
    CHECK(sum == r.ops_ok);
    CHECK(std::abs(static_cast<double>(op_figures(r, "read")->ops_ok) / 20000 - 0.4) < 0.03);
    CHECK(std::abs(static_cast<double>(op_figures(r, "rmw")->ops_ok) / 20000 - 0.2) < 0.03);
    CHECK(std::abs(static_cast<double>(op_figures(r, "delete")->ops_ok) / 20000 - 0.1) < 0.03);
    CHECK(op_figures(r, "update")->misses == 0);  // SET creates the key
    CHECK_MESSAGE(r.verify.checked, r.verify.detail);
    CHECK_MESSAGE(r.verify.ok, r.verify.detail);
    CHECK(r.verify.detail.find("1000 keys read back") != std::string::npos);
  }
  // no deletes: every key stays loaded, so every read and rmw hits
  JobResult r = run_one(redis_mix("read:80,update:10,rmw:10", 20000, 4, 16));
  CHECK(r.ops_ok == 20000);
  CHECK(r.misses == 0);
  CHECK_MESSAGE(r.verify.ok, r.verify.detail);
  CHECK(r.verify.detail.find("at least 2000 expected") != std::string::npos);
  stop_shared_services();
}

TEST_CASE("redis --mix: a value changed behind mwbench's back is a Mismatch failure") {
  Service srv(plain_redis());
  Job load = external(redis_mix("update:1", 2000), srv.port());  // writes the whole key space once
  load.opts["keys"] = "sequential";
  load.opts["keyspace"] = "1000";
  load.opts["value-size"] = "100";
  JobResult lr = run_one(load);
  REQUIRE(lr.ops_ok == 2000);
  redisContext* c = redisConnect("127.0.0.1", srv.port());
  std::string other = make_value(9, 0, 100), bad = make_value(8, 0, 100);
  bad[50] ^= 1;
  freeReplyObject(redisCommand(c, "SET mwbench:007 %b", other.data(), other.size()));  // another key's value
  freeReplyObject(redisCommand(c, "SET mwbench:008 %b", bad.data(), bad.size()));      // corrupt
  redisFree(c);
  for (int p : {1, 16}) {
    CAPTURE(p);
    Job j = external(redis_mix("read:100", 20000, 2, p), srv.port());
    j.opts["keys"] = "uniform";
    j.opts["keyspace"] = "1000";
    j.opts["load"] = "false";
    JobResult r = run_one(j);
    CHECK(r.ops_failed > 0);
    CHECK(r.ops_failed < 100);  // 2 keys of 1000, each drawn about 20 times
    CHECK(r.errors[static_cast<int>(Status::Mismatch)] == r.ops_failed);
    CHECK(r.ops_ok + r.ops_failed == 20000);
    std::string samples;
    for (auto& e : r.error_samples) samples += e + "\n";
    CHECK_MESSAGE(
        samples.find("Mismatch: GET mwbench:007 returned another key's value (100 bytes)") != std::string::npos,
        samples);
    CHECK_MESSAGE(samples.find("Mismatch: GET mwbench:008 returned a corrupt value") != std::string::npos, samples);
    CHECK_FALSE(r.verify.ok);  // the sample reads every key of 1000
    CHECK(r.verify.detail.find("2 holding a wrong value") != std::string::npos);
  }
}

TEST_CASE("redis --mix: a key deleted behind mwbench's back while it must exist is lost data, a failure") {
  Service srv(plain_redis());
  Job j = external(redis_mix("read:100", 100000, 2, 16), srv.port());
  j.opts["keys"] = "uniform";
  j.opts["keyspace"] = "1000";
  std::atomic<bool> done{false};
  std::thread side([&] {  // once the load has written the key space, delete it all
    redisContext* c = redisConnect("127.0.0.1", srv.port());
    for (int i = 0; i < 20000 && !done; ++i) {
      auto* n = static_cast<redisReply*>(redisCommand(c, "DBSIZE"));
      bool loaded = n && n->integer >= 1000;
      freeReplyObject(n);
      if (loaded) {
        freeReplyObject(redisCommand(c, "FLUSHDB"));
        break;
      }
      std::this_thread::sleep_for(std::chrono::microseconds(200));
    }
    redisFree(c);
  });
  JobResult r = run_one(j);
  done = true;
  side.join();
  CHECK(r.load->ops_ok == 1000);
  CHECK(r.ops_failed > 0);
  CHECK(r.errors[static_cast<int>(Status::NotFound)] == r.ops_failed);
  CHECK(r.misses == 0);  // not a miss: the key was loaded and never deleted by the workload
  std::string samples;
  for (auto& e : r.error_samples) samples += e + "\n";
  CHECK_MESSAGE(samples.find("no such key, though it was loaded and never deleted (lost)") != std::string::npos,
                samples);
  CHECK_FALSE(r.verify.ok);  // nothing wrote them back
  CHECK(r.verify.detail.find("missing") != std::string::npos);
}

TEST_CASE("redis options: the workload's names for --mix, the native ones for set/get") {
  const AdapterSpec& spec = *find_adapter("redis");
  auto fails = [&](std::map<std::string, std::string> opts, const std::string& msg) {
    Job j = redis_mix("read:95,update:5", 10);
    for (auto& [k, v] : opts) {
      if (v.empty())
        j.opts.erase(k);
      else
        j.opts[k] = v;
    }
    try {
      workload_of(j, spec);
      FAIL("accepted");
    } catch (const SetupError& e) {
      CHECK_MESSAGE(std::string(e.what()).find(msg) != std::string::npos, e.what());
    }
  };
  fails({{"mix", "read:90,scan:10"}}, "--mix: redis cannot run 'scan'; it maps read, update, insert, delete, rmw");
  fails({{"mix", ""}, {"value-size", "10-100"}}, "a range or a size:weight list needs --mix");
  fails({{"mix", ""}, {"value-size", "1G"}}, "value-size expects a whole number from 0 to 512M");
  Job j = redis_mix("read:95,update:5", 10);
  j.opts.erase("keys");
  j.opts.erase("keyspace");
  j.opts.erase("value-size");
  auto w = workload_of(j, spec);
  REQUIRE(w);
  CHECK(w->keys.spec().dist == KeyDist::Uniform);  // the workload's defaults with --mix
  CHECK(w->keys.spec().keyspace == 100000);
  CHECK(w->sizes.text() == "100");
  // native ops: random and uniform are the same order; the mix's distributions need --mix
  for (std::string keys : {"random", "uniform", "sequential"}) {
    CAPTURE(keys);
    Job g = redis_job("get", 2000, 2, 4);
    g.opts["keys"] = keys;
    g.opts["value-size"] = "0";  // empty values, as before
    JobResult r = run_one(g);
    CHECK(r.ops_ok == 2000);
    CHECK(r.ops_failed == 0);
  }
  Job z = redis_job("get", 10);
  z.opts["keys"] = "zipfian";
  JobResult r = run_one(z);
  CHECK(r.state == JobResult::State::SetupFailed);
  CHECK(r.message == "redis: --keys zipfian needs --mix; set, get and ping take sequential, or random (uniform)");
  stop_shared_services();
}

TEST_CASE("redis --trace: MONITOR output captured during a known run replays on redis") {
  test::TempDir d;
  const std::string file = d.path + "/monitor.txt";
  std::vector<std::string> lines;
  {
    Service srv(plain_redis());
    redisContext* mon = redisConnect("127.0.0.1", srv.port());
    REQUIRE((mon && !mon->err));
    const timeval tv{10, 0};
    redisSetTimeout(mon, tv);
    freeReplyObject(redisCommand(mon, "MONITOR"));  // +OK
    std::thread capture([&] {                       // until the marker below, or an error (the 10 s timeout)
      void* reply = nullptr;
      while (redisGetReply(mon, &reply) == REDIS_OK) {
        auto* r = static_cast<redisReply*>(reply);
        std::string line = r->type == REDIS_REPLY_STATUS ? std::string(r->str, r->len) : "";
        freeReplyObject(r);
        if (line.find("\"end-of-capture\"") != std::string::npos) break;
        if (!line.empty()) lines.push_back(line);
      }
    });
    Job set = external(redis_job("set", 300), srv.port());
    set.opts["keyspace"] = "100";
    set.opts["value-size"] = "100";
    Job get = external(redis_job("get", 200), srv.port());
    get.opts["keyspace"] = "150";
    for (Job* j : {&set, &get}) {
      JobResult r = run_one(*j);
      CHECK_MESSAGE(r.state == JobResult::State::Done, r.message);
    }
    redisContext* c = redisConnect("127.0.0.1", srv.port());
    for (const char* never_set : {"GET never:1", "GET never:2"}) freeReplyObject(redisCommand(c, never_set));
    freeReplyObject(redisCommand(c, "ECHO end-of-capture"));
    redisFree(c);
    capture.join();
    redisFree(mon);
  }
  {
    std::ofstream out(file);
    for (auto& l : lines) out << l << "\n";
  }
  // What the replay must do, from the captured text: each SET and GET in order; a GET of a key no
  // SET before it wrote is a miss (keys the get job loaded another way are not in the trace).
  uint64_t sets = 0, gets = 0, misses = 0;
  std::set<std::string> written;
  for (auto& l : lines) {
    const size_t at = l.find("] \"");
    REQUIRE(at != std::string::npos);
    std::string cmd = l.substr(at + 3, l.find('"', at + 3) - at - 3);
    std::transform(cmd.begin(), cmd.end(), cmd.begin(), [](unsigned char ch) { return std::tolower(ch); });
    if (cmd != "set" && cmd != "get") continue;
    const size_t k0 = l.find('"', l.find('"', at + 3) + 1) + 1;
    const std::string key = l.substr(k0, l.find('"', k0) - k0);
    if (cmd == "set") ++sets, written.insert(key);
    if (cmd == "get") ++gets, misses += written.count(key) ? 0 : 1;
  }
  CHECK(sets >= 300);  // the set job's 300 and the get job's load
  CHECK(gets >= 200);
  CHECK(misses == 2);  // the two keys no one set
  Job replay = test::make_job("redis", "mix", 100000, 1);
  replay.opts = {{"trace", file}, {"speed", "max"}};
  JobResult r = run_one(replay);
  CHECK_MESSAGE(r.state == JobResult::State::Done, r.message);
  for (auto& e : r.error_samples) MESSAGE(e);
  CHECK(r.ops_ok == sets + gets);
  CHECK(r.ops_failed == 0);
  CHECK(r.misses == misses);
  stop_shared_services();
}

namespace {
// The TTL of every key on the server, in seconds (-1: none), through KEYS and TTL.
std::vector<long long> key_ttls(int port) {
  std::vector<long long> out;
  redisContext* c = redisConnect("127.0.0.1", port);
  REQUIRE((c && !c->err));
  auto* keys = static_cast<redisReply*>(redisCommand(c, "KEYS *"));
  REQUIRE(keys);
  for (size_t i = 0; i < keys->elements; ++i) {
    auto* t = static_cast<redisReply*>(redisCommand(c, "TTL %b", keys->element[i]->str, keys->element[i]->len));
    out.push_back(t ? t->integer : -3);
    freeReplyObject(t);
  }
  freeReplyObject(keys);
  redisFree(c);
  return out;
}
}  // namespace

TEST_CASE("redis --ttl: each SET and rmw of the mix sets its key's TTL; the keys then expire") {
  Service srv(plain_redis());
  Job j = external(redis_mix("read:20,update:40,rmw:40", 4000, 2, 8), srv.port());
  j.opts["ttl"] = "1h";
  JobResult r = run_one(j);
  CHECK_MESSAGE(r.state == JobResult::State::Done, r.message);
  CHECK(r.ops_ok == 4000);
  CHECK(r.ops_failed == 0);
  CHECK_MESSAGE(r.verify.ok, r.verify.detail);
  CHECK(r.workload.find("keys expire after 3600 s") != std::string::npos);
  // the load wrote all 2,000 keys with none; every key a SET or an rmw wrote since has one
  std::vector<long long> ttls = key_ttls(srv.port());
  CHECK(ttls.size() == 2000);
  const auto with = std::count_if(ttls.begin(), ttls.end(), [](long long t) { return t > 3500 && t <= 3600; });
  const auto without = std::count(ttls.begin(), ttls.end(), -1);
  CHECK(with > 300);
  CHECK(with + without == 2000);
  SUBCASE("a TTL of 1 s: two seconds after the run, every key it wrote is gone") {
    redisContext* c = redisConnect("127.0.0.1", srv.port());
    freeReplyObject(redisCommand(c, "FLUSHALL"));
    j = external(redis_mix("update:100", 2000, 2, 8), srv.port());
    j.opts["ttl"] = "1";
    r = run_one(j);
    CHECK(r.ops_ok == 2000);
    auto* n = static_cast<redisReply*>(redisCommand(c, "DBSIZE"));
    CHECK(n->integer > 100);
    freeReplyObject(n);
    std::this_thread::sleep_for(std::chrono::milliseconds(2500));
    n = static_cast<redisReply*>(redisCommand(c, "DBSIZE"));
    CHECK(n->integer == 0);
    freeReplyObject(n);
    redisFree(c);
  }
  SUBCASE("a published workload's TTL: twitter:23 writes with 120 s") {
    j = external(test::make_job("redis", "mix", 2000, 2), srv.port());
    j.opts = {
        {"workload", "twitter:23"}, {"keyspace", "2000"}, {"host", "127.0.0.1"}, {"port", std::to_string(srv.port())}};
    r = run_one(j);
    CHECK_MESSAGE(r.state == JobResult::State::Done, r.message);
    CHECK(r.ops_failed == 0);
    ttls = key_ttls(srv.port());
    CHECK(std::count_if(ttls.begin(), ttls.end(), [](long long t) { return t > 100 && t <= 120; }) > 100);
  }
}
