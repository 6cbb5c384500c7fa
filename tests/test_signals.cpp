// Stop means stop: a stop request ends slow waits, set-up loops and a server's start-up within
// a second, and the job is interrupted, not a set-up error. (The signals themselves, and what
// SIGKILL leaves behind, are tested from the command line in signals_test.sh.)
#include <doctest/doctest.h>
#include <signal.h>
#include <sys/wait.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <thread>

#include "core/driver.h"
#include "core/runner.h"
#include "services/services.h"
#include "tests/helpers.h"

using namespace mw;
using namespace mw::test;

namespace {

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// True while `pid` runs (a zombie waiting for init to reap it does not).
bool alive(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string stat((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  size_t at = stat.rfind(')');
  return at != std::string::npos && at + 2 < stat.size() && stat[at + 2] != 'Z';
}

// Sets the stop flag after `ms` and clears it when the test is done.
struct StopAfter {
  std::thread t;
  explicit StopAfter(int ms)
      : t([ms] {
          std::this_thread::sleep_for(std::chrono::milliseconds(ms));
          stop_requested() = true;
        }) {}
  ~StopAfter() {
    t.join();
    stop_requested() = false;
  }
};

}  // namespace

TEST_CASE("stop: an open loop at 0.05 ops/s ends at once, not after its 20 s sleep") {
  Job j = make_job("null", "nop", 10);
  j.rate = 0.05;
  auto t0 = std::chrono::steady_clock::now();
  JobResult r;
  {
    StopAfter stop(300);
    r = run_one(j);
  }
  CHECK(seconds_since(t0) < 1.3);
  CHECK(r.state == JobResult::State::Interrupted);
  CHECK(r.ops_ok == 1);  // the op due at once ran; the next one, due at 20 s, did not
}

TEST_CASE("stop: a 20M-row sqlite preload ends within a second, interrupted, its file removed") {
  TempDir dir;
  Job j = make_job("sqlite", "select-by-id", 100);
  j.opts["path"] = dir.path;
  j.opts["rows"] = "20000000";
  auto t0 = std::chrono::steady_clock::now();
  JobResult r;
  {
    StopAfter stop(300);
    r = run_one(j);
  }
  CHECK(seconds_since(t0) < 1.3);
  CHECK(r.state == JobResult::State::Interrupted);
  CHECK(r.message.find("sqlite preload") != std::string::npos);
  REQUIRE(r.latency);  // every reporter can print it
  CHECK(std::filesystem::is_empty(dir.path));
}

TEST_CASE("stop: a 3 GB disk layout ends within a second, interrupted, its file removed") {
  TempDir dir;
  Job j = make_job("disk", "randread", 100);
  j.opts["path"] = dir.path;
  j.opts["size"] = "3G";
  auto t0 = std::chrono::steady_clock::now();
  JobResult r;
  {
    StopAfter stop(300);
    r = run_one(j);
  }
  CHECK(seconds_since(t0) < 1.3);
  CHECK(r.state == JobResult::State::Interrupted);
  CHECK(r.message.find("layout") != std::string::npos);
  CHECK(std::filesystem::is_empty(dir.path));
}

TEST_CASE("stop: a server that never answers: the start-up wait ends at once, the server stopped") {
  ServiceSpec spec;
  spec.name = "silent";
  spec.binary = "sleep";
  spec.args = {"300"};
  spec.probe = [](int) { return std::string("not yet"); };
  spec.start_timeout_s = 30;
  auto t0 = std::chrono::steady_clock::now();
  bool interrupted = false;
  {
    StopAfter stop(300);
    try {
      Service s(spec);
    } catch (const Interrupted& e) {
      interrupted = std::string(e.what()).find("silent: interrupted during start-up") != std::string::npos;
    }
  }
  CHECK(interrupted);
  CHECK(seconds_since(t0) < 1.3);
}

TEST_CASE("services: a killed server is seen as gone; stop() leaves no process behind") {
  ServiceSpec spec;
  spec.name = "sleeper";
  spec.binary = "sh";
  // a server with a child of its own, like node or a postmaster
  spec.args = {"-c", "sleep 300 & echo $! > child.pid; sleep 300"};
  spec.probe = [](int) { return std::string(); };
  Service s(spec);
  pid_t server = s.pid();
  REQUIRE(server > 0);
  CHECK(s.running());
  std::string dir = s.dir();
  pid_t child = 0;
  for (int i = 0; i < 100 && !child; ++i) {
    std::ifstream in(dir + "/child.pid");
    in >> child;
    if (!child) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  REQUIRE(child > 0);
  kill(server, SIGKILL);
  bool gone = false;
  for (int i = 0; i < 100 && !gone; ++i) {
    gone = !s.running();
    if (!gone) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  CHECK(gone);
  // the server's child went with it: its supervisor kills the group the server leaves behind
  bool child_gone = false;
  for (int i = 0; i < 100 && !child_gone; ++i) {
    child_gone = !alive(child);
    if (!child_gone) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  CHECK(child_gone);
}

TEST_CASE("services: a forked child's copy of a shared server neither stops it nor removes its dir") {
  ServiceSpec spec;
  spec.name = "sleeper";
  spec.binary = "sleep";
  spec.args = {"300"};
  spec.probe = [](int) { return std::string(); };
  std::shared_ptr<Service> s = shared_service("test:forked-copy", spec);
  const pid_t server = s->pid();
  const std::string dir = s->dir();
  REQUIRE(server > 0);
  s.reset();  // held by the shared map alone, as a job's server is between jobs
  const pid_t child = fork();
  REQUIRE(child >= 0);
  if (child == 0) {  // a test's child that stops the servers it started (profile: run_apart)
    stop_shared_services();
    _exit(0);
  }
  int status = 0;
  REQUIRE(waitpid(child, &status, 0) == child);
  CHECK(WIFEXITED(status));
  std::this_thread::sleep_for(std::chrono::milliseconds(50));  // a SIGTERM, had one been sent, arrives
  CHECK(alive(server));                                        // was killed: the child's copy sent its group SIGTERM
  CHECK(std::filesystem::exists(dir));                         // was removed by the copy's destructor
  s = shared_service("test:forked-copy", spec);
  CHECK(s->pid() == server);  // the same server, not one started again
  s->stop();
  CHECK_FALSE(alive(server));
}

namespace {
// Clients that take 200 ms each to open (a server that answers its first PING late).
class SlowOpen final : public Adapter {
 public:
  std::unique_ptr<Client> open(const Job&, int) override {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    struct Nop final : Client {
      OpResult run(uint64_t) override { return {Status::Ok, 0, {}}; }
    };
    return std::make_unique<Nop>();
  }
  std::string target() const override { return "slow"; }
};
}  // namespace

TEST_CASE("stop: a stop while 40 slow clients are being opened ends the opening, interrupted") {
  Job j = make_job("null", "nop", 1000, 40);
  auto t0 = std::chrono::steady_clock::now();
  JobResult r;
  {
    StopAfter stop(300);
    r = run_one_with(
        j, [](const Job&) { return std::make_unique<SlowOpen>(); }, false);
  }
  CHECK(seconds_since(t0) < 1.3);  // 40 x 200 ms = 8 s without the check
  CHECK(r.state == JobResult::State::Interrupted);
  CHECK(r.message.find("opening client") != std::string::npos);
  CHECK(r.ops_ok == 0);
  REQUIRE(r.latency);
}

TEST_CASE("stop: one client whose server never answers its first request ends at once, interrupted") {
  int port = 0;
  const int fd = listen_loopback(64, port);  // the kernel completes each connect; nobody answers
  REQUIRE(fd >= 0);
  // Each of these connects (conn::Stream, libpq, libmariadb, librabbitmq, libmosquitto, libcurl,
  // libnats) and then waits for a first reply.
  for (const char* adapter :
       {"redis", "memcached", "beanstalkd", "postgres", "mariadb", "rabbitmq", "mqtt", "gearman", "couchdb", "nats"}) {
    const AdapterSpec* spec = find_adapter(adapter);
    if (!spec) continue;  // not in this build
    const std::string name = adapter;
    CAPTURE(name);
    Job j = make_job(adapter, spec->ops.front().name, 100);
    j.opts["host"] = "127.0.0.1";
    j.opts["port"] = std::to_string(port);
    if (name == "mariadb") j.opts["database"] = "mwbench";
    if (name == "gearman") j.opts["server"] = "127.0.0.1:" + std::to_string(port);
    if (name == "couchdb") j.opts["url"] = "http://127.0.0.1:" + std::to_string(port) + "/db";
    if (name == "nats") j.opts["jetstream"] = "true";  // produce needs it
    j.timeout_s = 30;
    auto t0 = std::chrono::steady_clock::now();
    JobResult r;
    {
      StopAfter stop(300);
      r = run_one(j);
    }
    const double took = seconds_since(t0);
    CAPTURE(took);
    CAPTURE(r.message);
    CHECK(took < 1.3);  // 30 s without the stop check
    CHECK(r.state == JobResult::State::Interrupted);
    CHECK(r.message.find("interrupted during") != std::string::npos);
  }
  close(fd);
}
