// Gearman adapter against Debian's gearmand, started by the tests with each queue backend.
#include <doctest/doctest.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
#include <thread>

#include "adapters/gearman/gearman.h"
#include "api/options.h"
#include "core/driver.h"
#include "core/runner.h"
#include "tests/helpers.h"
#include "tests/queue_checks.h"

using namespace mw;

namespace {

Job gearman_job(const std::string& op, const std::string& queue, uint64_t n, int clients = 1) {
  Job j = test::make_job("gearman", op, n, clients);
  j.opts["queue"] = queue;
  return j;
}

}  // namespace

TEST_CASE("gearman: every op on every persistent queue Debian's gearmand has") {
  for (const char* queue : {"builtin", "libsqlite3", "libmemcached", "redis"}) {
    for (const char* op : {"submit-bg", "submit-fg", "drain"}) {
      CAPTURE(queue);
      CAPTURE(op);
      Job j = gearman_job(op, queue, 300, 2);
      j.warmup_ops = 10;
      JobResult r = run_one(j);
      CHECK(r.message == "");
      CHECK(r.state == JobResult::State::Done);
      CHECK(r.ops_ok == 300);
      CHECK(r.ops_failed == 0);
      CHECK(r.verify.checked);
      CHECK(r.verify.ok);
      CAPTURE(r.verify.detail);
      CHECK(r.server.at("queue") == queue);
      CHECK(r.server.at("version").find("1.1") == 0);
    }
  }
}

TEST_CASE("gearman: verification reads the server's own queue count") {
  Job j = gearman_job("submit-bg", "libsqlite3", 250);
  JobResult r = run_one(j);
  CHECK(r.verify.detail == "gearmand status: 250 jobs queued, expected 250 (submitted)");
}

TEST_CASE("gearman: a new connection per job works and is slower than a persistent one") {
  Job j = gearman_job("submit-bg", "builtin", 1000);
  j.opts["connection"] = "per-job";
  JobResult per_job = run_one(j);
  CHECK(per_job.ops_ok == 1000);
  CHECK(per_job.verify.ok);
}

// Message i goes to function i mod N: gearmand's own status counts 100 queued jobs per function;
// consume and roundtrip take from every function.
TEST_CASE("gearman queue: --queues 3: message i to function i mod 3, produce, consume and roundtrip exactly once") {
  Job j = gearman_job("produce", "builtin", 300);
  j.timeout_s = 2;
  test::check_three_queues(j, "function", [](Adapter& a, const std::string& fn, int) {
    CHECK(a.describe().at("functions") == "3");
    const std::string target = a.target();  // "127.0.0.1:PORT builtin"
    CHECK(gearman::queued("127.0.0.1", std::atoi(target.c_str() + target.find(':') + 1), {fn}, 2) == 100);
  });
}

TEST_CASE("gearman: the sqlite queue's file goes in --store-dir and is removed afterwards") {
  char tmpl[] = "/tmp/mwbench-gstore-XXXXXX";
  std::string dir = mkdtemp(tmpl);
  Job j = gearman_job("submit-bg", "libsqlite3", 50);
  j.opts["store-dir"] = dir;
  auto a = test::make_adapter("gearman", j);
  a->prepare(j);
  std::string store = a->describe().at("store");
  CHECK(store.rfind(dir + "/", 0) == 0);
  JobResult r;
  r = measure(j, *a);
  CHECK(std::filesystem::exists(store));
  CHECK(a->verify(j, {r.ops_ok, 0, 0, 0}).ok);
  a->teardown();
  CHECK(!std::filesystem::exists(store));
  std::filesystem::remove_all(dir);
}

TEST_CASE("gearman: a queue this gearmand lacks is skipped with the reason, not failed") {
  JobResult r = run_one(gearman_job("submit-bg", "libtokyocabinet:tcb", 10));
  CHECK(r.state == JobResult::State::Skipped);
  CHECK(r.message.find("has no libtokyocabinet queue") != std::string::npos);
  CHECK(r.target == "libtokyocabinet:tcb");
  CHECK(!r.failed());
}

TEST_CASE("gearman: a wrong port is a clear error naming host:port") {
  int port = free_port();
  Job j = gearman_job("submit-bg", "builtin", 10);
  j.opts["server"] = "127.0.0.1:" + std::to_string(port);
  JobResult r = run_one(j);
  CHECK(r.state == JobResult::State::SetupFailed);
  CHECK(r.message == "gearmand 127.0.0.1:" + std::to_string(port) + ": cannot connect: Connection refused");
}

TEST_CASE("gearman: gearmand killed mid-run: errors counted, no hang, the rest not run") {
  Job j = gearman_job("submit-bg", "builtin", 10'000'000, 2);
  j.timeout_s = 1;
  auto a = test::make_adapter("gearman", j);
  a->prepare(j);
  std::string target = a->target();
  int port = std::stoi(target.substr(target.find(':') + 1));
  std::thread killer([port] {
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    // the gearmand listening on `port` is our child: find it through /proc
    for (auto& p : std::filesystem::directory_iterator("/proc")) {
      std::ifstream cmd(p.path() / "cmdline");
      std::string line((std::istreambuf_iterator<char>(cmd)), std::istreambuf_iterator<char>());
      if (line.find("gearmand") != std::string::npos && line.find(std::to_string(port)) != std::string::npos)
        kill(std::stoi(p.path().filename()), SIGKILL);
    }
  });
  auto t0 = std::chrono::steady_clock::now();
  JobResult r;
  r = measure(j, *a);
  killer.join();
  double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  CHECK(took < 10);
  CHECK(r.ops_ok > 0);
  CHECK(r.ops_failed >= 1);
  CHECK(r.ops_failed <= 2);  // one per client: a lost connection stops the client
  CHECK(r.ops_not_run > 0);
  CHECK(r.ops_ok + r.ops_failed + r.ops_not_run == 10'000'000);
  REQUIRE(!r.error_samples.empty());
  CHECK(r.error_samples[0].find("(127.0.0.1:" + std::to_string(port) + ")") != std::string::npos);
  a->teardown();
}

TEST_CASE("gearman: the postgres queue runs on a PostgreSQL started here, or is skipped with the reason") {
  Job j = gearman_job("submit-bg", "postgres", 200);
  JobResult r = run_one(j);
  bool installed = std::filesystem::exists("/usr/lib/postgresql");
  if (installed) {
    CHECK(r.message == "");
    CHECK(r.ops_ok == 200);
    CHECK(r.verify.ok);
    CHECK(r.server.at("backing").rfind("postgres 127.0.0.1:", 0) == 0);
  } else {
    CHECK(r.state == JobResult::State::Skipped);
    CHECK(r.message.find("PostgreSQL is not installed") == 0);
  }
}

namespace {

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

double thread_cpu_s() {
  timespec t{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_nsec) / 1e9;
}

// A TCP server on 127.0.0.1 that answers whatever it is sent with `talk` (a fault a real
// gearmand will not show): one connection at a time.
struct RawServer {
  int fd = -1, port = 0;
  std::atomic<bool> stop{false};
  std::thread th;
  explicit RawServer(std::function<void(int, const std::atomic<bool>&)> talk) {
    fd = test::listen_loopback(8, port);
    REQUIRE(fd >= 0);
    th = std::thread([this, talk] {
      while (!stop) {
        int c = accept(fd, nullptr, nullptr);
        if (c < 0) break;
        char b[256];
        if (read(c, b, sizeof b) > 0) talk(c, stop);
        close(c);
      }
    });
  }
  ~RawServer() {
    stop = true;
    shutdown(fd, SHUT_RDWR);
    close(fd);
    th.join();
  }
};

}  // namespace

TEST_CASE("gearman: a stopped gearmand (SIGSTOP) ends the job within about two timeouts, the rest not run") {
  Job setup = gearman_job("submit-bg", "builtin", 1);
  auto g = gearman::start_gearmand("builtin", options_of<GearmanOptions>(setup), setup.timeout_s);
  pid_t pid = g->server->pid();
  struct Resume {  // the server continues (and is stopped) whatever the checks say
    pid_t pid;
    ~Resume() { kill(pid, SIGCONT); }
  } resume{pid};
  for (auto opn : {std::pair{"submit-bg", 100000}, std::pair{"submit-fg", 100000}, std::pair{"drain", 2000}}) {
    const char* op = opn.first;  // not bindings: CAPTURE under clang 14
    const int n = opn.second;
    CAPTURE(op);
    Job j = gearman_job(op, "builtin", static_cast<uint64_t>(n), 2);
    j.opts["server"] = "127.0.0.1:" + std::to_string(g->server->port());
    j.timeout_s = 1;
    auto a = test::make_adapter("gearman", j);
    a->prepare(j);
    REQUIRE(kill(pid, SIGSTOP) == 0);
    auto t0 = std::chrono::steady_clock::now();
    JobResult r;
    r.job = j;
    r = measure(j, *a);
    CHECK(seconds_since(t0) < 3.5);
    CHECK(r.ops_ok == 0);
    CHECK(r.errors[static_cast<int>(Status::Timeout)] == 2);
    CHECK(r.ops_not_run == static_cast<uint64_t>(n) - 2);
    for (auto& e : r.error_samples) MESSAGE(e);
    t0 = std::chrono::steady_clock::now();
    r.verify = a->verify(j, {r.ops_ok, r.ops_failed, r.ops_not_run, 0});
    CHECK(r.verify.checked);
    CHECK(!r.verify.ok);  // a failed check, not a set-up error
    CHECK(r.verify.detail.find("gearmand status not read: gearmand 127.0.0.1:") == 0);
    a->teardown();
    CHECK(seconds_since(t0) < 3.5);
    RunResult run;
    run.jobs.push_back(r);
    CHECK(exit_code(run) == 1);
    kill(pid, SIGCONT);
  }
}

TEST_CASE("gearman queue: produce and consume on a stopped gearmand give up after one probe, never 'empty'") {
  Job setup = gearman_job("submit-bg", "builtin", 1);
  auto g = gearman::start_gearmand("builtin", options_of<GearmanOptions>(setup), setup.timeout_s);
  pid_t pid = g->server->pid();
  struct Resume {
    pid_t pid;
    ~Resume() { kill(pid, SIGCONT); }
  } resume{pid};
  for (const char* op : {"produce", "consume", "roundtrip"}) {
    CAPTURE(op);
    Job j = gearman_job(op, "builtin", 200, 2);
    j.opts["server"] = "127.0.0.1:" + std::to_string(g->server->port());
    j.timeout_s = 1;
    auto a = test::make_adapter("gearman", j);
    a->prepare(j);  // consume: 200 messages prefilled
    REQUIRE(kill(pid, SIGSTOP) == 0);
    auto t0 = std::chrono::steady_clock::now();
    JobResult r = measure(j, *a);
    CHECK(seconds_since(t0) < 4);  // one timeout per op used to make it 200 s
    CHECK(r.ops_ok == 0);
    CHECK(r.errors[static_cast<int>(Status::Timeout)] == 2);
    CHECK(r.ops_not_run == 198);
    for (auto& e : r.error_samples) {
      CAPTURE(e);
      CHECK(e.find("did not answer") != std::string::npos);
      CHECK(e.find("stayed empty") == std::string::npos);
    }
    kill(pid, SIGCONT);
    a->teardown();
  }
}

TEST_CASE("gearman: the admin protocol has one deadline and a size cap") {
  // an answer trickling in a byte at a time, never finished
  RawServer slow([](int c, const std::atomic<bool>& stop) {
    while (!stop && send(c, "x", 1, MSG_NOSIGNAL) == 1) std::this_thread::sleep_for(std::chrono::milliseconds(50));
  });
  auto t0 = std::chrono::steady_clock::now();
  CHECK_THROWS_WITH_AS(gearman::admin("127.0.0.1", slow.port, "status", 1.0),
                       doctest::Contains("no answer to status within the timeout"), SetupError);
  CHECK(seconds_since(t0) < 2);
  // an answer ending in pieces, a byte at a time: its end ("\n.\n") found across reads
  RawServer pieces([](int c, const std::atomic<bool>& stop) {
    for (char b : std::string("f\t1\t0\t0\n.\n")) {
      if (stop || send(c, &b, 1, MSG_NOSIGNAL) != 1) return;
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    char b;  // and the connection left open until mwbench closes it
    while (!stop && recv(c, &b, 1, 0) > 0) {}
  });
  CHECK(gearman::admin("127.0.0.1", pieces.port, "status", 5.0) == "f\t1\t0\t0\n.\n");
  // an endless answer, as fast as it goes: cut at the cap, in CPU time linear in the answer (a
  // search of the whole answer after every read took seconds of CPU, past the deadline when the
  // machine was busy); this thread's CPU time, not the wall clock, whatever the machine's load
  RawServer flood([](int c, const std::atomic<bool>& stop) {
    std::string junk(65536, 'y');
    while (!stop && send(c, junk.data(), junk.size(), MSG_NOSIGNAL) > 0) {}
  });
  t0 = std::chrono::steady_clock::now();
  const double cpu0 = thread_cpu_s();
  CHECK_THROWS_WITH_AS(gearman::admin("127.0.0.1", flood.port, "status", 5.0),
                       doctest::Contains("the answer to status is larger than 16M"), SetupError);
  // In Release a search of the whole answer after each read takes several times the bound, the
  // linear one a third of it. Under ASan the intercepted polls and reads alone come near the
  // whole-answer search's cost when the machine is busy, so there the bound tells nothing.
  if (!test::kSanitized) CHECK(thread_cpu_s() - cpu0 < 0.5);
  CHECK(seconds_since(t0) < 5);
  // bytes that are not text, as an error line: shown printable
  RawServer junk([](int c, const std::atomic<bool>&) { (void)!send(c, "ERR \xff\x01 bad\n", 11, MSG_NOSIGNAL); });
  try {
    gearman::admin("127.0.0.1", junk.port, "version", 1.0);
    FAIL("no error");
  } catch (const SetupError& e) {
    CHECK(std::string(e.what()) == "gearmand 127.0.0.1:" + std::to_string(junk.port) + ": version: ERR ?? bad");
  }
}
