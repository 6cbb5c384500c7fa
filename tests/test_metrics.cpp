// --metrics-listen: the running jobs' counters scraped over HTTP while a run is in progress, the
// listener's bounds (request size, slow clients, connections) and its bad input.
#include <doctest/doctest.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <future>
#include <map>
#include <memory>
#include <sstream>
#include <thread>

#include "core/metrics_server.h"
#include "core/runner.h"
#include "tests/helpers.h"
#include "util/clock.h"

using namespace mw;

namespace {

int connect_to(int port) {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = htons(static_cast<uint16_t>(port));
  REQUIRE(connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0);
  return fd;
}

// Everything the server sends until it closes (or 5 s pass).
std::string read_all(int fd) {
  std::string out;
  char b[4096];
  const int64_t end = now_ns() + 5'000'000'000;
  for (;;) {
    pollfd p{fd, POLLIN, 0};
    if (poll(&p, 1, static_cast<int>(std::max<int64_t>(0, (end - now_ns()) / 1'000'000))) <= 0) break;
    ssize_t k = recv(fd, b, sizeof b, 0);
    if (k <= 0) break;
    out.append(b, static_cast<size_t>(k));
  }
  return out;
}

std::string get(int port, const std::string& request = "GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n") {
  int fd = connect_to(port);
  REQUIRE(send(fd, request.data(), request.size(), MSG_NOSIGNAL) == static_cast<ssize_t>(request.size()));
  std::string r = read_all(fd);
  close(fd);
  return r;
}

// The samples of the body: "name{labels}" -> value.
std::map<std::string, double> samples(const std::string& reply) {
  std::map<std::string, double> out;
  std::istringstream in(reply.substr(reply.find("\r\n\r\n") + 4));
  for (std::string line; std::getline(in, line);) {
    if (line.empty() || line[0] == '#') continue;
    size_t sp = line.rfind(' ');
    out[line.substr(0, sp)] = std::strtod(line.c_str() + sp + 1, nullptr);
  }
  return out;
}

}  // namespace

TEST_CASE("metrics: scraped while a run is in progress, the figures are the run's own") {
  MetricsServer server("127.0.0.1:0", false);
  REQUIRE(server.port() > 0);
  Job j = test::make_job("null", "nop", 0, 2);
  j.name = "null \"quoted\" nop";
  j.duration_s = 1.5;
  j.interval_s = 0.1;
  auto run = std::async(std::launch::async, [&] { return run_one(j); });
  std::this_thread::sleep_for(std::chrono::milliseconds(1200));
  std::string during = get(server.port());
  JobResult r = run.get();
  REQUIRE(r.state == JobResult::State::Done);
  CHECK(during.rfind("HTTP/1.1 200 OK\r\n", 0) == 0);
  CHECK(during.find("Content-Type: text/plain; version=0.0.4; charset=utf-8\r\n") != std::string::npos);
  const std::string labels = R"({name="null \"quoted\" nop",adapter="null",op="nop",target="-"})";
  auto d = samples(during);
  CAPTURE(during.substr(0, 3000));
  CHECK(d["mwbench_running" + labels] == 1);
  CHECK(d["mwbench_ops_total" + labels] > 0);
  CHECK(d["mwbench_ops_total" + labels] < static_cast<double>(r.ops_ok));  // it was still going
  CHECK(d["mwbench_rate_ops_per_second" + labels] > 0);
  CHECK(d["mwbench_latency_seconds_count{" + labels.substr(1, labels.size() - 2) + "}"] > 0);
  CHECK(d.count(
      R"(mwbench_latency_quantiles_seconds{name="null \"quoted\" nop",adapter="null",op="nop",target="-",quantile="0.99"})"));
  CHECK(d[R"(mwbench_errors_total{name="null \"quoted\" nop",adapter="null",op="nop",target="-",kind="Timeout"})"] ==
        0);
  // the timeline's events as gauges: the machine's steal (a share of the interval), read each 100 ms
  const std::string steal =
      R"(mwbench_event{name="null \"quoted\" nop",adapter="null",op="nop",target="-",origin="machine",source="machine",event="steal",unit="share"})";
  REQUIRE(d.count(steal));
  CHECK(d[steal] >= 0);
  CHECK(d[steal] <= 1);
  auto after = samples(get(server.port()));  // the phase ended: its totals stand, exactly
  CHECK(after["mwbench_running" + labels] == 0);
  CHECK(after["mwbench_ops_total" + labels] == static_cast<double>(r.ops_ok + r.ops_failed));
  CHECK(after["mwbench_latency_seconds_count{" + labels.substr(1, labels.size() - 2) + "}"] ==
        static_cast<double>(r.ops_ok));
  j.name = "null fails";  // errors by kind
  j.duration_s = 0;
  j.n = 1000;
  j.opts["fail-every"] = "10";
  JobResult f = run_one(j);
  CHECK(
      samples(get(
          server
              .port()))[R"(mwbench_errors_total{name="null fails",adapter="null",op="nop",target="-",kind="Error"})"] ==
      static_cast<double>(f.ops_failed));
  CHECK(f.ops_failed == 100);
  // --server-events off: no event read, none shown
  j.name = "null quiet", j.n = 0, j.duration_s = 1, j.server_events = false;
  j.opts.erase("fail-every");
  auto quiet = std::async(std::launch::async, [&] { return run_one(j); });
  std::this_thread::sleep_for(std::chrono::milliseconds(700));
  const std::string page = get(server.port());
  CHECK(quiet.get().events.empty());
  CHECK(page.find(R"(mwbench_running{name="null quiet")") != std::string::npos);
  CHECK(page.find(R"(mwbench_event{name="null quiet")") == std::string::npos);
}

TEST_CASE("metrics: the listener's bounds: request size, other paths and methods, slow clients, stop") {
  MetricsServer server("127.0.0.1:0", false);
  CHECK(get(server.port(), "GET /other HTTP/1.1\r\n\r\n").rfind("HTTP/1.1 404", 0) == 0);
  CHECK(get(server.port(), "POST /metrics HTTP/1.1\r\n\r\n").rfind("HTTP/1.1 405", 0) == 0);
  std::string head = get(server.port(), "HEAD /metrics HTTP/1.1\r\n\r\n");
  CHECK(head.rfind("HTTP/1.1 200", 0) == 0);
  CHECK(head.size() == head.find("\r\n\r\n") + 4);  // no body
  std::string huge = "GET /metrics HTTP/1.1\r\nX: " + std::string(MetricsServer::kMaxRequest, 'a');
  CHECK(get(server.port(), huge).rfind("HTTP/1.1 431", 0) == 0);
  int slow = connect_to(server.port());  // sends half a request and nothing more
  REQUIRE(send(slow, "GET /met", 8, 0) == 8);
  const int64_t t0 = now_ns();
  CHECK(read_all(slow).empty());  // closed without a reply
  const double waited = static_cast<double>(now_ns() - t0) / 1e9;
  CHECK(waited > 1.5);
  CHECK(waited < 4);
  close(slow);
  std::vector<int> idle;  // more connections than it keeps: the extra ones are closed at once
  for (int i = 0; i < MetricsServer::kMaxConnections; ++i) idle.push_back(connect_to(server.port()));
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  int extra = connect_to(server.port());
  char b;
  pollfd p{extra, POLLIN, 0};
  REQUIRE(poll(&p, 1, 1000) == 1);
  CHECK(recv(extra, &b, 1, 0) == 0);
  close(extra);
  for (int fd : idle) close(fd);
  const int port = server.port();
  {  // destroyed with a connection open: it returns at once and closes the connection
    auto gone = std::make_unique<MetricsServer>("127.0.0.1:0", false);
    int held = connect_to(gone->port());
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    const int64_t s0 = now_ns();
    gone.reset();
    CHECK(now_ns() - s0 < 500'000'000);
    CHECK(read_all(held).empty());
    close(held);
  }
  CHECK(get(port).rfind("HTTP/1.1 200", 0) == 0);  // the first one still serves
}

TEST_CASE("metrics: bad input names the option: a port in use, a non-loopback address, a bad address") {
  MetricsServer first("127.0.0.1:0", false);
  const std::string taken = "127.0.0.1:" + std::to_string(first.port());
  CHECK_THROWS_WITH_AS(MetricsServer(taken, false), ("--metrics-listen " + taken + ": the port is in use").c_str(),
                       SetupError);
  CHECK_THROWS_WITH_AS(MetricsServer("0.0.0.0:0", false),
                       "--metrics-listen 0.0.0.0:0: not a loopback address: anyone who can reach it reads the run's "
                       "names and targets; add --metrics-any to serve other machines",
                       SetupError);
  CHECK_NOTHROW(MetricsServer("0.0.0.0:0", true));
  CHECK_THROWS_WITH_AS(MetricsServer("9464", false),
                       "--metrics-listen 9464: expected ADDR:PORT (127.0.0.1:9464, [::1]:9464)", SetupError);
  CHECK_THROWS_WITH_AS(MetricsServer("127.0.0.1:70000", false),
                       "--metrics-listen 127.0.0.1:70000: the port must be 0 to 65535", SetupError);
  CHECK_THROWS_WITH_AS(MetricsServer("example.com:80", false),
                       "--metrics-listen example.com:80: not an IPv4 address (or [IPv6])", SetupError);
}

TEST_CASE("metrics: a job name's password= and a URL's ?token= are masked in the labels as in the JSON") {
  MetricsServer server("127.0.0.1:0", false);
  REQUIRE(server.port() > 0);
  // An HTTP job against the metrics server itself (a real server; the query is ignored there).
  Job j = test::make_job("http", "request", 0, 1);
  j.name = "probe password=SECRET-name-1 SECRET-name-2";
  j.opts["url"] =
      "http://u:SECRET-url-1@127.0.0.1:" + std::to_string(server.port()) + "/metrics?token=SECRET-url-2&x=1";
  j.duration_s = 1.5;
  j.interval_s = 0.1;
  j.timeout_s = 2;
  auto run = std::async(std::launch::async, [&] { return run_one(j); });
  std::this_thread::sleep_for(std::chrono::milliseconds(1000));
  std::string during = get(server.port());
  JobResult r = run.get();
  CAPTURE(r.message);
  CAPTURE(during.substr(0, 2000));
  CHECK(during.find("mwbench_running{") != std::string::npos);
  CHECK(during.find("SECRET") == std::string::npos);
  std::string after = get(server.port());
  CHECK(after.find("SECRET") == std::string::npos);
  // The labels are the JSON's name and target: one redaction for both.
  RunResult shown;
  shown.jobs = {r};
  redact_result(shown);
  const std::string name = shown.jobs[0].job.name, target = shown.jobs[0].target;
  CHECK(name == "probe password=***");
  CHECK(target == "http://127.0.0.1:" + std::to_string(server.port()) + "/metrics?token=***&x=1");
  CHECK(after.find("mwbench_ops_total{name=\"" + name + "\",adapter=\"http\",op=\"request\",target=\"" + target +
                   "\"} ") != std::string::npos);
}
