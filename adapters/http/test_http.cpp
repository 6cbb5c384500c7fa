// The http adapter's native engine against a real nginx started here (nginx-light, one worker,
// a 60-byte file, every path in the service's temp dir): keep-alive at c=1 and c=8, -P 4
// pipelined, a connection per request, 404 and changed lengths as failures, a server that
// closes keep-alive connections every 10 requests, a stopped server. And the answer parser
// alone: answers cut at every byte, pipelined answers in one read, the caps.
#include <doctest/doctest.h>
#include <signal.h>

#include <chrono>
#include <string>

#include "adapters/http/client.h"
#include "adapters/http/wire.h"
#include "core/driver.h"
#include "core/runner.h"
#include "services/services.h"
#include "tests/helpers.h"

using namespace mw;

namespace {

// nginx on a free port; keepalive_requests as given. /index.html is 60 bytes, /varying answers
// the number of requests on its connection so far ("1" .. "9", then "10": a length change).
ServiceSpec nginx_spec(int keepalive_requests) {
  ServiceSpec s;
  s.name = "nginx";
  s.binary = "nginx";
  std::string conf =
      "worker_processes 1;\n"
      "error_log {dir}/error.log warn;\n"
      "pid {dir}/nginx.pid;\n"
      "events { worker_connections 1024; }\n"
      "http {\n"
      "  access_log off;\n"
      "  client_body_temp_path {dir}/tmp/body; proxy_temp_path {dir}/tmp/proxy;\n"
      "  fastcgi_temp_path {dir}/tmp/fastcgi; uwsgi_temp_path {dir}/tmp/uwsgi; scgi_temp_path {dir}/tmp/scgi;\n"
      "  keepalive_requests " +
      std::to_string(keepalive_requests) +
      ";\n"
      "  server {\n"
      "    listen 127.0.0.1:{port};\n"
      "    root {dir}/www;\n"
      "    location = /varying { return 200 \"$connection_requests\"; }\n"
      "  }\n"
      "}\n";
  // The worker runs as an unprivileged user: the dir and the file must be readable by it.
  s.setup = {{"sh", "-c",
              "chmod 755 {dir} && mkdir -p www tmp && printf '%060d' 0 | tr 0 a > www/index.html && "
              "chmod -R a+rX www"}};
  // The port is known when the server starts (not in set-up): the config is written then.
  std::string nginx = find_binary("nginx");
  s.binary = "sh";
  s.args = {"-c", "cat > {dir}/nginx.conf <<'EOF'\n" + conf + "EOF\nexec " + (nginx.empty() ? "nginx" : nginx) +
                      " -e {dir}/error.log -p {dir} -c {dir}/nginx.conf -g 'daemon off;'"};
  s.probe = [](int port) { return http::probe("http://127.0.0.1:" + std::to_string(port) + "/index.html", {}); };
  return s;
}

Job get_job(const Service& srv, const std::string& path, uint64_t n, int clients, int pipeline = 1,
            bool keepalive = true) {
  Job j = test::make_job("http", "request", n, clients);
  j.name = "http";
  j.pipeline = pipeline;
  j.opts["url"] = "http://127.0.0.1:" + std::to_string(srv.port()) + path;
  j.opts["keepalive"] = keepalive ? "true" : "false";
  j.opts["engine"] = "native";
  return j;
}

uint64_t metric(const JobResult& r, const std::string& key) {
  double v = test::metric(r, key);
  return v < 0 ? 0 : static_cast<uint64_t>(v);
}

const char* kResent = "requests sent again (the server closed the connection first)";

}  // namespace

TEST_CASE("http native: GET from nginx with keep-alive at c=1, c=8 and -P 4 pipelined, every answer checked") {
  Service srv(nginx_spec(1000));
  struct Case {
    int clients, pipeline;
  };
  for (auto c : {Case{1, 1}, Case{8, 1}, Case{4, 4}}) {
    CAPTURE(c.clients);
    CAPTURE(c.pipeline);
    // under nginx's keepalive_requests (1000) per connection
    JobResult r = run_one(get_job(srv, "/index.html", 900, c.clients, c.pipeline));
    CHECK(r.message == "");
    CHECK(r.ops_ok == 900);
    CHECK(r.ops_failed == 0);
    CHECK(test::statuses(r) == "200: 900");
    CHECK(test::metric(r, "document length") == 60);
    CHECK(metric(r, "connections opened") == static_cast<uint64_t>(c.clients));  // kept alive
    CHECK(r.bytes == 900 * 60);
    CHECK(r.server.at("engine").find("native (http-parser ") == 0);
    CHECK(test::metric(r, "waiting p50") >= 0);
    CHECK(test::metric(r, "waiting max") >= test::metric(r, "waiting p50"));
  }
}

TEST_CASE("http native: a connection per request (ab without -k)") {
  Service srv(nginx_spec(1000));
  JobResult r = run_one(get_job(srv, "/index.html", 500, 4, 1, false));
  CHECK(r.ops_ok == 500);
  CHECK(r.ops_failed == 0);
  CHECK(metric(r, "connections opened") == 500);
  CHECK(test::statuses(r) == "200: 500");
  // -P > 1 needs keep-alive: one clear set-up error
  r = run_one(get_job(srv, "/index.html", 10, 1, 4, false));
  CHECK(r.state == JobResult::State::SetupFailed);
  CHECK(r.message == "http: -P > 1 (pipelining) needs --keepalive");
}

TEST_CASE("http native: a 404 and a changed length are failures, counted by status, never throughput") {
  Service srv(nginx_spec(1000));
  JobResult r = run_one(get_job(srv, "/missing", 50, 2));
  CHECK(r.ops_ok == 0);
  CHECK(r.rps == 0);
  CHECK(r.ops_failed == 50);
  CHECK(r.errors[static_cast<int>(Status::NotFound)] == 50);
  CHECK(test::statuses(r) == "404: 50");
  REQUIRE(!r.error_samples.empty());
  CHECK(r.error_samples[0] == "NotFound: HTTP 404 (non-2xx response)");
  RunResult run;
  run.jobs.push_back(r);
  CHECK(exit_code(run) == 1);

  // one connection: answers "1" .. "9" are one byte, "10" .. "20" two: 11 changed lengths
  r = run_one(get_job(srv, "/varying", 20, 1));
  CHECK(r.ops_ok == 9);
  CHECK(r.errors[static_cast<int>(Status::Mismatch)] == 11);
  REQUIRE(!r.error_samples.empty());
  CHECK(r.error_samples[0] == "Mismatch: length changed: 2 bytes, the first response had 1");
  Job off = get_job(srv, "/varying", 20, 1);
  off.opts["check-length"] = "false";
  CHECK(run_one(off).ops_ok == 20);
}

TEST_CASE("http native: nginx closes keep-alive connections every 10 requests; every request still succeeds") {
  Service srv(nginx_spec(10));
  JobResult r = run_one(get_job(srv, "/index.html", 200, 1));
  CHECK(r.ops_ok == 200);
  CHECK(r.ops_failed == 0);
  CHECK(metric(r, "connections opened") == 20);
  CHECK(metric(r, kResent) == 0);  // nothing was in flight after the closing answer
  // pipelined: the requests sent after the 10th answer were never processed and go again
  r = run_one(get_job(srv, "/index.html", 2000, 3, 4));
  CHECK(r.ops_ok == 2000);
  CHECK(r.ops_failed == 0);
  CHECK(test::statuses(r) == "200: 2000");
  CHECK(metric(r, "connections opened") >= 200);
  CHECK(metric(r, kResent) > 0);
}

TEST_CASE("http native: a stopped nginx (SIGSTOP): timeouts, the job ends within about two timeouts, no hang") {
  Service srv(nginx_spec(1000));
  struct Resume {  // nginx continues (and is stopped) whatever the checks say
    pid_t pid;
    ~Resume() { kill(-pid, SIGCONT); }
  } resume{srv.pid()};
  Job j = get_job(srv, "/index.html", 100000, 2, 2);
  j.timeout_s = 1;
  auto a = test::make_adapter("http", j);
  a->prepare(j);
  REQUIRE(kill(-srv.pid(), SIGSTOP) == 0);  // master and worker
  auto t0 = std::chrono::steady_clock::now();
  JobResult r;
  r = measure(j, *a);
  double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  CHECK(took < 3.5);
  CHECK(r.ops_ok == 0);
  CHECK(r.errors[static_cast<int>(Status::Timeout)] == 4);  // 2 clients, 2 in flight each
  CHECK(r.ops_not_run == 100000 - 4);
  a->teardown();
}

// ---------------------------------------------------------------------------------------------
// The answer parser alone.
namespace {

struct Collect : http::ResponseParser::Sink {
  std::vector<http::Answer> answers;
  std::vector<std::string> bodies;
  int begins = 0;
  void on_first_byte() override { ++begins; }
  void on_answer(const http::Answer& a, std::string& body) override {
    answers.push_back(a);
    bodies.push_back(body);
  }
};

}  // namespace

TEST_CASE("http wire: pipelined answers in one read, or cut at every byte, frame the same") {
  const std::string stream =
      "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello"
      "HTTP/1.1 100 Continue\r\n\r\n"
      "HTTP/1.1 404 Not Found\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n2\r\nde\r\n0\r\n\r\n"
      "HTTP/1.1 204 No Content\r\n\r\n"
      "HTTP/1.1 201 Created\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok"
      "HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n";  // after the close: never read as an answer
  for (size_t cut = 0; cut <= stream.size(); ++cut) {
    CAPTURE(cut);
    Collect sink;
    http::ResponseParser p(1 << 20, http::kMaxHeaderBytes, true, &sink);
    REQUIRE(p.feed(stream.data(), cut));
    REQUIRE(p.feed(stream.data() + cut, stream.size() - cut));
    REQUIRE(sink.answers.size() == 4);
    CHECK(sink.answers[0].status == 200);
    CHECK(sink.bodies[0] == "hello");
    CHECK(sink.answers[1].status == 404);
    CHECK(sink.bodies[1] == "abcde");
    CHECK(sink.answers[1].body_len == 5);
    CHECK(sink.answers[2].status == 204);
    CHECK(sink.answers[3].status == 201);
    CHECK(!sink.answers[3].keep_alive);
    CHECK(p.closing());
  }
}

TEST_CASE("http wire: caps, bad framing and a cut answer are errors with a reason") {
  struct Case {
    std::string stream, error;
    int64_t max_body = 1 << 20;
  };
  for (auto& c : std::vector<Case>{
           {"HTTP/1.1 200 OK\r\nContent-Length: 11\r\n\r\n", "body larger than --max-body 10 bytes", 10},
           {"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n8\r\n12345678\r\n8\r\n1234",
            "body larger than --max-body 10 bytes", 10},
           {"HTTP/1.1 200 OK\r\nX: " + std::string(300000, 'h'), "headers larger than 256k"},
           {"GARBAGE\r\n\r\n", "malformed answer: invalid constant string"},
           {"HTTP/1.1 200 OK\r\nContent-Length: 5\r\nContent-Length: 7\r\n\r\n",
            "malformed answer: unexpected content-length header"},
       }) {
    CAPTURE(c.stream.substr(0, 60));
    Collect sink;
    http::ResponseParser p(c.max_body, http::kMaxHeaderBytes, false, &sink);
    CHECK(!p.feed(c.stream.data(), c.stream.size()));
    CHECK(p.error() == c.error);
    CHECK(sink.answers.empty());
  }
  Collect sink;
  http::ResponseParser p(100, http::kMaxHeaderBytes, false, &sink);
  std::string cut = "HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nabc";
  CHECK(p.feed(cut.data(), cut.size()));
  CHECK(p.in_answer());
  CHECK(!p.finish());
  CHECK(p.error().find("connection closed by the server mid-answer") == 0);
  // an answer that runs to the end of the stream completes there
  Collect s2;
  http::ResponseParser q(100, http::kMaxHeaderBytes, true, &s2);
  std::string to_end = "HTTP/1.0 200 OK\r\n\r\nall of it";
  CHECK(q.feed(to_end.data(), to_end.size()));
  CHECK(q.finish());
  REQUIRE(s2.bodies.size() == 1);
  CHECK(s2.bodies[0] == "all of it");
}

namespace {
// What a parser delivered from a stream fed in pieces of `piece` bytes: every answer, the
// outcome, the error.
std::string framed(const std::string& stream, size_t piece, bool fast, int64_t max_body, int64_t max_header) {
  Collect sink;
  http::ResponseParser p(max_body, max_header, true, &sink);
  p.set_fast_path(fast);
  bool ok = true;
  for (size_t at = 0; at < stream.size() && ok; at += piece)
    ok = p.feed(stream.data() + at, std::min(piece, stream.size() - at));
  std::string out = std::to_string(sink.begins) + (ok ? " ok " : " failed ") + p.error() +
                    (p.closing() ? " closing" : "") + (p.in_answer() ? " in-answer" : "");
  if (ok) out += p.finish() ? " finished" : " cut: " + p.error();
  for (size_t i = 0; i < sink.answers.size(); ++i)
    out += "\n" + std::to_string(sink.answers[i].status) + " " + std::to_string(sink.answers[i].body_len) +
           (sink.answers[i].keep_alive ? " k " : " c ") + sink.bodies[i];
  return out;
}
}  // namespace

// The fast path frames whole plain answers itself and hands everything else to http_parser;
// it must never change what is delivered. Answers of every shape, then byte flips, deletions
// and insertions of them, fed whole and in pieces: the same answers, outcome and error with
// the fast path on and off.
TEST_CASE("http wire: the fast path frames exactly as http_parser, whatever the bytes") {
  const std::vector<std::string> shapes = {
      "HTTP/1.1 200 OK\r\nServer: nginx/1.22.1\r\nDate: Mon, 30 Nov 2026 12:00:00 GMT\r\nContent-Type: text/html\r\n"
      "Content-Length: 5\r\nConnection: keep-alive\r\nETag: \"6563-3c\"\r\nAccept-Ranges: bytes\r\n\r\nhello",
      "HTTP/1.1 201 Created\r\ncontent-length: 11\r\n\r\n{\"ok\":true}",
      "HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n",
      "HTTP/1.1 200 OK\r\nContent-Length: 3\r\nConnection: close\r\n\r\nbye",
      "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n",
      "HTTP/1.1 100 Continue\r\n\r\n",
      "HTTP/1.1 204 No Content\r\nContent-Length: 4\r\n\r\n",
      "HTTP/1.1 304 Not Modified\r\n\r\n",
      "HTTP/1.0 200 OK\r\nContent-Length: 2\r\n\r\nok",
      "HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Length: 2\r\n\r\nok",
      "HTTP/1.1 200 OK\r\nContent-Length: +2\r\n\r\nok",
      "HTTP/1.1 200 OK\r\nContent-Length: 2 \r\n\r\nok",
      "HTTP/1.1 200 OK\r\nContent-Length:\t2\r\nConnection:Keep-Alive\r\n\r\nok",
      "HTTP/1.1 200 OK\r\nUpgrade: h2c\r\nConnection: Upgrade\r\nContent-Length: 0\r\n\r\n",
      "HTTP/1.1 200 OK\r\nX: a\r\n b\r\nContent-Length: 1\r\n\r\nx",
      "HTTP/1.1 200 OK\nContent-Length: 1\n\nx",
      "HTTP/1.1 200 \r\nContent-Length: 1\r\n\r\nx",
      "HTTP/1.1 200 OK\r\nBad Name: 1\r\nContent-Length: 1\r\n\r\nx",
      "HTTP/1.1 200 OK\r\nX: caf\xc3\xa9\r\nContent-Length: 1\r\n\r\nx",
      "HTTP/1.1 999 Odd\r\nContent-Length: 1\r\n\r\nx",
      "HTTP/1.1 200 OK\r\nContent-Length: 99999999999999999999\r\n\r\n",
      "HTTP/1.1 200 OK\r\nContent-Length: 40\r\n\r\n0123456789012345678901234567890123456789",
      "HTTP/1.1 200 OK\r\nContent-Length: 8\r\n\r\n12345678",  // at the small body cap, and one past it
      "HTTP/1.1 200 OK\r\nContent-Length: 9\r\n\r\n123456789",
      "HTTP/1.1 200 OK\r\nContent-Length: 1\r\n\r\n",  // cut short
      "\r\nHTTP/1.1 200 OK\r\nContent-Length: 1\r\n\r\nx",
      // http_parser takes any name that begins with transfer-encoding for one (fuzz_http_wire)
      "HTTP/1.1 200 OK\r\nTransfer-Encodings: x\r\nContent-Length: 1\r\n\r\nx",
      "HTTP/1.1 200 OK\r\ntransfer-encoding-x: chunked\r\nContent-Length: 1\r\n\r\nx",
  };
  uint64_t seed = 7;
  auto next = [&] { return seed = mix64(seed); };
  auto check = [&](const std::string& stream) {
    for (int64_t max_body : {int64_t{1} << 20, int64_t{8}})
      for (int64_t max_header : {http::kMaxHeaderBytes, int64_t{60}})
        for (size_t piece : {stream.size() + 1, size_t{1}, size_t{7}}) {
          const std::string fast = framed(stream, piece, true, max_body, max_header);
          const std::string slow = framed(stream, piece, false, max_body, max_header);
          if (fast != slow) {
            CAPTURE(stream);
            CAPTURE(piece);
            CAPTURE(max_body);
            CAPTURE(max_header);
            CHECK(fast == slow);
            return false;
          }
        }
    return true;
  };
  size_t checked = 0;
  for (auto& a : shapes)
    for (auto& b : shapes) {
      checked += check(a + b);
      checked += check(shapes[0] + a + shapes[0] + b);
    }
  for (int i = 0; i < 3000; ++i) {  // mutations of pipelined answers
    std::string s = shapes[next() % shapes.size()] + shapes[next() % shapes.size()] + shapes[0];
    for (int m = 1 + static_cast<int>(next() % 3); m-- > 0;) {
      size_t at = next() % s.size();
      switch (next() % 3) {
        case 0: s[at] = static_cast<char>(next()); break;
        case 1: s.erase(at, 1 + next() % 4); break;
        default: s.insert(at, 1, "\r\n: 0aZ\t\x7f"[next() % 10]); break;
      }
      if (s.empty()) s = "x";
    }
    checked += check(s);
  }
  CHECK(checked == shapes.size() * shapes.size() * 2 + 3000);
  // and it is taken: nginx's answers, pipelined, whole or cut anywhere
  const std::string three = shapes[0] + shapes[1] + shapes[0];
  for (size_t cut = 0; cut <= three.size(); ++cut) {
    Collect sink;
    http::ResponseParser p(1 << 20, http::kMaxHeaderBytes, true, &sink);
    REQUIRE(p.feed(three.data(), cut));
    REQUIRE(p.feed(three.data() + cut, three.size() - cut));
    REQUIRE(sink.answers.size() == 3);
    CHECK(sink.bodies[1] == "{\"ok\":true}");
    CHECK(p.fast_answers() >= (cut == 0 || cut == three.size() ? 3u : 1u));
  }
}

TEST_CASE("http wire: URLs, the request bytes, Basic credentials") {
  http::Target t = http::parse_target("http://u%40x:p%3Aw@127.0.0.1:8080/db/doc?rev=1#frag");
  CHECK(t.host == "127.0.0.1");
  CHECK(t.port == 8080);
  CHECK(t.host_header == "127.0.0.1:8080");
  CHECK(t.path == "/db/doc?rev=1");
  CHECK(t.userinfo == "u@x:p:w");
  CHECK(http::parse_target("http://[::1]/").host_header == "[::1]");
  CHECK(http::parse_target("https://example.org").port == 443);
  CHECK(http::path_of("http://h:1") == "/");
  CHECK(http::parse_target("127.0.0.1:9/x").path == "/x");  // no scheme: http://, as libcurl takes it
  CHECK(http::path_of("http://h:1?q=1") == "?q=1");
  CHECK_THROWS_WITH_AS(http::parse_target("ftp://a:secret@h/"),
                       "http: --url ftp://h/: scheme ftp is not http (expected http://host[:port]/path)", SetupError);
  CHECK_THROWS_AS(http::parse_target("not a url"), SetupError);
  std::string block = http::header_block(t, {"X-A: 1"}, "", false);
  CHECK(block == "Host: 127.0.0.1:8080\r\nAuthorization: Basic " + http::base64("u@x:p:w") +
                     "\r\nConnection: close\r\nX-A: 1\r\n");
  CHECK(http::base64("user:pass") == "dXNlcjpwYXNz");
  CHECK(http::base64("a") == "YQ==");
  CHECK(http::base64("ab") == "YWI=");
  std::string out;
  http::encode_request(out, "POST", "/db", "Host: h\r\n", "{}");
  CHECK(out == "POST /db HTTP/1.1\r\nHost: h\r\nContent-Length: 2\r\n\r\n{}");
  CHECK_THROWS_WITH_AS(http::header_block(t, {"no colon"}, "", true),
                       "http: --header expects 'Name: value', got 'no colon'", SetupError);
}

// Found by fuzz_http_wire: a 101 whose body runs to the end of the stream ended in the pause the
// fast path puts after every answer, and finish() took the pause for an error.
TEST_CASE("http wire: an answer that ends with the stream completes with the fast path on too") {
  const std::string s(
      "\x48\x54\x54\x50\x2f\x31\x2e\x31\x20\x31\x30\x31\x20\x43\x20\x6e\x01\x10\x48\x54\x54\x50\x2f\x31\x2e\x31\x20\x31"
      "\x30\x30\x20\x0d\x0a\x54\x72\x61\x6e\x73\x66\x65\x72\x2d\x45\x6e\x63\x6f\x64\x69\x6e\x67\x3a\x7e\x0a\x0d\x0a\x8c"
      "\x34\x0d\x0a\x05\x3a\x0d\x0a\x0d\x10\x48\x54\x54\x50\x2f\x31\x2e\x31\x20\x31\x30\x31\x20\x43\x6f\x6e\x64\x0a\x74"
      "\x0d\x09\x0d\x0a\x48\x54\x54\x50\x2f\x30\x2e\x31\xba\xba\xba\xba\xba\xba\xba\xba\xba\xba\xba\xba\xba\xba\xba\xba"
      "\xba\xba\xba\xba\xba\xba\xba\xba\xba\xba\xba\xba\xba\xba\xba\xba\xba\xba\xba\xba\xba\xba\xba\xba\xba\xba\xba\xba"
      "\xba\xba\xba\xba\xba\xba\x20\x32\x30\x31\x20\x0a\x0d\x6f\x6b\x48\x55\x55\x6b\x48\x55\x54\x50\x31\x0d\x0a",
      166);
  for (size_t piece : {size_t{1}, s.size() + 1}) {
    const std::string fast = framed(s, piece, true, 113, http::kMaxHeaderBytes);
    CHECK(fast == framed(s, piece, false, 113, http::kMaxHeaderBytes));
    CHECK(fast.find("finished") != std::string::npos);
  }
  const std::string plain =
      "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nokHTTP/1.1 101 Go\r\nTransfer-Encoding: x\r\n\r\nrest";
  CHECK(framed(plain, 5, true, 100, http::kMaxHeaderBytes) == framed(plain, 5, false, 100, http::kMaxHeaderBytes));
}
