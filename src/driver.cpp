#include "driver.h"

#include <sys/epoll.h>
#include <time.h>

#include <algorithm>
#include <barrier>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <thread>

namespace mw {

std::atomic<bool>& stop_requested() {
  static std::atomic<bool> flag{false};
  return flag;
}

namespace {

inline int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

void sleep_until_ns(int64_t t) {
  timespec ts{static_cast<time_t>(t / 1000000000), static_cast<long>(t % 1000000000)};
  while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, nullptr) == EINTR) {
  }
}

constexpr int64_t kSecond = 1000000000;
constexpr size_t kMaxSamples = 5;

// Everything one client measures; written only by the thread that runs the client.
struct ClientStats {
  Histogram ok;
  std::unique_ptr<Histogram> failed;
  std::unique_ptr<Histogram> uncorrected;
  uint64_t errors[kStatusCount] = {};
  uint64_t n_failed = 0, bytes = 0, not_run = 0;
  int64_t first_start = INT64_MAX, last_end = 0;
  std::vector<uint64_t> per_second;
  std::vector<std::string> samples;
  std::vector<Histogram> sides;          // per side, when the adapter has sides
  std::vector<uint64_t> side_bytes;
  alignas(64) std::atomic<uint64_t> done{0};
  std::atomic<uint64_t> n_errors{0};

  void record(const OpResult& r, int64_t latency) {
    if (r.status == Status::Ok) {
      ok.record(latency);
      bytes += r.bytes;
      if (!sides.empty() && r.side < sides.size()) sides[r.side].record(latency), side_bytes[r.side] += r.bytes;
    } else {
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
  }
  // Counts a success in the per-second series (t relative to the phase start); divides only
  // when a second boundary is crossed.
  int64_t sec_start = 0, sec_end = -1;
  size_t sec = 0;
  void tick(int64_t rel) {
    if (rel >= sec_end || rel < sec_start) {
      sec = rel > 0 ? static_cast<size_t>(rel / kSecond) : 0;
      sec_start = static_cast<int64_t>(sec) * kSecond;
      sec_end = sec_start + kSecond;
      if (sec >= per_second.size()) per_second.resize(sec + 1, 0);
    }
    ++per_second[sec];
  }
};

// What one client is asked to do in one phase.
struct Share {
  uint64_t begin = 0, count = 0;  // seqs [begin, begin+count); count UINT64_MAX: until deadline
};

struct Phase {
  bool measured = false;
  int64_t t0 = 0;                 // common start of the phase
  int64_t deadline = INT64_MAX;   // duration runs
  double rate_per_client = 0;     // open loop
  double timeout_s = 5;
};

// Closed loop, one clock read per op: the end of op k is the start of op k+1, so the driver's
// own bookkeeping is charged to the next op (latency is never understated).
void run_blocking(Client& c, ClientStats& st, Share share, const Phase& ph) {
  const auto& stop = stop_requested();
  const uint64_t end = share.count == UINT64_MAX ? UINT64_MAX : share.begin + share.count;
  uint64_t seq = share.begin;
  int64_t t0 = now_ns();
  st.first_start = t0;
  if (ph.rate_per_client > 0) {
    if (!st.uncorrected) st.uncorrected = std::make_unique<Histogram>();
    const double gap = 1e9 / ph.rate_per_client;
    const int64_t base = t0;
    for (uint64_t k = 0; seq < end && !stop.load(std::memory_order_relaxed); ++k) {
      int64_t intended = base + static_cast<int64_t>(gap * static_cast<double>(k));
      if (intended >= ph.deadline) break;
      int64_t t = now_ns();
      if (t < intended) sleep_until_ns(intended), t = now_ns();
      OpResult r = c.run(seq++);
      int64_t t1 = now_ns();
      st.record(r, t1 - intended);
      if (r.status == Status::Ok) st.uncorrected->record(t1 - t), st.tick(t1 - ph.t0);
      st.done.store(seq - share.begin, std::memory_order_relaxed);
      t0 = t1;
      if (r.status != Status::Ok && !c.alive()) break;
    }
  } else {
    while (seq < end && !stop.load(std::memory_order_relaxed)) {
      OpResult r = c.run(seq++);
      int64_t t1 = now_ns();
      st.record(r, t1 - t0);
      if (r.status == Status::Ok) st.tick(t1 - ph.t0);
      st.done.store(seq - share.begin, std::memory_order_relaxed);
      t0 = t1;
      if (t1 >= ph.deadline) break;
      if (r.status != Status::Ok && !c.alive()) break;
    }
  }
  st.last_end = t0;
  if (end != UINT64_MAX) st.not_run = end - seq;
}

// Pollable clients: one event loop per thread over its clients, a sliding window of P
// requests per client, each timed from its own submit to its reap.
struct Flight {
  uint64_t seq;
  int64_t start;
  int64_t intended;
};

struct LoopClient {
  Client* c;
  ClientStats* st;
  uint64_t begin, next, end;
  int fd = -1;
  bool writing = false;
  bool stopped = false;
  std::deque<Flight> inflight = {};
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

void run_loop(std::vector<LoopClient>& cs, const Phase& ph, int pipeline) {
  const auto& stop = stop_requested();
  int ep = epoll_create1(EPOLL_CLOEXEC);
  const int64_t timeout_ns = static_cast<int64_t>(ph.timeout_s * 1e9);
  const double gap = ph.rate_per_client > 0 ? 1e9 / ph.rate_per_client : 0;
  std::vector<Completion> done(std::max(pipeline, 64));
  int64_t base = now_ns();

  auto refill = [&](LoopClient& lc, int64_t t) {
    if (lc.stopped) return;
    bool sent = false;
    while (lc.inflight.size() < static_cast<size_t>(pipeline) && lc.next < lc.end) {
      if (stop.load(std::memory_order_relaxed) || t >= ph.deadline || !lc.c->alive()) {
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
      lc.inflight.push_back({lc.next, t, intended});
      lc.c->submit(lc.next++);
      sent = true;
    }
    if (sent) lc.c->flush();
    watch(ep, lc);
  };
  auto complete = [&](LoopClient& lc, int64_t t) {
    size_t k = lc.c->reap(done);
    for (size_t i = 0; i < k; ++i) {
      const Completion& cp = done[i];
      auto it = lc.inflight.begin();
      if (it == lc.inflight.end()) break;
      if (it->seq != cp.seq)
        it = std::find_if(lc.inflight.begin(), lc.inflight.end(),
                          [&](const Flight& f) { return f.seq == cp.seq; });
      if (it == lc.inflight.end()) continue;
      lc.st->record(cp.result, t - it->intended);
      if (cp.result.status == Status::Ok) {
        lc.st->tick(t - ph.t0);
        if (lc.st->uncorrected) lc.st->uncorrected->record(t - it->start);
      }
      lc.st->last_end = t;
      lc.inflight.erase(it);
      lc.st->done.fetch_add(1, std::memory_order_relaxed);
    }
    return k;
  };

  int64_t t = now_ns();
  for (auto& lc : cs) {
    if (gap > 0 && !lc.st->uncorrected) lc.st->uncorrected = std::make_unique<Histogram>();
    refill(lc, t);
  }
  std::vector<epoll_event> evs(64);
  int64_t next_check = t + 50'000'000;
  for (;;) {
    bool active = false;
    for (auto& lc : cs) active |= !lc.inflight.empty() || (!lc.stopped && lc.next < lc.end);
    if (!active) break;
    int wait_ms = 50;
    if (gap > 0) wait_ms = 1;
    int n = epoll_wait(ep, evs.data(), static_cast<int>(evs.size()), wait_ms);
    for (int i = 0; i < n; ++i) {
      auto& lc = *static_cast<LoopClient*>(evs[i].data.ptr);
      t = now_ns();
      if (evs[i].events & EPOLLOUT) lc.c->flush();
      complete(lc, t);
      refill(lc, t);
    }
    t = now_ns();
    if (gap > 0 || n == 0)
      for (auto& lc : cs) refill(lc, t);
    if (t >= next_check) {
      next_check = t + 50'000'000;
      for (auto& lc : cs) {
        if (lc.inflight.empty() || t - lc.inflight.front().start < timeout_ns) continue;
        lc.c->abort("no reply within the timeout");
        complete(lc, t);
        // whatever the client could not account for is a timeout
        for (auto& f : lc.inflight) {
          lc.st->record({Status::Timeout, 0, "no reply within the timeout"}, t - f.intended);
          lc.st->done.fetch_add(1, std::memory_order_relaxed);
        }
        lc.inflight.clear();
        watch(ep, lc);
      }
    }
    for (auto& lc : cs) {
      if (lc.c->alive()) continue;
      // A connection lost while sending has no fd left to wake us: collect its failures now.
      if (!lc.inflight.empty()) complete(lc, now_ns());
      if (lc.inflight.empty()) lc.stopped = true;
    }
  }
  for (auto& lc : cs) {
    if (lc.end != UINT64_MAX) lc.st->not_run = lc.end - lc.next;
    if (lc.st->last_end == 0) lc.st->last_end = lc.st->first_start == INT64_MAX ? 0 : t;
  }
  close(ep);
}

std::vector<Share> split(uint64_t total, int clients, bool unbounded) {
  std::vector<Share> out(clients);
  uint64_t begin = 0;
  for (int i = 0; i < clients; ++i) {
    uint64_t n = unbounded ? UINT64_MAX : total / clients + (static_cast<uint64_t>(i) < total % clients ? 1 : 0);
    out[i] = {begin, n};
    if (!unbounded) begin += n;
    else begin += uint64_t{1} << 40;  // disjoint seq ranges per client
  }
  return out;
}

}  // namespace

void measure(const Job& job, Adapter& adapter, JobResult& out, const ProgressFn& progress) {
  out.latency = std::make_shared<Histogram>();  // empty until measured, never missing
  out.latency_failed = std::make_shared<Histogram>();
  const int C = std::max(1, job.clients);
  const int P = std::max(1, job.pipeline);
  std::vector<std::unique_ptr<Client>> clients;
  for (int i = 0; i < C; ++i) clients.push_back(adapter.open(job, i));
  const bool pollable = clients[0]->fd() >= 0;
  if (!pollable && P > 1)
    out.warnings.push_back("-P " + std::to_string(P) + " ignored: " + job.adapter +
                           " clients are blocking (one request at a time)");
  int threads = pollable ? std::clamp(job.threads > 0 ? job.threads : 1, 1, C) : C;

  const bool unbounded = job.duration_s > 0;
  // Seqs of the measured phase continue after the warm-up's, so each op works on fresh keys.
  const uint64_t warm_total = job.warmup_s > 0 ? 0 : job.warmup_ops;
  std::vector<std::unique_ptr<ClientStats>> warm, stats;
  const std::vector<std::string> side_names = adapter.sides();
  for (int i = 0; i < C; ++i) {
    stats.push_back(std::make_unique<ClientStats>());
    stats.back()->sides.resize(side_names.size());
    stats.back()->side_bytes.resize(side_names.size(), 0);
  }

  auto run_phase = [&](std::vector<std::unique_ptr<ClientStats>>& st, std::vector<Share> shares,
                       Phase ph) {
    ph.timeout_s = job.timeout_s;
    ph.rate_per_client = job.rate > 0 ? job.rate / C : 0;
    std::vector<std::thread> ts;
    std::barrier sync(threads + 1);
    std::atomic<int64_t> t0{0};
    for (int th = 0; th < threads; ++th) {
      ts.emplace_back([&, th] {
        sync.arrive_and_wait();
        Phase p = ph;
        p.t0 = t0.load();
        if (p.deadline != INT64_MAX) p.deadline += p.t0;
        if (!pollable) {
          run_blocking(*clients[th], *st[th], shares[th], p);
          return;
        }
        std::vector<LoopClient> mine;
        for (int i = th; i < C; i += threads)
          mine.push_back({clients[i].get(), st[i].get(), shares[i].begin, shares[i].begin,
                          shares[i].count == UINT64_MAX ? UINT64_MAX : shares[i].begin + shares[i].count});
        run_loop(mine, p, P);
      });
    }
    t0 = now_ns();
    sync.arrive_and_wait();
    if (progress && ph.measured) {
      std::mutex m;
      std::condition_variable cv;
      std::atomic<int> running{threads};
      std::thread mon([&] {
        std::unique_lock lk(m);
        while (!cv.wait_for(lk, std::chrono::milliseconds(250), [&] { return running.load() == 0; })) {
          Progress pr;
          for (auto& s : st) pr.done += s->done.load(std::memory_order_relaxed),
                             pr.errors += s->n_errors.load(std::memory_order_relaxed);
          pr.total = unbounded ? 0 : job.n;
          pr.duration_s = job.duration_s;
          pr.elapsed_s = static_cast<double>(now_ns() - t0.load()) / 1e9;
          progress(job, pr);
        }
      });
      for (auto& t : ts) t.join();
      {
        std::lock_guard lk(m);
        running = 0;
      }
      cv.notify_all();
      mon.join();
    } else {
      for (auto& t : ts) t.join();
    }
  };

  // Warm-up: same clients, same ops, nothing recorded. The measured phase's seqs continue
  // after the warm-up's, so it works on fresh keys and rows.
  uint64_t offset = 0;
  if (job.warmup_s > 0 || warm_total > 0) {
    Phase ph;
    if (job.warmup_s > 0) ph.deadline = static_cast<int64_t>(job.warmup_s * 1e9);
    std::vector<Share> ws = split(warm_total, C, job.warmup_s > 0);
    for (int i = 0; i < C; ++i) warm.push_back(std::make_unique<ClientStats>());
    run_phase(warm, ws, ph);
    uint64_t warm_failed = 0;
    for (int i = 0; i < C; ++i) {
      offset = std::max(offset, ws[i].begin + warm[i]->done.load());
      out.warmup_ok += warm[i]->ok.count();
      warm_failed += warm[i]->n_failed;
    }
    if (warm_failed)
      out.warnings.push_back("warm-up: " + std::to_string(warm_failed) + " ops failed");
    if (stop_requested().load()) {
      out.state = JobResult::State::Interrupted;
      return;
    }
  }
  std::vector<Share> shares = split(unbounded ? 0 : job.n, C, unbounded);
  for (auto& s : shares) s.begin += offset;

  Phase ph;
  ph.measured = true;
  if (unbounded) ph.deadline = static_cast<int64_t>(job.duration_s * 1e9);
  run_phase(stats, shares, ph);
  clients.clear();  // close connections before verification reads the target

  int64_t first = INT64_MAX, last = 0;
  for (auto& s : stats) {
    out.latency->merge(s->ok);
    if (s->failed) out.latency_failed->merge(*s->failed);
    if (s->uncorrected) {
      if (!out.latency_uncorrected) out.latency_uncorrected = std::make_shared<Histogram>();
      out.latency_uncorrected->merge(*s->uncorrected);
    }
    for (int k = 0; k < kStatusCount; ++k) out.errors[k] += s->errors[k];
    out.ops_failed += s->n_failed;
    out.ops_not_run += s->not_run;
    out.bytes += s->bytes;
    if (s->first_start != INT64_MAX) first = std::min(first, s->first_start);
    last = std::max(last, s->last_end);
    if (s->per_second.size() > out.per_second.size()) out.per_second.resize(s->per_second.size(), 0);
    for (size_t k = 0; k < s->per_second.size(); ++k) out.per_second[k] += s->per_second[k];
    for (auto& m : s->samples)
      if (out.error_samples.size() < kMaxSamples &&
          std::find(out.error_samples.begin(), out.error_samples.end(), m) == out.error_samples.end())
        out.error_samples.push_back(m);
  }
  for (size_t k = 0; k < side_names.size(); ++k) {
    SideResult side{side_names[k], 0, 0, std::make_shared<Histogram>()};
    for (auto& s : stats) side.latency->merge(s->sides[k]), side.bytes += s->side_bytes[k];
    side.ops_ok = side.latency->count();
    out.sides.push_back(std::move(side));
  }
  out.ops_ok = out.latency->count();
  out.elapsed_s = first != INT64_MAX && last > first ? static_cast<double>(last - first) / 1e9 : 0;
  out.rps = out.elapsed_s > 0 ? static_cast<double>(out.ops_ok) / out.elapsed_s : 0;
  if (stop_requested().load()) out.state = JobResult::State::Interrupted;
}

}  // namespace mw
