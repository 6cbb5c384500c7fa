#include "loops.h"

#include <sys/epoll.h>
#include <time.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <deque>

#include "driver.h"

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
    while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, nullptr) == EINTR) {
    }
    if (until >= t) return;
  }
}

}  // namespace

void ClientStats::record_side(const OpResult& r, int64_t latency) {
  if (r.side >= sides.size()) return;
  sides[r.side].record(latency);
  side_bytes[r.side] += r.bytes;
}

void ClientStats::record_failure(const OpResult& r, int64_t latency) {
  if (!failed) failed = std::make_unique<Histogram>();
  failed->record(latency);
  ++errors[static_cast<int>(r.status)];
  ++n_failed;
  n_errors.store(n_failed, std::memory_order_relaxed);
  if (samples.size() < kMaxSamples) {
    std::string s = std::string(status_name(r.status)) + ": " + std::string(r.detail);
    if (std::find(samples.begin(), samples.end(), s) == samples.end()) samples.push_back(s);
  }
}

// Closed loop, one clock read per op: the end of op k is the start of op k+1, so the driver's
// own bookkeeping is charged to the next op (latency is never understated).
void run_blocking(Client& c, ClientStats& st, Share share, const Phase& ph, Source src) {
  const auto& stop = stop_requested();
  const uint64_t end = share.count == UINT64_MAX ? UINT64_MAX : share.begin + share.count;
  uint64_t seq = share.begin;
  int64_t t0 = now_ns();
  st.first_start = t0;
  try {
    if (ph.rate_per_client > 0) {
      if (!st.uncorrected) st.uncorrected = std::make_unique<Histogram>();
      const double gap = 1e9 / ph.rate_per_client;
      const int64_t base = t0 + static_cast<int64_t>(gap * ph.first_offset);
      for (uint64_t k = 0; seq < end && !stop.load(std::memory_order_relaxed) && !ph.halted(); ++k) {
        int64_t intended = base + static_cast<int64_t>(gap * static_cast<double>(k));
        if (intended >= ph.deadline) break;
        int64_t t = now_ns();
        if (t < intended) {
          sleep_until_ns(intended);
          if (stop.load(std::memory_order_relaxed)) break;
          t = now_ns();
        }
        Request q;
        OpResult r = src.gen ? c.run_request(q = src.make(seq++)) : c.run(seq++);
        int64_t t1 = now_ns();
        if (src.gen) st.record(q.op, q.must_exist, r, t1 - intended);
        else st.record(r, t1 - intended);
        if (r.status == Status::Ok) st.uncorrected->record(t1 - t);
        if (st.log_acked && r.status == Status::Ok) st.acked.push_back({seq - 1, t1});
        st.mark(t1 - ph.t0, t1 - intended, r.status == Status::Ok);
        st.done.store(seq - share.begin, std::memory_order_relaxed);
        t0 = t1;
        if (r.status != Status::Ok && !c.alive()) break;
      }
    } else {
      while (seq < end && !stop.load(std::memory_order_relaxed) && !ph.halted()) {
        Request q;
        OpResult r = src.gen ? c.run_request(q = src.make(seq++)) : c.run(seq++);
        int64_t t1 = now_ns();
        if (src.gen) st.record(q.op, q.must_exist, r, t1 - t0);
        else st.record(r, t1 - t0);
        st.mark(t1 - ph.t0, t1 - t0, r.status == Status::Ok);
        if (st.log_acked && r.status == Status::Ok) st.acked.push_back({seq - 1, t1});
        st.done.store(seq - share.begin, std::memory_order_relaxed);
        t0 = t1;
        if (t1 >= ph.deadline) break;
        if (r.status != Status::Ok && !c.alive()) break;
      }
    }
  } catch (const std::exception& e) {
    st.threw(e.what(), now_ns() - t0);
    t0 = now_ns();
  } catch (...) {
    st.threw("unknown exception", now_ns() - t0);
    t0 = now_ns();
  }
  st.last_end = t0;
  if (end != UINT64_MAX) st.not_run = end - seq;
}

namespace {

// Pollable clients: one event loop per thread over its clients, a sliding window of P
// requests per client, each timed from its own submit to its reap.
struct Flight {
  uint64_t seq;
  int64_t start;
  int64_t intended;
  KvOp op = KvOp::Read;  // a workload request's op and whether its key must exist
  bool must_exist = false;
};

struct LoopClient {
  Client* c;
  ClientStats* st;
  uint64_t begin, next, end;
  int fd = -1;
  bool writing = false;
  bool stopped = false;
  bool dead = false;  // its code threw: stopped, its fd no longer watched
  std::deque<Flight> inflight = {};
  Source src = {};
};

void watch(int ep, LoopClient& lc) {
  int fd = lc.c->fd();
  bool want_out = lc.c->wants_write();
  if (fd == lc.fd && want_out == lc.writing) return;
  if (lc.fd >= 0 && fd != lc.fd) epoll_ctl(ep, EPOLL_CTL_DEL, lc.fd, nullptr);
  epoll_event ev{};
  ev.events = want_out ? static_cast<uint32_t>(EPOLLIN | EPOLLOUT) : static_cast<uint32_t>(EPOLLIN);
  ev.data.ptr = &lc;
  if (fd >= 0) epoll_ctl(ep, fd == lc.fd ? EPOLL_CTL_MOD : EPOLL_CTL_ADD, fd, &ev);
  lc.fd = fd;
  lc.writing = want_out;
}

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

void run_loop(const std::vector<Assignment>& mine, const Phase& ph, int pipeline) {
  std::vector<LoopClient> cs;
  for (const Assignment& a : mine) {
    const uint64_t end = a.share.count == UINT64_MAX ? UINT64_MAX : a.share.begin + a.share.count;
    cs.push_back({a.client, a.stats, a.share.begin, a.share.begin, end});
    cs.back().src = a.src;
  }
  const auto& stop = stop_requested();
  int ep = epoll_create1(EPOLL_CLOEXEC);
  if (ep < 0) {  // out of descriptors: every client of this loop fails once with the reason
    const std::string why = std::string("epoll_create1: ") + std::strerror(errno);
    for (auto& lc : cs) {
      lc.st->record(OpResult{Status::Error, 0, why}, 0);
      if (lc.end != UINT64_MAX && lc.end > lc.next) lc.st->not_run = lc.end - lc.next - 1;
    }
    return;
  }
  const int64_t timeout_ns = static_cast<int64_t>(ph.timeout_s * 1e9);
  const double gap = ph.rate_per_client > 0 ? 1e9 / ph.rate_per_client : 0;
  std::vector<Completion> done(std::max(pipeline, 64));
  int64_t base = now_ns() + static_cast<int64_t>(gap * ph.first_offset);

  auto refill = [&](LoopClient& lc, int64_t t) {
    if (lc.stopped) return;
    bool sent = false;
    while (lc.inflight.size() < static_cast<size_t>(pipeline) && lc.next < lc.end) {
      if (stop.load(std::memory_order_relaxed) || ph.halted() || t >= ph.deadline || !lc.c->alive()) {
        lc.stopped = true;
        break;
      }
      int64_t intended = t;
      if (gap > 0) {
        intended = base + static_cast<int64_t>(gap * static_cast<double>(lc.next - lc.begin));
        if (intended > t) break;  // not yet due
        if (intended >= ph.deadline) {
          lc.stopped = true;
          break;
        }
      }
      if (lc.st->first_start == INT64_MAX) lc.st->first_start = t;
      if (lc.src.gen) {
        const Request q = lc.src.make(lc.next++);
        lc.inflight.push_back({q.seq, t, intended, q.op, q.must_exist});
        lc.c->submit_request(q);
      } else {
        lc.inflight.push_back({lc.next, t, intended});
        lc.c->submit(lc.next++);
      }
      sent = true;
    }
    if (sent) lc.c->flush();
    watch(ep, lc);
  };
  int64_t recent_latency = 0;  // a moving average, for the poll's pace
  auto complete = [&](LoopClient& lc, int64_t t) {
    if (lc.dead) return size_t{0};
    size_t k = lc.c->reap(done);
    for (size_t i = 0; i < k; ++i) {
      const Completion& cp = done[i];
      auto it = lc.inflight.begin();
      if (it == lc.inflight.end()) break;
      if (it->seq != cp.seq)
        it = std::find_if(lc.inflight.begin(), lc.inflight.end(),
                          [&](const Flight& f) { return f.seq == cp.seq; });
      if (it == lc.inflight.end()) continue;
      OpResult res = cp.result;
      if (lc.src.gen) lc.st->record(it->op, it->must_exist, res, t - it->intended);
      else lc.st->record(res, t - it->intended);
      lc.st->mark(t - ph.t0, t - it->intended, res.status == Status::Ok);
      if (res.status == Status::Ok && lc.st->uncorrected) lc.st->uncorrected->record(t - it->start);
      if (res.status == Status::Ok && lc.st->log_acked) lc.st->acked.push_back({it->seq, t});
      lc.st->last_end = t;
      recent_latency += (t - it->start - recent_latency) / 16;
      lc.inflight.erase(it);
      lc.st->done.fetch_add(1, std::memory_order_relaxed);
    }
    return k;
  };

  // A client whose code throws fails the ops it had in flight (or the next one) with the
  // reason and stops; the other clients go on.
  auto give_up = [&](LoopClient& lc, std::string_view why) {
    int64_t t = now_ns();
    if (lc.inflight.empty() && lc.next < lc.end) lc.inflight.push_back({lc.next, t, t}), ++lc.next;
    for (auto& f : lc.inflight) {
      lc.st->threw(why, t - f.intended);
      lc.st->done.fetch_add(1, std::memory_order_relaxed);
    }
    lc.inflight.clear();
    lc.st->last_end = t;
    lc.stopped = lc.dead = true;
    if (lc.fd >= 0) epoll_ctl(ep, EPOLL_CTL_DEL, lc.fd, nullptr);
    lc.fd = -1;
  };
  auto guarded = [&](LoopClient& lc, auto&& fn) {
    if (lc.dead) return;
    try {
      fn();
    } catch (const std::exception& e) {
      give_up(lc, e.what());
    } catch (...) {
      give_up(lc, "unknown exception");
    }
  };

  int64_t t = now_ns();
  for (auto& lc : cs) {
    if (gap > 0 && !lc.st->uncorrected) lc.st->uncorrected = std::make_unique<Histogram>();
    guarded(lc, [&] { refill(lc, t); });
  }
  std::vector<epoll_event> evs(64);
  Poller poller{ph.spin_adaptive};
  int64_t next_check = t + 50'000'000;
  CpuPressure pressure;
  if (ph.spin_ns > 0) pressure.look(t);
  for (;;) {
    bool active = false;
    for (auto& lc : cs) active |= !lc.inflight.empty() || (!lc.stopped && lc.next < lc.end);
    if (!active) break;
    int wait_ms = 50;
    if (gap > 0) wait_ms = 1;
    int n = 0;
    if (ph.spin_ns > 0 && gap == 0 && (!ph.spin_adaptive || (!pressure.contended() && poller.wants()))) {
      // Poll before sleeping (Phase::spin_ns): a look every 4% of the recent latency (1-40 us),
      // so noticing an answer late adds at most that to it, and idle looks stay few.
      const int64_t until = now_ns() + ph.spin_ns;
      const int64_t pace = std::clamp<int64_t>(recent_latency / 25, 1'000, 40'000);
      for (;;) {
        n = epoll_wait(ep, evs.data(), static_cast<int>(evs.size()), 0);
        if (n != 0) break;
        const int64_t t1 = now_ns();
        if (t1 >= until) break;
        while (now_ns() < t1 + pace) cpu_relax();
      }
      poller.found(n != 0);
    }
    if (n == 0) n = epoll_wait(ep, evs.data(), static_cast<int>(evs.size()), wait_ms);
    for (int i = 0; i < n; ++i) {
      auto& lc = *static_cast<LoopClient*>(evs[i].data.ptr);
      t = now_ns();
      guarded(lc, [&] {
        if (evs[i].events & EPOLLOUT) lc.c->flush();
        complete(lc, t);
        refill(lc, t);
      });
    }
    t = now_ns();
    if (gap > 0 || n == 0)
      for (auto& lc : cs) guarded(lc, [&] { refill(lc, t); });
    if (t >= next_check) {
      next_check = t + 50'000'000;
      if (ph.spin_ns > 0) pressure.look(t);
      for (auto& lc : cs) {
        if (lc.inflight.empty() || t - lc.inflight.front().start < timeout_ns) continue;
        guarded(lc, [&] {
          lc.c->abort("no reply within the timeout");
          complete(lc, t);
          // whatever the client could not account for is a timeout
          for (auto& f : lc.inflight) {
            lc.st->record({Status::Timeout, 0, "no reply within the timeout"}, t - f.intended);
            lc.st->series.add(t - ph.t0, t - f.intended, false);
            lc.st->done.fetch_add(1, std::memory_order_relaxed);
          }
          lc.inflight.clear();
          watch(ep, lc);
        });
      }
    }
    for (auto& lc : cs)
      guarded(lc, [&] {
        if (lc.c->alive()) return;
        // A connection lost while sending has no fd left to wake us: collect its failures now.
        if (!lc.inflight.empty()) complete(lc, now_ns());
        if (lc.inflight.empty()) lc.stopped = true;
      });
  }
  for (auto& lc : cs) {
    if (lc.end != UINT64_MAX) lc.st->not_run = lc.end - lc.next;
    if (lc.st->last_end == 0) lc.st->last_end = lc.st->first_start == INT64_MAX ? 0 : t;
  }
  close(ep);
}

}  // namespace mw::loops
