// The driver against the null adapter and against small pollable clients built on a pipe:
// counts, req/s arithmetic, failures, not-run ops, timeouts, warm-up, duration and rate.
#include <doctest/doctest.h>
#include <fcntl.h>
#include <unistd.h>

#include <deque>
#include <thread>

#include "driver.h"
#include "loops.h"
#include "report.h"
#include "ranks.h"
#include "runner.h"

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
      while (!queued_.empty() && k < out.size()) out[k++] = {queued_.front(), {Status::Timeout, 0, "aborted"}}, queued_.pop_front();
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

class PipeAdapter final : public Adapter {
 public:
  explicit PipeAdapter(bool silent) : silent_(silent) {}
  std::unique_ptr<Client> open(const Job&, int) override { return std::make_unique<PipeClient>(silent_); }
  std::string target() const override { return "pipe"; }
  bool silent_;
};

}  // namespace

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

TEST_CASE("driver: under MPI an open loop's first send is offset by rank/K of the gap") {
  // 2 clients at 10 req/s in all: a gap of 200 ms per client. As rank 1 of 2, this process runs
  // client 1, whose one op is due half a gap (100 ms) after its clock starts: in the time series
  // (10 ms intervals from that start) it lands in interval 10; rank 0's at once, in interval 0.
  Job j = null_job(2, 2);
  j.rate = 10;
  j.interval_s = 0.01;
  RankPlan& plan = rank_plan();
  plan.rank = 1;
  plan.size = 2;
  JobResult late = run_one(j);
  plan.rank = 0;
  JobResult early = run_one(j);
  plan.size = 1;
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

TEST_CASE("driver: more busy threads than cores is CPU pressure: the event loop then sleeps at once") {
  if (access("/proc/pressure/cpu", R_OK) != 0) {
    MESSAGE("no /proc/pressure/cpu (kernel without PSI): the event loop keeps its poll");
    return;
  }
  std::atomic<bool> stop{false};
  std::vector<std::thread> busy;
  for (unsigned i = 0; i < std::thread::hardware_concurrency() + 2; ++i)
    busy.emplace_back([&] {
      while (!stop.load(std::memory_order_relaxed)) {
      }
    });
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  loops::CpuPressure p;
  p.look(loops::now_ns());
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  p.look(loops::now_ns());
  stop = true;
  for (auto& t : busy) t.join();
  CHECK(p.contended());
}
