#include "driver.h"

#include <sys/epoll.h>
#include <time.h>

#include <algorithm>
#include <barrier>
#include <chrono>
#include <cmath>
#include <cstring>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <thread>

namespace mw {

std::atomic<bool>& stop_requested() {
  static std::atomic<bool> flag{false};
  return flag;
}

std::atomic<int>& stop_signal() {
  static std::atomic<int> sig{0};
  return sig;
}

void throw_if_stopped(const std::string& what) {
  if (stop_requested().load(std::memory_order_relaxed)) throw Interrupted("interrupted during " + what);
}

namespace {

inline int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
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
  SeriesRecorder series;                 // per --interval: ok, failed, compact latency histogram
  std::vector<std::string> samples;
  std::vector<Histogram> sides;          // per side, when the adapter has sides
  std::vector<uint64_t> side_bytes;
  struct OpStats {
    Histogram ok;
    uint64_t failed = 0, misses = 0;
  };
  std::array<std::unique_ptr<OpStats>, kKvOpCount> per_op;  // a workload's ops, those of its mix
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
  // An exception from the client's code: the op it was doing failed with the reason; the caller
  // stops the client (its remaining ops are not run).
  void threw(std::string_view why, int64_t latency) {
    std::string detail = "client threw an exception: " + std::string(why);
    record({Status::Error, 0, detail}, latency);
  }
  // A workload request: per-op figures too. A miss (NotFound on a key that may be absent) is a
  // completed op, counted apart; on a key that must exist it is lost data, a failure.
  // A success goes to its op's histogram alone (one record per op on the hot path); merge()
  // folds them into the job's.
  void record(KvOp kind, bool must_exist, OpResult& r, int64_t latency) {
    auto& op = per_op[static_cast<int>(kind)];
    bool miss = r.status == Status::NotFound && !must_exist;
    if (miss) r.status = Status::Ok;
    if (op && r.status == Status::Ok) {
      op->ok.record(latency);
      op->misses += miss;
      bytes += r.bytes;
      return;
    }
    if (op) ++op->failed;
    record(r, latency);
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
  // A completed op at `rel` (since the phase start) into the per-second and interval series.
  [[gnu::always_inline]] void mark(int64_t rel, int64_t latency, bool ok) {
    if (ok) tick(rel);
    series.add(rel, latency, ok);
  }
};

// What one client is asked to do in one phase.
struct Share {
  uint64_t begin = 0, count = 0;  // seqs [begin, begin+count); count UINT64_MAX: until deadline
};

// Where a workload client's requests come from: the mix, or the load phase (key = seq).
struct Source {
  RequestGen* gen = nullptr;  // null: native ops, the adapter is handed the seq alone
  bool load = false;
  [[gnu::always_inline]] Request make(uint64_t seq) const { return load ? gen->load(seq, seq) : gen->next(seq); }
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
      const int64_t base = t0;
      for (uint64_t k = 0; seq < end && !stop.load(std::memory_order_relaxed); ++k) {
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
        st.mark(t1 - ph.t0, t1 - intended, r.status == Status::Ok);
        st.done.store(seq - share.begin, std::memory_order_relaxed);
        t0 = t1;
        if (r.status != Status::Ok && !c.alive()) break;
      }
    } else {
      while (seq < end && !stop.load(std::memory_order_relaxed)) {
        Request q;
        OpResult r = src.gen ? c.run_request(q = src.make(seq++)) : c.run(seq++);
        int64_t t1 = now_ns();
        if (src.gen) st.record(q.op, q.must_exist, r, t1 - t0);
        else st.record(r, t1 - t0);
        st.mark(t1 - ph.t0, t1 - t0, r.status == Status::Ok);
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

void run_loop(std::vector<LoopClient>& cs, const Phase& ph, int pipeline) {
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
      lc.st->last_end = t;
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

// The figures of a phase: per-client stats merged by adding counts.
void merge(const std::vector<std::unique_ptr<ClientStats>>& stats, const std::vector<std::string>& side_names,
           JobResult& out) {
  if (!out.latency) out.latency = std::make_shared<Histogram>();
  if (!out.latency_failed) out.latency_failed = std::make_shared<Histogram>();
  int64_t first = INT64_MAX, last = 0;
  for (auto& s : stats) {
    for (auto& p : s->per_op)
      if (p) s->ok.merge(p->ok);
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
  for (int k = 0; k < kKvOpCount; ++k) {
    OpFigures f;
    f.op = std::string(kv_op_name(static_cast<KvOp>(k)));
    for (auto& s : stats) {
      auto& p = s->per_op[k];
      if (!p) continue;
      if (!f.latency) f.latency = std::make_shared<Histogram>();
      f.latency->merge(p->ok), f.ops_failed += p->failed, f.misses += p->misses;
    }
    if (!f.latency) continue;
    f.ops_ok = f.latency->count();
    out.misses += f.misses;
    out.per_op.push_back(std::move(f));
  }
  out.ops_ok = out.latency->count();
  out.elapsed_s = first != INT64_MAX && last > first ? static_cast<double>(last - first) / 1e9 : 0;
  out.rps = out.elapsed_s > 0 ? static_cast<double>(out.ops_ok) / out.elapsed_s : 0;
}

}  // namespace

void measure(const Job& job, Adapter& adapter, JobResult& out, const ProgressFn& progress, const Workload* wl) {
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
    for (int k = 0; wl && k < kKvOpCount; ++k)
      if (wl->mix.has(static_cast<KvOp>(k))) stats.back()->per_op[k] = std::make_unique<ClientStats::OpStats>();
  }
  std::vector<RequestGen> gens;  // a workload's request streams, one per client
  for (int i = 0; wl && i < C; ++i) gens.emplace_back(*wl, i, C);

  auto run_phase = [&](std::vector<std::unique_ptr<ClientStats>>& st, std::vector<Share> shares,
                       Phase ph, bool load = false) {
    auto source = [&](int i) { return Source{gens.empty() ? nullptr : &gens[i], load}; };
    ph.timeout_s = job.timeout_s;
    ph.rate_per_client = job.rate > 0 ? job.rate / C : 0;
    std::vector<std::thread> ts;
    std::barrier sync(threads + 1);
    std::atomic<int64_t> t0{0};
    for (int th = 0; th < threads; ++th) {
      ts.emplace_back([&, th] {
        sync.arrive_and_wait();
        // No exception leaves a worker thread: the clients' own code is guarded where it is
        // called; this is the last resort for the driver's (an allocation that fails).
        try {
          Phase p = ph;
          p.t0 = t0.load();
          if (p.deadline != INT64_MAX) p.deadline += p.t0;
          if (!pollable) {
            run_blocking(*clients[th], *st[th], shares[th], p, source(th));
            return;
          }
          std::vector<LoopClient> mine;
          for (int i = th; i < C; i += threads) {
            mine.push_back({clients[i].get(), st[i].get(), shares[i].begin, shares[i].begin,
                            shares[i].count == UINT64_MAX ? UINT64_MAX : shares[i].begin + shares[i].count});
            mine.back().src = source(i);
          }
          run_loop(mine, p, P);
        } catch (const std::exception& e) {
          for (int i = th; i < C; i += threads) st[i]->threw(std::string("driver: ") + e.what(), 0);
        } catch (...) {
          for (int i = th; i < C; i += threads) st[i]->threw("driver: unknown exception", 0);
        }
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
          try {
            progress(job, pr);
          } catch (...) {  // a progress line is not worth a run
          }
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

  // Load: every key of the workload's key space written once (untimed for the job; its own
  // figures, a row of its own), so that reads hit.
  if (wl && wl->load) {
    std::vector<std::unique_ptr<ClientStats>> ld;
    for (int i = 0; i < C; ++i) ld.push_back(std::make_unique<ClientStats>());
    out.load = std::make_shared<JobResult>();
    JobResult& l = *out.load;
    l.job = job;
    l.job.op = "load";
    l.job.name = job.name + " load";
    l.job.n = wl->keys.spec().keyspace;
    l.job.duration_s = 0;
    run_phase(ld, split(wl->keys.spec().keyspace, C, false), Phase{}, true);
    merge(ld, {}, l);
    if (l.ops_failed || l.ops_not_run)
      out.warnings.push_back("load: " + std::to_string(l.ops_failed) + " of " + std::to_string(l.job.n) +
                             " keys failed, " + std::to_string(l.ops_not_run) + " not written");
    if (stop_requested().load()) {
      l.state = out.state = JobResult::State::Interrupted;
      return;
    }
  }

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
  SeriesSink series;
  for (auto& s : stats) s->series.start(static_cast<int64_t>(job.interval_s * 1e9), &series);
  out.started_epoch_s = std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
  run_phase(stats, shares, ph);
  clients.clear();  // close connections before verification reads the target

  merge(stats, side_names, out);
  for (auto& s : stats) s->series.finish();
  out.series = series.take();
  out.series_interval_s = job.interval_s;
  if (std::string w = settle_warning(out.series, job.interval_s, out.elapsed_s); !w.empty()) out.warnings.push_back(w);
  if (stop_requested().load()) out.state = JobResult::State::Interrupted;
}

}  // namespace mw
