#include "core/loops.h"

#include <sys/epoll.h>
#include <time.h>

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <deque>

#include "core/driver.h"
#include "durability/writer_child.h"
#include "util/cpu_wait.h"

namespace mw::loops {
namespace {

inline void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#endif
}

// Sleeps in slices of at most 50 ms so that a stop request ends a slow open loop (--rate 0.05
// waits 20 s between ops) at once.
void sleep_until_ns(int64_t t) {
  constexpr int64_t kSlice = 50'000'000;
  while (!stop_requested().load(std::memory_order_relaxed)) {
    int64_t until = std::min(t, now_ns() + kSlice);
    timespec ts{static_cast<time_t>(until / 1000000000), static_cast<long>(until % 1000000000)};
    while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, nullptr) == EINTR) {}
    if (until >= t) return;
  }
}

}  // namespace

void ClientStats::record_side(const OpResult& r, int64_t latency) {
  if (r.side >= sides.size()) return;
  sides[r.side].record(latency);
  side_bytes[r.side] += r.bytes;
}

void ClientStats::record_other(KvOp kind, OpStats* op, bool must_exist, OpResult& r, int64_t latency) {
  const bool miss = r.status == Status::NotFound && !must_exist;
  if (miss) r.status = Status::Ok, last_miss = true;
  if (op && r.status == Status::Ok) {
    op->ok.record(latency);
    (kind == KvOp::Update ? op->not_stored : op->misses) += miss;
    bytes += r.bytes;
    return;
  }
  if (op) ++op->failed;
  record(r, latency);
}

void ClientStats::record_failure(const OpResult& r, int64_t latency) {
  if (log_marks) {  // it ends now, and was due `latency` ago
    const int64_t t = now_ns();
    marks.push_back({t - latency, t, r.status});
  }
  if (!failed) failed = std::make_unique<Histogram>();
  failed->record(latency);
  count(errors[static_cast<int>(r.status)]);
  count(n_failed);
  if (samples.size() < kMaxSamples) {
    std::string s = std::string(status_name(r.status)) + ": " + std::string(r.detail);
    if (std::find(samples.begin(), samples.end(), s) == samples.end()) samples.push_back(s);
  }
}

namespace {

uint64_t end_of(const Share& s) { return s.count == UINT64_MAX ? UINT64_MAX : s.begin + s.count; }

// Open loop: of a schedule from `base`, one op every `gap` ns, the ops due before `deadline` (at
// most `share` of them) beyond the first `sent`. None without a deadline (a run by count).
// `base` is where the schedule would have begun had the client's thread started with the phase
// (`due_base`): ops a late-starting thread never offered are due and not sent too, so that what
// was sent and what was not add up to the rate times the duration.
uint64_t unsent(int64_t base, double gap, int64_t deadline, uint64_t share, uint64_t sent) {
  if (deadline == INT64_MAX || deadline <= base) return 0;
  auto due_at = [&](uint64_t k) { return base + static_cast<int64_t>(gap * static_cast<double>(k)); };
  auto due = static_cast<uint64_t>(std::ceil(static_cast<double>(deadline - base) / gap));
  while (due > 0 && due_at(due - 1) >= deadline) --due;  // the schedule's own rounding decides
  while (due_at(due) < deadline) ++due;
  due = std::min(due, share);
  return due > sent ? due - sent : 0;
}

// The schedule's start for counting what was due: the phase's common start where there is one.
int64_t due_base(const Phase& ph, int64_t own_start, double gap) {
  return (ph.t0 > 0 ? std::min(ph.t0, own_start) : own_start) + static_cast<int64_t>(gap * ph.first_offset);
}

// Where a blocking client is in its share: the next seq, and when its last op ended (the closed
// loop's next start); its client (renewed in place: Phase::renewal), and the seq before which it
// renews next (UINT64_MAX: never). The exception handler and the phase's end read it.
struct Cursor {
  uint64_t next;
  int64_t last;
  Client* c;
  uint64_t renew = UINT64_MAX;
};

// What a blocking client runs: its client's slot, figures, phase and requests, the seqs [begin, end).
struct Blocking {
  std::unique_ptr<Client>& slot;
  int index;
  ClientStats& st;
  const Phase& ph;
  Source src;
  uint64_t begin, end;
  const std::atomic<bool>& stop = stop_requested();
  bool going() const { return !stop.load(std::memory_order_relaxed) && !ph.halted(); }
  // A failed op of a client that cannot go on (its connection lost for good): it stops.
  static bool lost(Status s, const Cursor& at) { return s != Status::Ok && !at.c->alive(); }
};

// --reconnect-every: the client's connection closed and opened again before op `at.next`, out of
// the ops' time (a closed loop's next op starts after it; an open loop's stays due when it was).
// A failed open throws: the client stops with the reason.
[[gnu::noinline]] void renew(const Blocking& b, Cursor& at) {
  const Renewal& r = *b.ph.renewal;
  at.renew = at.next + r.every;
  at.c = nullptr;
  const Renewal::Took took = r.renew(b.slot, b.index, b.ph.deadline);
  at.c = b.slot.get();
  b.st.renewed(took);
  at.last = now_ns();
}

// The bookkeeping of both loops: the op that started at `start` (due at `intended`) ended
// at `end` (now, read by the caller, or when the client read its end itself: RunsAhead); it is
// booked (ClientStats::finish) and counted done. A closed loop keeps no uncorrected figure (its
// ops start when due).
template <bool kOpen, bool kWorkload>
[[gnu::always_inline]] inline Status book(const Blocking& b, Cursor& at, const Flight& f, OpResult& r, int64_t end) {
  at.last = end;
  b.st.finish<kOpen>(f, kWorkload, r, at.last, b.ph.t0);
  b.st.done.store(at.next - b.begin, std::memory_order_relaxed);
  return r.status;
}

// The step of both loops: runs op `at.next` (the workload's request for it, or the seq alone)
// and books it. The open loop stamps its send lag: how late the op started after it was due and
// the previous op had ended (`at.last`, its slot freed). kLoad: the workload's load phase
// (Source::load, fixed for the loop). A request's end is read before its flight is built, so
// its op and must-exist are read after the clock's call, not kept across it.
template <bool kOpen, bool kWorkload, bool kLoad = false>
[[gnu::always_inline]] inline Status run_op(const Blocking& b, Cursor& at, int64_t start, int64_t intended) {
  if constexpr (kOpen) b.st.lag->record(start - std::max(intended, at.last));
  const uint64_t seq = at.next++;
  if constexpr (kOpen) at.c->set_due(intended);
  if constexpr (kWorkload) {
    const Request q = b.src.make<kLoad>(seq);
    OpResult r = at.c->run_request(q);
    const int64_t end = now_ns();
    if constexpr (kOpen) at.c->set_due(0);
    return book<kOpen, kWorkload>(b, at, {seq, start, intended, q.op, q.must_exist}, r, end);
  } else {
    OpResult r = at.c->run(seq);
    const int64_t end = now_ns();
    if constexpr (kOpen) at.c->set_due(0);
    return book<kOpen, kWorkload>(b, at, {seq, start, intended}, r, end);
  }
}

// --hot-shift: moves the client's keys to those of time T's period (counted from ORIGIN, the
// phase's start) and returns when the loop next looks: the next period's start, or the deadline
// if that comes first (always, without a hot shift). The loops compare each op's time with it in
// place of the deadline, so a run without one pays nothing per op.
[[gnu::noinline]] int64_t shift_keys(const Source& src, int64_t origin, int64_t t, int64_t deadline) {
  if (!src.gen || src.load || src.feed || !src.gen->shifts()) return deadline;
  const int64_t next = src.gen->shift(t - origin);
  return next >= deadline - origin ? deadline : origin + next;
}
int64_t phase_origin(const Phase& ph, int64_t start) { return ph.t0 > 0 ? ph.t0 : start; }

// Closed loop, one clock read per op: the end of op k is the start of op k+1, so the driver's
// own bookkeeping is charged to the next op (latency is never understated). A function of its
// own per kind (native, load, mix): inlined into run_blocking beside the open loop, the request
// path ran short of registers and kept the request's fields on the stack (instructions per op of
// the zipfian mix: docs/measurements/workloads.md).
template <bool kWorkload, bool kLoad = false>
[[gnu::noinline]] void closed_loop(const Blocking b, Cursor& at) {
  const int64_t origin = phase_origin(b.ph, at.last);
  int64_t until = shift_keys(b.src, origin, at.last, b.ph.deadline);  // the deadline, or the keys' next move
  // The ops up to the next renewal (--reconnect-every; without it, to the share's end), so the
  // per-op loop compares no more than it would without renewals.
  for (uint64_t upto = std::min(b.end, at.renew); at.next < b.end; upto = std::min(b.end, at.renew)) {
    if (at.next >= at.renew) [[unlikely]] {
      if (!b.going()) return;
      renew(b, at);
      if (at.last >= b.ph.deadline) return;
      continue;
    }
    while (at.next < upto && b.going()) {
      const Status s = run_op<false, kWorkload, kLoad>(b, at, at.last, at.last);
      if (at.last >= until || b.lost(s, at)) [[unlikely]] {
        if (at.last >= b.ph.deadline || b.lost(s, at)) return;
        until = shift_keys(b.src, origin, at.last, b.ph.deadline);
      }
    }
    if (!b.going()) return;
  }
}

// A closed loop over a client that runs its ops ahead of these calls (RunsAhead: the crash
// jobs' writer process): each op ends when the client read its end. After a halt or a stop, the
// ops it already handed to its store are still booked: every write that may have reached the
// store is counted as sent (acknowledged, or in doubt).
void ahead_loop(const Blocking b, Cursor& at, RunsAhead& ahead) {
  while (at.next < b.end && (b.going() || ahead.handed_over(at.next))) {
    const uint64_t seq = at.next++;
    const int64_t start = at.last;
    OpResult r = at.c->run(seq);
    const int64_t end = ahead.last_end_ns();  // 0: it does not know (its writer gone)
    const Status s = book<false, false>(b, at, {seq, start, start}, r, end ? end : now_ns());
    if (at.last >= b.ph.deadline || b.lost(s, at)) break;
  }
}

// The end of a blocking open loop that sent `k` ops: the time it offered them in, and, when it
// ended on its deadline (`on_time`: not stopped, halted or lost), what was due and not sent.
void offered(const Blocking& b, int64_t t0, double gap, uint64_t k, bool on_time) {
  b.st.offered_end = t0 + static_cast<int64_t>(gap * static_cast<double>(k));
  if (on_time) b.st.not_sent = unsent(due_base(b.ph, t0, gap), gap, b.ph.deadline, b.end - b.begin, k);
}

// Open loop: op k is due at base + k gaps (kShaped: at its time in the client's Schedule, a
// shaped rate or Poisson arrivals); its latency counts from then (coordinated omission
// corrected), the uncorrected figure from when it started. It stops at the deadline by the clock
// too: a client behind its schedule (each op waits for the one before) does not run the ops due
// by then one after the other long past it; it counts them (ClientStats::not_sent; an evenly
// spaced schedule's).
template <bool kWorkload, bool kLoad = false, bool kShaped = false>
void open_loop(const Blocking b, Cursor& at) {
  if (!b.st.uncorrected) b.st.uncorrected = std::make_unique<Histogram>();
  if (!b.st.lag) b.st.lag = std::make_unique<Histogram>();
  const double gap = 1e9 / b.ph.rate_per_client;
  const int64_t t0 = at.last, base = t0 + static_cast<int64_t>(gap * b.ph.first_offset);
  [[maybe_unused]] Schedule sched = kShaped && !b.src.feed ? b.ph.schedule(b.begin + 1) : Schedule{};
  [[maybe_unused]] auto next_due = [&] { return b.src.feed ? b.src.feed->advance_ns() : sched.next_ns(); };
  [[maybe_unused]] int64_t due_k = kShaped ? next_due() : 0;  // op k's, after base
  const int64_t origin = phase_origin(b.ph, t0);
  int64_t until = shift_keys(b.src, origin, t0, b.ph.deadline);  // the deadline, or the keys' next move
  uint64_t k = 0;
  bool lost = false;
  for (; at.next < b.end && b.going(); ++k) {
    if (kShaped && due_k >= TraceFeed::kNever) break;  // the trace has no more
    const int64_t intended = !kShaped    ? base + static_cast<int64_t>(gap * static_cast<double>(k))
                             : due_k < 0 ? at.last
                                         : base + due_k;
    int64_t start = now_ns();
    if (std::max(start, intended) >= until) [[unlikely]] {
      if (std::max(start, intended) >= b.ph.deadline) break;
      until = shift_keys(b.src, origin, std::max(start, intended), b.ph.deadline);
    }
    if (start < intended) {
      sleep_until_ns(intended);
      if (b.stop.load(std::memory_order_relaxed)) break;
      start = now_ns();
    }
    if (at.next >= at.renew) [[unlikely]] {  // when the op is due: a connect does not move its schedule
      renew(b, at);
      if (!b.going() || at.last >= b.ph.deadline) break;  // --connect-rate's turn came after the end
      start = at.last;
    }
    const Status s = run_op<true, kWorkload, kLoad>(b, at, start, intended);
    if constexpr (kShaped) due_k = next_due();
    if (b.lost(s, at)) {
      lost = true;
      ++k;
      break;
    }
  }
  if constexpr (kShaped)  // k ops were offered: the next was due then
    b.st.offered_end = due_k >= 0 && due_k < TraceFeed::kNever ? base + due_k : at.last;
  else
    offered(b, t0, gap, k, !lost && b.going());
}

// The open loop of a kind, evenly spaced or to a schedule (a test once per phase).
template <bool kWorkload, bool kLoad = false>
void open_loop_of(const Blocking b, Cursor& at) {
  if (b.ph.shape || b.ph.trace)
    open_loop<kWorkload, kLoad, true>(b, at);
  else
    open_loop<kWorkload, kLoad>(b, at);
}

}  // namespace

void run_blocking(std::unique_ptr<Client>& c, int index, ClientStats& st, Share share, const Phase& ph, Source src) {
  const Blocking b{c, index, st, ph, src, share.begin, end_of(share)};
  Cursor at{share.begin, now_ns(), c.get()};
  st.first_start = at.last;
  if (!c) {  // its connection could not be opened again in an earlier phase (a capacity search's)
    st.threw("its connection could not be opened again", 0);
    st.last_end = at.last;
    return;
  }
  auto threw = [&](std::string_view why) {  // the op it was doing failed with the reason; it stops
    st.threw(why, now_ns() - at.last);
    at.last = now_ns();
  };
  try {
    const bool open = ph.rate_per_client > 0, workload = src.gen != nullptr;
    RunsAhead* ahead = workload ? nullptr : dynamic_cast<RunsAhead*>(c.get());
    if (ph.renewal && !ahead) at.renew = share.begin;
    if (ahead) ahead->run_ahead(open ? 0 : b.end, ph.deadline);
    if (open)
      !workload ? open_loop_of<false>(b, at) : src.load ? open_loop_of<true, true>(b, at) : open_loop_of<true>(b, at);
    else if (ahead)
      ahead_loop(b, at, *ahead);
    else
      !workload ? closed_loop<false>(b, at) : src.load ? closed_loop<true, true>(b, at) : closed_loop<true>(b, at);
  } catch (const std::exception& e) {
    threw(e.what());
  } catch (...) {
    threw("unknown exception");
  }
  st.last_end = at.last;
  if (b.end != UINT64_MAX) st.not_run = b.end - at.next;
}

namespace {

// Pollable clients: one event loop per thread over its clients, a sliding window of P
// requests per client, each timed from its own submit to its reap.
struct LoopClient {
  Client* c;
  ClientStats* st;
  uint64_t begin, next, end;
  int fd = -1;
  bool writing = false;
  bool stopped = false;
  bool dead = false;  // its code threw: stopped, its fd no longer watched
  int64_t freed = 0;  // when its window last had a slot freed by a reply
  std::deque<Flight> inflight = {};
  Source src = {};
  Schedule sched = {};  // a shaped open loop: its sends' times, and its next one's (after the loop's base)
  int64_t due = 0;
  std::unique_ptr<Client>* slot = nullptr;  // where c lives (renewed in place: Phase::renewal)
  int index = 0;                            // the client's number among the job's
  uint64_t renew = UINT64_MAX;              // the seq before which it renews next; UINT64_MAX: never
};

}  // namespace

CpuPressure::CpuPressure() { contended_ = read(nullptr) > 10; }

void CpuPressure::look(int64_t t) {
  uint64_t total = 0;
  if (read(&total) < 0) return;
  if (last_t_ > 0 && t > last_t_)
    contended_ = static_cast<double>(total - last_total_) * 1000.0 > 0.05 * static_cast<double>(t - last_t_);
  last_total_ = total, last_t_ = t;
}

double CpuPressure::read(uint64_t* total) {
  FILE* f = std::fopen("/proc/pressure/cpu", "re");
  if (!f) return -1;
  double avg10 = -1;
  unsigned long long tot = 0;
  const int n = std::fscanf(f, "some avg10=%lf avg60=%*f avg300=%*f total=%llu", &avg10, &tot);
  std::fclose(f);
  if (n != 2) return -1;
  if (total) *total = tot;
  return avg10;
}

namespace {

constexpr int64_t kCheckEvery = 50'000'000;  // timeouts and CPU pressure
std::atomic<bool> no_pwait2{false};          // this kernel has no epoll_pwait2: waits are whole ms
constexpr std::string_view kNoReply = "no reply within the timeout";

// The event loop of one thread. Each turn: wait for replies (polling first while it pays), serve
// the clients that have some (reap, then refill the window), refill the others when due, every
// 50 ms time out the requests that waited too long, and stop the clients whose connection is gone.
class EventLoop {
 public:
  EventLoop(const std::vector<Assignment>& mine, const Phase& ph, int pipeline)
      : ph_(ph),
        stop_(stop_requested()),
        pipeline_(static_cast<size_t>(pipeline)),
        timeout_ns_(static_cast<int64_t>(ph.timeout_s * 1e9)),
        gap_(ph.rate_per_client > 0 ? 1e9 / ph.rate_per_client : 0),
        shaped_(gap_ > 0 && (ph.shape || ph.trace)),
        done_(std::max(pipeline, 64)),
        poller_{ph.spin_adaptive} {
    for (const Assignment& a : mine) {
      cs_.push_back({a.client->get(), a.stats, a.share.begin, a.share.begin, end_of(a.share)});
      LoopClient& lc = cs_.back();
      lc.src = a.src, lc.slot = a.client, lc.index = a.index;
      if (ph.renewal) lc.renew = a.share.begin;
    }
  }
  ~EventLoop() {
    if (ep_ >= 0) close(ep_);
  }

  void run() {
    ep_ = epoll_create1(EPOLL_CLOEXEC);
    if (ep_ < 0) return fail_all(std::string("epoll_create1: ") + std::strerror(errno));
    start();
    while (active()) {
      serve(wait());
      t_ = now_ns();
      if (gap_ > 0 || served_ == 0) refill_all(t_);
      if (t_ >= next_check_) periodic_checks(t_);
      stop_lost();
    }
    end();
  }

 private:
  // Out of descriptors: every client of this loop fails once with the reason.
  void fail_all(const std::string& why) {
    for (auto& lc : cs_) {
      lc.st->record(OpResult{Status::Error, 0, why}, 0);
      if (lc.end != UINT64_MAX && lc.end > lc.next) lc.st->not_run = lc.end - lc.next - 1;
    }
  }

  // The first window of every client; the open loop's schedule starts now. A start later than
  // kStallMin after the phase's common one (the thread not yet scheduled) is a stall.
  void start() {
    base_ = now_ns() + static_cast<int64_t>(gap_ * ph_.first_offset);
    t_ = started_ = now_ns();
    if (gap_ > 0) {
      cpu_wait0_ = cpu_wait_ns();
      if (ph_.t0 > 0) away(started_ - ph_.t0);
      waited_at_ = started_;  // the first turn: the first windows' sends
    }
    origin_ = phase_origin(ph_, started_);
    next_check_ = t_ + kCheckEvery;
    shift_all(t_);
    for (auto& lc : cs_) {
      if (gap_ > 0 && !lc.st->uncorrected) lc.st->uncorrected = std::make_unique<Histogram>();
      if (gap_ > 0 && !lc.st->lag) lc.st->lag = std::make_unique<Histogram>();
      if (shaped_ && !lc.src.feed) lc.sched = ph_.schedule(lc.begin + 1);
      if (shaped_) lc.due = next_due(lc);
      guarded(lc, [&] { refill(lc, t_); });
    }
    if (ph_.spin_ns > 0) pressure_.look(t_);
  }

  // --hot-shift: every client's keys those of time T's period; the next check no later than
  // the next period's start.
  void shift_all(int64_t t) {
    for (auto& lc : cs_) next_check_ = std::min(next_check_, shift_keys(lc.src, origin_, t, t + kCheckEvery));
  }

  void end() {
    if (gap_ > 0 && !cs_.empty()) {
      const int64_t t = now_ns();
      if (waited_at_ > 0) away(t - waited_at_ - asked_);
      ClientStats& first = *cs_.front().st;
      first.loop_ns = t - started_;
      first.loop_idle_ns = idle_ns_;
      first.stall_ns = stall_ns_, first.stall_max_ns = stall_max_ns_;
      const int64_t w = cpu_wait_ns();
      first.cpu_wait_ns = cpu_wait0_ >= 0 && w >= cpu_wait0_ ? w - cpu_wait0_ : -1;
    }
    if (!cs_.empty()) cs_.front().st->polls = poller_.polls;
    for (auto& lc : cs_) {
      if (gap_ > 0) {  // the ops it sent were offered in that many gaps from the schedule's start
        if (shaped_)
          lc.st->offered_end = lc.due >= 0 && lc.due < TraceFeed::kNever ? base_ + lc.due : t_;
        else
          offered(lc);
      }
      if (lc.end != UINT64_MAX) lc.st->not_run = lc.end - lc.next;
      if (lc.st->last_end == 0) lc.st->last_end = lc.st->first_start == INT64_MAX ? 0 : t_;
    }
  }

  // Open loop: the ops the client sent were offered in that many gaps from the schedule's start;
  // a client that ended on the deadline (not stopped, halted or lost) counts those due by then
  // that it had not sent (its window full, or the loop behind).
  void offered(LoopClient& lc) {
    const uint64_t sent = lc.next - lc.begin;
    lc.st->offered_end = started_ + static_cast<int64_t>(gap_ * static_cast<double>(sent));
    if (stop_.load(std::memory_order_relaxed) || ph_.halted() || lc.dead || !lc.c->alive()) return;
    lc.st->not_sent = unsent(due_base(ph_, started_, gap_), gap_, ph_.deadline, lc.end - lc.begin, sent);
  }

  bool active() const {
    bool any = false;
    for (auto& lc : cs_) any |= !lc.inflight.empty() || (!lc.stopped && lc.next < lc.end);
    return any;
  }

  // The ready clients (into evs_): polls first when it pays, then sleeps up to 50 ms (in an open
  // loop, until the next send falls due).
  int wait() {
    int n = 0;
    if (polls()) n = poll_briefly();
    if (n != 0) return n;
    if (gap_ == 0) return wait_events(50'000'000);
    const int64_t t = now_ns();
    // the last turn: from its wait's start to this one's, less the wait it asked for
    if (waited_at_ > 0) away(t - waited_at_ - asked_);
    waited_at_ = t, asked_ = until_due(t);
    n = wait_events(asked_);
    if (no_pwait2.load(std::memory_order_relaxed)) asked_ = (asked_ + 999'999) / 1'000'000 * 1'000'000;  // as waited
    idle_ns_ += now_ns() - t;
    return n;
  }

  // Open loop: the loop was away from its clients `ns` beyond its schedule (ClientStats::stall_ns).
  void away(int64_t ns) {
    if (ns < kStallMin) return;
    stall_ns_ += ns;
    stall_max_ns_ = std::max(stall_max_ns_, ns);
  }

  // Open loop: how long until the next request of a client with a free slot is due (0: one is
  // already due), at most 1 ms (a slot freed by a reply wakes the loop through the reply itself).
  int64_t until_due(int64_t t) const {
    int64_t wait = 1'000'000;
    for (const LoopClient& lc : cs_) {
      if (lc.stopped || lc.next >= lc.end || lc.inflight.size() >= pipeline_) continue;
      wait = std::min(wait, std::max<int64_t>(0, due_of(lc) - t));
    }
    return wait;
  }

  // epoll_wait with a timeout in ns (epoll_pwait2): a send due in 200 us is not made 1 ms late by
  // the millisecond timeout of epoll_wait (kernels before 5.11: that, rounded up).
  int wait_events(int64_t ns) {
    const int max = static_cast<int>(evs_.size());
    if (!no_pwait2.load(std::memory_order_relaxed)) {
      timespec ts{static_cast<time_t>(ns / 1'000'000'000), static_cast<long>(ns % 1'000'000'000)};
      const int n = epoll_pwait2(ep_, evs_.data(), max, &ts, nullptr);
      if (n >= 0 || errno != ENOSYS) return n;
      no_pwait2.store(true, std::memory_order_relaxed);
    }
    return epoll_wait(ep_, evs_.data(), max, static_cast<int>((ns + 999'999) / 1'000'000));
  }

  bool polls() {
    return ph_.spin_ns > 0 && gap_ == 0 && (!ph_.spin_adaptive || (!pressure_.contended() && poller_.wants()));
  }

  // Polls before sleeping (Phase::spin_ns): a look every 4% of the recent latency (1-40 us),
  // so noticing an answer late adds at most that to it, and idle looks stay few.
  int poll_briefly() {
    const int64_t until = now_ns() + ph_.spin_ns;
    const int64_t pace = std::clamp<int64_t>(recent_latency_ / 25, 1'000, 40'000);
    int n = 0;
    for (;;) {
      n = epoll_wait(ep_, evs_.data(), static_cast<int>(evs_.size()), 0);
      if (n != 0) break;
      const int64_t t1 = now_ns();
      if (t1 >= until) break;
      while (now_ns() < t1 + pace) cpu_relax();
    }
    poller_.found(n != 0);
    return n;
  }

  // The clients with replies (or room to write): send what waits, book the replies, refill.
  void serve(int n) {
    served_ = n;
    for (int i = 0; i < n; ++i) {
      auto& lc = *static_cast<LoopClient*>(evs_[i].data.ptr);
      const int64_t t = now_ns();
      const bool writable = evs_[i].events & EPOLLOUT;
      guarded(lc, [&] {
        if (writable) lc.c->flush();
        complete(lc, t);
        refill(lc, t);
      });
    }
  }

  void refill_all(int64_t t) {
    for (auto& lc : cs_) guarded(lc, [&] { refill(lc, t); });
  }

  // Every 50 ms: the CPU pressure (for --poll auto), and the clients whose oldest request waited
  // longer than the timeout.
  void periodic_checks(int64_t t) {
    next_check_ = t + kCheckEvery;
    shift_all(t);
    if (ph_.spin_ns > 0) pressure_.look(t);
    for (auto& lc : cs_)
      if (!lc.inflight.empty() && t - lc.inflight.front().start >= timeout_ns_) guarded(lc, [&] { time_out(lc, t); });
  }

  // A client whose connection is gone stops once its requests are accounted for; one lost while
  // sending has no fd left to wake the loop, so its failures are collected now. One that
  // reconnects (alive, no fd) has its failed tries collected the same way, and goes on.
  void stop_lost() {
    for (auto& lc : cs_)
      guarded(lc, [&] {
        const bool alive = lc.c->alive();
        if (alive && lc.fd >= 0) return;
        if (!lc.inflight.empty()) complete(lc, now_ns());
        if (!alive && lc.inflight.empty()) lc.stopped = true;
      });
  }

  // One client: fills its window up to P requests (those due, in an open loop) and sends them.
  void refill(LoopClient& lc, int64_t t) {
    if (lc.stopped) return;
    bool sent = false;
    while (lc.inflight.size() < pipeline_ && lc.next < lc.end) {
      if (lc.next >= lc.renew) [[unlikely]] {
        if (!lc.inflight.empty() || sent) break;  // its replies first: the connection closes with none in flight
        // A client at its end with nothing in flight stops here: no reply will wake it again.
        if (stop_.load(std::memory_order_relaxed) || ph_.halted() || t >= ph_.deadline) {
          lc.stopped = true;
          break;
        }
        if (lc.st->first_start == INT64_MAX) lc.st->first_start = t;  // the phase's time counts its opens
        renew(lc);
        t = now_ns();             // its ops start after the connect
        if (t >= ph_.deadline) {  // --connect-rate's turn came after the end
          lc.stopped = true;
          break;
        }
      }
      int64_t intended = t;
      const Next next = next_op(lc, t, intended);
      if (next == Next::Wait) break;
      if (next == Next::Stop) {
        lc.stopped = true;
        break;
      }
      submit(lc, t, intended);
      sent = true;
    }
    if (sent) lc.c->flush();
    watch(lc);
  }

  enum class Next : uint8_t { Send, Wait, Stop };
  // Whether the client's next op is sent now (and when it was due), waits for its time (open
  // loop), or the client stops (a stop, a crash, the deadline, its connection gone).
  Next next_op(const LoopClient& lc, int64_t t, int64_t& intended) const {
    if (stop_.load(std::memory_order_relaxed) || ph_.halted() || t >= ph_.deadline || !lc.c->alive()) return Next::Stop;
    if (gap_ == 0) return Next::Send;
    if (shaped_ && lc.due >= TraceFeed::kNever) return Next::Stop;  // the trace has no more
    intended = due_of(lc);
    if (intended > t) return Next::Wait;
    return intended >= ph_.deadline ? Next::Stop : Next::Send;
  }

  // Open loop: when the client's next op is due.
  int64_t due_of(const LoopClient& lc) const {
    if (shaped_ && lc.due < 0) return t_;  // --speed max: as soon as it has a free slot
    return base_ + (shaped_ ? lc.due : static_cast<int64_t>(gap_ * static_cast<double>(lc.next - lc.begin)));
  }
  static int64_t next_due(LoopClient& lc) { return lc.src.feed ? lc.src.feed->advance_ns() : lc.sched.next_ns(); }

  // Sends the client's next op. An open loop stamps its send lag: how late it went after it was
  // due and the client had a free slot (a full window waiting for replies is not the client's lag).
  void submit(LoopClient& lc, int64_t t, int64_t intended) {
    if (lc.st->first_start == INT64_MAX) lc.st->first_start = t;
    if (gap_ > 0) lc.st->lag->record(t - std::max(intended, lc.freed)), lc.c->set_due(intended);
    if (lc.src.gen) {
      const Request q = lc.src.make(lc.next++);
      lc.inflight.push_back({q.seq, t, intended, q.op, q.must_exist});
      lc.c->submit_request(q);
    } else {
      lc.inflight.push_back({lc.next, t, intended});
      lc.c->submit(lc.next++);
    }
    lc.c->set_due(0);
    if (shaped_) lc.due = next_due(lc);
  }

  // The client's replies so far, each booked against its request (in order, as a rule).
  void complete(LoopClient& lc, int64_t t) {
    if (lc.dead) return;
    const size_t k = lc.c->reap(done_);
    if (k) lc.freed = t;
    for (size_t i = 0; i < k && !lc.inflight.empty(); ++i) {
      const Completion& cp = done_[i];
      auto it = flight_of(lc, cp.seq);
      if (it == lc.inflight.end()) continue;
      OpResult res = cp.result;
      lc.st->finish(*it, lc.src.gen != nullptr, res, t, ph_.t0);
      lc.st->last_end = t;
      recent_latency_ += (t - it->start - recent_latency_) / 16;
      if (it == lc.inflight.begin())
        lc.inflight.pop_front();  // the rule: cheaper than erase
      else
        lc.inflight.erase(it);
      lc.st->done.fetch_add(1, std::memory_order_relaxed);
    }
  }

  static std::deque<Flight>::iterator flight_of(LoopClient& lc, uint64_t seq) {
    auto it = lc.inflight.begin();
    if (it->seq == seq) return it;
    return std::find_if(lc.inflight.begin(), lc.inflight.end(), [&](const Flight& f) { return f.seq == seq; });
  }

  // --reconnect-every: the client's connection closed (out of the epoll set first: the new one may
  // get the same fd number) and opened again; a failed open throws (guarded: the client stops).
  void renew(LoopClient& lc) {
    const Renewal& r = *ph_.renewal;
    lc.renew = lc.next + r.every;
    if (lc.fd >= 0) epoll_ctl(ep_, EPOLL_CTL_DEL, lc.fd, nullptr);
    lc.fd = -1, lc.writing = false;
    lc.c = nullptr;
    const Renewal::Took took = r.renew(*lc.slot, lc.index, ph_.deadline);
    lc.c = lc.slot->get();
    lc.st->renewed(took);
    watch(lc);
  }

  // The client's oldest request waited too long: it drops its connection and fails what it had
  // in flight; whatever it could not account for is a timeout.
  void time_out(LoopClient& lc, int64_t t) {
    lc.c->abort(kNoReply);
    complete(lc, t);
    for (auto& f : lc.inflight) {
      lc.st->record({Status::Timeout, 0, kNoReply}, t - f.intended);
      lc.st->series.add(t - ph_.t0, t - f.intended, false);
      lc.st->done.fetch_add(1, std::memory_order_relaxed);
    }
    lc.inflight.clear();
    watch(lc);
  }

  // A client whose code throws fails the ops it had in flight (or the next one) with the
  // reason and stops; the other clients go on.
  template <class Step>
  void guarded(LoopClient& lc, Step&& step) {
    if (lc.dead) return;
    try {
      step();
    } catch (const std::exception& e) {
      give_up(lc, e.what());
    } catch (...) {
      give_up(lc, "unknown exception");
    }
  }

  void give_up(LoopClient& lc, std::string_view why) {
    const int64_t t = now_ns();
    if (lc.inflight.empty() && lc.next < lc.end) lc.inflight.push_back({lc.next, t, t}), ++lc.next;
    for (auto& f : lc.inflight) {
      lc.st->threw(why, t - f.intended);
      lc.st->done.fetch_add(1, std::memory_order_relaxed);
    }
    lc.inflight.clear();
    lc.st->last_end = t;
    lc.stopped = lc.dead = true;
    if (lc.fd >= 0) epoll_ctl(ep_, EPOLL_CTL_DEL, lc.fd, nullptr);
    lc.fd = -1;
  }

  // The client's fd in the epoll set, for reading, and for writing while it has bytes queued.
  void watch(LoopClient& lc) {
    const int fd = lc.c->fd();
    const bool want_out = lc.c->wants_write();
    if (fd == lc.fd && want_out == lc.writing) return;
    if (lc.fd >= 0 && fd != lc.fd) epoll_ctl(ep_, EPOLL_CTL_DEL, lc.fd, nullptr);
    epoll_event ev{};
    ev.events = want_out ? static_cast<uint32_t>(EPOLLIN | EPOLLOUT) : static_cast<uint32_t>(EPOLLIN);
    ev.data.ptr = &lc;
    if (fd >= 0) epoll_ctl(ep_, fd == lc.fd ? EPOLL_CTL_MOD : EPOLL_CTL_ADD, fd, &ev);
    lc.fd = fd;
    lc.writing = want_out;
  }

  const Phase& ph_;
  const std::atomic<bool>& stop_;
  const size_t pipeline_;
  const int64_t timeout_ns_;
  const double gap_;   // open loop: ns between a client's sends; 0: closed loop
  const bool shaped_;  // open loop: each client's sends follow its Schedule (Phase::shape)
  std::vector<LoopClient> cs_;
  int ep_ = -1;
  std::vector<Completion> done_;
  std::vector<epoll_event> evs_ = std::vector<epoll_event>(64);
  int served_ = 0;      // ready clients of the last wait
  int64_t base_ = 0;    // open loop: when each client's first send is due
  int64_t origin_ = 0;  // the phase's start (--hot-shift's periods count from it)
  int64_t t_ = 0;       // the loop's clock, read once a turn
  int64_t started_ = 0;
  int64_t idle_ns_ = 0;    // open loop: time spent waiting (ClientStats::loop_idle_ns)
  int64_t waited_at_ = 0;  // open loop: when the last wait began, and how long it asked for
  int64_t asked_ = 0;
  int64_t stall_ns_ = 0, stall_max_ns_ = 0;  // open loop: its stalls (ClientStats::stall_ns)
  int64_t cpu_wait0_ = -1;                   // open loop: the thread's run-queue wait at its start
  int64_t next_check_ = 0;
  int64_t recent_latency_ = 0;  // a moving average, for the poll's pace
  Poller poller_;
  CpuPressure pressure_;
};

}  // namespace

void run_loop(const std::vector<Assignment>& mine, const Phase& ph, int pipeline) {
  EventLoop(mine, ph, pipeline).run();
}

}  // namespace mw::loops
