// CouchDB and HTTP adapters against a real pouchdb-server started here, and the HTTP adapter
// against a tiny server that answers 500 (a fault a healthy server will not show on demand).
#include <doctest/doctest.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstring>
#include <functional>
#include <mutex>
#include <nlohmann/json.hpp>
#include <thread>

#include "adapters/couchdb/couchdb.h"
#include "adapters/guard.h"
#include "adapters/http/client.h"
#include "core/driver.h"
#include "core/runner.h"
#include "report/report.h"
#include "services/services.h"
#include "tests/helpers.h"

using namespace mw;

namespace {

Job couch_job(const std::string& op, uint64_t n, int clients = 1) {
  Job j = test::make_job("couchdb", op, n, clients);
  return j;
}

// The managed pouchdb-server's base URL, found through a job that keeps its database.
std::string base_of(const JobResult& r) { return r.target.substr(0, r.target.rfind('/')); }

// `mwbench http --url URL -c clients`, on the managed pouchdb-server's base URL.
Job pouch_http_job(int clients) {
  Job j;
  j.adapter = "http";
  j.op = "request";
  j.name = "http";
  j.clients = clients;
  j.opts["url"] = base_of(run_one(couch_job("insert", 1))) + "/";
  return j;
}

// Answers every request on 127.0.0.1 with HTTP 500, keeping connections open.
struct FailingServer {
  int fd = -1, port = 0;
  std::atomic<bool> stop{false};
  std::thread th;
  FailingServer() {
    fd = test::listen_loopback(16, port);
    REQUIRE(fd >= 0);
    th = std::thread([this] {
      std::vector<std::thread> conns;
      while (!stop) {
        int c = accept(fd, nullptr, nullptr);
        if (c < 0) break;
        conns.emplace_back([c] {
          std::string buf;
          char b[4096];
          for (;;) {
            ssize_t n = read(c, b, sizeof b);
            if (n <= 0) break;
            buf.append(b, static_cast<size_t>(n));
            size_t end;
            while ((end = buf.find("\r\n\r\n")) != std::string::npos) {
              buf.erase(0, end + 4);
              const char* reply = "HTTP/1.1 500 Internal Server Error\r\nContent-Length: 5\r\n\r\nerror";
              if (send(c, reply, std::strlen(reply), MSG_NOSIGNAL) < 0) break;
            }
          }
          close(c);
        });
      }
      for (auto& t : conns) t.join();
    });
  }
  ~FailingServer() {
    stop = true;
    shutdown(fd, SHUT_RDWR);
    close(fd);
    th.join();
  }
};

}  // namespace

TEST_CASE("couchdb: every op on pouchdb-server, checked, doc_count verified, database dropped") {
  // the native engine, the native engine pipelining 4 requests per connection, and libcurl
  struct Engine {
    const char* name;
    int pipeline;
  };
  for (const Engine& e : {Engine{"native", 1}, Engine{"native", 4}, Engine{"curl", 1}})
    for (const auto& [op_name, count] :
         {std::pair{"insert", 150}, std::pair{"put", 150}, std::pair{"bulk", 20}, std::pair{"get", 150}}) {
      // plain locals: clang 14 (the sanitizer build) cannot capture structured bindings
      const char* engine = e.name;
      const int pipeline = e.pipeline;
      const char* op = op_name;
      const int n = count;
      CAPTURE(engine);
      CAPTURE(pipeline);
      CAPTURE(op);
      Job j = couch_job(op, static_cast<uint64_t>(n), 3);
      j.opts["engine"] = engine;
      j.pipeline = pipeline;
      j.opts["batch"] = "10";
      j.opts["keyspace"] = "100";
      j.warmup_ops = 3;
      JobResult r = run_one(j);
      CHECK(r.message == "");
      CHECK(r.ops_ok == static_cast<uint64_t>(n));
      CHECK(r.ops_failed == 0);
      CHECK(r.verify.checked);
      CHECK(r.verify.ok);
      CAPTURE(r.verify.detail);
      CHECK(r.server.at("server") == "pouchdb-server");
      CHECK(r.server.at("engine").find(std::string(engine) == "curl" ? "libcurl " : "native (") == 0);
      std::string want = std::string(op) == "get" ? "200: " : "201: ";
      CHECK(test::statuses(r) == want + std::to_string(n + 3));
      auto gone = http::fetch("GET", r.target, "", {});
      CHECK(gone.status == 404);  // dropped afterwards
    }
}

TEST_CASE("couchdb: a 409 conflict and a per-document bulk error are failures with their status") {
  Job keep = couch_job("insert", 1);
  JobResult first = run_one(keep);
  REQUIRE(first.message == "");
  std::string base = base_of(first);
  http::Options o;
  o.headers = {"Content-Type: application/json"};
  REQUIRE(http::fetch("PUT", base + "/conflicts", "", o).status == 201);
  REQUIRE(http::fetch("PUT", base + "/conflicts/doc-3", "{\"x\":1}", o).status == 201);

  Job put = couch_job("put", 10);
  put.opts["url"] = base + "/conflicts";
  put.opts["create"] = "false";
  JobResult r = run_one(put);
  CHECK(r.ops_ok == 9);
  CHECK(r.errors[static_cast<int>(Status::Mismatch)] == 1);
  REQUIRE(!r.error_samples.empty());
  CHECK(r.error_samples[0].find("Mismatch: HTTP 409: \"conflict\"") == 0);
  CHECK(test::statuses(r) == "201: 9, 409: 1");

  REQUIRE(http::fetch("PUT", base + "/conflicts2", "", o).status == 201);
  REQUIRE(http::fetch("PUT", base + "/conflicts2/doc-25", "{\"x\":1}", o).status == 201);
  Job bulk = couch_job("bulk", 3);
  bulk.opts["url"] = base + "/conflicts2";
  bulk.opts["create"] = "false";
  bulk.opts["batch"] = "10";
  bulk.opts["keep"] = "true";
  r = run_one(bulk);  // docs 20..29 hold doc-25, already there
  CHECK(r.ops_ok == 2);
  CHECK(r.ops_failed == 1);
  REQUIRE(!r.error_samples.empty());
  CHECK(r.error_samples[0].find("Mismatch: 1 of 10 docs failed: conflict") == 0);
  http::fetch("DELETE", base + "/conflicts", "", o);
  http::fetch("DELETE", base + "/conflicts2", "", o);
}

TEST_CASE("couchdb: a missing database is a clear error (404)") {
  JobResult any = run_one(couch_job("insert", 1));
  Job j = couch_job("insert", 10);
  j.opts["url"] = base_of(any) + "/no-such-db";
  j.opts["create"] = "false";
  JobResult r = run_one(j);
  CHECK(r.state == JobResult::State::SetupFailed);
  CHECK(r.message == "couchdb " + base_of(any) + "/no-such-db: the database does not exist (HTTP 404)");
}

TEST_CASE("couchdb: wrong credentials are a clear error, and never shown") {
  JobResult any = run_one(couch_job("insert", 1));
  std::string base = base_of(any);
  Job j = couch_job("insert", 5);
  j.opts["url"] = "http://admin:s3cret@" + base.substr(7) + "/with-creds";
  JobResult r = run_one(j);
  CHECK(r.state == JobResult::State::SetupFailed);
  CHECK(r.message.find("HTTP 401") != std::string::npos);
  CHECK(r.message.find("s3cret") == std::string::npos);
  CHECK(r.target == base + "/with-creds");
  RunResult run;
  run.jobs.push_back(r);
  CHECK(to_json(run).dump().find("s3cret") == std::string::npos);
}

TEST_CASE("couchdb: the server killed mid-run: errors counted, no hang, the rest not run") {
  Job probe = couch_job("insert", 1);
  ServiceSpec spec;
  {
    // the same service the adapter would start, but owned here so the test can kill it
    JobResult any = run_one(probe);
    REQUIRE(any.message == "");
  }
  std::string bin = find_binary("/opt/mwbench-node/node_modules/.bin/pouchdb-server");
  if (bin.empty()) bin = find_binary(std::string(MWBENCH_SOURCE_DIR) + "/.deps/node_modules/.bin/pouchdb-server");
  REQUIRE(!bin.empty());
  spec.name = "pouchdb-server";
  spec.binary = bin;
  spec.args = {"--port", "{port}", "--host", "127.0.0.1", "--dir", "{dir}", "--no-stdout-logs"};
  spec.start_timeout_s = 60;
  spec.probe = [](int port) -> std::string {
    try {
      return http::fetch("GET", "http://127.0.0.1:" + std::to_string(port) + "/", "", {}).status == 200 ? "" : "no";
    } catch (const SetupError& e) {
      return e.what();
    }
  };
  Service srv(spec);
  Job j = couch_job("insert", 1'000'000, 2);
  j.opts["url"] = "http://127.0.0.1:" + std::to_string(srv.port()) + "/killed";
  j.timeout_s = 2;
  auto a = test::make_adapter("couchdb", j);
  a->prepare(j);
  std::thread killer([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(800));
    kill(srv.pid(), SIGKILL);
  });
  auto t0 = std::chrono::steady_clock::now();
  JobResult r;
  r = measure(j, *a);
  killer.join();
  double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  CHECK(took < 15);
  CHECK(r.ops_ok > 0);
  CHECK(r.ops_failed >= 2);
  CHECK(r.ops_not_run > 0);
  CHECK(r.ops_ok + r.ops_failed + r.ops_not_run == 1'000'000);
  a->teardown();
}

TEST_CASE("http: ab-style GET and POST against pouchdb-server") {
  Job j = pouch_http_job(4);
  j.n = 200;
  for (const char* engine : {"native", "curl"}) {
    CAPTURE(engine);
    j.opts["engine"] = engine;
    j.opts["keepalive"] = "true";
    JobResult r = run_one(j);
    CHECK(r.ops_ok == 200);
    CHECK(test::statuses(r) == "200: 200");
    CHECK(test::metric(r, "connections opened") == 4);
    CHECK(test::metric(r, "document length") > 0);
    j.opts["keepalive"] = "false";
    r = run_one(j);
    CHECK(r.ops_ok == 200);
    CHECK(test::metric(r, "connections opened") == 200);
  }
  // -P > 1 is the native engine's: libcurl keeps one request in flight per connection
  j.pipeline = 4;
  j.opts["keepalive"] = "true";
  JobResult r = run_one(j);
  CHECK(r.state == JobResult::State::SetupFailed);
  CHECK(r.message == "http: -P > 1 (pipelining) needs the native engine (http:// URLs, --engine auto or native)");
}

// #29: a --find-max search runs every step on clients opened once, and its row is one step's (the
// median repeat's). The ab-style block beside it is that step's too: its responses are the row's
// ops, its rates over the row's time. Before, it summed every step and warm-up of the search (the
// probe's closed loop alone answered more than the row's step) and divided by the row's time.
TEST_CASE("http and couchdb: under --find-max the ab-style block is the row's step's, not the search's") {
  Job h = pouch_http_job(2);
  h.opts["keepalive"] = "true";
  Job native = h, curl = h;
  native.opts["engine"] = "native";
  curl.opts["engine"] = "curl";
  Job get = couch_job("get", 0, 2);
  get.opts["keyspace"] = "100";
  for (Job j : {native, curl, get}) {
    j.find_max = "p99<50ms";
    j.step_s = 0.2;
    j.find_precision = 0.2;
    j.find_repeat = 1;
    j.timeout_s = 2;
    JobResult r = run_one(j);
    const std::string what = j.adapter + " " + j.str("engine");
    CAPTURE(what);
    REQUIRE(r.capacity);
    const Capacity& c = *r.capacity;
    CAPTURE(c.verdict);
    REQUIRE(c.steps.size() >= 2);
    double answered = 0;
    for (auto& m : r.metrics)
      if (m.name.rfind("HTTP ", 0) == 0) answered += m.value;
    CAPTURE(test::statuses(r));
    CAPTURE(r.ops_ok);
    CHECK(r.ops_ok > 0);
    CHECK(answered >= static_cast<double>(r.ops_ok));
    CHECK(answered <= static_cast<double>(r.ops_ok + r.ops_failed));
    CHECK(test::metric(r, "received rate") ==
          doctest::Approx(test::metric(r, "received") / 1024 / r.elapsed_s).epsilon(1e-9));
    CHECK(test::metric(r, "received") >= answered * std::max(0.0, test::metric(r, "document length")));
  }
}

TEST_CASE("http: 500 answers are failures, never throughput; the status is counted") {
  FailingServer srv;
  Job j;
  j.adapter = "http";
  j.op = "request";
  j.name = "http";
  j.n = 50;
  j.clients = 2;
  j.opts["url"] = "http://127.0.0.1:" + std::to_string(srv.port) + "/write";
  j.opts["method"] = "POST";
  j.opts["keepalive"] = "true";
  JobResult r = run_one(j);
  CHECK(r.ops_ok == 0);
  CHECK(r.rps == 0);
  CHECK(r.ops_failed == 50);
  CHECK(r.errors[static_cast<int>(Status::Error)] == 50);
  CHECK(test::statuses(r) == "500: 50");
  REQUIRE(!r.error_samples.empty());
  CHECK(r.error_samples[0] == "Error: HTTP 500 (non-2xx response)");
  for (auto& e : r.error_samples) MESSAGE(e);
  RunResult run;
  run.jobs.push_back(r);
  CHECK(exit_code(run) == 1);
}

TEST_CASE("http: a port nobody listens on: a set-up error naming it, as on every adapter (exit 2)") {
  Job j;
  j.adapter = "http";
  j.op = "request";
  j.name = "http";
  j.n = 100;
  int port = free_port();
  j.opts["url"] = "http://127.0.0.1:" + std::to_string(port) + "/";
  JobResult r = run_one(j);
  CHECK(r.state == JobResult::State::SetupFailed);
  CHECK(r.ops_ok == 0);
  CHECK(r.message == "http http://127.0.0.1:" + std::to_string(port) + "/: cannot connect: Connection refused");
}

// ---------------------------------------------------------------------------------------------
// Hostile servers (issue 10): answers a real CouchDB never gives, on demand. Each connection
// gets a thread; `handle` answers one parsed request and returns false to close.
namespace {

struct HttpRequest {
  std::string method, path, body;
  int nth = 0;  // requests seen by the server before this one
};

bool send_all(int fd, const std::string& s) {
  for (size_t sent = 0; sent < s.size();) {
    ssize_t n = send(fd, s.data() + sent, s.size() - sent, MSG_NOSIGNAL);
    if (n <= 0) return false;
    sent += static_cast<size_t>(n);
  }
  return true;
}

bool answer(int fd, int status, const std::string& body) {
  return send_all(fd, "HTTP/1.1 " + std::to_string(status) +
                          " X\r\nContent-Type: application/json\r\nContent-Length: " + std::to_string(body.size()) +
                          "\r\n\r\n" + body);
}

struct HostileServer {
  using Handler = std::function<bool(int fd, const HttpRequest&, const std::atomic<bool>& stop)>;
  int fd = -1, port = 0;
  std::atomic<bool> stop{false};
  std::atomic<int> seen{0};
  std::mutex mu;
  std::vector<int> conns;
  std::vector<std::thread> threads;
  std::thread th;
  Handler handle;
  explicit HostileServer(Handler h) : handle(std::move(h)) {
    fd = test::listen_loopback(64, port);
    REQUIRE(fd >= 0);
    th = std::thread([this] {
      while (!stop) {
        int c = accept(fd, nullptr, nullptr);
        if (c < 0) break;
        std::lock_guard lk(mu);
        conns.push_back(c);
        threads.emplace_back([this, c] { serve(c); });
      }
    });
  }
  void serve(int c) {
    std::string buf;
    char b[65536];
    for (;;) {
      size_t end;
      while ((end = buf.find("\r\n\r\n")) == std::string::npos) {
        ssize_t n = read(c, b, sizeof b);
        if (n <= 0) return;
        buf.append(b, static_cast<size_t>(n));
      }
      HttpRequest rq;
      std::string head = buf.substr(0, end);
      buf.erase(0, end + 4);
      rq.method = head.substr(0, head.find(' '));
      rq.path = head.substr(rq.method.size() + 1, head.find(' ', rq.method.size() + 1) - rq.method.size() - 1);
      size_t cl = head.find("Content-Length: ");
      size_t want = cl == std::string::npos ? 0 : std::stoul(head.substr(cl + 16));
      while (buf.size() < want) {
        ssize_t n = read(c, b, sizeof b);
        if (n <= 0) return;
        buf.append(b, static_cast<size_t>(n));
      }
      rq.body = buf.substr(0, want);
      buf.erase(0, want);
      rq.nth = seen++;
      if (!handle(c, rq, stop)) {
        shutdown(c, SHUT_RDWR);
        return;
      }
    }
  }
  std::string url(const std::string& path = "/") const { return "http://127.0.0.1:" + std::to_string(port) + path; }
  ~HostileServer() {
    stop = true;
    shutdown(fd, SHUT_RDWR);
    close(fd);
    th.join();
    {
      std::lock_guard lk(mu);
      for (int c : conns) shutdown(c, SHUT_RDWR);
    }
    for (auto& t : threads) t.join();
    for (int c : conns) close(c);
  }
};

// Sleeps until the server stops, in small steps.
void idle(const std::atomic<bool>& stop, int ms = 60000) {
  for (int i = 0; i < ms / 10 && !stop; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
}

// A CouchDB that is healthy in set-up (GET /, PUT /db, GET /db, DELETE /db) and answers the
// measured requests (insert, bulk, get; preloads too) with `hostile`.
HostileServer::Handler couch_with(long status, std::string hostile, std::string info = R"({"doc_count":0})") {
  return [=](int fd, const HttpRequest& rq, const std::atomic<bool>&) {
    if (rq.path == "/") return answer(fd, 200, R"({"couchdb":"Welcome","version":"3.3.3"})");
    if (rq.path == "/db") {
      if (rq.method == "PUT") return answer(fd, 201, R"({"ok":true})");
      if (rq.method == "DELETE") return answer(fd, 200, R"({"ok":true})");
      if (rq.method == "GET") return answer(fd, 200, info);
    }
    if (rq.path == "/db/_bulk_docs" && rq.body.find("\"_id\":\"doc-9\"") != std::string::npos)
      return answer(fd, 201, "[]");  // get's preload of keyspace 10
    return answer(fd, static_cast<int>(status), hostile);
  };
}

Job http_job(const std::string& url, uint64_t n, int clients = 1) {
  Job j = test::make_job("http", "request", n, clients);
  j.name = "http";
  j.opts["url"] = url;
  j.opts["keepalive"] = "true";
  return j;
}

// Every error sample is one printable line.
void check_printable(const JobResult& r) {
  for (auto& e : r.error_samples) {
    CAPTURE(e);
    CHECK(std::all_of(e.begin(), e.end(), [](char c) { return c >= 0x20 && c < 0x7f; }));
  }
}

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace

TEST_CASE("couchdb: answers of the wrong JSON type, cut, or not UTF-8 are counted failures, never a crash") {
  const std::vector<std::string> bodies = {
      R"({"ok":"yes"})",
      R"({"reason":42})",
      R"([{"error":{}}])",
      R"({"id":null})",
      "{\"ok\":true,\"id\":\"doc-\xc3",                     // cut mid-character
      "{\"ok\":true,\"id\":\"\xff\xfe\",\"rev\":\"1-a\"}",  // not UTF-8
      "42",
      R"("a string")",
      "null",
      "",                                       // not an object
      R"({"ok":true,"id":1e400,"rev":"1-a"})",  // a huge number
      R"({"ok":true,"id":123456789012345678901234567890,"rev":"1-a"})",
      R"({"_id":["doc-0"],"payload":{}})",
      R"([{"ok":true,"id":"x","rev":5}])",
      "[null]",
      R"([{"error":"conflict","reason":{"a":1}}])",
      std::string(100000, '['),
  };
  int cases = 0;
  for (auto& body : bodies)
    for (const char* op : {"insert", "bulk", "get"}) {
      CAPTURE(op);
      CAPTURE(http::printable(body, 60));
      HostileServer srv(couch_with(std::string(op) == "get" ? 200 : 201, body));
      Job j = couch_job(op, 3);
      j.opts["url"] = srv.url("/db");
      j.opts["batch"] = "1";
      j.opts["keyspace"] = "10";
      j.timeout_s = 2;
      JobResult r = run_one(j);
      CHECK(r.message == "");
      CHECK(r.state == JobResult::State::Done);
      CHECK(r.ops_ok == 0);
      CHECK(r.ops_failed == 3);
      REQUIRE(!r.error_samples.empty());
      check_printable(r);
      ++cases;
    }
  // the same bodies as CouchDB's error answers (4xx/5xx): error and reason of any type
  for (auto& body : bodies) {
    for (int status : {400, 409, 500}) {
      HostileServer srv(couch_with(status, body));
      Job j = couch_job("insert", 2);
      j.opts["url"] = srv.url("/db");
      JobResult r = run_one(j);
      CHECK(r.state == JobResult::State::Done);
      CHECK(r.ops_failed == 2);
      REQUIRE(!r.error_samples.empty());
      CHECK(r.error_samples[0].find("HTTP " + std::to_string(status)) != std::string::npos);
      check_printable(r);
      ++cases;
    }
  }
  MESSAGE(cases << " hostile CouchDB answers");
  // the failure says what was wrong
  std::string detail;
  OpResult res = couchdb::check_reply(couchdb::Op::Insert, 201, R"({"ok":"yes"})", {}, detail);
  CHECK(res.status == Status::Error);
  CHECK(detail == R"(HTTP 201 answered the wrong JSON types (ok must be true, id and rev strings): {"ok":"yes"})");
  res = couchdb::check_reply(couchdb::Op::Insert, 201, "{\"ok\":true,\"id\":\"doc-\xc3", {}, detail);
  CHECK(res.status == Status::Error);
  CHECK(detail == "HTTP 201 answer is not JSON: {\"ok\":true,\"id\":\"doc-?");
  res = couchdb::check_reply(couchdb::Op::Bulk, 201, R"([{"error":{}}])", {}, detail);
  CHECK(res.status == Status::Mismatch);
  CHECK(detail == "1 of 1 docs failed: {}");
}

TEST_CASE("couchdb: set-up answers of the wrong type are one clear set-up error") {
  struct Case {
    std::string info, says;
  };
  for (auto& c : std::vector<Case>{{R"({"doc_count":"x"})", "doc_count is not a whole number: \"x\""},
                                   {R"({"doc_count":1e30})", "doc_count is not a whole number: 1e+30"},
                                   {R"({"doc_count":-1})", "doc_count is not a whole number: -1"},
                                   {R"({"doc_count":18446744073709551615})", "doc_count is out of range"},
                                   {R"({"doc_count":1e400})", "the answer is not a JSON object"},
                                   {"[1]", "the answer is not a JSON object: [1]"},
                                   {R"({"db_name":"db"})", "the answer has no doc_count"},
                                   {"{\"doc_count\":\xff}", "the answer is not a JSON object: {\"doc_count\":?}"}}) {
    CAPTURE(c.info);
    HostileServer srv(couch_with(201, R"({"ok":true,"id":"a","rev":"1"})", c.info));
    Job j = couch_job("insert", 2);
    j.opts["url"] = srv.url("/db");
    JobResult r = run_one(j);
    CHECK(r.state == JobResult::State::SetupFailed);
    CHECK(r.message.find("couchdb " + srv.url("/db") + ": GET answered HTTP 200, but " + c.says) == 0);
  }
  // GET / with a version of the wrong type: the server is still described, the job runs
  HostileServer odd([](int fd, const HttpRequest& rq, const std::atomic<bool>&) {
    if (rq.path == "/") return answer(fd, 200, R"({"couchdb":"Welcome","version":42})");
    return couch_with(201, R"({"ok":true,"id":"a","rev":"1"})")(fd, rq, {});
  });
  Job j = couch_job("insert", 2);
  j.opts["url"] = odd.url("/db");
  JobResult r = run_one(j);
  CHECK(r.state == JobResult::State::Done);
  CHECK(r.ops_ok == 2);
  CHECK(r.server.at("version") == "");
}

TEST_CASE("http: an endless chunked body is cut at --max-body and counted, memory bounded") {
  HostileServer srv([](int fd, const HttpRequest&, const std::atomic<bool>& stop) {
    if (!send_all(fd, "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n")) return false;
    std::string chunk = "1000\r\n" + std::string(4096, 'z') + "\r\n";
    while (!stop && send_all(fd, chunk)) {}
    return false;
  });
  Job j = http_job(srv.url(), 3);
  j.opts["max-body"] = "1M";
  auto t0 = std::chrono::steady_clock::now();
  JobResult r = run_one(j);
  CHECK(seconds_since(t0) < 3);
  CHECK(r.ops_failed == 3);
  CHECK(r.errors[static_cast<int>(Status::Error)] == 3);
  REQUIRE(!r.error_samples.empty());
  CHECK(r.error_samples[0] == "Error: body larger than --max-body 1M (" + srv.url() + ")");

  // the default cap (64M): the process grows by about that, not by gigabytes until the timeout
  rusage before{}, after{};
  getrusage(RUSAGE_SELF, &before);
  Job d = http_job(srv.url(), 1);
  d.timeout_s = 10;
  t0 = std::chrono::steady_clock::now();
  r = run_one(d);
  getrusage(RUSAGE_SELF, &after);
  CHECK(seconds_since(t0) < 8);
  CHECK(r.ops_failed == 1);
  REQUIRE(!r.error_samples.empty());
  CHECK(r.error_samples[0] == "Error: body larger than --max-body 64M (" + srv.url() + ")");
  CHECK(after.ru_maxrss - before.ru_maxrss < 300 * 1024);  // kB

  // a body trickling in forever ends with the timeout
  HostileServer slow([](int fd, const HttpRequest&, const std::atomic<bool>& stop) {
    if (!send_all(fd, "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n")) return false;
    while (!stop && send_all(fd, "1\r\nz\r\n")) idle(stop, 100);
    return false;
  });
  Job s = http_job(slow.url(), 2);
  s.timeout_s = 1;
  t0 = std::chrono::steady_clock::now();
  r = run_one(s);
  CHECK(seconds_since(t0) < 4);
  CHECK(r.errors[static_cast<int>(Status::Timeout)] == 2);  // the probe is answered: the client goes on
  CHECK(r.ops_not_run == 0);
}

TEST_CASE("http: a wrong Content-Length, a garbage status line, endless headers: counted failures within the timeout") {
  struct Case {
    std::string name, reply;
    bool trickle = false;  // headers that never end, sent slowly
  };
  std::vector<Case> cases = {
      {"longer Content-Length than the body", "HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\nshort"},
      {"negative Content-Length", "HTTP/1.1 200 OK\r\nContent-Length: -5\r\n\r\nhello"},
      {"huge Content-Length", "HTTP/1.1 200 OK\r\nContent-Length: 99999999999999999999\r\n\r\nhello"},
      {"Content-Length past --max-body", "HTTP/1.1 200 OK\r\nContent-Length: 2147483648\r\n\r\nhello"},
      {"two Content-Lengths", "HTTP/1.1 200 OK\r\nContent-Length: 5\r\nContent-Length: 7\r\n\r\nhello"},
      {"garbage status line", "GARBAGE\r\n\r\n"},
      {"status not a number", "HTTP/1.1 abc OK\r\nContent-Length: 0\r\n\r\n"},
      {"status out of range", "HTTP/1.1 99999999999 Big\r\nContent-Length: 0\r\n\r\n"},
      {"binary status line", "\xff\xfe\x00\x01\r\n\r\n"},
      {"bad chunk size", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\nhello\r\n0\r\n\r\n"},
      {"endless headers", ""},
      {"endless slow headers", "", true},
  };
  for (auto& c : cases) {
    CAPTURE(c.name);
    HostileServer srv([&c](int fd, const HttpRequest&, const std::atomic<bool>& stop) {
      if (c.name.find("endless") == 0) {
        if (!send_all(fd, "HTTP/1.1 200 OK\r\n")) return false;
        while (!stop && send_all(fd, "X-Never-Ends: " + std::string(100, 'h') + "\r\n"))
          if (c.trickle) idle(stop, 100);
        return false;
      }
      send_all(fd, c.reply);
      return false;
    });
    Job j = http_job(srv.url(), 3);
    j.opts["max-body"] = "1M";
    j.timeout_s = 1;
    auto t0 = std::chrono::steady_clock::now();
    JobResult r = run_one(j);
    CHECK(seconds_since(t0) < 6);
    CHECK(r.state == JobResult::State::Done);
    CHECK(r.ops_ok == 0);
    CHECK(r.ops_failed + r.ops_not_run == 3);
    CHECK(r.ops_failed >= 1);
    REQUIRE(!r.error_samples.empty());
    MESSAGE(c.name << ": " << r.error_samples[0]);
    check_printable(r);
    if (c.name == "Content-Length past --max-body")
      CHECK(r.error_samples[0] == "Error: body larger than --max-body 1M (" + srv.url() + ")");
    if (c.name == "endless headers") CHECK(r.error_samples[0] == "Error: headers larger than 256k (" + srv.url() + ")");
  }
  // a shorter Content-Length than the body: the rest is never read as the next answer
  HostileServer extra([](int fd, const HttpRequest&, const std::atomic<bool>&) {
    return send_all(fd, "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello, and more than was announced");
  });
  Job j = http_job(extra.url(), 10);
  JobResult r = run_one(j);
  CHECK(r.ops_ok + r.ops_failed == 10);
  check_printable(r);
}

TEST_CASE("http: a silent server ends the job within about two timeouts, the rest not run") {
  HostileServer srv([](int, const HttpRequest&, const std::atomic<bool>& stop) {
    idle(stop);
    return false;
  });
  Job j = http_job(srv.url(), 100000, 2);
  j.timeout_s = 1;
  auto t0 = std::chrono::steady_clock::now();
  JobResult r = run_one(j);
  double took = seconds_since(t0);
  CHECK(took < 3.5);
  CHECK(r.ops_ok == 0);
  CHECK(r.errors[static_cast<int>(Status::Timeout)] == 2);
  CHECK(r.ops_not_run == 100000 - 2);
  RunResult run;
  run.jobs.push_back(r);
  CHECK(exit_code(run) == 1);
}

TEST_CASE("http: one slow answer is a timeout, but a server that still answers keeps the client going") {
  HostileServer srv([](int fd, const HttpRequest& rq, const std::atomic<bool>& stop) {
    if (rq.nth == 0) idle(stop, 1500);
    return answer(fd, 200, "fine");
  });
  Job j = http_job(srv.url(), 20);
  j.timeout_s = 1;
  JobResult r = run_one(j);
  CHECK(r.errors[static_cast<int>(Status::Timeout)] == 1);
  CHECK(r.ops_ok == 19);
  CHECK(r.ops_not_run == 0);
}

TEST_CASE("couchdb: a stopped pouchdb-server (SIGSTOP) ends the job within about two timeouts") {
  JobResult any = run_one(couch_job("insert", 1));  // the shared managed server
  REQUIRE(any.message == "");
  std::string bin = find_binary("/opt/mwbench-node/node_modules/.bin/pouchdb-server");
  if (bin.empty()) bin = find_binary(std::string(MWBENCH_SOURCE_DIR) + "/.deps/node_modules/.bin/pouchdb-server");
  REQUIRE(!bin.empty());
  ServiceSpec spec;
  spec.name = "pouchdb-server";
  spec.binary = bin;
  spec.args = {"--port", "{port}", "--host", "127.0.0.1", "--dir", "{dir}", "--no-stdout-logs"};
  spec.start_timeout_s = 60;
  spec.probe = [](int port) { return http::probe("http://127.0.0.1:" + std::to_string(port) + "/", {}); };
  Service srv(spec);
  struct Resume {  // the server continues (and is stopped) whatever the checks say
    pid_t pid;
    ~Resume() { kill(pid, SIGCONT); }
  } resume{srv.pid()};
  Job j = couch_job("insert", 100000, 2);
  j.opts["url"] = "http://127.0.0.1:" + std::to_string(srv.port()) + "/stopped";
  j.timeout_s = 1;
  auto a = test::make_adapter("couchdb", j);
  a->prepare(j);
  REQUIRE(kill(srv.pid(), SIGSTOP) == 0);
  auto t0 = std::chrono::steady_clock::now();
  JobResult r;
  r = measure(j, *a);
  CHECK(seconds_since(t0) < 3.5);
  CHECK(r.ops_ok == 0);
  CHECK(r.errors[static_cast<int>(Status::Timeout)] == 2);
  CHECK(r.ops_not_run == 100000 - 2);
  t0 = std::chrono::steady_clock::now();
  Verdict v = a->verify(j, {r.ops_ok, r.ops_failed, r.ops_not_run, 0});
  CHECK(!v.ok);  // a failed check, not a set-up error
  CHECK(v.detail.find("doc_count not read") == 0);
  a->teardown();
  CHECK(seconds_since(t0) < 3.5);
}

TEST_CASE("http: the open-file budget is checked before the run") {
  CHECK_THROWS_WITH_AS(ensure_open_files("http", 100'000'000, 4),
                       doctest::Contains("http -c 100000000: too many open files (ulimit -n "), SetupError);
  CHECK_NOTHROW(ensure_open_files("http", 2, 4));
}

// ---------------------------------------------------------------------------------------------
// The shared workload (--mix) on pouchdb-server.
namespace {

Job couch_mix(const std::string& mix, uint64_t n, int clients, uint64_t keyspace) {
  Job j = couch_job("mix", n, clients);
  j.opts["mix"] = mix;
  j.opts["keyspace"] = std::to_string(keyspace);
  return j;
}

uint64_t status_count(const JobResult& r, const std::string& code) {
  const std::string s = test::statuses(r);
  size_t at = s.find(code + ": ");
  return at == std::string::npos ? 0 : std::stoull(s.substr(at + code.size() + 2));
}

}  // namespace

TEST_CASE("couchdb --mix: read, update, insert, delete, rmw on pouchdb-server, values checked, verified") {
  for (int pipeline : {1, 3}) {
    CAPTURE(pipeline);
    Job j = couch_mix("read:40,update:20,insert:10,delete:10,rmw:20", 600, 3, 150);
    j.pipeline = pipeline;
    JobResult r = run_one(j);
    CHECK(r.message == "");
    CHECK(r.ops_ok == 600);
    CHECK(r.ops_failed == 0);
    for (auto& e : r.error_samples) MESSAGE(e);
    REQUIRE(r.load);
    CHECK(r.load->ops_ok == 150);
    CHECK(r.misses > 0);  // deleted keys are read again
    CHECK(r.verify.checked);
    CHECK(r.verify.ok);
    CAPTURE(r.verify.detail);
    CHECK(status_count(r, "201") > 0);
  }
  // no deletes: every key is there, and the store must still hold it at the end
  JobResult r = run_one(couch_mix("read:60,update:20,rmw:20", 400, 2, 100));
  CHECK(r.ops_ok == 400);
  CHECK(r.misses == 0);
  CHECK(r.verify.ok);
  // scans are not mapped: one clear set-up error naming the option
  r = run_one(couch_mix("read:50,scan:50", 10, 1, 10));
  CHECK(r.state == JobResult::State::SetupFailed);
  CHECK(r.message.find("scan") != std::string::npos);
}

TEST_CASE("couchdb --mix: clients updating the same keys meet 409 conflicts, resolved by reading the revision") {
  // 4 clients on 10 keys: revisions go stale under the writers' feet; a second conflict in a
  // row (another writer again) is a failure
  Job j = couch_mix("update:100", 400, 4, 10);
  j.opts["load"] = "true";
  JobResult r = run_one(j);
  CHECK(r.message == "");
  CHECK(status_count(r, "409") > 0);
  CHECK(r.ops_ok + r.ops_failed == 400);
  CHECK(r.ops_ok > 200);
  for (auto& e : r.error_samples)
    CHECK(e.find("conflict again after reading the current revision") != std::string::npos);
  CHECK(r.verify.ok);
}

TEST_CASE("couchdb --mix: another key's value, a document without v, a cut answer: counted failures") {
  struct Case {
    std::string body;
    Status status;
  };
  auto doc = [](const std::string& v) { return nlohmann::json{{"_id", "k"}, {"_rev", "1-a"}, {"v", v}}.dump(); };
  for (auto& c : std::vector<Case>{{doc(make_value(7, 1, 100)), Status::Mismatch},
                                   {doc(make_value(0, 1, 100).replace(40, 1, "!")), Status::Mismatch},
                                   {R"({"_id":"k","_rev":"1-a"})", Status::Error},
                                   {R"({"_id":"k","_rev":"1-a","v":42})", Status::Error},
                                   {"{\"v\":\"", Status::Error}}) {
    CAPTURE(c.body);
    HostileServer srv(couch_with(200, c.body));
    Job j = couch_mix("read:100", 5, 1, 1);
    j.opts["url"] = srv.url("/db");
    j.opts["load"] = "false";
    JobResult r = run_one(j);
    CHECK(r.state == JobResult::State::Done);
    CHECK(r.ops_failed == 5);
    CHECK(r.errors[static_cast<int>(c.status)] == 5);
    check_printable(r);
  }
}
