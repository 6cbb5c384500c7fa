// --reconnect-every and --connect-rate (core/renewal.h) against real redis and memcached servers
// started here on free loopback ports: every op on a connection of its own, counted by the
// server itself; each open timed apart from the ops; the opens paced.
#include <arpa/inet.h>
#include <doctest/doctest.h>
#include <hiredis/hiredis.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <string>
#include <vector>

#include "adapters/conn/hostport.h"
#include "core/runner.h"
#include "services/services.h"
#include "tests/helpers.h"
#include "util/net.h"

using namespace mw;

namespace {

ServiceSpec plain_redis() {
  ServiceSpec s;
  s.name = "redis-server";
  s.binary = "redis-server";
  s.args = {"--port", "{port}", "--bind", "127.0.0.1", "--dir", "{dir}", "--save", "", "--appendonly", "no"};
  s.probe = [](int port) { return tcp_probe("127.0.0.1", port, "PING\r\n", "+PONG"); };
  return s;
}

ServiceSpec plain_memcached() {
  ServiceSpec s;
  s.name = "memcached";
  s.binary = "memcached";
  s.args = {"-l", "127.0.0.1", "-p", "{port}", "-U", "0", "-m", "64"};
  if (geteuid() == 0) s.args.insert(s.args.end(), {"-u", "root"});
  s.probe = [](int port) { return tcp_probe("127.0.0.1", port, "version\r\n", "VERSION"); };
  return s;
}

// The connections the server has accepted since it started, by its own count: redis's INFO
// stats total_connections_received (this asking connection among them).
uint64_t redis_connections(int port) {
  redisContext* c = redisConnect("127.0.0.1", port);
  REQUIRE((c && !c->err));
  auto* r = static_cast<redisReply*>(redisCommand(c, "INFO stats"));
  REQUIRE(r);
  REQUIRE(r->type == REDIS_REPLY_STRING);
  const std::string info(r->str, r->len);
  freeReplyObject(r);
  redisFree(c);
  const std::string key = "total_connections_received:";
  const size_t at = info.find(key);
  REQUIRE(at != std::string::npos);
  return std::stoull(info.substr(at + key.size()));
}

// memcached's stats total_connections (this asking connection among them).
uint64_t memcached_connections(int port) {
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = htons(static_cast<uint16_t>(port));
  REQUIRE(connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0);
  const std::string ask = "stats\r\n";
  REQUIRE(send(fd, ask.data(), ask.size(), MSG_NOSIGNAL) == static_cast<ssize_t>(ask.size()));
  std::string got;
  char buf[4096];
  while (got.find("END\r\n") == std::string::npos && got.size() < (1 << 20)) {
    const ssize_t n = recv(fd, buf, sizeof buf, 0);
    if (n <= 0) break;
    got.append(buf, static_cast<size_t>(n));
  }
  close(fd);
  const std::string key = "STAT total_connections ";
  const size_t at = got.find(key);
  REQUIRE(at != std::string::npos);
  return std::stoull(got.substr(at + key.size()));
}

Job job_on(const std::string& adapter, const std::string& op, int port, uint64_t n, int clients, int pipeline) {
  Job j = test::make_job(adapter, op, n, clients);
  j.pipeline = pipeline;
  j.opts["keyspace"] = "1000";
  j.opts["host"] = "127.0.0.1";
  j.opts["port"] = std::to_string(port);
  return j;
}

// One adapter's case: a run with kept connections and one with --reconnect-every 1 (same ops):
// the server counts a connection per op of the second, the connect histogram one open per op, and
// the second is slower (a generous margin: it is a functional check, not a benchmark). Then
// --reconnect-every 10 on pipelined clients (the event loop): an open per 10 ops of each client.
template <class Count>
void check_reconnects(const std::string& adapter, const std::string& op, int port, Count connections) {
  constexpr uint64_t kOps = 1000;
  Job kept = job_on(adapter, op, port, kOps, 1, 1);
  JobResult a = run_one(kept);
  REQUIRE(a.state == JobResult::State::Done);
  CHECK(a.ops_ok == kOps);
  CHECK(!a.connect);  // no renewal: nothing timed

  Job every = kept;
  every.reconnect_every = 1;
  const uint64_t before = connections(port);
  JobResult b = run_one(every);
  const uint64_t after = connections(port);
  REQUIRE(b.state == JobResult::State::Done);
  CHECK(b.ops_ok == kOps);
  CHECK(b.ops_failed == 0);
  REQUIRE(b.connect);
  CHECK(b.connect->count() == kOps);  // one open before each op
  CHECK(b.connect->min() > 0);
  // the server saw them: one a op, besides the few of the adapter's set-up and end check and the
  // asking connection
  CHECK(after - before >= kOps + 1);
  CHECK(after - before <= kOps + 10);
  CHECK(b.latency->count() == kOps);
  // one client, one thing at a time: its ops' time and its opens' time do not overlap (an op's
  // latency holds no connect), so together they fit in the phase's time
  CHECK((b.latency->mean() + b.connect->mean()) * kOps <= b.elapsed_s * 1e9);
  CHECK(b.rps < a.rps * 0.9);
  MESSAGE(adapter << ": kept " << a.rps << " req/s, reconnecting " << b.rps << " req/s, connect mean "
                  << b.connect->mean() / 1e3 << " us");

  Job piped = job_on(adapter, op, port, 400, 2, 4);  // pollable clients on an event loop
  piped.reconnect_every = 10;
  const uint64_t before2 = connections(port);
  JobResult c = run_one(piped);
  const uint64_t after2 = connections(port);
  REQUIRE(c.state == JobResult::State::Done);
  CHECK(c.ops_ok == 400);
  CHECK(c.ops_failed == 0);
  REQUIRE(c.connect);
  CHECK(c.connect->count() == 40);  // 200 ops a client, an open before each 10
  CHECK(after2 - before2 >= 40 + 1);
  CHECK(after2 - before2 <= 40 + 2 + 10);
}

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace

TEST_CASE("reconnect: redis --reconnect-every 1 opens a connection per op, timed apart, and is slower") {
  Service srv(plain_redis());
  check_reconnects("redis", "set", srv.port(), redis_connections);
}

TEST_CASE("reconnect: memcached --reconnect-every 1 opens a connection per op, timed apart, and is slower") {
  Service srv(plain_memcached());
  check_reconnects("memcached", "set", srv.port(), memcached_connections);
}

TEST_CASE("reconnect: --connect-rate 50 paces 100 reconnects to about 2 s across the clients") {
  Service srv(plain_redis());
  for (int clients : {1, 4}) {
    CAPTURE(clients);
    Job j = job_on("redis", "set", srv.port(), 100, clients, 1);
    j.reconnect_every = 1;
    j.connect_rate = 50;
    const auto t0 = std::chrono::steady_clock::now();
    JobResult r = run_one(j);
    const double took = seconds_since(t0);
    REQUIRE(r.state == JobResult::State::Done);
    CHECK(r.ops_ok == 100);
    REQUIRE(r.connect);
    CHECK(r.connect->count() == 100);
    // 100 opens, one every 20 ms: 1.98 s from the first to the last (generous bounds)
    CHECK(r.elapsed_s > 1.7);
    CHECK(r.elapsed_s < 5);
    CHECK(took < 10);
    // the waits are reported, not counted as connect time
    CHECK(r.connect_wait_s > 1.0);
    CHECK(r.connect->mean() < 20e6);
  }
}

TEST_CASE("reconnect: blocking clients (echo) renew between ops, their opens out of the ops' latency") {
  for (int clients : {1, 3}) {
    CAPTURE(clients);
    Job j = test::make_job("echo", "tcp", 300, clients);
    j.reconnect_every = 1;
    JobResult r = run_one(j);
    REQUIRE(r.state == JobResult::State::Done);
    CHECK(r.ops_ok == 300);
    CHECK(r.ops_failed == 0);
    REQUIRE(r.connect);
    CHECK(r.connect->count() == 300);
    if (clients == 1)  // one thread, one thing at a time: the ops' time and the opens' do not overlap
      CHECK((r.latency->mean() + r.connect->mean()) * 300 <= r.elapsed_s * 1e9);
  }
  Job every = test::make_job("echo", "tcp", 100, 2);  // every 7: 50 ops a client, an open before ops 0, 7, ... 49
  every.reconnect_every = 7;
  JobResult r = run_one(every);
  REQUIRE(r.connect);
  CHECK(r.connect->count() == 2 * 8);
  Job open = test::make_job("echo", "tcp", 100, 1);  // an open loop: every op on a new connection too
  open.reconnect_every = 1;
  open.rate = 1000;
  r = run_one(open);
  CHECK(r.ops_ok == 100);
  REQUIRE(r.connect);
  CHECK(r.connect->count() == 100);
  REQUIRE(r.latency_uncorrected);
  // from its send, an op holds no connect: together they fit in the phase's time
  CHECK((r.latency_uncorrected->mean() + r.connect->mean()) * 100 <= r.elapsed_s * 1e9);
}

TEST_CASE("reconnect: a --duration run ends at its end, though --connect-rate's turns would come long after") {
  Service srv(plain_redis());
  for (int pipeline : {1, 4}) {  // blocking and event-loop clients
    CAPTURE(pipeline);
    // 6 clients, one open every 2 s, every op on a new connection: without the deadline, the
    // last client's turn came 10 s in
    Job j = job_on("redis", "set", srv.port(), 0, 6, pipeline);
    j.n = 0;
    j.duration_s = 1;
    j.reconnect_every = 1;
    j.connect_rate = 0.5;
    const auto t0 = std::chrono::steady_clock::now();
    JobResult r = run_one(j);
    const double took = seconds_since(t0);
    CHECK_MESSAGE(r.state == JobResult::State::Done, r.message);
    CHECK(r.ops_ok >= 1);
    CHECK(r.ops_ok <= 2);  // turns at 0 s and 2 s: the second is past the end
    CHECK(r.elapsed_s < 2);
    CHECK(took < 6);
  }
}

// A cluster's nodes or Sentinels as a user gives them: HOST[:PORT],... with IPv6 in brackets, a
// default port for a bare host (or none: then every entry names its port); a bad entry is named.
TEST_CASE("conn: HOST[:PORT] lists parse in order; a bad entry is one line naming it") {
  using conn::HostPort;
  CHECK(conn::parse_addresses("a,b:4223,[::1]:7,[fe80::1],::1", 4222, "x: --host") ==
        std::vector<HostPort>{{"a", 4222}, {"b", 4223}, {"::1", 7}, {"fe80::1", 4222}, {"::1", 4222}});
  CHECK(conn::parse_addresses("10.0.0.1:26379", 0, "x") == std::vector<HostPort>{{"10.0.0.1", 26379}});
  CHECK(conn::describe_addresses({"127.0.0.1", 1}, {{"127.0.0.1", 2}, {"b", 3}}) == "127.0.0.1:1,2,b:3");
  struct Bad {
    const char* list;
    int port;
    const char* entry;
  };
  for (const Bad& b : {Bad{"a:0", 1, "a:0"}, Bad{"a:65536", 1, "a:65536"}, Bad{"a,,b", 1, ""}, Bad{"a:x", 1, "a:x"},
                       Bad{"a", 0, "a"}, Bad{"", 1, ""}, Bad{"a b", 1, "a b"}, Bad{"[::1", 1, "[::1"}}) {
    CAPTURE(b.list);
    try {
      conn::parse_addresses(b.list, b.port, "x: --host");
      FAIL("no error");
    } catch (const SetupError& e) {
      CHECK(std::string(e.what()).find("x: --host expects HOST") == 0);
      CHECK(std::string(e.what()).find(std::string("got '") + b.entry + "'") != std::string::npos);
    }
  }
  std::string many = "h";
  for (int i = 0; i < 64; ++i) many += ",h";
  CHECK(conn::parse_addresses(many.substr(2), 1, "x").size() == 64);
  CHECK_THROWS_WITH(conn::parse_addresses(many, 1, "x"), "x: at most 64 addresses");
}
