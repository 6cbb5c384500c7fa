// The driver's inner loops: how the ops of one client are run and timed (a blocking client on
// a thread of its own; pollable clients in one event loop per thread), and what one client
// measures. Internal to the driver (driver.cpp); adapters never see it.
#pragma once
#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "api/adapter.h"
#include "core/renewal.h"
#include "durability/durability.h"
#include "util/clock.h"
#include "util/histogram.h"
#include "util/series.h"
#include "util/status.h"
#include "workload/rate_shape.h"
#include "workload/trace.h"
#include "workload/workload.h"

namespace mw::loops {

using ::mw::now_ns;

constexpr int64_t kSecond = 1000000000;
constexpr int64_t kStallMin = 1'000'000;  // an event loop away this long beyond its wait stalled (ClientStats)
constexpr size_t kMaxSamples = 5;

// An op that was sent: its seq, when it started, when it was due (open loop; the closed loop's
// start), and a workload request's op and whether its key must exist.
struct Flight {
  uint64_t seq;
  int64_t start;
  int64_t intended;
  KvOp op = KvOp::Read;
  bool must_exist = false;
};

// Everything one client measures; written only by the thread that runs the client.
struct ClientStats {
  Histogram ok;
  std::unique_ptr<Histogram> failed;
  std::unique_ptr<Histogram> uncorrected;
  // Open loop: how late each request was sent after it was due and its client had a free slot
  // (the generator's own lag, not the server's: a full window waiting for replies is not lag).
  std::unique_ptr<Histogram> lag;
  // Open loop on an event loop: how long the loop ran and how much of it it slept waiting for a
  // reply or a send's time (on the stats of the loop's first client). A loop that never slept was
  // behind its schedule however its window hid it: replies that came while it was sending wait
  // for it, so the slot they free looks freed only when it reaps them.
  int64_t loop_ns = 0, loop_idle_ns = 0;
  // An event loop's polls that ran in the phase (Phase::spin_ns; on the stats of its first client):
  // a poll asked for may not run (--poll auto under CPU pressure, or backing off).
  uint64_t polls = 0;
  // Open loop on an event loop: its stalls (on the stats of the loop's first client). A stall is
  // a time the loop was away from its clients beyond the wait it asked for (at most 1 ms in an
  // open loop): descheduled while a CPU was busy elsewhere, inside a client's call that blocked,
  // or started late after the phase's common start. Only those of kStallMin or more count:
  // `stall_ns` their sum, `stall_max_ns` the longest. Replies that came on time while it was
  // away are read late, and the slots they free look freed only then, so the send lag does not
  // see such a stall; the latency and the achieved rate do. `cpu_wait_ns`: the loop thread's
  // wait for a CPU over the phase (the kernel's run-queue delay, /proc/thread-self/schedstat;
  // -1 when unreadable), which says how much of it was the machine's load.
  int64_t stall_ns = 0, stall_max_ns = 0, cpu_wait_ns = -1;
  uint64_t bytes = 0, not_run = 0;
  // Open loop by --duration: the ops due before the deadline that the client had not sent by it
  // (it fell behind its schedule: each op waited for the one before, or its window was full). The
  // phase stops on the clock; these are counted, not run late. 0 when it stopped for another
  // reason (a stop, a crash's halt, its connection lost).
  uint64_t not_sent = 0;
  int64_t first_start = INT64_MAX, last_end = 0;
  // Open loop: when the op after its last one sent would have been due (the end of the time it
  // was offered ops in). A phase lasts at least that long: at a rate whose gap is a large share
  // of the phase, its last reply comes long before the phase's end, and the time up to the last
  // reply alone would count only the ops it sent (10 ops at 20/s "took" 0.45 s: 22/s).
  int64_t offered_end = 0;
  SeriesRecorder series;  // per second: ok; per --interval: ok, failed, latency
  std::vector<std::string> samples;
  // --reconnect-every: each open of a new connection in the phase (not its ops' latency), and the
  // time spent waiting for --connect-rate's turn before them.
  // Over TLS, the opens whose handshake was full and those that resumed a session, apart.
  std::unique_ptr<Histogram> connect, connect_full, connect_resumed;
  int64_t connect_wait_ns = 0;
  void renewed(const Renewal::Took& t) {
    connect_wait_ns += t.wait_ns;
    if (!t.renewed) return;
    if (!connect) connect = std::make_unique<Histogram>();
    connect->record(t.connect_ns);
    if (t.handshake == Handshake::None) return;
    auto& h = t.handshake == Handshake::Resumed ? connect_resumed : connect_full;
    if (!h) h = std::make_unique<Histogram>();
    h->record(t.connect_ns);
  }
  std::vector<Histogram> sides;  // per side, when the adapter has sides
  std::vector<uint64_t> side_bytes;
  struct OpStats {
    Histogram ok;
    uint64_t failed = 0, misses = 0;
    uint64_t not_stored = 0;  // writes that stored nothing (their condition failed, or no key to update)
  };
  std::array<std::unique_ptr<OpStats>, kKvOpCount> per_op;  // a workload's ops, those of its mix
  // A crash job (--crash kill): the successful ops and when, to check after the restart; a
  // workload's misses apart (a write that found no key to change wrote nothing: record_other's
  // `last_miss` until finish() books it). A fault job (--fault) keeps them too, and its failed ops
  // (marks: when each was due and ended, and how it failed; record_failure, out of the hot path),
  // for the faults' figures.
  bool log_acked = false;
  bool log_marks = false;
  std::vector<Ack> acked;
  std::vector<uint64_t> missed;
  bool last_miss = false;
  struct Mark {
    int64_t start, end;
    Status status;
  };
  std::vector<Mark> marks;
  // Read while the phase runs (progress lines, --metrics-listen) and after it: written only by the
  // client's own thread (count() below: a load and a store, never a locked add), on a line of their
  // own. The failed ops by status are the one count of them: the job's errors[], its ops_failed
  // (their sum, n_failed) and the live endpoint's errors all read these.
  alignas(64) std::atomic<uint64_t> done{0};
  std::atomic<uint64_t> n_failed{0};
  // A fault job (log_acked): when the op of its last success was sent (now_ns), read by the fault's
  // thread to see the server answer again: an op sent after the fault succeeded, never a count that
  // moved (nor a reply to one sent before it, read after it).
  std::atomic<int64_t> last_ack_sent_ns{0};
  std::array<std::atomic<uint64_t>, kStatusCount> errors{};
  static void count(std::atomic<uint64_t>& c) {
    c.store(c.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
  }

  // A success is inlined on the hot path (one histogram record); the rest is out of line.
  [[gnu::always_inline]] void record(const OpResult& r, int64_t latency) {
    if (r.status == Status::Ok) [[likely]] {
      ok.record(latency);
      bytes += r.bytes;
      if (!sides.empty()) [[unlikely]]
        record_side(r, latency);
    } else {
      record_failure(r, latency);
    }
  }
  [[gnu::noinline]] void record_side(const OpResult& r, int64_t latency);
  [[gnu::noinline]] void record_failure(const OpResult& r, int64_t latency);
  // An exception from the client's code: the op it was doing failed with the reason; the caller
  // stops the client (its remaining ops are not run).
  void threw(std::string_view why, int64_t latency) {
    std::string detail = "client threw an exception: " + std::string(why);
    record({Status::Error, 0, detail}, latency);
  }
  // A workload request: per-op figures too. A miss (NotFound on a key that may be absent) is a
  // completed op, counted apart; on a key that must exist it is lost data, a failure. NotFound on
  // an update is a write that stored nothing (a trace's add of a key there, its replace of a key
  // not there, an UPDATE that found no row): "not stored", counted apart as well.
  // A success goes to its op's histogram alone (one record per op on the hot path); merge()
  // folds them into the job's. A miss, a failure, or an op without figures of its own (the load)
  // out of line.
  [[gnu::always_inline]] void record(KvOp kind, bool must_exist, OpResult& r, int64_t latency) {
    OpStats* op = per_op[static_cast<int>(kind)].get();
    if (r.status == Status::Ok && op) [[likely]] {
      op->ok.record(latency);
      bytes += r.bytes;
      return;
    }
    record_other(kind, op, must_exist, r, latency);
  }
  [[gnu::noinline]] void record_other(KvOp kind, OpStats* op, bool must_exist, OpResult& r, int64_t latency);
  // A completed op at `rel` (since the phase start) into the per-second and interval series.
  [[gnu::always_inline]] void mark(int64_t rel, int64_t latency, bool good) { series.add(rel, latency, good); }
  // A finished op, booked alike by every loop: its figures (per op for a workload request), the
  // series, the latency without the open loop's wait (uncorrected) and a crash job's acked seq.
  // `t`: when it ended; `t0`: the phase's start. kOpen false: a closed loop, no uncorrected figure.
  template <bool kOpen = true>
  [[gnu::always_inline]] void finish(const Flight& f, bool workload, OpResult& r, int64_t t, int64_t t0) {
    const int64_t latency = t - f.intended;
    if (workload)
      record(f.op, f.must_exist, r, latency);
    else
      record(r, latency);
    const bool good = r.status == Status::Ok;
    mark(t - t0, latency, good);
    if (kOpen && good && uncorrected) uncorrected->record(t - f.start);
    if (good && log_acked) [[unlikely]] {
      last_ack_sent_ns.store(f.start, std::memory_order_relaxed);
      if (last_miss)
        missed.push_back(f.seq);
      else
        acked.push_back({f.seq, t, f.start});
      last_miss = false;
    }
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
  TraceFeed* feed = nullptr;  // a trace's replay (--trace): its requests in place of gen's
  [[gnu::always_inline]] Request make(uint64_t seq) const {
    if (feed) [[unlikely]]
      return feed->request(seq);
    return load ? gen->load(seq, seq) : gen->next(seq);
  }
  // The same where the caller knows which (the blocking loop: one instantiation each, no test per op).
  template <bool kLoad>
  [[gnu::always_inline]] Request make(uint64_t seq) const {
    if constexpr (kLoad)
      return gen->load(seq, seq);
    else if (feed) [[unlikely]]
      return feed->request(seq);
    else
      return gen->next(seq);
  }
};

struct Phase {
  bool measured = false;
  int64_t t0 = 0;                // common start of the phase
  int64_t deadline = INT64_MAX;  // duration runs
  double rate_per_client = 0;    // open loop
  double first_offset = 0;       // open loop: the first send this fraction of a gap late (MPI rank/K)
  // Open loop at a shaped rate or with Poisson arrivals: each client's sends follow a Schedule of
  // `share` of the shape's rate (rate_per_client then its mean). Null: evenly spaced at the rate.
  const RateShape* shape = nullptr;
  Arrivals arrivals = Arrivals::Uniform;
  double share = 1;
  Schedule schedule(uint64_t client_seed) const { return Schedule(shape, share, arrivals, client_seed); }
  // A trace's replay: each client's sends are due when its TraceFeed says (Source::feed); a due
  // time below 0 (--speed max) is as soon as the client is free.
  bool trace = false;
  double timeout_s = 5;
  // Closed loop (--poll, job.h): an event loop with nothing to read polls up to this long before
  // it sleeps. A client asleep in epoll_wait costs the server a wake-up (an IPI and a context
  // switch, charged to the server's core) for every answer; on 2 cores that made nginx serve
  // mwbench 15% slower than the busier wrk. But a poll that comes up empty burns the window on
  // a core the server may need (P=16: replies come in batches), and one that spins while a task
  // waits for a CPU (CpuPressure) delays the very answer it waits for. 0: sleep at once.
  int64_t spin_ns = 0;
  // Poll only while it pays (--poll auto): after a poll that came up empty, the next waits sleep
  // at once, twice as many after each further empty poll (up to kPollBackoffMax); a poll that
  // finds a reply polls again next time.
  bool spin_adaptive = false;
  // A crash job: set once the server is killed; no new op starts after it.
  const std::atomic<bool>* halt = nullptr;
  bool halted() const { return halt && halt->load(std::memory_order_relaxed); }
  // --reconnect-every: each client opens a new connection before its first op of the phase and
  // after every `every` ops (Renewal); null: the clients keep theirs (the load phase).
  const Renewal* renewal = nullptr;
};

// --poll auto (Phase::spin_adaptive): whether an event loop's next wait polls, from how its last
// polls did. An empty poll skips the next 1, 3, 7 ... waits (up to kPollBackoffMax); a poll that
// found a reply resets the back-off. Not adaptive: every wait polls.
constexpr uint32_t kPollBackoffMax = 64;
// --poll auto polls only on an event loop that keeps at most this many requests in flight (its
// clients times -P). A deeper loop leaves the server a backlog to answer from while the loop
// sleeps, so a wake-up's delay holds up no reply and the poll only burns user CPU (Redis SET at
// -c 50 -P 16, 800 in flight on one loop, ran as fast without the poll at half the client's user
// CPU: docs/measurements/poll.md).
constexpr int64_t kPollDepthMax = 64;
struct Poller {
  bool adaptive = false;
  uint32_t skip = 0;     // waits left that sleep at once
  uint32_t backoff = 0;  // how many the next empty poll skips
  uint64_t polls = 0, empty = 0;
  bool wants() {
    if (!adaptive || skip == 0) return true;
    --skip;
    return false;
  }
  void found(bool reply) {
    ++polls;
    if (reply) {
      backoff = 0;
      return;
    }
    ++empty;
    backoff = std::min<uint32_t>(backoff * 2 + 1, kPollBackoffMax);
    skip = adaptive ? backoff : 0;
  }
};

// One client's work in one phase.
struct Assignment {
  std::unique_ptr<Client>* client;  // renewed in place (Phase::renewal)
  int index;                        // the client's number among the job's (Renewal::open)
  ClientStats* stats;
  Share share;
  Source src;
};

// Whether tasks of this machine wait for a CPU: the kernel's CPU pressure ("some" stall time,
// /proc/pressure/cpu) over the last look, or its 10 s average before the first. The event loop
// polls before sleeping (Phase::spin_ns) only while none wait: a poll that spins on a core another
// task is waiting for (the server under test, on the same machine) delays the very answer it
// waits for (postgres point lookups at c=1 on a loaded 2-core machine: docs/measurements/peers.md,
// PostgreSQL against pgbench). Without PSI
// (kernels before 4.20, or off), never contended.
class CpuPressure {
 public:
  CpuPressure();
  bool contended() const { return contended_; }
  // A look (every ~50 ms): contended when some task waited for a CPU more than 5% of the time
  // since the last one.
  void look(int64_t t);

 private:
  static double read(uint64_t* total);  // avg10 (percent), -1 when unreadable; the total (us)
  bool contended_ = false;
  uint64_t last_total_ = 0;
  int64_t last_t_ = 0;
};

// Closed loop or open loop (--rate) on one blocking client, on the calling thread.
// `c` is renewed in place (Phase::renewal), client `index` of the job's.
void run_blocking(std::unique_ptr<Client>& c, int index, ClientStats& st, Share share, const Phase& ph, Source src);
// Pollable clients, one event loop on the calling thread: a sliding window of `pipeline`
// requests per client, each timed from its own submit to its reap.
void run_loop(const std::vector<Assignment>& mine, const Phase& ph, int pipeline);

}  // namespace mw::loops
