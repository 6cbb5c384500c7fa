// The driver against the null adapter and against small pollable clients built on a pipe:
// counts, req/s arithmetic, failures, not-run ops, timeouts, warm-up, duration and rate.
#include <doctest/doctest.h>
#include <fcntl.h>
#include <sys/resource.h>
#include <unistd.h>

#include <deque>
#include <mutex>
#include <nlohmann/json.hpp>
#include <thread>

#include "core/driver.h"
#include "core/loops.h"
#include "core/ranks.h"
#include "core/runner.h"
#include "report/report.h"
#include "results/notes.h"
#include "results/results.h"
#include "results/writer.h"
#include "util/clock.h"

using namespace mw;

namespace {

Job null_job(uint64_t n, int clients = 1) {
  Job j;
  j.adapter = "null";
  j.op = "nop";
  j.name = "null nop";
  j.n = n;
  j.clients = clients;
  return j;
}

// A pollable client whose "server" is a pipe: submit writes one byte, the byte coming back
// through the pipe completes the oldest request. `silent` never writes: requests time out.
class PipeClient final : public Client {
 public:
  explicit PipeClient(bool silent) : silent_(silent) {
    if (pipe2(p_, O_NONBLOCK | O_CLOEXEC) != 0) throw SetupError("pipe");
  }
  ~PipeClient() override { close_pipe(); }
  OpResult run(uint64_t) override { return {Status::Unsupported}; }
  int fd() const override { return p_[0]; }
  void submit(uint64_t seq) override { queued_.push_back(seq); }
  void flush() override {
    for (size_t i = sent_; i < queued_.size(); ++i)
      if (!silent_ && write(p_[1], "x", 1) != 1) break;
    sent_ = queued_.size();
  }
  size_t reap(std::span<Completion> out) override {
    size_t k = 0;
    if (aborted_) {
      while (!queued_.empty() && k < out.size())
        out[k++] = {queued_.front(), {Status::Timeout, 0, "aborted"}}, queued_.pop_front();
      sent_ = queued_.size();
      return k;
    }
    char buf[256];
    ssize_t n = read(p_[0], buf, std::min(sizeof buf, out.size()));
    for (ssize_t i = 0; i < n; ++i) {
      out[k++] = {queued_.front(), {queued_.front() % 10 == 9 ? Status::Mismatch : Status::Ok, 1, "every tenth"}};
      queued_.pop_front();
      --sent_;
    }
    return k;
  }
  void abort(std::string_view) override { aborted_ = true; }
  bool alive() const override { return !aborted_; }

 private:
  void close_pipe() {
    if (p_[0] >= 0) close(p_[0]), close(p_[1]);
    p_[0] = p_[1] = -1;
  }
  int p_[2] = {-1, -1};
  bool silent_;
  bool aborted_ = false;
  std::deque<uint64_t> queued_;
  size_t sent_ = 0;
};

// A pollable client whose "server" is a thread that answers each request `delay` after it was
// sent: every reply comes later than a short poll window.
class SlowClient final : public Client {
 public:
  explicit SlowClient(std::chrono::microseconds delay) : delay_(delay) {
    if (pipe2(p_, O_NONBLOCK | O_CLOEXEC) != 0) throw SetupError("pipe");
    server_ = std::thread([this] {
      while (!done_) {
        std::this_thread::sleep_for(delay_);
        if (asked_ > answered_ && write(p_[1], "x", 1) == 1) ++answered_;
      }
    });
  }
  ~SlowClient() override {
    done_ = true;
    server_.join();
    close(p_[0]), close(p_[1]);
  }
  OpResult run(uint64_t) override { return {Status::Unsupported}; }
  int fd() const override { return p_[0]; }
  void submit(uint64_t seq) override { queued_.push_back(seq); }
  void flush() override { asked_ = queued_.size() + reaped_; }
  size_t reap(std::span<Completion> out) override {
    char c;
    size_t k = 0;
    while (k < out.size() && !queued_.empty() && read(p_[0], &c, 1) == 1) {
      out[k++] = {queued_.front(), {Status::Ok, 1, {}}};
      queued_.pop_front();
      ++reaped_;
    }
    return k;
  }
  void abort(std::string_view) override {}

 private:
  std::chrono::microseconds delay_;
  int p_[2] = {-1, -1};
  std::deque<uint64_t> queued_;
  uint64_t reaped_ = 0;
  std::atomic<uint64_t> asked_{0}, answered_{0};
  std::atomic<bool> done_{false};
  std::thread server_;
};

class SlowAdapter final : public Adapter {
 public:
  std::unique_ptr<Client> open(const Job&, int) override {
    return std::make_unique<SlowClient>(std::chrono::microseconds(2000));
  }
  std::string target() const override { return "slow"; }
};

// A blocking client against a server that never answers (gearmand's SUBMIT_JOB_BG, once): each op
// waits out the job's timeout and fails.
class StuckClient final : public Client {
 public:
  explicit StuckClient(double timeout_s) : timeout_(timeout_s) {}
  OpResult run(uint64_t) override {
    std::this_thread::sleep_for(std::chrono::duration<double>(timeout_));
    return {Status::Timeout, 0, "no reply within the timeout"};
  }

 private:
  double timeout_;
};

class StuckAdapter final : public Adapter {
 public:
  std::unique_ptr<Client> open(const Job& j, int) override { return std::make_unique<StuckClient>(j.timeout_s); }
  std::string target() const override { return "stuck"; }
};

double cpu_seconds() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return static_cast<double>(u.ru_utime.tv_sec + u.ru_stime.tv_sec) +
         static_cast<double>(u.ru_utime.tv_usec + u.ru_stime.tv_usec) * 1e-6;
}

class PipeAdapter final : public Adapter {
 public:
  explicit PipeAdapter(bool silent) : silent_(silent) {}
  std::unique_ptr<Client> open(const Job&, int) override { return std::make_unique<PipeClient>(silent_); }
  std::string target() const override { return "pipe"; }
  bool silent_;
};

// A client that keeps, for each op, when the driver said it was due (Client::due_ns) and when it
// was sent; blocking (run) or on the event loop (submit, answered at once through a pipe).
struct Dues {
  std::mutex mu;
  std::vector<std::pair<int64_t, int64_t>> seen;  // (due, sent)
  std::vector<int64_t> at_close;                  // each client's due_ns when it was closed
  void add(int64_t due, int64_t t) {
    std::lock_guard<std::mutex> g(mu);
    seen.emplace_back(due, t);
  }
};
class DueClient final : public Client {
 public:
  DueClient(Dues& d, bool pollable) : d_(d), pollable_(pollable) {
    if (pipe2(p_, O_NONBLOCK | O_CLOEXEC) != 0) throw SetupError("pipe");
  }
  ~DueClient() override {
    close(p_[0]), close(p_[1]);
    std::lock_guard<std::mutex> g(d_.mu);
    d_.at_close.push_back(due_ns());
  }
  OpResult run(uint64_t) override {
    d_.add(due_ns(), now_ns());
    return {Status::Ok, 1, {}};
  }
  int fd() const override { return pollable_ ? p_[0] : -1; }
  void submit(uint64_t seq) override {
    d_.add(due_ns(), now_ns());
    q_.push_back(seq);
    if (write(p_[1], "x", 1) != 1) throw SetupError("pipe write");
  }
  size_t reap(std::span<Completion> out) override {
    char c;
    size_t k = 0;
    while (k < out.size() && !q_.empty() && read(p_[0], &c, 1) == 1)
      out[k++] = {q_.front(), {Status::Ok, 1, {}}}, q_.pop_front();
    return k;
  }

 private:
  Dues& d_;
  bool pollable_;
  int p_[2] = {-1, -1};
  std::deque<uint64_t> q_;
};
class DueAdapter final : public Adapter {
 public:
  DueAdapter(Dues& d, bool pollable) : d_(d), pollable_(pollable) {}
  std::unique_ptr<Client> open(const Job&, int) override { return std::make_unique<DueClient>(d_, pollable_); }
  std::string target() const override { return "due"; }
  Dues& d_;
  bool pollable_;
};

}  // namespace

// A queue's producer stamps its message with its client's due_ns (its round trip then counts from when the
// message was due): the open loop sets it to each op's slot, a closed loop leaves it 0 (now).
TEST_CASE("driver: an open loop tells the client when each op was due, a closed loop does not") {
  for (bool pollable : {false, true}) {
    CAPTURE(pollable);
    Dues open, closed;
    Job j = null_job(200);
    j.rate = 20000;  // one op per 50 us
    DueAdapter a(open, pollable);
    CHECK(measure(j, a).ops_ok == 200);
    REQUIRE(open.seen.size() == 200);
    for (size_t i = 0; i < open.seen.size(); ++i) {
      CAPTURE(i);
      CHECK(open.seen[i].first > 0);
      CHECK(open.seen[i].first <= open.seen[i].second);  // due, then sent
      if (i > 0) CHECK(open.seen[i].first - open.seen[i - 1].first == doctest::Approx(50'000).epsilon(0.001));
    }
    REQUIRE_FALSE(open.at_close.empty());
    for (int64_t due : open.at_close) CHECK(due == 0);  // reset after each op
    j.rate = 0;
    DueAdapter b(closed, pollable);
    CHECK(measure(j, b).ops_ok == 200);
    for (auto& [due, sent] : closed.seen) CHECK(due == 0);
  }
}

TEST_CASE("driver: every op is counted and req/s is successful ops over the measured time") {
  JobResult r = run_one(null_job(100000, 3));
  CHECK(r.state == JobResult::State::Done);
  CHECK(r.ops_ok == 100000);
  CHECK(r.ops_failed == 0);
  CHECK(r.latency->count() == 100000);
  REQUIRE(r.elapsed_s > 0);
  CHECK(r.rps == doctest::Approx(100000 / r.elapsed_s));
  uint64_t series = 0;
  for (auto s : r.per_second) series += s;
  CHECK(series == 100000);
  CHECK(!r.failed());
}

TEST_CASE("driver: failed ops have their own histogram, are counted by status, and never count as throughput") {
  Job j = null_job(1000, 2);
  j.opts["fail-every"] = "10";
  JobResult r = run_one(j);
  CHECK(r.ops_ok == 900);
  CHECK(r.ops_failed == 100);
  CHECK(r.errors[static_cast<int>(Status::Error)] == 100);
  CHECK(r.latency_failed->count() == 100);
  CHECK(r.rps == doctest::Approx(900 / r.elapsed_s));
  CHECK(r.failed());
  REQUIRE(!r.error_samples.empty());
  CHECK(r.error_samples[0] == "Error: failed on purpose (--fail-every)");
  RunResult run;
  run.jobs.push_back(r);
  CHECK(exit_code(run) == 1);
}

TEST_CASE("driver: warm-up ops are not measured, and the measured ops use fresh seqs") {
  Job j = null_job(1000);
  j.warmup_ops = 500;
  j.opts["fail-every"] = "1000";  // seq 999 fails: it falls in the warm-up... no: warm-up is 0..499
  JobResult r = run_one(j);
  CHECK(r.warmup_ok == 500);
  CHECK(r.ops_ok + r.ops_failed == 1000);
  CHECK(r.ops_failed == 1);  // measured seqs are 500..1499: only 999 fails
}

TEST_CASE("driver: a duration run stops on time") {
  Job j = null_job(0);
  j.duration_s = 0.3;
  JobResult r = run_one(j);
  CHECK(r.ops_ok > 1000);
  CHECK(r.elapsed_s == doctest::Approx(0.3).epsilon(0.2));
  CHECK(r.ops_not_run == 0);
}

TEST_CASE("driver: open loop holds the rate and keeps the uncorrected latency too") {
  Job j = null_job(200, 2);
  j.rate = 1000;
  JobResult r = run_one(j);
  CHECK(r.ops_ok == 200);
  CHECK(r.elapsed_s == doctest::Approx(0.2).epsilon(0.15));
  REQUIRE(r.latency_uncorrected);
  CHECK(r.latency_uncorrected->count() == 200);
}

// At a rate whose gap is a large share of the run, the last reply comes long before the run's
// end: 4 clients at 20/s in all send at 0, 0.2 and 0.4 s each within 0.5 s, and their last
// replies come at 0.4 s. The run offered those 12 ops over 0.6 s (three gaps each): 20/s, not
// the 30/s of the time up to the last reply (a --find-max step of couchdb GET, capacity.toml:
// 8 ops "in 0.261 s", 30.7/s "achieved" of 15.7/s offered). Blocking and event-loop clients,
// by duration and by count.
TEST_CASE("driver: an open loop is timed over the time it offered ops in, not up to its last reply") {
  Job by_time = null_job(0, 4);
  by_time.rate = 20;
  by_time.duration_s = 0.5;
  Job by_count = null_job(8, 4);  // 0 and 0.2 s each: 0.4 s
  by_count.rate = 20;
  for (bool blocking : {true, false}) {
    CAPTURE(blocking);
    SlowAdapter slow;
    JobResult t = blocking ? run_one(by_time) : measure(by_time, slow);
    CHECK(t.ops_ok == 12);
    CHECK(t.elapsed_s == doctest::Approx(0.6).epsilon(0.05));
    CHECK(t.rps == doctest::Approx(20).epsilon(0.05));
    JobResult c = blocking ? run_one(by_count) : measure(by_count, slow);
    CHECK(c.ops_ok == 8);
    CHECK(c.elapsed_s == doctest::Approx(0.4).epsilon(0.05));
    CHECK(c.rps == doctest::Approx(20).epsilon(0.05));
  }
}

// An open loop by --duration whose clients cannot keep its rate stops on the clock: the ops due
// before the end and not sent by then are counted (ops_not_sent), written, read back and said,
// not run late one after the other past the end (a blocking client against a gearmand that never
// answered, --rate 200 --duration 8s --timeout 500ms: about 800 s). Not failures of their own.
TEST_CASE("driver: an open loop behind its schedule stops at the deadline and counts what it did not send") {
  Job j = null_job(0, 2);
  j.rate = 200;  // 100/s per client: 50 ops due each in 0.5 s, each taking 0.1 s
  j.duration_s = 0.5;
  j.timeout_s = 0.1;
  StuckAdapter stuck;
  auto t0 = std::chrono::steady_clock::now();
  JobResult r = measure(j, stuck);
  const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  CHECK(took < 0.5 + 0.1 + 1.5);  // the duration, the op in flight at its end, a loaded machine's margin
  const uint64_t sent = r.ops_ok + r.ops_failed;
  CHECK(r.ops_ok == 0);
  CHECK(sent >= 2);
  CHECK(sent <= 12);  // about 5 a client
  CHECK(r.ops_not_sent == 100 - sent);
  CHECK(r.ops_not_run == 0);

  // pollable clients whose window (-P 1) a reply frees every 2 ms or later, at a gap of 1 ms
  Job p = null_job(0, 2);
  p.rate = 2000;
  p.duration_s = 0.3;  // 300 due a client
  SlowAdapter slow;
  t0 = std::chrono::steady_clock::now();
  JobResult q = measure(p, slow);
  CHECK(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() < 0.3 + 1.5);
  CHECK(q.ops_failed == 0);
  CHECK(q.ops_ok <= 400);
  CHECK(q.ops_ok + q.ops_not_sent == 600);

  RunResult run;
  run.jobs.push_back(r);
  run.jobs[0].target = "stuck";
  make_notes(run);
  CHECK(format_table(run, Detail::Full)
            .find("warning: null nop (stuck): behind schedule: " + std::to_string(100 - sent) +
                  " of the 100 ops due by the end of --duration were not sent by then") != std::string::npos);
  RunResult back = parse_result(to_json(run).dump(), "r.json");
  REQUIRE(back.jobs.size() == 1);
  CHECK(back.jobs[0].ops_not_sent == 100 - sent);
  CHECK(back.jobs[0].warnings == run.jobs[0].warnings);
  run.jobs[0].ops_failed = 0;  // a few due at the end and sent just after it are no finding
  run.jobs[0].ops_ok = 1000, run.jobs[0].ops_not_sent = 9;
  make_notes(run);
  for (auto& w : run.jobs[0].warnings) CHECK(w.kind != WarningKind::BehindSchedule);
}

TEST_CASE("driver: under MPI an open loop's first send is offset by rank/K of the gap") {
  // 2 clients at 10 req/s in all: a gap of 200 ms per client. As rank 1 of 2, this process runs
  // client 1, whose one op is due half a gap (100 ms) after its clock starts: in the time series
  // (10 ms intervals from that start) it lands in interval 10; rank 0's at once, in interval 0.
  Job j = null_job(2, 2);
  j.rate = 10;
  j.interval_s = 0.01;
  RankPlan plan;
  plan.rank = 1;
  plan.size = 2;
  JobResult late = run_one(j, false, plan);
  plan.rank = 0;
  JobResult early = run_one(j, false, plan);
  CHECK(late.ops_ok == 1);
  CHECK(late.series.size() >= 10);
  CHECK(late.series.size() <= 13);
  CHECK(early.ops_ok == 1);
  CHECK(early.series.size() <= 2);
}

TEST_CASE("driver: stop requested ends the run with partial figures") {
  Job j = null_job(0);
  j.duration_s = 30;
  std::thread stopper([] {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    stop_requested() = true;
  });
  JobResult r = run_one(j);
  stopper.join();
  stop_requested() = false;
  CHECK(r.state == JobResult::State::Interrupted);
  CHECK(r.ops_ok > 0);
  CHECK(r.elapsed_s < 5);
}

TEST_CASE("driver: stopped during warm-up: an empty result that every reporter can print") {
  Job j = null_job(100);
  j.warmup_s = 30;
  std::thread stopper([] {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    stop_requested() = true;
  });
  RunResult run;
  run.jobs.push_back(run_one(j));
  stopper.join();
  stop_requested() = false;
  CHECK(run.jobs[0].state == JobResult::State::Interrupted);
  CHECK(run.jobs[0].ops_ok == 0);
  REQUIRE(run.jobs[0].latency);
  CHECK(format_table(run).find("null nop") != std::string::npos);
  CHECK(format_csv(run).find(",interrupted,") != std::string::npos);
  CHECK(to_json(run)["jobs"][0]["state"] == "interrupted");
}

TEST_CASE("driver: event loop keeps P in flight per client and times each request") {
  PipeAdapter a(false);
  Job j = null_job(10000, 4);
  j.pipeline = 8;
  JobResult r;
  r = measure(j, a);
  CHECK(r.ops_ok == 9000);
  CHECK(r.ops_failed == 1000);
  CHECK(r.errors[static_cast<int>(Status::Mismatch)] == 1000);
  CHECK(r.ops_not_run == 0);
  CHECK(r.rps == doctest::Approx(9000 / r.elapsed_s));
}

TEST_CASE("driver: a request with no reply times out; the client's remaining ops are not run") {
  PipeAdapter a(true);
  Job j = null_job(100, 2);
  j.pipeline = 4;
  j.timeout_s = 0.2;
  auto t0 = std::chrono::steady_clock::now();
  JobResult r;
  r = measure(j, a);
  double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  CHECK(took < 2.0);
  CHECK(r.ops_ok == 0);
  CHECK(r.ops_failed == 8);  // the 4 in flight on each client
  CHECK(r.errors[static_cast<int>(Status::Timeout)] == 8);
  CHECK(r.ops_not_run == 92);
}

TEST_CASE("poll: --poll parses off, auto and a time; anything else is refused naming the option") {
  CHECK(parse_poll("auto").mode == PollPolicy::Mode::Auto);
  CHECK(parse_poll("auto").text() == "auto");
  CHECK(parse_poll("off").mode == PollPolicy::Mode::Off);
  CHECK(parse_poll("50us").window_ns == 50'000);
  CHECK(parse_poll("50us").text() == "50us");
  CHECK(parse_poll("2ms").window_ns == 2'000'000);
  for (const char* bad : {"", "on", "0", "20ms", "0.5us", "-1us"})
    CHECK_THROWS_WITH_AS(parse_poll(bad), doctest::Contains("poll expects off, auto or a time from 1us to 10ms"),
                         SetupError);
}

TEST_CASE("poll: auto backs off after empty polls and polls again once one finds a reply") {
  loops::Poller p{.adaptive = true};
  CHECK(p.wants());
  p.found(false);  // empty: skip the next wait
  CHECK(!p.wants());
  CHECK(p.wants());
  p.found(false);  // empty again: skip 3
  CHECK(!p.wants());
  CHECK(!p.wants());
  CHECK(!p.wants());
  CHECK(p.wants());
  for (int i = 0; i < 20; ++i) p.found(false);
  CHECK(p.backoff == loops::kPollBackoffMax);
  p.skip = 0;
  p.found(true);  // a reply within the window: poll at every wait again
  CHECK(p.wants());
  CHECK(p.wants());
  loops::Poller fixed{.adaptive = false};
  fixed.found(false);
  CHECK(fixed.wants());  // a fixed window polls at every wait
}

TEST_CASE("poll: replies later than the window: auto stops polling, a fixed window burns it every op") {
  SlowAdapter a;
  Job j = null_job(300);
  auto cpu_of = [&](PollPolicy poll) {
    j.poll = poll;
    const double c0 = cpu_seconds();
    JobResult r = measure(j, a);
    CHECK(r.ops_ok == 300);
    return cpu_seconds() - c0;
  };
  const double fixed = cpu_of({PollPolicy::Mode::Fixed, 1'000'000});  // a 1 ms poll, replies after 2 ms
  const double adaptive = cpu_of({PollPolicy::Mode::Auto, 1'000'000});
  CAPTURE(fixed);
  CAPTURE(adaptive);
  CHECK(fixed > 0.02);  // about 1 ms of polling per op on an idle core
  CHECK(adaptive < fixed / 3);
}

namespace {

// Whether the measured phase of 2000 ops over `clients` pipe clients on one event loop polled.
bool pipe_polled(int clients, int pipeline, PollPolicy poll) {
  PipeAdapter a(false);
  Job j = null_job(2000, clients);
  j.threads = 1;
  j.pipeline = pipeline;
  j.poll = poll;
  JobResult r = measure(j, a);
  CHECK(r.ops_ok + r.ops_failed == 2000);
  REQUIRE(r.profile.taken);
  return r.profile.polled;
}

// Two more busy threads than cores, spinning while it lives: tasks wait for a CPU.
struct Hogs {
  std::atomic<bool> stop{false};
  std::vector<std::thread> busy;
  Hogs() {
    for (unsigned i = 0; i < std::thread::hardware_concurrency() + 2; ++i)
      busy.emplace_back([this] {
        while (!stop.load(std::memory_order_relaxed)) {}
      });
  }
  ~Hogs() {
    stop = true;
    for (auto& t : busy) t.join();
  }
};

}  // namespace

// profile.polled says whether a poll ran: one that --poll auto would make, when a task waits for a
// CPU, does not run (the event loop sleeps at once), and then mwbench's CPU is evidence again.
TEST_CASE("poll: auto polls only a shallow event loop (at most 64 requests in flight), a fixed window any") {
  if (std::thread::hardware_concurrency() < 2) {
    MESSAGE("one core: auto never polls (no core to spare)");
    return;
  }
  auto polled = pipe_polled;
  const PollPolicy autop{};
  if (loops::CpuPressure().contended()) {  // tasks wait for a CPU: auto would not poll at all
    MESSAGE("CPU pressure on this machine: auto's polls are checked without it only");
  } else {
    CHECK(polled(1, 1, autop));
    CHECK(polled(4, 16, autop));  // 64 in flight
    CHECK(polled(64, 1, autop));
  }
  CHECK(!polled(5, 16, autop));  // 80: the server has a backlog to answer from
  CHECK(!polled(50, 16, autop));
  CHECK(polled(50, 16, {PollPolicy::Mode::Fixed, 50'000}));  // a fixed window polls whatever the depth
  CHECK(!polled(1, 1, {PollPolicy::Mode::Off, 0}));
}

// With more busy threads than cores from the phase's start, --poll auto polls not once: the profile
// says it did not poll (it said so once whenever a core was spare by the count of threads), so the
// client's CPU rules judge the phase; a fixed window polls all the same.
TEST_CASE("poll: under CPU pressure auto does not poll, and the profile says it did not") {
  if (access("/proc/pressure/cpu", R_OK) != 0 || std::thread::hardware_concurrency() < 2) {
    MESSAGE("no /proc/pressure/cpu (kernel without PSI), or one core: auto never polls here");
    return;
  }
  bool contended = false, auto_polled = false, fixed_polled = false;
  {
    Hogs hogs;
    // the loop's first look is the kernel's 10 s average (updated every 2 s): wait for it to rise
    for (int i = 0; i < 100 && !contended; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
      contended = loops::CpuPressure().contended();
    }
    auto_polled = contended && pipe_polled(1, 1, PollPolicy{});
    fixed_polled = contended && pipe_polled(1, 1, {PollPolicy::Mode::Fixed, 50'000});
  }
  REQUIRE(contended);
  CHECK_FALSE(auto_polled);
  CHECK(fixed_polled);
}

TEST_CASE("driver: more busy threads than cores is CPU pressure: the event loop then sleeps at once") {
  if (access("/proc/pressure/cpu", R_OK) != 0) {
    MESSAGE("no /proc/pressure/cpu (kernel without PSI): the event loop keeps its poll");
    return;
  }
  loops::CpuPressure p;
  {
    Hogs hogs;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    p.look(loops::now_ns());
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    p.look(loops::now_ns());
  }
  CHECK(p.contended());
}

// --rate as a shape: both loops send each op at its time in the client's schedule (issue 43).
// steps:20k,10k/5ms: the first 100 ops 50 us apart, the next ones 100 us apart.
TEST_CASE("driver: a shaped rate sends each op when the shape has offered it") {
  for (bool pollable : {false, true}) {
    CAPTURE(pollable);
    Dues d;
    Job j = null_job(160);
    j.opts[kRateShapeKey] = "steps:20k,10k/5ms";
    j.rate = parse_rate_shape(j.str(kRateShapeKey)).mean_rate();
    DueAdapter a(d, pollable);
    CHECK(measure(j, a).ops_ok == 160);
    REQUIRE(d.seen.size() == 160);
    for (size_t i = 1; i < d.seen.size(); ++i) {
      CAPTURE(i);
      const int64_t gap = d.seen[i].first - d.seen[i - 1].first;
      CHECK(gap == doctest::Approx(i <= 100 ? 50'000 : 100'000).epsilon(0.001));
    }
  }
}

// The achieved rate of each second follows the shape (within 5%) on the null adapter: each
// shape over 2 s, its ops per second against what the shape offers in that second.
TEST_CASE("driver: a rate shape's per-second achieved rate follows the shape") {
  for (const char* shape : {"ramp:1k..5k/2s", "steps:1k,4k/1s", "sine:3k+-2k/2s", "spike:1k,+3k@1s/1s"}) {
    CAPTURE(shape);
    Job j = null_job(0, 2);
    j.duration_s = 2;
    j.opts[kRateShapeKey] = shape;
    const RateShape s = parse_rate_shape(shape);
    j.rate = s.mean_rate();
    JobResult r = run_one(j);
    REQUIRE(r.per_second.size() >= 2);
    for (size_t k = 0; k < 2; ++k) {
      CAPTURE(k);
      const double want = s.ops_until(static_cast<double>(k + 1)) - s.ops_until(static_cast<double>(k));
      CHECK(static_cast<double>(r.per_second[k]) == doctest::Approx(want).epsilon(0.05));
    }
  }
}
