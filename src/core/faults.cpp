#include "core/faults.h"

#include <algorithm>
#include <chrono>
#include <numeric>
#include <unordered_map>

#include "api/stop.h"
#include "durability/durability.h"
#include "queue/queue.h"
#include "services/proxy.h"
#include "util/clock.h"
#include "util/series.h"

namespace mw {

namespace {

using Mark = loops::ClientStats::Mark;
constexpr int64_t kStretch = 500'000'000;  // back at 90%: a stretch this long at that rate
constexpr int64_t kStep = 100'000'000;     // looked for in steps of this

// Whether a client's op sent after `t` (now_ns) succeeded, as finish() counts the server back (a
// reply to an op sent before the fault, read after it, says nothing of the server after it).
bool answered_after(const std::vector<const loops::ClientStats*>& stats, int64_t t) {
  for (const loops::ClientStats* s : stats)
    if (s->last_ack_sent_ns.load(std::memory_order_relaxed) > t) return true;
  return false;
}

double secs(int64_t ns) { return static_cast<double>(ns) / 1e9; }

}  // namespace

FaultPlan::FaultPlan(const Job& job, const Abilities& abilities, bool expires) : job_(job), expires_(expires) {
  if (job_.faults.empty()) return;
  crash_ = abilities.crash;
  replication_ = crash_ ? crash_->replication() : nullptr;
  cluster_ = abilities.cluster;
  replicated_ = abilities.contract && abilities.contract->kind == ContractKind::Replicated;
  queue_ = abilities.queue != nullptr;  // its ledger counts the messages (queue_across)
  proxy_ = routed_proxy();              // the runner's, for slow and cut (core/runner.cpp)
  for (const FaultSpec& f : job_.faults) {
    const bool signal = f.kind == FaultKind::Kill || f.kind == FaultKind::Restart || f.kind == FaultKind::Stop;
    const bool can = f.kind == FaultKind::KillPrimary || f.kind == FaultKind::Switchover ? replication_ != nullptr
                     : f.kind == FaultKind::KillNode                                     ? cluster_ != nullptr
                     : signal                                                            ? crash_ != nullptr
                              : through_proxy(f.kind) && proxy_ && proxy_->routes() > 0;
    if (!can)
      throw SetupError("--fault " + f.text + ": " + job.adapter + " " + job.op + " cannot do " +
                       fault_kind_name(f.kind) + " in this set-up");
  }
  std::stable_sort(job_.faults.begin(), job_.faults.end(), [&](const FaultSpec& a, const FaultSpec& b) {
    return a.at_s(job_.duration_s) < b.at_s(job_.duration_s);
  });
  done_.resize(job_.faults.size());
}

FaultPlan::~FaultPlan() {
  quit_ = true;
  if (thread_.joinable()) thread_.join();
  heal();
}

void FaultPlan::heal() {
  if (!proxy_) return;
  proxy_->slow(0);
  proxy_->cut(false);
}

std::string FaultPlan::victim() const {
  return crash_ ? crash_->victim() : cluster_ ? cluster_->victim() : "the server (through mwbench's proxy)";
}

void FaultPlan::arm(std::vector<const loops::ClientStats*> stats, const std::atomic<int64_t>* started) {
  if (!active()) return;
  thread_ = std::thread([this, stats = std::move(stats), started] { run(stats, started); });
}

bool FaultPlan::sleep_until(int64_t t) {
  for (;;) {
    if (quit_.load() || stop_requested().load()) return false;
    const int64_t left = t - now_ns();
    if (left <= 0) return true;
    std::this_thread::sleep_for(std::chrono::nanoseconds(std::min<int64_t>(left, 5'000'000)));
  }
}

void FaultPlan::run(const std::vector<const loops::ClientStats*>& stats, const std::atomic<int64_t>* started) {
  while (started->load() == 0)
    if (!sleep_until(now_ns() + 1'000'000)) return;
  const int64_t t0 = started->load();
  const auto timeout = static_cast<int64_t>(job_.timeout_s * 1e9);
  for (size_t i = 0; i < job_.faults.size(); ++i) {
    const FaultSpec& f = job_.faults[i];
    if (!sleep_until(t0 + static_cast<int64_t>(f.at_s(job_.duration_s) * 1e9))) return;
    Done& d = done_[i];
    d.at = now_ns();
    try {
      switch (f.kind) {
        case FaultKind::Kill:
          crash_->kill();
          down_ = true;
          break;
        case FaultKind::Restart:
          crash_->kill();
          down_ = true;
          if (f.for_s > 0 && !sleep_until(now_ns() + static_cast<int64_t>(f.for_s * 1e9))) {
            d.end = now_ns();
            return;  // the phase ended while it was down: restarted for the read-back
          }
          crash_->restart();
          down_ = false;
          break;
        case FaultKind::KillPrimary:  // a replica takes over (or none does: the window says)
          replication_->kill_primary();
          break;
        case FaultKind::Switchover:  // the same, asked of the set-up's manager, the primary alive
          replication_->switchover();
          break;
        case FaultKind::KillNode:  // the cluster elects another leader (or cannot: the window says)
          d.node = cluster_->kill_node();
          break;
        case FaultKind::Stop:
          if (!crash_->pause(true)) throw SetupError(crash_->victim() + " could not be stopped (SIGSTOP)");
          // In effect once every process has its signal: PostgreSQL's postmaster, then its backends
          // one at a time, which a loaded machine spreads out while the others still answer.
          d.at = now_ns();
          sleep_until(now_ns() + static_cast<int64_t>(f.for_s * 1e9));
          crash_->pause(false);
          break;
        case FaultKind::Slow:  // every chunk relayed meanwhile held DELAY, each way
          proxy_->slow(static_cast<int64_t>(f.delay_s * 1e9));
          sleep_until(now_ns() + static_cast<int64_t>(f.for_s * 1e9));
          proxy_->slow(0);
          break;
        case FaultKind::Cut: {  // every connection reset, connects refused, for FOR
          const std::string why = proxy_->cut(true);
          sleep_until(now_ns() + static_cast<int64_t>(f.for_s * 1e9));
          const std::string back = proxy_->cut(false);
          if (!why.empty() || !back.empty()) throw SetupError("proxy: " + why + (why.empty() ? "" : "; ") + back);
          break;
        }
        default: break;  // refused by the constructor
      }
    } catch (const std::exception& e) {
      d.error = e.what();
    }
    d.end = now_ns();
    // The first success after it; none within --timeout ends the phase with what was measured.
    // (Not a count of successes that moved: an op that ended before the fault's end may be
    // counted after it, and a failure moves the done and failed counts one at a time.)
    while (!answered_after(stats, d.end)) {
      if (now_ns() - d.end >= timeout) {
        if (d.error.empty())
          d.error = victim() + " did not answer again within --timeout (" + std::to_string(job_.timeout_s) +
                    " s): the run ended there";
        halt_ = true;
        return;
      }
      if (!sleep_until(now_ns() + 2'000'000)) return;
    }
    if (f.kind == FaultKind::KillPrimary || f.kind == FaultKind::Switchover) d.promoted = replication_->primary();
    if (f.kind == FaultKind::KillNode) d.promoted = cluster_->leader();
  }
}

namespace {

// The measured phase's record as the faults' figures read it: the failures (marks), when each
// success ended (in order), and the job's series of intervals.
class Record {
 public:
  // `straddles`: a success left out (see FaultPlan::finish).
  template <class Straddles>
  Record(const std::vector<const loops::ClientStats*>& stats, const Straddles& straddles, int64_t t0, int64_t end,
         const std::vector<SeriesInterval>& series, double interval_s)
      : t0_(t0), end_(end), series_(series), interval_s_(interval_s) {
    for (const loops::ClientStats* s : stats) {
      marks_.insert(marks_.end(), s->marks.begin(), s->marks.end());
      for (const Ack& a : s->acked)
        if (!straddles(a)) ok_.push_back(a.at_ns);
    }
    std::sort(ok_.begin(), ok_.end());
  }

  // The figures of the fault injected at `fs` whose action ended at `fe`; `since`: the start of
  // the stretch before it; `before`: the last fault's (null: none). Returns its window's end.
  int64_t figures(FaultResult& r, FaultKind kind, int64_t fs, int64_t fe, int64_t since,
                  const FaultResult* before) const {
    r.at_s = secs(fs - t0_), r.done_s = secs(fe - t0_);
    const auto [ws, we] = window(r, fs, fe);
    r.window_start_s = secs(ws - t0_), r.window_end_s = secs(we - t0_);
    for (const Mark& m : marks_) {
      if (m.end >= ws && m.end <= we) ++r.failed[std::string(status_name(m.status))];
      if (m.start < fs && m.end >= fs) ++r.in_doubt;
    }
    // Too short a stretch since the last fault's window (faults close together): that one's rate.
    if (fs - since >= kStretch || !before)
      r.rate_before = fs > since ? static_cast<double>(successes(since, fs)) / secs(fs - since) : 0;
    else
      r.rate_before = before->rate_before;
    const int64_t back_at = back_at_90(r, fs, we);
    r.p99_before_ns = fs - since >= kStretch || !before ? p99(since, fs) : before->p99_before_ns;
    // A slow leaves the service up: its "during" is the time it lasted, not until the rate is back
    // (on a loaded machine that may be never, and the fast ops after it would bury the slow ones).
    const int64_t during_end = kind == FaultKind::Slow ? fe : back_at;
    r.p99_during_ns = p99(fs, during_end), r.p99_after_ns = p99(during_end, end_ + 1);
    r.ops_after = successes(we + 1, end_ + 1);
    return we;
  }

 private:
  // Successes ending in [from, to).
  uint64_t successes(int64_t from, int64_t to) const {
    return static_cast<uint64_t>(std::lower_bound(ok_.begin(), ok_.end(), to) -
                                 std::lower_bound(ok_.begin(), ok_.end(), from));
  }

  // The p99 of the series' intervals whose middle falls in [from, to): an interval's figures are
  // what the per-op record keeps (the hot path logs no latency of its own for faults).
  double p99(int64_t from, int64_t to) const {
    SeriesInterval all;
    const auto iv = static_cast<int64_t>(interval_s_ * 1e9);
    for (size_t k = 0; iv > 0 && k < series_.size(); ++k) {
      const int64_t mid = t0_ + static_cast<int64_t>(k) * iv + iv / 2;
      if (mid >= from && mid < to) all.merge(series_[k]);
    }
    return all.ok ? static_cast<double>(all.percentile(99)) : 0.0;
  }

  // The longest gap between successes that spans a moment of the fault: its start and end (and
  // r.back: a success ended it).
  std::pair<int64_t, int64_t> window(FaultResult& r, int64_t fs, int64_t fe) const {
    const auto lo = std::lower_bound(ok_.begin(), ok_.end(), fs) - ok_.begin() - 1;  // last success before it
    const auto hi = std::upper_bound(ok_.begin(), ok_.end(), fe) - ok_.begin() - 1;  // last by its action's end
    int64_t ws = fs, we = fs, gap = -1;
    for (auto k = lo; k <= hi; ++k) {
      const int64_t a = k < 0 ? t0_ : ok_[static_cast<size_t>(k)];
      const bool last = k + 1 >= static_cast<decltype(k)>(ok_.size());
      const int64_t b = last ? end_ : ok_[static_cast<size_t>(k + 1)];
      if (b - a > gap) gap = b - a, ws = a, we = b, r.back = !last;
    }
    return {ws, we};
  }

  // When the rate was back at 90% of the rate before the fault (r.back_90_s), after the window
  // ending at `we`; the phase's end when never.
  int64_t back_at_90(FaultResult& r, int64_t fs, int64_t we) const {
    if (r.back && r.rate_before > 0)
      for (int64_t b = we; b + kStretch <= end_; b += kStep)
        if (static_cast<double>(successes(b, b + kStretch)) >= 0.9 * r.rate_before * secs(kStretch)) {
          r.back_90_s = secs(b - fs);
          return b;
        }
    return end_;
  }

  const int64_t t0_, end_;
  const std::vector<SeriesInterval>& series_;
  const double interval_s_;
  std::vector<Mark> marks_;  // the failures
  std::vector<int64_t> ok_;  // when each success ended, in order
};

}  // namespace

std::vector<FaultResult> FaultPlan::finish(const std::vector<const loops::ClientStats*>& stats, int64_t t0, int64_t end,
                                           const std::vector<SeriesInterval>& series, double interval_s) {
  quit_ = true;
  if (thread_.joinable()) thread_.join();
  heal();  // a slow or cut the phase's end cut short: the read-back goes through the proxy too
  // A success of an op sent before a fault's start or its action's end and answered after it (its
  // reply was on its way while the server was killed) is not the service up across the fault: left
  // out, or the window would end at it.
  auto straddles = [&](const Ack& a) {
    for (const Done& d : done_)
      if (d.at != 0 && ((a.sent_ns < d.at && a.at_ns >= d.at) || (a.sent_ns < d.end && a.at_ns >= d.end))) return true;
    return false;
  };
  const Record record(stats, straddles, t0, end, series, interval_s);
  std::vector<FaultResult> out;
  int64_t since = t0;  // the stretch before this fault: since the phase's start or the last fault's recovery
  for (size_t i = 0; i < job_.faults.size(); ++i) {
    const FaultSpec& f = job_.faults[i];
    const Done& d = done_[i];
    FaultResult r;
    r.fault = f.text;
    r.kind = fault_kind_name(f.kind);
    r.delay_s = f.delay_s;
    r.error = d.error;
    r.promoted = d.promoted;
    r.node = d.node;
    if (d.at == 0) {  // the phase ended first (a stop, or the server not back after an earlier fault)
      if (r.error.empty()) r.error = "not injected: the run ended before it";
      out.push_back(std::move(r));
      continue;
    }
    const int64_t we =
        record.figures(r, f.kind, d.at, std::max(d.end, d.at), since, out.empty() ? nullptr : &out.back());
    since = std::max(since, we);
    out.push_back(std::move(r));
  }
  lost_writes(out, stats);
  return out;
}

// A keyed store's writes (KeyedReadBack): what their keys hold, told apart by the versions the
// values carry and the order of acknowledgements (durability.h's resolve_keyed), in acked's order.
std::vector<WriteState> FaultPlan::keyed_states(KeyedReadBack& keyed, const std::vector<Ack>& acked) {
  std::vector<Ack> ack = acked;
  std::sort(ack.begin(), ack.end(), [](const Ack& a, const Ack& b) { return a.seq < b.seq; });
  std::vector<KeyWrite> writes;
  for (const Ack& a : ack) keyed.keys_of(a.seq, writes);
  std::vector<uint64_t> keys;
  for (const KeyWrite& w : writes) keys.push_back(w.key);
  std::sort(keys.begin(), keys.end());
  keys.erase(std::unique(keys.begin(), keys.end()), keys.end());
  const std::vector<Held> got = keyed.held(keys);
  if (got.size() != keys.size())
    throw SetupError(crash_->victim() + " answered for " + std::to_string(got.size()) + " of " +
                     std::to_string(keys.size()) + " keys");
  std::unordered_map<uint64_t, Held> held;
  for (size_t i = 0; i < keys.size(); ++i) held.emplace(keys[i], got[i]);
  const std::unordered_map<uint64_t, WriteState> state = resolve_keyed(writes, held, ack);
  std::vector<WriteState> out;
  out.reserve(acked.size());
  for (const Ack& a : acked) {
    const auto it = state.find(a.seq);
    out.push_back(it == state.end() ? WriteState::Present : it->second);
  }
  return out;
}

// The acknowledged writes read back, as the crash checks do (the server restarted first when the
// schedule left it down); each lost one counted against the first kill or restart after its ack.
void FaultPlan::lost_writes(std::vector<FaultResult>& out, const std::vector<const loops::ClientStats*>& stats) {
  auto none = [&](const std::string& why) {
    for (FaultResult& r : out) r.lost = -1, r.lost_note = why;
  };
  if (queue_) {  // the end check drains the queue: a server the schedule left down is restarted for it
    try {
      if (down_ && !stop_requested().load()) crash_->restart();
      down_ = false;
    } catch (const std::exception& e) {
      for (FaultResult& r : out)
        r.error += (r.error.empty() ? "" : "; ") + std::string("restart for the end check: ") + e.what();
    }
    return none("a queue: its messages are counted from its ledger (the end check) instead");
  }
  const AdapterSpec* spec = find_adapter(job_.adapter);
  if (!spec || std::find(spec->crash_ops.begin(), spec->crash_ops.end(), job_.op) == spec->crash_ops.end())
    return none(job_.adapter + " " + job_.op + ": no writes read back (the crash check reads back those of " +
                (spec && !spec->crash_ops.empty() ? spec->crash_ops.front() : std::string("no op")) + ")");
  if (!crash_) return none("no writes read back: the server is not one mwbench starts and restarts");
  if (expires_) return none("no writes read back: keys expire (--ttl), so a missing one would prove no loss");
  if (stop_requested().load()) return none("interrupted: the writes were not read back");
  std::vector<Ack> acked;
  for (const loops::ClientStats* s : stats) acked.insert(acked.end(), s->acked.begin(), s->acked.end());
  if (acked.size() > crash_->distinct_writes())
    return none(std::to_string(acked.size()) + " acknowledged writes, more than the " +
                std::to_string(crash_->distinct_writes()) +
                " keys told apart: a key written again would hide a lost write; give a larger --keyspace");
  try {
    if (down_) {
      crash_->restart();
      down_ = false;
    }
    std::vector<uint64_t> seqs;
    seqs.reserve(acked.size());
    for (const Ack& a : acked) seqs.push_back(a.seq);
    KeyedReadBack* keyed = crash_->keyed();
    const std::vector<WriteState> states = keyed ? keyed_states(*keyed, acked) : crash_->check(seqs);
    for (FaultResult& r : out) r.lost = 0;
    for (size_t i = 0; i < states.size() && i < acked.size(); ++i) {
      if (states[i] == WriteState::Present) continue;
      // against the first kill or restart at or after its acknowledgement (a stop, a slow and a
      // cut touch no data)
      size_t k = out.size() - 1;
      for (size_t x = 0; x < out.size(); ++x)
        if (done_[x].at >= acked[i].at_ns && job_.faults[x].kind != FaultKind::Stop &&
            !through_proxy(job_.faults[x].kind)) {
          k = x;
          break;
        }
      ++out[k].lost;
    }
    if (replicated_)  // each was acknowledged once other nodes had it: a loss breaks the contract
      for (FaultResult& r : out)
        if (r.lost > 0)
          r.error += (r.error.empty() ? "" : "; ") + std::to_string(r.lost) +
                     " acknowledged writes lost though each was acknowledged once replicas had it";
  } catch (const std::exception& e) {
    none(std::string("the writes could not be read back: ") + e.what());
  }
}

}  // namespace mw

namespace mw {

void queue_across(std::vector<FaultResult>& faults, const queue::Figures& q, const std::optional<Contract>& contract) {
  if (faults.empty()) return;
  // One ledger for the job: its figures go to the first fault that kills a server (or the first).
  size_t k = 0;
  for (size_t i = 0; i < faults.size(); ++i) {
    const std::optional<FaultKind> kind = parse_fault_kind(faults[i].kind);
    if (kind && *kind != FaultKind::Stop && !through_proxy(*kind)) {
      k = i;
      break;
    }
  }
  const std::string label = contract
                                ? contract_label(*contract) + (contract->detail.empty() ? "" : ": " + contract->detail)
                                : std::string("none declared");
  for (size_t i = 0; i < faults.size(); ++i) {
    FaultResult& r = faults[i];
    r.queue_contract = label;
    if (i != k) {
      r.queue_note = "counted under " + faults[k].fault + " (one ledger for the job)";
      continue;
    }
    r.messages_lost = static_cast<int64_t>(q.lost);
    r.messages_duplicated = static_cast<int64_t>(q.duplicates);
    r.messages_reordered = static_cast<int64_t>(q.reordered);
    if (q.undrained) r.queue_note = std::to_string(q.undrained) + " not drained (the run was interrupted)";
    if (contract && contract->kind == ContractKind::Replicated && q.lost > 0)
      r.error += (r.error.empty() ? "" : "; ") + std::to_string(q.lost) +
                 " acknowledged messages lost though each was acknowledged once a majority of replicas had it";
  }
}

}  // namespace mw
