#include "durability/durability.h"

#include <fcntl.h>
#include <unistd.h>
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <filesystem>

#include "api/options.h"
#include "queue/queue.h"

namespace mw {
namespace {

int64_t mono_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

}  // namespace

double loss_window_s(int64_t oldest_lost_ack_ns, int64_t crash_ns) {
  return static_cast<double>(std::max<int64_t>(0, crash_ns - oldest_lost_ack_ns)) / 1e9;
}

const std::vector<OptionSpec>& durability_options() {
  using D = DurabilityOptions;
  static const std::vector<OptionSpec> opts = {
      opt(&D::crash,
          {.name = "crash",
           .help = "kill: SIGKILL the server (or the writing process) during the run, restart it on "
                   "the same store, and check every write (acked, lost, in doubt, corrupt); power: the "
                   "store on mwbench's FUSE page-cache layer, and every byte not fsynced is dropped "
                   "before the restart; torn: as power, and the last unsynced write of each file "
                   "survives only in part (a torn page)"},
          {{"none", CrashKind::None},
           {"kill", CrashKind::Kill},
           {"power", CrashKind::Power},
           {"torn", CrashKind::Torn}}),
      opt(&D::crash_at, {.name = "crash-at",
                         .help = "when to kill: a share of -n or of --duration (50%, 0.5; "
                                 "100%: after the last reply, nothing in flight)"}),
      opt(&D::expect,
          {.name = "expect",
           .help = "durable: an acknowledged write lost after the restart fails the job (exit 1); "
                   "any: the loss is reported as a finding"},
          {{"any", Expectation::Any}, {"durable", Expectation::Durable}}),
  };
  return opts;
}

DurabilityOptions durability_options_of(const Job& job) {
  DurabilityOptions o;
  detail::fill_options(job, durability_options(), typeid(DurabilityOptions), &o);
  return o;
}

double parse_crash_at(const std::string& v) {
  std::string s = v;
  bool pct = !s.empty() && s.back() == '%';
  if (pct) s.pop_back();
  char* end = nullptr;
  double x = s.empty() ? NAN : std::strtod(s.c_str(), &end);
  if (pct) x /= 100;
  if (s.empty() || *end || !std::isfinite(x) || x <= 0 || x > 1)
    throw SetupError("--crash-at expects a share of the run above 0 and up to 100% (50%, 0.5), got '" + v + "'");
  return x;
}

void check_durability_options(const std::vector<Job>& jobs) {
  for (const Job& j : jobs) {
    if (!j.has("crash") && !j.has("crash-at") && !j.has("expect")) continue;
    const std::string at = j.source == "cli" ? "" : j.source + ": " + j.name + ": ";
    const DurabilityOptions o = durability_options_of(j);
    try {
      parse_crash_at(o.crash_at);
    } catch (const SetupError& e) {
      throw SetupError(at + e.what());
    }
    if (j.has("expect") && parse_delivery(j.str("expect")) && !is_queue_op(j.op))
      throw SetupError(at + "--expect " + j.str("expect") + " is what a queue's messages must meet: " + j.adapter +
                       " " + j.op + " takes --expect durable (with --crash) or any");
    if (o.crash != CrashKind::None) continue;
    if (j.has("crash-at")) throw SetupError(at + "--crash-at " + o.crash_at + " needs --crash kill (there is no kill)");
    if (o.expect == Expectation::Durable)
      throw SetupError(at + "--expect durable needs --crash kill (what is kept is checked after a kill)");
  }
}

std::string unverifiable(const Job& job, uint64_t distinct) {
  if (distinct == UINT64_MAX) return "";
  const std::string v = std::to_string(kVersionedValue);
  std::string head = std::string("--crash ") + crash_name(durability_options_of(job).crash) + ": " + job.adapter + " " +
                     job.op + " reads each write back by its key, and values under " + v +
                     " bytes are too short to "
                     "carry the version that names the write that put them: a key written again, an older "
                     "write that survived would hide a lost newer one; give --value-size " +
                     v + " or more";
  if (distinct == 0) return head;  // a workload's updates write its keys again
  const std::string most = std::to_string(distinct);
  if (job.duration_s > 0) return head + ", or -n (at most " + most + ") instead of --duration";
  if (job.warmup_s > 0) return head + ", or --warmup as a number of ops (a timed warm-up's writes are unbounded)";
  const uint64_t writes = job.n + job.warmup_ops;
  if (writes <= distinct) return "";
  return head + ": this job makes " + std::to_string(writes) + " writes (-n plus --warmup) over " + most +
         " keys; or give fewer writes, or a larger --keyspace";
}

std::unique_ptr<PageCacheMount> power_layer(const Job& job, const std::string& base) {
  if (!cuts_power(durability_options_of(job).crash)) return nullptr;
  return std::make_unique<PageCacheMount>(base, durability_options_of(job).crash == CrashKind::Torn);
}

void sync_layer(const PageCacheMount& m) {
  std::error_code ec;
  for (auto& e : std::filesystem::recursive_directory_iterator(m.path(), ec)) {
    if (!e.is_regular_file()) continue;
    int fd = open(e.path().c_str(), O_RDONLY | O_CLOEXEC);
    bool ok = fd >= 0 && fsync(fd) == 0;
    if (fd >= 0) close(fd);
    if (!ok) throw SetupError("--crash power: cannot fsync " + e.path().string() + " after the set-up");
  }
}

std::string durability_level(const Job& job) {
  const AdapterSpec* spec = find_adapter(job.adapter);
  std::vector<std::string> set;
  for (const std::string& k : spec ? spec->durability_settings : std::vector<std::string>{})
    if (job.has(k)) set.push_back(k + "=" + job.str(k));
  if (set.size() ==
      1) {  // a value that names itself ("aof-everysec"); "persistent=false", "fsync-ms=50" keep their name
    const std::string v = set[0].substr(set[0].find('=') + 1);
    const bool bare = v == "true" || v == "false" || v.find_first_not_of("0123456789.") == std::string::npos;
    return bare ? set[0] : v;
  }
  std::string out;
  for (auto& s : set) out += (out.empty() ? "" : " ") + s;
  return out;
}

CrashPlan::CrashPlan(const Job& job, const Abilities& abilities) : o_(durability_options_of(job)) {
  if (o_.crash == CrashKind::None) return;
  at_ = parse_crash_at(o_.crash_at);
  crash_ = abilities.crash;
  if (!crash_)
    throw SetupError(std::string("--crash ") + crash_name(o_.crash) + ": " + job.adapter + " " + job.op +
                     " cannot be crashed");
  if (std::string why = unverifiable(job, crash_->distinct_writes()); !why.empty()) throw SetupError(why);
  if (cuts_power(o_.crash) && !(layer_ = crash_->pagecache()))
    throw SetupError(std::string("--crash ") + crash_name(o_.crash) + ": " + job.adapter + " " + job.op +
                     " keeps no store on the page-cache layer");
  if (const AdapterSpec* spec = find_adapter(job.adapter))  // what tells the rows of a table apart
    for (const OptionSpec& o : spec->options)
      if (o.list && job.has(o.name)) setting_ += (setting_.empty() ? "" : " ") + o.name + "=" + job.str(o.name);
  level_ = durability_level(job);
}

CrashPlan::~CrashPlan() { stop_monitor(); }

// A store that cannot open or answer after a torn power cut: a verdict, every acknowledged write lost.
DurabilityResult CrashPlan::unrecoverable(DurabilityResult d, const std::vector<Ack>& ack, const std::string& why) {
  d.checked = true;
  d.unrecoverable = true;
  d.lost = d.acked;
  int64_t oldest = INT64_MAX;
  for (const Ack& a : ack) oldest = std::min(oldest, a.at_ns);
  if (d.lost) d.loss_window_s = loss_window_s(oldest, killed_at_.load());
  d.detail = "unrecoverable after the torn power cut: " + why;
  return d;
}

void CrashPlan::kill_once() {
  if (killed_at_.load()) return;
  crash_->kill();
  killed_at_ = mono_ns();
  halt_ = true;
}

void CrashPlan::arm(std::vector<const std::atomic<uint64_t>*> done, uint64_t n, double duration_s,
                    const std::atomic<int64_t>* started) {
  if (!crash_ || at_ >= 1) return;  // 100%: after the phase, with nothing in flight
  const auto target = static_cast<uint64_t>(std::ceil(static_cast<double>(n) * at_));
  const auto after = static_cast<int64_t>(duration_s * at_ * 1e9);
  monitor_ = std::thread([this, done = std::move(done), target, after, duration_s, started] {
    try {
      while (!quit_.load()) {
        bool due = false;
        if (duration_s > 0) {
          const int64_t t0 = started->load();
          due = t0 > 0 && mono_ns() >= t0 + after;
        } else {
          uint64_t sum = 0;
          for (auto* d : done) sum += d->load(std::memory_order_relaxed);
          due = sum >= target;
        }
        if (due) {
          kill_once();
          return;
        }
        std::this_thread::sleep_for(std::chrono::microseconds(200));
      }
    } catch (...) {  // a kill that failed: the phase halts, finish() kills again and reports
      halt_ = true;
    }
  });
}

void CrashPlan::stop_monitor() {
  quit_ = true;
  if (monitor_.joinable()) monitor_.join();
}

namespace {
// Every write sent, in order, and the acknowledged ones, sorted.
std::vector<uint64_t> sent_seqs(const std::vector<std::pair<uint64_t, uint64_t>>& sent) {
  std::vector<uint64_t> seqs;
  for (auto& [begin, count] : sent)
    for (uint64_t s = begin; s < begin + count; ++s) seqs.push_back(s);
  return seqs;
}
std::vector<Ack> acked_seqs(const std::vector<const std::vector<Ack>*>& acked) {
  std::vector<Ack> ack;
  for (auto* a : acked) ack.insert(ack.end(), a->begin(), a->end());
  std::sort(ack.begin(), ack.end(), [](const Ack& x, const Ack& y) { return x.seq < y.seq; });
  return ack;
}
// The acknowledgement of `seq`, or null.
const Ack* ack_of(const std::vector<Ack>& ack, uint64_t seq) {
  auto it = std::lower_bound(ack.begin(), ack.end(), seq, [](const Ack& a, uint64_t s) { return a.seq < s; });
  return it != ack.end() && it->seq == seq ? &*it : nullptr;
}

// The writes among the ops sent: every op, or a workload's that wrote a key (`writes`).
std::vector<uint64_t> write_seqs(const std::vector<std::pair<uint64_t, uint64_t>>& sent,
                                 const std::vector<KeyWrite>* writes) {
  std::vector<uint64_t> seqs = sent_seqs(sent);
  if (!writes) return seqs;
  std::vector<uint64_t> wrote;
  for (const KeyWrite& w : *writes) wrote.push_back(w.seq);
  std::sort(wrote.begin(), wrote.end());
  std::erase_if(seqs, [&](uint64_t s) { return !std::binary_search(wrote.begin(), wrote.end(), s); });
  return seqs;
}

// Corrupt over Missing over Present: a write of several keys takes its worst key's state.
int badness(WriteState s) { return s == WriteState::Corrupt ? 2 : s == WriteState::Missing ? 1 : 0; }
}  // namespace

std::unordered_map<uint64_t, WriteState> resolve_keyed(const std::vector<KeyWrite>& writes,
                                                       const std::unordered_map<uint64_t, Held>& held,
                                                       const std::vector<Ack>& ack) {
  std::unordered_map<uint64_t, std::vector<const KeyWrite*>> by_key;
  for (const KeyWrite& w : writes) by_key[w.key].push_back(&w);
  std::unordered_map<uint64_t, WriteState> out;
  auto mark = [&](uint64_t seq, WriteState s) {
    auto [it, fresh] = out.try_emplace(seq, s);
    if (!fresh && badness(s) > badness(it->second)) it->second = s;
  };
  // `a` provably older than `b`: acknowledged before `b` was sent (a write in doubt was sent, when is
  // not kept: an acknowledged one is taken as older than it, so it counts present only by its own value).
  auto older = [&](const KeyWrite* a, const KeyWrite* b) {
    const Ack* x = ack_of(ack, a->seq);
    if (!x) return false;
    const Ack* y = ack_of(ack, b->seq);
    return !y || x->at_ns < y->sent_ns;
  };
  for (auto& [key, ws] : by_key) {
    const auto h = held.find(key);
    const Held got = h == held.end() ? Held{} : h->second;
    if (got.kind == Held::Kind::Corrupt) {
      for (const KeyWrite* w : ws) mark(w->seq, WriteState::Corrupt);
      continue;
    }
    if (got.kind == Held::Kind::Value && !got.version) {  // values without a version: a key per write
      for (const KeyWrite* w : ws) mark(w->seq, w->del ? WriteState::Missing : WriteState::Present);
      continue;
    }
    if (got.kind == Held::Kind::Value) {  // the put whose version it carries; none: from before the phase
      const KeyWrite* holder = nullptr;
      for (const KeyWrite* w : ws)
        if (!w->del && write_version(w->seq) == *got.version && (!holder || w->seq > holder->seq)) holder = w;
      for (const KeyWrite* w : ws)
        mark(w->seq, w == holder || (holder && !older(holder, w)) ? WriteState::Present : WriteState::Missing);
      continue;
    }
    // Absent: a delete's doing, unless every delete of the key was older than the put. A delete in
    // doubt is older than none; an acknowledged one than the puts sent after it came back.
    bool doubtful_delete = false;
    int64_t last_delete = INT64_MIN;  // the latest acknowledgement of a delete
    for (const KeyWrite* d : ws) {
      if (!d->del) continue;
      if (const Ack* a = ack_of(ack, d->seq))
        last_delete = std::max(last_delete, a->at_ns);
      else
        doubtful_delete = true;
    }
    for (const KeyWrite* w : ws) {
      const Ack* a = w->del ? nullptr : ack_of(ack, w->seq);
      const bool deleted = w->del || doubtful_delete || (a && last_delete >= a->sent_ns);
      mark(w->seq, deleted ? WriteState::Present : WriteState::Missing);
    }
  }
  return out;
}

std::vector<WriteState> CrashPlan::check_keyed(KeyedReadBack& keyed, const std::vector<uint64_t>& seqs,
                                               const std::vector<Ack>& ack, const std::vector<KeyWrite>* writes) {
  std::vector<KeyWrite> own;
  if (!writes) {
    for (uint64_t s : seqs) keyed.keys_of(s, own);
    writes = &own;
  }
  std::vector<uint64_t> keys;
  for (const KeyWrite& w : *writes) keys.push_back(w.key);
  std::sort(keys.begin(), keys.end());
  keys.erase(std::unique(keys.begin(), keys.end()), keys.end());
  const std::vector<Held> got = keyed.held(keys);
  if (got.size() != keys.size())
    throw SetupError("durability check: " + crash_->victim() + " answered for " + std::to_string(got.size()) + " of " +
                     std::to_string(keys.size()) + " keys");
  std::unordered_map<uint64_t, Held> held;
  for (size_t i = 0; i < keys.size(); ++i) held.emplace(keys[i], got[i]);
  const std::unordered_map<uint64_t, WriteState> state = resolve_keyed(*writes, held, ack);
  std::vector<WriteState> st;
  st.reserve(seqs.size());
  for (uint64_t s : seqs) {
    const auto it = state.find(s);
    st.push_back(it == state.end() ? WriteState::Present : it->second);  // a native op that wrote no key
  }
  return st;
}

DurabilityResult CrashPlan::unchecked(const std::vector<std::pair<uint64_t, uint64_t>>& sent,
                                      const std::vector<const std::vector<Ack>*>& acked, uint64_t ops,
                                      const std::string& why, const std::vector<KeyWrite>* writes) {
  stop_monitor();
  DurabilityResult d;
  d.ran = true;
  d.victim = crash_->victim();
  d.setting = setting_;
  d.level = level_;
  d.expect = o_.expect;
  d.note = crash_->note();
  d.crash_at = at_;
  d.crash = o_.crash;
  const std::vector<uint64_t> seqs = write_seqs(sent, writes);
  const std::vector<Ack> ack = acked_seqs(acked);
  for (uint64_t s : seqs) ack_of(ack, s) ? ++d.acked : ++d.in_doubt;
  // a mix's ops that wrote nothing are neither acknowledged writes nor in doubt
  const uint64_t other = sent_seqs(sent).size() - seqs.size();
  d.ops = ops ? ops - std::min(ops, other) : d.acked + d.in_doubt;
  d.never_sent = d.ops - std::min(d.ops, d.acked + d.in_doubt);
  d.checked = false;
  d.detail = why;
  return d;
}

DurabilityResult CrashPlan::finish(const std::vector<std::pair<uint64_t, uint64_t>>& sent,
                                   const std::vector<const std::vector<Ack>*>& acked, uint64_t ops,
                                   const std::vector<KeyWrite>* writes) {
  DurabilityResult d = unchecked(sent, acked, ops, "", writes);
  const std::vector<uint64_t> seqs = write_seqs(sent, writes);
  const std::vector<Ack> ack = acked_seqs(acked);
  std::vector<WriteState> st;
  const bool torn = o_.crash == CrashKind::Torn;
  bool cut = false;  // the layer is back: a store that fails from here on failed on what survived
  try {
    kill_once();   // crash-at 100%, or the run ended before the crash point
    if (layer_) {  // the power cut: what was not synced is gone, then the layer is mounted again
      d.model = PageCacheMount::model(torn);
      layer_->power_cut();
    }
    cut = true;
    crash_->restart();
    d.recovery_s = static_cast<double>(mono_ns() - killed_at_.load()) / 1e9;
    KeyedReadBack* keyed = crash_->keyed();
    st = keyed ? check_keyed(*keyed, seqs, ack, writes) : crash_->check(seqs);
    if (st.size() != seqs.size())
      throw SetupError("durability check: " + d.victim + " answered for " + std::to_string(st.size()) + " of " +
                       std::to_string(seqs.size()) + " writes");
  } catch (const Interrupted& e) {
    d.detail = std::string(e.what()) + ": the writes were not read back";
    return d;
  } catch (const SetupError& e) {
    if (torn && cut) return unrecoverable(d, ack, e.what());
    d.restart_failed = true;
    d.detail = std::string("not checked: ") + e.what();
    return d;
  }
  d.checked = true;
  int64_t oldest_lost = INT64_MAX;
  for (size_t i = 0; i < seqs.size(); ++i) {
    const Ack* a = ack_of(ack, seqs[i]);
    if (st[i] == WriteState::Corrupt) ++d.corrupt;
    if (a && st[i] != WriteState::Present) {
      oldest_lost = std::min(oldest_lost, a->at_ns);
      if (!d.lost++)
        d.detail = "write " + std::to_string(seqs[i]) + " acknowledged, then " +
                   (st[i] == WriteState::Missing ? "missing" : "corrupt") + " after the restart";
    }
    if (!a && st[i] == WriteState::Present) ++d.in_doubt_present;
  }
  if (d.lost) d.loss_window_s = loss_window_s(oldest_lost, killed_at_.load());
  return d;
}

}  // namespace mw
