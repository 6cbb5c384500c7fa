#include "durability/writer_child.h"

#include <poll.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <new>
#include <string>

#include "api/stop.h"
#include "util/clock.h"
#include "util/status.h"

namespace mw {
namespace {

// The parent and its writer child share one channel, an anonymous MAP_SHARED mapping made before
// the fork: a window of requests (seqs, in order) and their answers. Each answer is written after
// the store returned, then published by a release-store of `answered`; the mapping outlives the
// child's SIGKILL, so the parent still reads every answer the child published before it died.
// The socket pair is the doorbell only: a side that finds nothing to do sleeps in poll() on it
// once it has said so (`*_asleep`), and the other side sends a byte only then; the child's end
// closing (its death) wakes the parent too.
constexpr uint32_t kWindow = 32;        // requests handed to a child and not yet answered to the driver
constexpr uint32_t kRefill = 16;        // running ahead, the parent tops the window up when this few are left
constexpr uint32_t kWakeAnswers = 8;    // a sleeping parent is woken once this many answers wait for it,
constexpr int64_t kWakeNs = 1'000'000;  // or 1 ms after the last wake-up, or when the child runs out of requests
constexpr uint8_t kNotRun = 0xff;       // an answer's status: refused, past its phase's deadline

struct Slot {
  // The request (written by the parent before it publishes `pushed`): a native op's seq, or a
  // workload's request (`workload`: run_request(req)).
  uint64_t seq;
  uint64_t phase;
  int64_t deadline;
  Request req;
  bool workload;
  // The answer (written by the child before it publishes `answered`).
  int64_t end_ns;
  uint32_t bytes;
  uint8_t status;
  uint16_t detail_len;
  char detail[200];
};

struct Channel {
  static_assert(std::atomic<uint64_t>::is_always_lock_free && std::atomic<uint32_t>::is_always_lock_free,
                "the channel's atomics must work across processes");
  alignas(64) std::atomic<uint64_t> pushed{0};  // the parent's: requests handed over
  std::atomic<uint64_t> consumed{0};            // answers the parent took
  std::atomic<uint32_t> parent_asleep{0};
  std::atomic<uint32_t> cancelled{0};          // the parent gave up on the child: it begins no more requests
  alignas(64) std::atomic<uint64_t> begun{0};  // the child's: requests it handed to the store
  std::atomic<uint64_t> answered{0};           // answers written
  std::atomic<uint32_t> child_asleep{0};
  alignas(64) Slot slots[kWindow];
  Slot& at(uint64_t i) { return slots[i % kWindow]; }
};

void ring(int fd) {
  const char b = 1;
  while (::send(fd, &b, 1, MSG_NOSIGNAL | MSG_DONTWAIT) < 0 && errno == EINTR) {}
}

enum class Bell { Rung, Quiet, Gone };

// Sleeps until the other side rings (or timeout_ms passes, -1: none); Gone when its end closed.
Bell wait_bell(int fd, int timeout_ms) {
  pollfd q{fd, POLLIN, 0};
  int r = poll(&q, 1, timeout_ms);
  if (r < 0) return errno == EINTR ? Bell::Quiet : Bell::Gone;
  if (r == 0) return Bell::Quiet;
  char buf[64];
  ssize_t k = ::recv(fd, buf, sizeof buf, MSG_DONTWAIT);
  if (k > 0 || (k < 0 && (errno == EINTR || errno == EAGAIN))) return Bell::Rung;
  return Bell::Gone;
}

// The child: runs each request handed over, in order, and answers it. A request of the same
// phase as the op before it, which ended at or after the phase's deadline, is refused (kNotRun):
// the driver, judging by that op's end, asks for no more ops of the phase.
[[noreturn]] void serve(int fd, Channel& ch, const std::function<std::unique_ptr<Client>()>& make) {
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  for (int sig : {SIGINT, SIGTERM, SIGHUP, SIGPIPE}) signal(sig, SIG_IGN);  // the parent decides
  std::unique_ptr<Client> c;
  std::string why;
  try {
    c = make();
  } catch (const std::exception& e) {
    why = e.what();
  }
  uint64_t i = 0, last_phase = 0;
  int64_t last_end = 0, last_wake = 0;
  for (;;) {
    if (i == ch.pushed.load(std::memory_order_acquire)) {  // nothing to do: sleep until the parent rings
      ch.child_asleep.store(1, std::memory_order_relaxed);
      std::atomic_thread_fence(std::memory_order_seq_cst);
      Bell b = i == ch.pushed.load(std::memory_order_acquire) ? wait_bell(fd, -1) : Bell::Rung;
      ch.child_asleep.store(0, std::memory_order_relaxed);
      if (b == Bell::Gone) _exit(0);  // the parent closed its end (or is gone)
      continue;
    }
    Slot& s = ch.at(i);
    const uint64_t seq = s.seq, phase = s.phase;
    if (phase == last_phase && last_end >= s.deadline) {
      s.status = kNotRun, s.bytes = 0, s.end_ns = 0, s.detail_len = 0;
    } else {
      ch.begun.store(i + 1, std::memory_order_seq_cst);  // then the parent's cancel: one of them sees the other
      if (ch.cancelled.load(std::memory_order_seq_cst)) _exit(0);
      OpResult r{Status::Error, 0, why};
      if (c) {
        try {
          r = s.workload ? c->run_request(s.req) : c->run(seq);
        } catch (const std::exception& e) {
          why = e.what();
          r = {Status::Error, 0, why};
        }
      }
      last_end = s.end_ns = now_ns();
      last_phase = phase;
      s.status = static_cast<uint8_t>(r.status);
      s.bytes = r.bytes;
      s.detail_len = static_cast<uint16_t>(std::min(r.detail.size(), sizeof s.detail));
      if (s.detail_len) std::memcpy(s.detail, r.detail.data(), s.detail_len);  // an empty detail's data() may be null
    }
    ch.answered.store(++i, std::memory_order_release);  // acknowledged only now, after the store returned
    std::atomic_thread_fence(std::memory_order_seq_cst);
    if (ch.parent_asleep.load(std::memory_order_relaxed)) {
      const int64_t t = now_ns();
      if (i == ch.pushed.load(std::memory_order_acquire) ||
          i - ch.consumed.load(std::memory_order_acquire) >= kWakeAnswers || t - last_wake >= kWakeNs) {
        ring(fd);
        last_wake = t;
      }
    }
  }
}

class ChildClient final : public Client, public RunsAhead {
 public:
  ChildClient(int fd, pid_t pid, Channel* ch, double timeout_s)
      : fd_(fd), pid_(pid), ch_(*ch), timeout_ns_(static_cast<int64_t>(std::max(0.001, timeout_s) * 1e9)) {}
  ~ChildClient() override {  // the child reads end-of-file and exits; kill_all reaps it
    cancel();
    close(fd_);
    munmap(&ch_, sizeof(Channel));
  }
  bool alive() const override { return alive_; }

  void run_ahead(uint64_t end, int64_t deadline) override {
    ++phase_;
    end_ = end;
    deadline_ = end ? deadline : INT64_MAX;  // an open loop sends an op due before the deadline even after it
  }

  int64_t last_end_ns() const override { return last_end_; }

  bool handed_over(uint64_t seq) override {
    if (!alive_ || consumed_ == pushed_ || !asks(ch_.at(consumed_), seq)) return false;
    if (ch_.begun.load(std::memory_order_acquire) > consumed_) return true;
    pollfd q{fd_, POLLIN, 0};  // not begun yet: the child runs it unless it is gone
    return !(poll(&q, 1, 0) == 1 && (q.revents & (POLLHUP | POLLERR)));
  }

  OpResult run(uint64_t seq) override { return answer(seq, nullptr); }
  // A workload's request: handed over as it is, never ahead (the driver draws each one as it asks).
  OpResult run_request(const Request& r) override { return answer(r.seq, &r); }

 private:
  OpResult answer(uint64_t seq, const Request* req) {
    last_end_ = 0;
    if (!alive_) return gone();
    for (;;) {  // answers of an earlier phase's requests the driver did not ask for (refused) come first
      if (consumed_ == pushed_) push(seq, true, req);
      if (asks(ch_.at(consumed_), seq)) break;
      if (!await()) return gone();
      if (ch_.at(consumed_).status != kNotRun) {
        cancel();
        alive_ = false;
        detail_ = "the writer process (pid " + std::to_string(pid_) + ") ran op " +
                  std::to_string(ch_.at(consumed_).seq) + ", which the driver did not ask for";
        return {Status::Error, 0, detail_};
      }
      take();
    }
    top_up();
    if (!await()) return gone();
    const Slot& s = ch_.at(consumed_);
    Status st = s.status < kStatusCount ? static_cast<Status>(s.status) : Status::Error;
    if (s.status == kNotRun)
      st = Status::Error, detail_ = "not run: its phase's deadline had passed";
    else
      detail_.assign(s.detail, std::min<size_t>(s.detail_len, sizeof s.detail));
    last_end_ = s.end_ns;
    take();
    return {st, s.bytes, detail_};
  }

  // The request for `seq` in this phase (a timed warm-up's refused requests run on into the seqs
  // the measured phase starts with).
  bool asks(const Slot& s, uint64_t seq) const { return s.seq == seq && s.phase == phase_; }
  void push(uint64_t seq, bool wake, const Request* req = nullptr) {
    Slot& s = ch_.at(pushed_);  // its last answer (pushed_ - kWindow) was taken: at most kWindow are out
    s.seq = seq, s.phase = phase_, s.deadline = deadline_;
    s.workload = req != nullptr;
    if (req) s.req = *req;
    ch_.pushed.store(++pushed_, std::memory_order_release);
    next_ = seq + 1;
    if (wake) bell();
  }
  void bell() {
    std::atomic_thread_fence(std::memory_order_seq_cst);
    if (ch_.child_asleep.load(std::memory_order_relaxed)) ring(fd_);
  }
  // Running ahead (run_ahead): the next seqs up to the phase's end, kWindow out at most, handed
  // over kRefill or more at a time (one wake-up of the child each). Not after a stop was asked.
  void top_up() {
    if (end_ == 0 || pushed_ - consumed_ > kRefill || next_ >= end_ || stop_requested().load()) return;
    while (pushed_ - consumed_ < kWindow && next_ < end_) push(next_, false);
    bell();
  }
  void take() { ch_.consumed.store(++consumed_, std::memory_order_release); }
  // Until the answer to request consumed_ is written: false when the child is gone first, or
  // after timeout_ns_ with no answer.
  bool await() {
    if (ch_.answered.load(std::memory_order_acquire) > consumed_) return true;
    const int64_t until = now_ns() + timeout_ns_;
    bool ok = false;
    for (;;) {
      ch_.parent_asleep.store(1, std::memory_order_relaxed);
      std::atomic_thread_fence(std::memory_order_seq_cst);
      if (ch_.answered.load(std::memory_order_acquire) > consumed_) {
        ok = true;
        break;
      }
      const int64_t left = until - now_ns();
      if (left <= 0) break;
      if (wait_bell(fd_, static_cast<int>(std::min<int64_t>(left / 1'000'000 + 1, 60'000))) == Bell::Gone) {
        ok = ch_.answered.load(std::memory_order_acquire) > consumed_;  // published before it died
        break;
      }
    }
    ch_.parent_asleep.store(0, std::memory_order_relaxed);
    return ok;
  }
  // No request is begun after this: a proxy that gave up on its child (an answer that timed out)
  // leaves no write behind it uncounted. The child may be amid the request it began.
  void cancel() { ch_.cancelled.store(1, std::memory_order_seq_cst); }
  OpResult gone() {
    cancel();
    alive_ = false;
    detail_ = "the writer process (pid " + std::to_string(pid_) + ") is gone or did not answer";
    return {Status::Error, 0, detail_};
  }

  int fd_;
  pid_t pid_;
  Channel& ch_;
  int64_t timeout_ns_;
  bool alive_ = true;
  uint64_t pushed_ = 0, consumed_ = 0;  // the parent's copies of its own counters
  uint64_t next_ = 0;                   // the seq after the last one handed over
  uint64_t phase_ = 1, end_ = 0;        // run_ahead's: 0, no running ahead
  int64_t deadline_ = INT64_MAX;
  int64_t last_end_ = 0;
  std::string detail_;
};

}  // namespace

std::unique_ptr<Client> WriterChildren::spawn(const std::function<std::unique_ptr<Client>()>& make, double timeout_s) {
  void* mem = mmap(nullptr, sizeof(Channel), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (mem == MAP_FAILED) throw SetupError(std::string("writer process: mmap: ") + std::strerror(errno));
  Channel* ch = new (mem) Channel;
  int sv[2];
  if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0) {
    munmap(mem, sizeof(Channel));
    throw SetupError(std::string("writer process: socketpair: ") + std::strerror(errno));
  }
  pid_t pid = fork();
  if (pid < 0) {
    close(sv[0]), close(sv[1]);
    munmap(mem, sizeof(Channel));
    throw SetupError(std::string("writer process: fork: ") + std::strerror(errno));
  }
  if (pid == 0) {
    close(sv[0]);
    serve(sv[1], *ch, make);
  }
  close(sv[1]);
  {
    std::lock_guard lk(mu_);
    pids_.push_back(pid);
  }
  return std::make_unique<ChildClient>(sv[0], pid, ch, timeout_s);
}

void WriterChildren::kill_all() {
  std::lock_guard lk(mu_);
  for (pid_t p : pids_) kill(p, SIGKILL);
  for (pid_t p : pids_)
    while (waitpid(p, nullptr, 0) < 0 && errno == EINTR) {}
  pids_.clear();
}

}  // namespace mw
