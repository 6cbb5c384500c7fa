#include "core/capacity.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <map>
#include <mutex>
#include <stdexcept>
#include <thread>

#include <unistd.h>
#include <nlohmann/json.hpp>

#include "api/stop.h"
#include "core/ranks.h"
#include "queue/queue.h"
#include "results/slo.h"
#include "util/clock.h"
#include "util/series.h"
#include "util/text.h"

namespace mw {

namespace {

// Bracketing and bisection together. With the defaults (5 s steps after a 1 s warm-up, three
// repeats) the probe, 14 steps and the repeats take at most 18 x 6 s = 108 s: the search ends
// within two minutes. 14 covers a rate found after 8 halvings (1/320 of the probe) bisected to 5%.
// The confirmation's steps down share that budget: the steps the search left unused.
constexpr int kMaxSearchSteps = 14;
constexpr int kMaxConfirmRates = 3;  // the found rate and at most two steps down
constexpr double kStartShare = 0.8;  // the first step offers this share of the probe's rate
constexpr double kGrow = 1.25, kShrink = 0.5;
constexpr double kFloorShare = 1.0 / 1024;  // below this share of the probe's rate: no rate passes

std::string rate(double r) { return fmt(r, r < 100 ? 2 : 1); }
std::string ms(double ns) { return fmt(ns / 1e6, 3) + " ms"; }

// A bound the step missed, and the least share of the measured phase that mwbench's own stalls
// must cover to account for it (kStallNever: none can).
struct Missed {
  std::string text;
  double stall_share = kStallNever;
  bool latency = false;  // a latency bound of the SLO
};

// The share of the measured phase that stalls must cover to account for a violated SLO term: a
// latency percentile's share of the ops (p99: 1%; max: any), since the ops due while the loop was
// away are the ones it delayed; a stall cannot account for a throughput, error or minimum term.
double stall_share_for(const std::string& metric) {
  static const std::map<std::string, double> shares = {{"max", 0.0}, {"p999", 0.001}, {"p99", 0.01},
                                                       {"p90", 0.1}, {"p50", 0.5},    {"mean", 0.5}};
  const auto it = shares.find(metric);
  return it == shares.end() ? kStallNever : it->second;
}

// What a queue's step got wrong beyond the producers' figures: no round trip, a growing backlog,
// the ledger's or the consumers' faults. None of them a stall of the producers' loops accounts for.
void queue_failures(const QueueStep& q, double offered, double seconds, std::vector<Missed>& why) {
  if (q.roundtrip.count() == 0) why.push_back({"no message came back within the step"});
  if (std::string g = backlog_growth(q.backlog, offered, seconds); !g.empty()) why.push_back({g});
  if (q.duplicates + q.corrupt + q.unexpected > 0)
    why.push_back({"the ledger: " + std::to_string(q.duplicates) + " duplicated, " + std::to_string(q.corrupt) +
                   " corrupt, " + std::to_string(q.unexpected) + " never acknowledged"});
  if (q.consumer_failed) why.push_back({std::to_string(q.consumer_failed) + " consume calls failed"});
}

// Every bound the step missed. A queue's SLO is judged on its round trip.
std::vector<Missed> failures(const JobResult& r, double offered, const StepRules& rules, const QueueStep* q) {
  std::vector<Missed> why;
  if (q) {
    JobResult trip = r;
    trip.latency = std::make_shared<Histogram>(q->roundtrip);
    for (auto& v : check_slo(rules.slo, trip).violations)
      why.push_back({"roundtrip " + v.text, stall_share_for(v.metric), stall_share_for(v.metric) < kStallNever});
  } else {
    for (auto& v : check_slo(rules.slo, r).violations)
      why.push_back({v.text, stall_share_for(v.metric), stall_share_for(v.metric) < kStallNever});
  }
  if (r.rps < kAchievedShare * offered) {
    // the ops held back while the loop was away: at most its share of the step's, twice over
    const double shortfall = offered > 0 ? 1 - r.rps / offered : 1;
    why.push_back({"achieved " + rate(r.rps) + " of " + rate(offered) + " req/s offered (" +
                       fmt(offered > 0 ? r.rps / offered * 100 : 0, 1) + "%, wanted at least " +
                       fmt(kAchievedShare * 100, 0) + "%)",
                   (shortfall - (1 - kAchievedShare)) / kStallMargin});
  }
  if (const uint64_t bad = r.ops_failed + r.ops_not_run; bad > 0) {
    std::string kinds;
    for (int k = 1; k < kStatusCount; ++k)
      if (r.errors[k])
        kinds += (kinds.empty() ? "" : ", ") + std::string(status_name(static_cast<Status>(k))) + " " +
                 std::to_string(r.errors[k]);
    why.push_back({std::to_string(bad) + " ops failed or not run" + (kinds.empty() ? "" : " (" + kinds + ")")});
  }
  if (std::string w = settle_warning(r.series, r.series_interval_s, r.elapsed_s); !w.empty()) {
    // a stall within one third costs that third up to three times its share of the step
    const double change = std::abs(settle_change(r.series, r.series_interval_s, r.elapsed_s));
    why.push_back({w.substr(0, w.find(':')) + ": it never settled", change / (3 * kStallMargin)});
  }
  if (r.verify.checked && !r.verify.ok) why.push_back({"verification failed: " + r.verify.detail});
  if (q) queue_failures(*q, offered, r.elapsed_s, why);
  return why;
}

std::string joined(const std::vector<Missed>& why) {
  std::string out;
  for (auto& w : why) out += (out.empty() ? "" : "; ") + w.text;
  return out;
}

// Why the step's failure is mwbench's own stall's ("" when its stalls cannot account for every
// bound it missed): they covered at least kStallShare of the measured phase and each bound's own
// share, and a latency bound missed also needs a stall as long as the send lag's bound.
// `owner` names whose stall it was ("" for this process; "rank 1 (host): " under MPI).
std::string stalled(const CapacityStep& s, double elapsed_s, const std::vector<Missed>& why, const StepRules& rules,
                    const std::string& owner) {
  if (why.empty() || elapsed_s <= 0 || s.stall_s <= 0) return "";
  const double share = s.stall_s / elapsed_s;
  double needed = kStallShare;
  bool latency = false;
  for (const Missed& m : why) {
    needed = std::max(needed, m.stall_share);
    latency |= m.latency;
  }
  if (share < needed) return "";
  if (latency && s.stall_max_s * 1e9 < rules.lag_bound_ns) return "";
  std::string cpu = s.cpu_wait_s >= 0 ? "; its thread waited " + ms(s.cpu_wait_s * 1e9) + " for a CPU" : "";
  return owner + "mwbench stalled: its event loop was away from its clients " + ms(s.stall_s * 1e9) + " in all (" +
         fmt(share * 100, 1) + "% of the step, the longest " + ms(s.stall_max_s * 1e9) + cpu +
         "), enough to account for what failed (" + joined(why) + ")";
}

// A latency bound of the SLO that every op of the step missed: its fastest op (from its send, the
// uncorrected figure: the schedule's lag left out; a queue's fastest round trip) took longer.
// "" when some op met every bound.
std::string beyond_reach(const JobResult& r, const QueueStep* q, const StepRules& rules) {
  const Histogram* h = q                                                             ? &q->roundtrip
                       : r.latency_uncorrected && r.latency_uncorrected->count() > 0 ? r.latency_uncorrected.get()
                                                                                     : r.latency.get();
  if (!h || h->count() == 0) return "";
  const auto fastest = static_cast<double>(h->min());
  for (const SloTerm& t : parse_slo(rules.slo)) {
    const double bound = slo_latency_bound(t);
    if (bound > 0 && (fastest > bound || (fastest == bound && t.op == SloTerm::Op::Lt)))
      return "every op took longer than " + t.text + " allows (the fastest of " + std::to_string(h->count()) + ": " +
             (fastest < 1e4 ? fmt(fastest, 0) + " ns" : ms(fastest)) + ")";
  }
  return "";
}

// A target that stopped answering in the step: no op ran at all while at least kQuietOps were due
// (its clients had stopped: a target that does not answer ends them), or from some interval on to
// the end, at least kQuietShare of the step and kQuietOps ops due at the offered rate, no op
// succeeded, and mwbench's own stalls were not what kept it from reading the replies (they
// covered under half that time). A client at its limit still completes ops, late; a loop busy
// with no reply to reap is not the limit. "" when it answered to the end. `stopped`: no rate
// would pass: no op ran, or a server of the target the profile watched used no CPU over a step
// in which none succeeded (SIGSTOPped, frozen).
constexpr double kQuietShare = 0.2;
constexpr double kQuietOps = 4;
std::string stopped_answering(const JobResult& r, double offered, bool* stopped) {
  *stopped = false;
  auto servers = [&](bool quiet_all) {
    std::string out;
    for (const ProcessProfile& p : r.profile.servers) {
      const bool idle = p.cpu_s() <= 0;
      *stopped |= idle && quiet_all;
      out += (out.empty() ? "" : ", ") + printable(p.name) + " (" + printable(p.how) + ") " +
             (idle ? "used no CPU" : "used " + fmt(p.cpu_s() * 1e3, 0) + " ms of CPU") + " in the step";
    }
    return out.empty() ? out : " (" + out + ")";
  };
  if (r.ops_ok + r.ops_failed == 0 && offered * r.job.duration_s >= kQuietOps) {
    *stopped = true;
    return "no op ran in the step: its clients had stopped, as a target that does not answer stops them" +
           servers(true);
  }
  if (r.series.empty() || r.series_interval_s <= 0 || r.elapsed_s <= 0) return "";
  size_t quiet = 0;
  for (auto it = r.series.rbegin(); it != r.series.rend() && it->ok == 0; ++it) ++quiet;
  const double quiet_s = std::min(r.elapsed_s, static_cast<double>(quiet) * r.series_interval_s);
  if (quiet == 0 || quiet_s < kQuietShare * r.elapsed_s || offered * quiet_s < kQuietOps || r.stall_s >= quiet_s / 2)
    return "";
  const std::string which = servers(quiet == r.series.size());
  return "no op succeeded in the last " + fmt(quiet_s, 2) + " s of the step" +
         (*stopped ? ": the target stopped answering" : "") + which;
}

// Why the generator, not the target, was the limit ("" when it was not).
std::string client_limit(const CapacityStep& s, int threads, const StepRules& rules) {
  if (s.lag_p99_ns > rules.lag_bound_ns)
    return "send lag p99 " + ms(s.lag_p99_ns) + " above the bound of " + ms(rules.lag_bound_ns) +
           ": mwbench fell behind its own schedule";
  if (s.loop_busy >= kLoopBusy)
    return "mwbench's event loop was awake " + fmt(s.loop_busy * 100, 0) +
           "% of the step (never waiting for a reply or a send's time): it was behind its own schedule";
  const int usable = std::max(1, std::min(threads, rules.cores));
  if (rules.judge_cpu && s.cpu >= kCpuSaturated * usable)
    return "mwbench used " + fmt(s.cpu, 2) + " cores of the " + std::to_string(usable) +
           " its clients run on: its own CPU was saturated";
  return "";
}

// A queue's step watched from the measured phase's start (Stepper's at_measure) to its end: the
// backlog every tenth of the step on a thread of its own, the round trips and the faults meanwhile.
class QueueWatch {
 public:
  QueueWatch(QueueAdapter& q, double step_s) : q_(q), every_(std::max(0.01, step_s / 10)) {}
  ~QueueWatch() { join(); }
  void start() {
    q_.ledger().take_window();  // the warm-up's round trips
    before_ = q_.ledger().live();
    failed_before_ = q_.consumer_failures();
    t0_ = now_ns();
    sampler_ = std::thread([this] { sample(); });
  }
  QueueStep stop() {
    QueueStep out;
    if (!sampler_.joinable()) return out;  // stopped in the warm-up
    join();
    const queue::Ledger::Live now = q_.ledger().live();
    out.backlog = std::move(samples_);
    out.backlog.push_back(now.backlog());
    out.roundtrip = q_.ledger().take_window();
    const double s = static_cast<double>(now_ns() - t0_) / 1e9;
    out.consumed = now.consumed - before_.consumed;
    out.consumed_rps = s > 0 ? static_cast<double>(out.consumed) / s : 0;
    out.duplicates = now.duplicates - before_.duplicates;
    out.corrupt = now.corrupt - before_.corrupt;
    out.unexpected = now.unexpected - before_.unexpected;
    out.consumer_failed = q_.consumer_failures() - failed_before_;
    return out;
  }

 private:
  void sample() {
    std::unique_lock lk(m_);
    do samples_.push_back(q_.ledger().live().backlog());
    while (!cv_.wait_for(lk, every_, [&] { return done_; }));
  }
  void join() {
    if (!sampler_.joinable()) return;
    {
      std::lock_guard lk(m_);
      done_ = true;
    }
    cv_.notify_all();
    sampler_.join();
  }
  QueueAdapter& q_;
  const std::chrono::duration<double> every_;
  queue::Ledger::Live before_;
  uint64_t failed_before_ = 0;
  int64_t t0_ = 0;
  std::vector<int64_t> samples_;
  std::mutex m_;
  std::condition_variable cv_;
  bool done_ = false;
  std::thread sampler_;
};

// Before a queue's step: its consumers take what the last one left (a failed step's backlog would
// be charged to this one), until at most `slack` messages remain or they make no progress for the
// job's timeout (the step then fails on its own figures).
void drain_backlog(QueueAdapter& q, int64_t slack, double timeout_s) {
  int64_t least = q.ledger().live().backlog();
  int64_t since = now_ns();
  while (!stop_requested().load()) {
    const int64_t b = q.ledger().live().backlog();
    if (b <= slack) return;
    if (b < least)
      least = b, since = now_ns();
    else if (now_ns() - since > static_cast<int64_t>(timeout_s * 1e9))
      return;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
}

// This rank's word on its own client in the step it just ran.
RankNote own_note(const JobResult& r, const StepRules& rules, int rank) {
  RankNote n;
  n.rank = rank;
  char host[256] = {};
  gethostname(host, sizeof host - 1);
  n.host = host;
  n.cores = rules.cores;
  n.threads = std::max(1, r.loop_threads);
  CapacityStep s = judge_step(r, 0, StepKind::Probe, rules);  // offered 0: the figures, no verdict
  n.cpu = s.cpu, n.lag_p99_ns = s.lag_p99_ns, n.loop_busy = s.loop_busy;
  n.stall_s = s.stall_s, n.stall_max_s = s.stall_max_s, n.cpu_wait_s = s.cpu_wait_s;
  if (r.state != JobResult::State::Interrupted) n.limit = client_limit(s, n.threads, rules);
  return n;
}

// judge_step, with whose stalls the figures carry named in a stall's verdict (`stall_owner`).
CapacityStep judge(const JobResult& r, double offered, StepKind kind, const StepRules& rules, const QueueStep* q,
                   const std::string& stall_owner) {
  CapacityStep s;
  s.kind = kind;
  s.offered = offered;
  s.achieved = r.rps;
  // a queue's probe: the rate its consumers kept up with, when below the producers'
  if (q && offered <= 0 && q->consumed_rps > 0) s.achieved = std::min(r.rps, q->consumed_rps);
  if (q) backlog_growth(q->backlog, offered, r.elapsed_s, &s.backlog_first, &s.backlog_last);
  if (const Histogram* lat = q ? &q->roundtrip : r.latency.get(); lat && lat->count()) {
    s.p50_ns = static_cast<double>(lat->percentile(50));
    s.p99_ns = static_cast<double>(lat->percentile(99));
    s.p999_ns = static_cast<double>(lat->percentile(99.9));
  }
  s.errors = r.ops_failed + r.ops_not_run;
  if (r.send_lag && r.send_lag->count()) s.lag_p99_ns = static_cast<double>(r.send_lag->percentile(99));
  s.cpu = r.elapsed_s > 0 ? r.own_cpu_s / r.elapsed_s : 0;
  s.loop_busy = r.loop_busy;
  s.stall_s = r.stall_s, s.stall_max_s = r.stall_max_s, s.cpu_wait_s = r.cpu_wait_s;
  if (offered <= 0) return s;  // the probe: an estimate, not judged
  if (r.state == JobResult::State::Interrupted) {
    s.verdict = StepVerdict::Fail;
    s.why = "interrupted";
    return s;
  }
  const std::vector<Missed> why = failures(r, offered, rules, q);
  // A target that stopped answering: its failure, whatever mwbench's loop did meanwhile (awake,
  // sending what fell due); one whose server used no CPU at all ends the search.
  bool stopped = false;
  if (std::string quiet = stopped_answering(r, offered, &stopped); !quiet.empty() && !q) {
    s.verdict = StepVerdict::Fail;
    s.why = quiet + (why.empty() ? "" : "; " + joined(why));
    s.ends_search = stopped;
    return s;
  }
  const std::string limit = client_limit(s, r.loop_threads, rules);
  // Every op slower than the bound: a fail, not the client's limit, even when the client was at
  // it, so that the search goes on below this rate, where neither a client at its limit nor a
  // target's queue slows the fastest op. A bound below anything the target answers in fails down
  // to the lowest rate tried: verdict "none", not "client-bound".
  if (std::string beyond = beyond_reach(r, q, rules); !beyond.empty()) {
    s.verdict = StepVerdict::Fail;
    s.why = joined(why) + "; " + beyond + (limit.empty() ? "" : "; and " + limit);
    return s;
  }
  if (!limit.empty()) {
    s.verdict = StepVerdict::ClientBound;
    s.why = limit;
    return s;
  }
  if (std::string w = stalled(s, r.elapsed_s, why, rules, stall_owner); !w.empty()) {
    s.verdict = StepVerdict::ClientBound;
    s.why = w;
    return s;
  }
  s.why = joined(why);
  s.verdict = s.why.empty() ? StepVerdict::Pass : StepVerdict::Fail;
  return s;
}

}  // namespace

std::string note_text(const RankNote& n) {
  return nlohmann::json{{"version", kRankNoteVersion},
                        {"rank", n.rank},
                        {"host", n.host},
                        {"cores", n.cores},
                        {"threads", n.threads},
                        {"cpu", n.cpu},
                        {"lag_p99_ns", n.lag_p99_ns},
                        {"loop_busy", n.loop_busy},
                        {"stall_s", n.stall_s},
                        {"stall_max_s", n.stall_max_s},
                        {"cpu_wait_s", n.cpu_wait_s},
                        {"limit", n.limit}}
      .dump();
}

RankNote note_of(const std::string& text) {
  const nlohmann::json o = nlohmann::json::parse(text, nullptr, false);
  if (o.is_object() && o.contains("version") && o["version"] != kRankNoteVersion)
    throw SetupError("a capacity step's note from a rank of encoding version " + printable(o["version"].dump()) +
                     "; this mwbench reads version " + std::to_string(kRankNoteVersion) +
                     ": every rank must run the same mwbench");
  RankNote n;
  try {
    (void)o.at("version");  // (its value checked above) a note without one: a build before the version
    n.rank = o.at("rank"), n.host = o.at("host"), n.cores = o.at("cores"), n.threads = o.at("threads");
    n.cpu = o.at("cpu"), n.lag_p99_ns = o.at("lag_p99_ns"), n.loop_busy = o.at("loop_busy"), n.limit = o.at("limit");
    n.stall_s = o.at("stall_s"), n.stall_max_s = o.at("stall_max_s"), n.cpu_wait_s = o.at("cpu_wait_s");
  } catch (const nlohmann::json::exception&) {
    throw SetupError("a capacity step's note from a rank is not one mwbench wrote: " + printable(text.substr(0, 200)));
  }
  return n;
}

CapacityStep judge_ranked_step(const JobResult& merged, const std::vector<RankNote>& ranks, double offered,
                               StepKind kind, const StepRules& rules) {
  // The merged figures carry no client's own; a failure is judged with the most stalled rank's stalls.
  JobResult m = merged;
  m.stall_s = m.stall_max_s = 0, m.cpu_wait_s = -1;
  const RankNote* most = nullptr;
  for (const RankNote& n : ranks)
    if (n.stall_s >= m.stall_s)
      m.stall_s = n.stall_s, m.stall_max_s = n.stall_max_s, m.cpu_wait_s = n.cpu_wait_s, most = &n;
  CapacityStep s = judge(m, offered, kind, rules, nullptr,
                         most ? "rank " + std::to_string(most->rank) + " (" + printable(most->host) + "): " : "");
  s.lag_p99_ns = s.cpu = s.loop_busy = 0;
  for (const RankNote& n : ranks) {
    s.lag_p99_ns = std::max(s.lag_p99_ns, n.lag_p99_ns);
    s.cpu += n.cpu;
    s.loop_busy = std::max(s.loop_busy, n.loop_busy);
  }
  if (offered <= 0 || merged.state == JobResult::State::Interrupted) return s;
  std::string limit;
  for (const RankNote& n : ranks)
    if (!n.limit.empty()) {
      limit = "rank " + std::to_string(n.rank) + " (" + printable(n.host) + "): " + n.limit;
      break;
    }
  // Ranks that share a machine share its cores: each may be below the bound and all together at it.
  std::map<std::string, std::vector<const RankNote*>> hosts;
  for (const RankNote& n : ranks) hosts[n.host].push_back(&n);
  for (auto& [host, on] : hosts) {
    if (!limit.empty() || !rules.judge_cpu || on.size() < 2) continue;
    double cpu = 0;
    int threads = 0, cores = 1;
    std::string which;
    for (const RankNote* n : on) {
      cpu += n->cpu, threads += n->threads, cores = std::max(cores, n->cores);
      which += (which.empty() ? "" : ", ") + std::to_string(n->rank);
    }
    const int usable = std::max(1, std::min(threads, cores));
    if (cpu >= kCpuSaturated * usable)
      limit = "ranks " + which + " on " + printable(host) + " used " + fmt(cpu, 2) + " cores of the " +
              std::to_string(usable) + " their clients run on: mwbench's CPU there was saturated";
  }
  if (!limit.empty() && s.verdict == StepVerdict::Fail && !beyond_reach(merged, nullptr, rules).empty()) {
    s.why += "; and " + limit;  // the target's failure still (judge's rule); the search goes on below
  } else if (!limit.empty()) {
    s.verdict = StepVerdict::ClientBound;
    s.why = limit;
  }
  return s;
}

std::string backlog_growth(const std::vector<int64_t>& samples, double offered, double seconds, double* first,
                           double* last) {
  const size_t third = samples.size() / 3;
  if (third == 0) return "";
  auto mean = [&](size_t from) {
    double sum = 0;
    for (size_t k = from; k < from + third; ++k) sum += static_cast<double>(samples[k]);
    return sum / static_cast<double>(third);
  };
  const double a = mean(0), b = mean(samples.size() - third);
  if (first) *first = a;
  if (last) *last = b;
  const double allowance = std::max(kBacklogSlack, kBacklogShare * offered * seconds);
  if (b - a <= allowance) return "";
  return "backlog grew from " + fmt(a, 0) + " to " + fmt(b, 0) + " messages (mean of the first third to the last; " +
         "allowed " + fmt(allowance, 0) + "): the consumers fell behind";
}

double lag_bound_ns(const std::string& slo) {
  double tightest = 0;
  for (const SloTerm& t : parse_slo(slo))
    if (double b = slo_latency_bound(t); b > 0) tightest = tightest > 0 ? std::min(tightest, b) : b;
  return std::max(kMinLagBoundNs, tightest / 4);
}

CapacityStep judge_step(const JobResult& r, double offered, StepKind kind, const StepRules& rules, const QueueStep* q) {
  return judge(r, offered, kind, rules, q, "");
}

namespace {

// The search's steps and what they make of the Capacity: the closed-loop probe, the bracketing
// and bisection, then the confirmation's repeats. Each step returns false when the search ended
// there (a stop, a client-bound step, a step after which no rate would pass).
class Search {
 public:
  Search(Capacity c, int repeat, const StepFn& measure) : c_(std::move(c)), repeat_(repeat), measure_(measure) {}

  Capacity run() {
    if (!probe() || !bracket()) return std::move(c_);
    confirm();
    return std::move(c_);
  }

 private:
  bool stopped() {
    if (!stop_requested().load()) return false;
    c_.verdict = CapacityVerdict::Interrupted;
    return true;
  }

  void client_bound(const CapacityStep& s) {
    c_.verdict = CapacityVerdict::ClientBound;
    c_.first_fail = s.offered;
    c_.fail_why = s.why;
    c_.advice =
        "the figures would be mwbench's, not the target's: give its clients more threads (--threads), "
        "more clients (-c), or more load machines (mpirun), then search again";
  }

  // A step after which no rate would pass (the target stopped answering): no rate is reported,
  // whatever passed before it.
  void ended(const CapacityStep& s) {
    c_.verdict = CapacityVerdict::None;
    c_.max_rps = 0;
    c_.first_fail = s.offered;
    c_.fail_why = s.why;
  }

  CapacityStep step(double rate, StepKind kind) {
    c_.steps.push_back(measure_(rate, kind));
    return c_.steps.back();
  }

  bool probe() {
    probe_ = step(0, StepKind::Probe).achieved;
    if (stopped()) return false;
    if (!(probe_ <= 0)) return true;
    c_.verdict = CapacityVerdict::None;
    const std::string& why = c_.steps.back().why;
    c_.fail_why = "the closed-loop probe completed no op" + (why.empty() ? "" : ": " + why);
    return false;
  }

  // Upwards until a rate fails, downwards until one passes, then bisection to the precision:
  // lo_ the highest rate that passed, the lowest that failed is the Capacity's first_fail.
  bool bracket() {
    double hi = 0;  // the lowest that failed (0: none yet)
    double r = kStartShare * probe_;
    for (int n = 0; n < kMaxSearchSteps; ++n) {
      if (lo_ > 0 && hi > 0 && hi - lo_ <= c_.precision * lo_) break;
      const CapacityStep s = step(r, StepKind::Search);
      if (stopped()) return false;
      if (s.verdict == StepVerdict::ClientBound) {
        c_.max_rps = lo_;
        client_bound(s);
        return false;
      }
      if (s.ends_search) {
        ended(s);
        return false;
      }
      if (s.verdict == StepVerdict::Pass)
        lo_ = std::max(lo_, r);
      else if (hi == 0 || r < hi)
        hi = r, c_.fail_why = s.why;
      if (hi == 0)
        r = r * kGrow;  // bracketing upwards: no failure yet
      else if (lo_ == 0)
        r = r * kShrink;  // bracketing downwards: no pass yet
      else
        r = (lo_ + hi) / 2;  // bisection
      if (lo_ == 0 && r < kFloorShare * probe_) break;
    }
    c_.first_fail = hi;
    if (lo_ == 0) {
      c_.verdict = CapacityVerdict::None;
      return false;
    }
    c_.verdict = CapacityVerdict::Found;
    c_.searched_rps = lo_;
    return true;
  }

  // Confirmation: the reported rate is one whose repeats all passed. A repeat that fails makes its
  // rate the lowest failing one, and the next rate down is tried: one precision below it, or the
  // highest search step that passed between the two. At most kMaxConfirmRates rates, within the
  // search's step budget (kMaxSearchSteps + repeat besides the probe): the next rate is tried only
  // when all its repeats fit; else this one's repeats run in full, so that the row says how many
  // passed.
  void confirm() {
    budget_ = kMaxSearchSteps - static_cast<int>(c_.steps.size() - 1) + repeat_;
    for (double rate = lo_;;) {
      std::string missed;  // the first failing repeat's why
      bool down = false;
      if (!repeats(rate, missed, down)) return;
      c_.confirmed = repeat_ > 0 && c_.repeats_passed == c_.repeats;
      if (!down) return;
      c_.first_fail = rate;
      c_.fail_why = "a repeat at " + fmt(rate, 1) + " req/s: " + missed;
      double next = rate / (1 + c_.precision);
      for (const CapacityStep& s : c_.steps)
        if (s.kind == StepKind::Search && s.verdict == StepVerdict::Pass && s.offered < rate)
          next = std::max(next, s.offered);
      rate = next;
      ++c_.step_downs;
    }
  }

  // The repeats of one rate; `down`: one failed and the next rate down is to be tried.
  bool repeats(double rate, std::string& missed, bool& down) {
    c_.max_rps = rate;
    c_.repeats = c_.repeats_passed = 0;
    c_.repeat_min = c_.repeat_max = 0;
    for (int k = 0; k < repeat_ && !down; ++k) {
      const CapacityStep s = step(rate, StepKind::Repeat);
      --budget_;
      if (stopped()) return false;
      if (s.ends_search) {
        ended(s);
        return false;
      }
      if (s.verdict ==
          StepVerdict::ClientBound) {  // the rate that had passed below the limit: this one's, or the search's
        if (c_.repeats_passed == 0) {
          c_.max_rps = 0;
          for (const CapacityStep& p : c_.steps)
            if (p.verdict == StepVerdict::Pass && p.offered < rate) c_.max_rps = std::max(c_.max_rps, p.offered);
        }
        client_bound(s);
        return false;
      }
      c_.repeat_min = c_.repeats == 0 ? s.achieved : std::min(c_.repeat_min, s.achieved);
      c_.repeat_max = std::max(c_.repeat_max, s.achieved);
      ++c_.repeats;
      if (s.verdict == StepVerdict::Pass)
        ++c_.repeats_passed;
      else if (missed.empty())
        missed = s.why.empty() ? step_verdict_name(s.verdict) : s.why;
      down = !missed.empty() && c_.step_downs + 1 < kMaxConfirmRates && budget_ >= repeat_;
    }
    return true;
  }

  Capacity c_;
  const int repeat_;
  const StepFn& measure_;
  double probe_ = 0;  // the closed-loop probe's achieved rate
  double lo_ = 0;     // the highest rate that passed (0: none yet)
  int budget_ = 0;    // the confirmation's steps left
};

}  // namespace

Capacity search_capacity(Capacity c, int repeat, const StepFn& measure) {
  return Search(std::move(c), repeat, measure).run();
}

namespace {

// A queue op of an adapter whose spec has the queue family (as the runner reads it): its steps
// watch the ledger and the backlog. Such a spec's make() gives a QueueAdapter for its queue ops,
// whose queue figures every other adapter lacks: an adapter that breaks that is refused, not cast.
QueueAdapter* queue_of(const Job& job, Adapter& adapter, const Abilities& can) {
  const AdapterSpec* spec = find_adapter(job.adapter);
  if (!spec || !spec->has(Family::Queue) || !is_queue_op(job.op)) return nullptr;
  if (!can.queue)
    throw std::logic_error(job.adapter + " " + job.op + ": a queue op whose adapter is not a QueueAdapter");
  return static_cast<QueueAdapter*>(&adapter);
}

}  // namespace

size_t row_step(const Capacity& c) {
  std::vector<size_t> repeats;
  for (size_t k = 0; k < c.steps.size(); ++k)
    if (c.steps[k].kind == StepKind::Repeat && c.steps[k].offered == c.max_rps &&
        c.steps[k].verdict != StepVerdict::ClientBound)
      repeats.push_back(k);
  if (repeats.empty()) return c.steps.empty() ? 0 : c.steps.size() - 1;
  std::stable_sort(repeats.begin(), repeats.end(),
                   [&](size_t a, size_t b) { return c.steps[a].achieved < c.steps[b].achieved; });
  return repeats[repeats.size() / 2];
}

namespace {

// One --find-max job: its steps run on one Stepper (the clients opened and the key space loaded
// once), each step's figures kept, the reported row one of them. Under MPI every rank runs each
// step with rank 0, which alone searches: it sends each step's rate, every rank runs its clients'
// share of it, rank 0 merges and judges the step.
class CapacityRun {
 public:
  CapacityRun(const Job& job, Adapter& adapter, const Abilities& can, const Workload* workload, bool judge_cpu,
              const ProgressFn& progress, const RankPlan& ranks)
      : job_(job),
        adapter_(adapter),
        ranks_(ranks),
        rules_{job.find_max, lag_bound_ns(job.find_max), judge_cpu,
               std::max(1, static_cast<int>(std::thread::hardware_concurrency()))},
        stepper_(job, adapter, can, progress, workload, ranks),
        warmup_(job.warmup_s > 0 ? job.warmup_s : job.step_s / 5),
        queue_(queue_of(job, adapter, can)),
        in_flight_(static_cast<int64_t>(job.clients) * std::max(1, job.pipeline)),
        last_end_(stepper_.times().ready) {}

  // Rank 0 (or a single process): the search, then the row.
  JobResult search() {
    Capacity plan;
    plan.slo = job_.find_max;
    plan.precision = job_.find_precision;
    plan.step_s = job_.step_s;
    plan.lag_bound_ns = rules_.lag_bound_ns;
    const int64_t began = stepper_.times().ready;
    auto cap = std::make_shared<Capacity>(
        search_capacity(plan, job_.find_repeat, [this](double rate, StepKind kind) { return measure(rate, kind); }));
    cap->elapsed_s = began > 0 && last_end_ > began ? static_cast<double>(last_end_ - began) / 1e9 : 0;
    const size_t pick = std::min(row_step(*cap), kept_.size() - 1);
    if (ranks_.active()) {  // every rank's row is the same step's: merged, they make the row
      StepOrder order{StepOrder::Kind::End, 0, pick};
      ranks_.step_order(job_, order);
    }
    JobResult out = std::move(kept_[pick]);
    out.job = job_;
    out.capacity = std::move(cap);
    if (stop_requested().load()) out.state = JobResult::State::Interrupted;
    return out;
  }

  // A rank but 0: run the steps rank 0 orders, until its end.
  JobResult follow() {
    for (;;) {
      StepOrder order;
      ranks_.step_order(job_, order);
      if (order.kind == StepOrder::Kind::End) {
        JobResult out = order.pick < kept_.size() ? std::move(kept_[order.pick]) : JobResult{};
        if (!out.latency)
          out.latency = std::make_shared<Histogram>(), out.latency_failed = std::make_shared<Histogram>();
        out.job = job_;
        if (stop_requested().load()) out.state = JobResult::State::Interrupted;
        return out;
      }
      JobResult r = step(order.rate);
      ranks_.step_figures(job_, r, note_text(own_note(r, rules_, ranks_.rank)));
      kept_.push_back(std::move(r));
    }
  }

 private:
  // What the step spent before its measured phase: its warm-up, and the rest (the set-up between
  // steps: judging the last one, a queue's drain, starting the clients' threads).
  void timed(CapacityStep& s) {
    const Stepper::Times t = stepper_.times();
    if (t.measure_start < t.warmup_end) return;  // stopped before it measured
    s.warmup_s = static_cast<double>(t.warmup_end - t.warmup_start) / 1e9;
    s.setup_s = std::max(0.0, static_cast<double>(t.measure_start - last_end_) / 1e9 - s.warmup_s);
    last_end_ = t.measure_end;
  }

  // The adapter's own figures (ab's block of an HTTP target) counted from each measured phase's
  // start to its end, kept with the step: the row carries its step's, not the whole search's.
  JobResult step(double rate, const std::function<void()>& at_measure = {}) {
    JobResult r = stepper_.step(rate, job_.step_s, warmup_, [&] {
      (void)adapter_.take_metrics(0, {});  // the warm-up's and the set-up's
      if (at_measure) at_measure();
    });
    if (std::optional<Metrics> m = adapter_.take_metrics(r.elapsed_s, {r.ops_ok, r.ops_failed, r.ops_not_run, 0}))
      r.metrics = std::move(*m), r.step_metrics = true;
    return r;
  }

  CapacityStep measure(double rate, StepKind kind) {
    if (ranks_.active()) return measure_ranked(rate, kind);
    if (queue_) return measure_queue(rate, kind);
    JobResult r = step(rate);
    CapacityStep s = judge_step(r, rate, kind, rules_);
    timed(s);
    kept_.push_back(std::move(r));
    return s;
  }

  // Rank 0: every rank runs the step; the merged figures are judged.
  CapacityStep measure_ranked(double rate, StepKind kind) {
    StepOrder order{StepOrder::Kind::Step, rate};
    ranks_.step_order(job_, order);
    JobResult r = step(rate);
    RankPlan::StepFigures all = ranks_.step_figures(job_, r, note_text(own_note(r, rules_, ranks_.rank)));
    std::vector<RankNote> notes;
    for (auto& t : all.notes) notes.push_back(note_of(t));
    CapacityStep s = judge_ranked_step(all.merged, notes, rate, kind, rules_);
    timed(s);
    kept_.push_back(std::move(r));
    return s;
  }

  // A queue's step watches its ledger and backlog, after the last step's backlog drained.
  CapacityStep measure_queue(double rate, StepKind kind) {
    drain_backlog(*queue_, in_flight_, job_.timeout_s);
    QueueWatch watch(*queue_, job_.step_s);
    JobResult r = step(rate, [&] { watch.start(); });
    const QueueStep q = watch.stop();
    CapacityStep s = judge_step(r, rate, kind, rules_, &q);
    // The row's consumed, round trip and backlog are its step's (the ledger's check is the job's).
    queue::Figures f;
    f.consumed = q.consumed, f.duplicates = q.duplicates, f.corrupt = q.corrupt, f.unexpected = q.unexpected;
    f.roundtrip = std::make_shared<Histogram>(q.roundtrip);
    f.backlog = q.backlog;
    for (Metric& m : queue_metrics(f)) r.metrics.push_back(std::move(m));
    r.step_metrics = true;
    timed(s);
    kept_.push_back(std::move(r));
    return s;
  }

  const Job& job_;
  Adapter& adapter_;
  const RankPlan& ranks_;
  const StepRules rules_;
  Stepper stepper_;
  const double warmup_;
  QueueAdapter* const queue_;
  const int64_t in_flight_;
  int64_t last_end_;             // the last measured phase's end
  std::vector<JobResult> kept_;  // each step's figures: the reported row is one of them
};

}  // namespace

JobResult find_capacity(const Job& job, Adapter& adapter, const Abilities& can, const Workload* workload,
                        bool judge_cpu, const ProgressFn& progress, const RankPlan& ranks) {
  CapacityRun run(job, adapter, can, workload, judge_cpu, progress, ranks);
  return ranks.active() && !ranks.sets_up() ? run.follow() : run.search();
}

}  // namespace mw
