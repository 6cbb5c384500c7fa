// CouchDB and HTTP adapters against a real pouchdb-server started here, and the HTTP adapter
// against a tiny server that answers 500 (a fault a healthy server will not show on demand).
#include <doctest/doctest.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cstring>
#include <chrono>
#include <nlohmann/json.hpp>
#include <thread>

#include "driver.h"
#include "report/report.h"
#include "http/client.h"
#include "helpers.h"
#include "runner.h"
#include "services.h"

using namespace mw;

namespace {

Job couch_job(const std::string& op, uint64_t n, int clients = 1) {
  Job j = test::make_job("couchdb", op, n, clients);
  return j;
}

// The managed pouchdb-server's base URL, found through a job that keeps its database.
std::string base_of(const JobResult& r) { return r.target.substr(0, r.target.rfind('/')); }

// Answers every request on 127.0.0.1 with HTTP 500, keeping connections open.
struct FailingServer {
  int fd = -1, port = 0;
  std::atomic<bool> stop{false};
  std::thread th;
  FailingServer() {
    fd = socket(AF_INET, SOCK_STREAM, 0);
    int one = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof a;
    bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a);
    getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
    port = ntohs(a.sin_port);
    listen(fd, 16);
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
              if (write(c, reply, std::strlen(reply)) < 0) break;
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
  for (auto [op, n] : {std::pair{"insert", 150}, std::pair{"put", 150}, std::pair{"bulk", 20}, std::pair{"get", 150}}) {
    CAPTURE(op);
    Job j = couch_job(op, static_cast<uint64_t>(n), 3);
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
    std::string want = std::string(op) == "get" ? "200: " : "201: ";
    CHECK(r.metrics.at("HTTP status") == want + std::to_string(n + 3));
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
  CHECK(r.metrics.at("HTTP status") == "201: 9, 409: 1");

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
  auto a = find_adapter("couchdb")->make(j);
  a->prepare(j);
  std::thread killer([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(800));
    kill(srv.pid(), SIGKILL);
  });
  auto t0 = std::chrono::steady_clock::now();
  JobResult r;
  measure(j, *a, r);
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
  JobResult any = run_one(couch_job("insert", 1));
  std::string base = base_of(any);
  Job j;
  j.adapter = "http";
  j.op = "request";
  j.name = "http";
  j.n = 200;
  j.clients = 4;
  j.opts["url"] = base + "/";
  j.opts["keepalive"] = "true";
  JobResult r = run_one(j);
  CHECK(r.ops_ok == 200);
  CHECK(r.metrics.at("HTTP status") == "200: 200");
  CHECK(r.metrics.at("connections opened") == "4");
  CHECK(r.metrics.count("document length"));
  j.opts["keepalive"] = "false";
  r = run_one(j);
  CHECK(r.ops_ok == 200);
  CHECK(r.metrics.at("connections opened") == "200");
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
  CHECK(r.metrics.at("HTTP status") == "500: 50");
  REQUIRE(!r.error_samples.empty());
  CHECK(r.error_samples[0] == "Error: HTTP 500 (non-2xx response)");
  for (auto& e : r.error_samples) MESSAGE(e);
  RunResult run;
  run.jobs.push_back(r);
  CHECK(exit_code(run) == 1);
}

TEST_CASE("http: a port nobody listens on: refused, counted, the client stops") {
  Job j;
  j.adapter = "http";
  j.op = "request";
  j.name = "http";
  j.n = 100;
  int port = free_port();
  j.opts["url"] = "http://127.0.0.1:" + std::to_string(port) + "/";
  JobResult r = run_one(j);
  CHECK(r.ops_ok == 0);
  CHECK(r.errors[static_cast<int>(Status::Refused)] == 1);
  CHECK(r.ops_not_run == 99);
  REQUIRE(!r.error_samples.empty());
  CHECK(r.error_samples[0] == "Refused: Couldn't connect to server (http://127.0.0.1:" + std::to_string(port) + "/)");
}
