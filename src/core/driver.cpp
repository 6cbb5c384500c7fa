#include "core/driver.h"

#include <sys/resource.h>

#include <algorithm>
#include <barrier>
#include <condition_variable>
#include <mutex>
#include <thread>
#include <tuple>

#include "core/episodes.h"
#include "core/faults.h"
#include "core/live.h"
#include "core/loops.h"
#include "core/probe.h"
#include "core/ranks.h"
#include "core/timeline.h"
#include "durability/durability.h"
#include "results/writer.h"
#include "util/cpu_wait.h"
#include "util/text.h"

namespace mw {

namespace {

using namespace loops;
using StatsSet = std::vector<std::unique_ptr<ClientStats>>;
// A phase whose machine lost this share of its CPU time to steal is flagged (Scout APM's rule
// of thumb: above 10% the VM runs slower than it should).
constexpr double kStealWarn = 0.10;

std::vector<Share> split(uint64_t total, int clients, bool unbounded) {
  std::vector<Share> out(clients);
  uint64_t begin = 0;
  for (int i = 0; i < clients; ++i) {
    uint64_t n = unbounded ? UINT64_MAX : total / clients + (static_cast<uint64_t>(i) < total % clients ? 1 : 0);
    out[i] = {begin, n};
    if (!unbounded)
      begin += n;
    else
      begin += uint64_t{1} << 40;  // disjoint seq ranges per client
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
    if (s->lag) {
      if (!out.send_lag) out.send_lag = std::make_shared<Histogram>();
      out.send_lag->merge(*s->lag);
    }
    if (s->loop_ns > 0)  // the busiest event loop's
      out.loop_busy =
          std::max(out.loop_busy, 1 - static_cast<double>(s->loop_idle_ns) / static_cast<double>(s->loop_ns));
    if (s->loop_ns > 0 && static_cast<double>(s->stall_ns) / 1e9 >= out.stall_s) {  // the most stalled event loop's
      out.stall_s = static_cast<double>(s->stall_ns) / 1e9;
      out.stall_max_s = static_cast<double>(s->stall_max_ns) / 1e9;
      out.cpu_wait_s = s->cpu_wait_ns >= 0 ? static_cast<double>(s->cpu_wait_ns) / 1e9 : -1;
    }
    for (auto [from, to] : {std::pair{&s->connect, &out.connect},
                            {&s->connect_full, &out.connect_full},
                            {&s->connect_resumed, &out.connect_resumed}})
      if (*from) {
        if (!*to) *to = std::make_shared<Histogram>();
        (*to)->merge(**from);
      }
    out.connect_wait_s += static_cast<double>(s->connect_wait_ns) / 1e9;
    if (s->uncorrected) {
      if (!out.latency_uncorrected) out.latency_uncorrected = std::make_shared<Histogram>();
      out.latency_uncorrected->merge(*s->uncorrected);
    }
    for (int k = 0; k < kStatusCount; ++k) out.errors[k] += s->errors[k].load();
    out.ops_failed += s->n_failed.load();
    out.ops_not_run += s->not_run;
    out.ops_not_sent += s->not_sent;
    out.bytes += s->bytes;
    if (s->first_start != INT64_MAX) first = std::min(first, s->first_start);
    last = std::max({last, s->last_end, s->offered_end});
    s->series.finish();
    const std::vector<uint64_t>& ps = s->series.per_second();
    if (ps.size() > out.per_second.size()) out.per_second.resize(ps.size(), 0);
    for (size_t k = 0; k < ps.size(); ++k) out.per_second[k] += ps[k];
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
      f.latency->merge(p->ok), f.ops_failed += p->failed, f.misses += p->misses, f.not_stored += p->not_stored;
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

// mwbench's own CPU time (user + system): every thread's (RUSAGE_SELF) or the calling thread's
// (RUSAGE_THREAD), in seconds.
double cpu_s(int who) {
  rusage u{};
  getrusage(who, &u);
  auto s = [](const timeval& t) { return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_usec) / 1e6; };
  return s(u.ru_utime) + s(u.ru_stime);
}
double own_cpu_s() { return cpu_s(RUSAGE_SELF); }
double thread_cpu_s() { return cpu_s(RUSAGE_THREAD); }

// A phase's worker thread's own CPU time, however it ends (the profile's busiest thread), and its
// time on a CPU and waiting for one over the phase (schedstat: from the barrier to its exit).
struct WorkerTimes {
  double* to;
  SchedTimes* sched;
  SchedTimes at_start;
  ~WorkerTimes() {
    if (to) *to = thread_cpu_s();
    if (!sched || at_start.wait_ns < 0) return;  // not measured, or no schedstats
    const SchedTimes t = sched_times();
    if (t.wait_ns >= at_start.wait_ns && t.on_cpu_ns >= at_start.on_cpu_ns)
      *sched = {t.on_cpu_ns - at_start.on_cpu_ns, t.wait_ns - at_start.wait_ns};
  }
};

}  // namespace

// One job's measurement, in phases: open the clients, load the workload's key space, warm up,
// measure, merge. Each phase runs every client to the end of its share (or the deadline) on the
// threads the clients need: one per blocking client, or event loops for pollable ones.
class Measurement {
 public:
  Measurement(const Job& job, Adapter& adapter, const Abilities& can, const ProgressFn& progress, const Workload* wl,
              const RankPlan& ranks)
      : job_(job),
        ranks_(ranks),
        adapter_(adapter),
        can_(can),
        progress_(progress),
        wl_(wl),
        Cg_(std::max(1, job.clients)),
        P_(std::max(1, job.pipeline)) {
    // Under MPI this process runs clients [first, first + C) of the job's Cg; alone, all of them.
    std::tie(first_, C_) = ranks_.clients(Cg_);
    out_.job = job;
    adapter_facts(out_);  // what its op's latency is, whether it is the driver alone: the result carries them
    out_.latency = std::make_shared<Histogram>();  // empty until measured, never missing
    out_.latency_failed = std::make_shared<Histogram>();
  }

  JobResult run() {
    CrashPlan crash(job_, can_);  // --crash kill: refused here, before any op, when its check cannot see a loss
    FaultPlan faults(job_, can_, wl_ && wl_->expires());  // --fault: likewise, a kind the set-up cannot do
    open();
    if (wl_ && wl_->load && !load()) return std::move(out_);
    uint64_t offset = 0;
    if (!warm_up(offset)) return std::move(out_);
    measure(offset, crash, &faults);
    return std::move(out_);
  }

  // The capacity search (Stepper): the clients opened and the key space loaded once.
  bool open_for_steps() {
    keep_clients_ = true;
    open();
    const bool loaded = !(wl_ && wl_->load && !load());
    times_.ready = now_ns();
    return loaded;
  }

  const Stepper::Times& times() const { return times_; }

  // --trace: a feed per client of this process, each reading the trace for its own trace
  // clients (workload/trace.h), for the measured phase.
  void open_trace() {
    if (!job_.has("trace") || !wl_) return;
    const std::string fmt = job_.str("trace-format");
    const TraceFormat f = fmt.empty() ? TraceFormat::Twitter : parse_trace_format(fmt);
    const std::string speed = job_.str("speed", "1");
    const double x = speed == "max" ? -1 : std::strtod(speed.c_str(), nullptr);
    std::array<bool, kKvOpCount> runs{};
    for (int k = 0; k < kKvOpCount; ++k) runs[k] = wl_->mix.has(static_cast<KvOp>(k));
    for (int i = 0; i < C_; ++i)
      feeds_.push_back(std::make_unique<TraceFeed>(job_.str("trace"), fmt.empty() ? nullptr : &f, job_.flag("skip-bad"),
                                                   first_ + i, Cg_, x, runs, wl_->trace_ttls, wl_->trace_conds));
  }

  // The requests the store could not run, per op, and the malformed lines skipped (--skip-bad).
  void close_trace() {
    if (feeds_.empty()) return;
    std::array<uint64_t, kTraceOpCount> left{};
    for (auto& f : feeds_)
      for (int k = 0; k < kTraceOpCount; ++k) left[k] += f->left_out()[k];
    std::string ops;
    for (int k = 0; k < kTraceOpCount; ++k)
      if (left[k])
        ops += (ops.empty() ? "" : ", ") + std::string(trace_op_name(static_cast<TraceOp>(k))) + " " +
               std::to_string(left[k]);
    if (!ops.empty())
      out_.warnings.push_back(
          {WarningKind::Other, "trace: requests " + job_.adapter + " cannot run, left out: " + ops});
    const TraceReader& r = feeds_.front()->reader();
    if (r.skipped())
      out_.warnings.push_back(
          {WarningKind::Other, "trace: " + std::to_string(r.skipped()) +
                                   " malformed lines skipped (--skip-bad), the first: " + r.first_bad()});
    feeds_.clear();
  }

  // One step: a warm-up and a measured phase of `seconds` at `rate` ops/s (0: closed loop);
  // its seqs go on from the last step's (fresh keys and rows, as after a warm-up).
  JobResult step(double rate, double seconds, double warmup_s, const std::function<void()>& at_measure) {
    job_.rate = rate;
    job_.duration_s = seconds;
    job_.warmup_s = warmup_s;
    job_.warmup_ops = 0;
    job_.interval_s = std::max(0.01, seconds / 10);  // ten intervals: enough for the settle check
    out_ = JobResult{};
    out_.job = job_;
    adapter_facts(out_);
    out_.latency = std::make_shared<Histogram>();
    out_.latency_failed = std::make_shared<Histogram>();
    uint64_t offset = seq_base_;
    times_.warmup_start = times_.warmup_end = now_ns();
    const bool warmed = warm_up(offset);
    times_.warmup_end = now_ns();
    if (!warmed) return std::move(out_);
    if (at_measure) at_measure();
    CrashPlan crash(job_, can_);  // never armed: --find-max refuses --crash
    measure(offset, crash);
    return std::move(out_);
  }

 private:
  // The job's clients (a client that cannot be opened is a set-up error), how they are run, and
  // a workload's request streams (one per client).
  void open() {
    for (int i = 0; i < C_; ++i) {  // a stop ends the opening between two clients
      throw_if_stopped("opening client " + std::to_string(first_ + i + 1) + " of " + std::to_string(Cg_));
      OpeningScope opening;  // and ends a slow connect or handshake of this one
      clients_.push_back(adapter_.open(job_, first_ + i));
    }
    pollable_ = clients_[0]->fd() >= 0;
    if (job_.connect_rate > 0) gate_ = std::make_unique<ConnectGate>(job_.connect_rate);
    if (!pollable_ && P_ > 1)
      out_.warnings.push_back({WarningKind::PipelineIgnored, "-P " + std::to_string(P_) + " ignored: " + job_.adapter +
                                                                 " clients are blocking (one request at a time)"});
    threads_ = pollable_ ? std::clamp(job_.threads > 0 ? job_.threads : 1, 1, C_) : C_;
    for (int i = 0; wl_ && i < C_; ++i) gens_.emplace_back(*wl_, first_ + i, Cg_);
    // The load is set-up: pollable clients keep at least 64 writes in flight (up to 1 MiB of
    // values per client), whatever the measured phase's -P, so that it takes seconds, not minutes.
    load_depth_ = P_;
    if (wl_ && pollable_) {
      const uint64_t fit = (1u << 20) / std::max<uint32_t>(1, wl_->sizes.max());
      load_depth_ = std::max<int>(P_, static_cast<int>(std::clamp<uint64_t>(fit, 1, 64)));
    }
  }

  // Every key of the workload's key space written once: untimed for the job, with figures of its
  // own (a row of its own), so that reads hit. False when a stop was requested.
  bool load() {
    StatsSet ld = fresh_stats(false);
    out_.load = std::make_shared<JobResult>();
    JobResult& l = *out_.load;
    l.job = job_;
    l.job.op = "load";
    l.job.name = job_.name + " load";
    l.job.n = wl_->keys.spec().keyspace;
    l.job.duration_s = 0;
    l.job.pipeline = load_depth_;
    run_phase(ld, mine(split(wl_->keys.spec().keyspace, Cg_, false)), Phase{}, true);
    merge(ld, {}, l);
    if (l.ops_failed || l.ops_not_run)
      out_.warnings.push_back({WarningKind::LoadFailed, "load: " + std::to_string(l.ops_failed) + " of " +
                                                            std::to_string(l.job.n) + " keys failed, " +
                                                            std::to_string(l.ops_not_run) + " not written"});
    if (!stop_requested().load()) return true;
    l.state = out_.state = JobResult::State::Interrupted;
    return false;
  }

  // Same clients, same ops, nothing recorded. `offset`: where the measured phase's seqs start
  // (after the warm-up's, so it works on fresh keys and rows). False when a stop was requested.
  bool warm_up(uint64_t& offset) {
    const uint64_t total = job_.warmup_s > 0 ? 0 : job_.warmup_ops;
    if (job_.warmup_s <= 0 && total == 0) return true;
    Phase ph;
    if (job_.warmup_s > 0) ph.deadline = static_cast<int64_t>(job_.warmup_s * 1e9);
    std::vector<Share> ws = mine(split(total, Cg_, job_.warmup_s > 0));
    for (auto& s : ws) s.begin += offset;  // a capacity step's: after the last step's seqs
    StatsSet warm = fresh_stats(false);
    run_phase(warm, ws, ph);
    uint64_t failed = 0;
    for (int i = 0; i < C_; ++i) {
      offset = std::max(offset, ws[i].begin + warm[i]->done.load());
      out_.warmup_ok += warm[i]->ok.count();
      failed += warm[i]->n_failed.load();
    }
    if (failed)
      out_.warnings.push_back({WarningKind::WarmupFailed, "warm-up: " + std::to_string(failed) + " ops failed"});
    if (!stop_requested().load()) return true;
    out_.state = JobResult::State::Interrupted;
    return false;
  }

  // The timed phase: -n ops split across the clients, or every client until --duration.
  void measure(uint64_t offset, CrashPlan& crash, FaultPlan* faults = nullptr) {
    open_trace();
    const bool unbounded = job_.duration_s > 0 || !feeds_.empty();  // a trace's replay runs to its end
    const std::vector<std::string> side_names = adapter_.sides();
    StatsSet stats = fresh_stats(true, side_names.size());
    std::vector<Share> shares = mine(split(unbounded ? 0 : job_.n, Cg_, unbounded));
    for (auto& s : shares) s.begin += offset;
    if (ranks_.before_measure) ranks_.before_measure(job_);  // all ranks warmed up: one barrier
    Phase ph;
    ph.measured = true;
    if (job_.duration_s > 0) ph.deadline = static_cast<int64_t>(job_.duration_s * 1e9);
    if (crash.active()) arm_crash(ph, crash, stats);
    std::vector<const ClientStats*> all;
    for (auto& s : stats) all.push_back(s.get());
    if (faults && faults->active()) arm_faults(ph, *faults, stats, all);
    SeriesSink series;
    for (auto& s : stats) s->series.start(static_cast<int64_t>(job_.interval_s * 1e9), &series);
    std::vector<const ClientStats*> counted;  // --metrics-listen reads their counters while the phase runs
    for (auto& s : stats) counted.push_back(s.get());
    std::unique_ptr<live::Phase> shown = live::begin(job_, adapter_.target(), counted);
    if (shown) series.watch([p = shown.get()](const SeriesInterval& iv) { p->add(iv); });
    out_.started_epoch_s = std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
    ProfileProbe probe(adapter_, in_process(), keep_clients_ ? &listener_ : nullptr, can_.lock_waits);
    probe.start();  // /proc and /sys read at the phase's edges, never per op
    std::unique_ptr<Timeline> timeline = start_timeline(probe, shown.get());
    timeline_ = timeline.get();
    const double cpu0 = own_cpu_s();
    run_phase(stats, shares, ph);
    out_.own_cpu_s = own_cpu_s() - cpu0;
    if (timeline) timeline->stop();
    timeline_ = nullptr;
    close_trace();
    probe.stop();
    out_.loop_threads = threads_;
    for (int i = 0; i < C_; ++i) seq_base_ = std::max(seq_base_, shares[i].begin + stats[i]->done.load());
    if (!keep_clients_) clients_.clear();  // close connections before verification reads the target
    merge(stats, side_names, out_);        // finishes every client's series
    series.watch(nullptr);
    shown.reset();  // the phase's counts join the job's live totals
    out_.profile = probe.finish(job_, profile_run(stats));
    profile_warnings();
    out_.series = series.take();
    out_.series_interval_s = job_.interval_s;
    if (faults && faults->active())
      out_.faults = faults->finish(all, times_.measure_start, times_.measure_end, out_.series, job_.interval_s);
    if (timeline) {
      out_.events = timeline->tracks(out_.series.size());
      for (Warning& w : timeline->warnings()) out_.warnings.push_back(std::move(w));
    }
    if (!keep_clients_) find_episodes(out_);
    if (std::string w = settle_warning(out_.series, job_.interval_s, out_.elapsed_s); !w.empty())
      out_.warnings.push_back({WarningKind::Unsettled, std::move(w)});
    if (crash.active()) check_after_crash(crash, stats, shares);
    if (stop_requested().load()) out_.state = JobResult::State::Interrupted;
  }

  // --crash kill: the kill halts the phase; restart and check after it.
  void arm_crash(Phase& ph, CrashPlan& crash, const StatsSet& stats) {
    ph.halt = crash.halt();
    std::vector<const std::atomic<uint64_t>*> done;
    for (const auto& s : stats) s->log_acked = true, done.push_back(&s->done);
    measure_t0_ = 0;
    crash.arm(std::move(done), share_of(job_.n, Cg_, first_, C_), job_.duration_s, &measure_t0_);
    replay_ = gens_;  // a workload's request streams as the phase starts: its writes, drawn again after it
  }

  // --fault: the schedule runs beside the load.
  void arm_faults(Phase& ph, FaultPlan& faults, const StatsSet& stats, const std::vector<const ClientStats*>& all) {
    ph.halt = faults.halt();
    for (const auto& s : stats) s->log_acked = s->log_marks = true;
    measure_t0_ = 0;
    faults.arm(all, &measure_t0_);
  }

  // The timeline: events per interval on threads of its own (a capacity search's steps have none).
  std::unique_ptr<Timeline> start_timeline(ProfileProbe& probe, live::Phase* shown) {
    if (keep_clients_ || !job_.server_events) return nullptr;
    std::unique_ptr<EventProbe> events;
    std::string why;
    try {
      if (can_.events) events = can_.events();
    } catch (const std::exception& e) {
      why = e.what();
    }
    if (!why.empty())
      out_.warnings.push_back({WarningKind::ServerEvents, "server events not readable: " + printable(why)});
    return std::make_unique<Timeline>(job_, probe.servers(), adapter_.paths(), std::move(events), shown);
  }

  // What the profile's verdict reads of the measured phase: its ops and rate, its threads' CPU time
  // and their time waiting for a CPU.
  ProfileProbe::Run profile_run(const StatsSet& stats) const {
    uint64_t polls = 0;  // the polls its event loops ran: one asked for may not run (--poll auto, CPU pressure)
    for (const auto& s : stats) polls += s->polls;
    ProfileProbe::Run run{out_.ops_ok + out_.ops_failed, out_.rps, C_, threads_, polls > 0};
    for (double c : worker_cpu_) run.busiest_worker_s = std::max(run.busiest_worker_s, c);
    bool sched_read = !worker_sched_.empty();  // every thread read its schedstat
    for (const SchedTimes& t : worker_sched_) sched_read &= t.wait_ns >= 0;
    if (sched_read) {
      run.cpu_wait_s = run.runnable_cpu_s = run.runnable_wait_s = 0;
      for (const SchedTimes& t : worker_sched_) {
        const double on_cpu = static_cast<double>(t.on_cpu_ns) / 1e9, waited = static_cast<double>(t.wait_ns) / 1e9;
        run.cpu_wait_s += waited;
        if (on_cpu + waited > run.runnable_cpu_s + run.runnable_wait_s)
          run.runnable_cpu_s = on_cpu, run.runnable_wait_s = waited;
      }
    }
    return run;
  }

  void profile_warnings() {
    if (out_.profile.suspect)
      out_.warnings.push_back({WarningKind::ClientBound,
                               "limited by the client: " + out_.profile.evidence + "; the figure measures mwbench"});
    if (out_.profile.steal_share >= kStealWarn)  // the rule of thumb (docs/guide/vm-checks.md)
      out_.warnings.push_back({WarningKind::Steal, "the hypervisor took " + fmt(out_.profile.steal_share * 100, 0) +
                                                       "% of the machine's CPU time during the phase (steal): the "
                                                       "figures are lower than this VM's own, and vary with its "
                                                       "neighbours"});
  }

  // Outside the timed phase: restart the victim on the same store and read every write back.
  // Interrupted first, the counts of what was sent and acknowledged stand, unchecked.
  void check_after_crash(CrashPlan& crash, const StatsSet& stats, const std::vector<Share>& shares) {
    std::vector<std::pair<uint64_t, uint64_t>> sent;
    std::vector<const std::vector<Ack>*> acked;
    for (int i = 0; i < C_; ++i) {
      sent.emplace_back(shares[i].begin, stats[i]->done.load());
      acked.push_back(&stats[i]->acked);
    }
    const uint64_t ops = job_.duration_s > 0 ? 0 : share_of(job_.n, Cg_, first_, C_);
    // A workload's writes: each client's requests drawn again, in order, from its stream as the
    // phase started (a request depends on its stream alone), each key an insert, update, rmw or
    // delete wrote.
    // A write that missed its key (an update, rmw or delete of a key not there) changed nothing.
    std::vector<KeyWrite> writes;
    for (size_t i = 0; i < replay_.size(); ++i) {
      std::vector<uint64_t> missed = stats[i]->missed;  // as completed: sorted, as the seqs go
      std::sort(missed.begin(), missed.end());
      auto miss = missed.begin();
      for (uint64_t seq = shares[i].begin; seq < sent[i].first + sent[i].second; ++seq) {
        const Request q = replay_[i].next(seq);
        while (miss != missed.end() && *miss < seq) ++miss;
        if (miss != missed.end() && *miss == seq) continue;
        if (q.op == KvOp::Insert || q.op == KvOp::Update || q.op == KvOp::Rmw || q.op == KvOp::Delete)
          writes.push_back({seq, q.key, q.op == KvOp::Delete});
      }
    }
    const std::vector<KeyWrite>* mix = replay_.empty() ? nullptr : &writes;
    const char* why = "interrupted before the restart: the writes were not read back";
    out_.durability =
        stop_requested().load() ? crash.unchecked(sent, acked, ops, why, mix) : crash.finish(sent, acked, ops, mix);
  }

  // The store runs inside mwbench: a local adapter (files, an embedded library) with no server.
  bool in_process() const {
    const AdapterSpec* spec = find_adapter(job_.adapter);
    return spec && spec->target == TargetKind::Local;
  }

  // This process's clients' shares of all Cg clients' shares.
  std::vector<Share> mine(const std::vector<Share>& all) const {
    return std::vector<Share>(all.begin() + first_, all.begin() + first_ + C_);
  }

  StatsSet fresh_stats(bool per_op, size_t sides = 0) const {
    StatsSet st;
    for (int i = 0; i < C_; ++i) {
      st.push_back(std::make_unique<ClientStats>());
      st.back()->sides.resize(sides);
      st.back()->side_bytes.resize(sides, 0);
      for (int k = 0; per_op && wl_ && k < kKvOpCount; ++k)
        if (wl_->mix.has(static_cast<KvOp>(k))) st.back()->per_op[k] = std::make_unique<ClientStats::OpStats>();
    }
    return st;
  }

  // One phase over every client: the threads start together (one barrier), then each runs its
  // clients to the end of their shares. No exception leaves a worker thread: the clients' own
  // code is guarded where it is called; this is the last resort for the driver's (an
  // allocation that fails).
  void run_phase(StatsSet& st, const std::vector<Share>& shares, Phase ph, bool load = false) {
    RateShape shape;  // a shaped rate or Poisson arrivals: each client's schedule (loops::Schedule)
    pace(ph, load, shape);
    // --reconnect-every: every phase but the load (set-up) starts each client on a new connection
    Renewal renewal{job_.reconnect_every, [this](int i) { return adapter_.open(job_, i); }, gate_.get()};
    if (job_.reconnect_every > 0 && !load) ph.renewal = &renewal;
    std::vector<std::thread> ts;
    std::barrier sync(threads_ + 1);
    std::atomic<int64_t> t0{0};
    if (ph.measured) worker_cpu_.assign(static_cast<size_t>(threads_), 0);
    if (ph.measured) worker_sched_.assign(static_cast<size_t>(threads_), {});
    for (int th = 0; th < threads_; ++th) ts.emplace_back([&, th] { run_worker(th, st, shares, ph, load, sync, t0); });
    t0 = now_ns();
    if (ph.measured) times_.measure_start = t0, measure_t0_ = t0.load();
    if (ph.measured && timeline_) timeline_->start(t0.load());
    sync.arrive_and_wait();
    if (progress_ && ph.measured) show_progress(st, t0.load(), ts);
    for (auto& t : ts)
      if (t.joinable()) t.join();
    if (ph.measured) times_.measure_end = now_ns();
  }

  // The phase's pace: its timeout, each client's rate (and `shape`, a shaped rate's or Poisson
  // arrivals'), whether its event loops poll, and where each rank's first request falls.
  void pace(Phase& ph, bool load, RateShape& shape) const {
    ph.timeout_s = job_.timeout_s;
    ph.rate_per_client = job_.rate > 0 ? job_.rate / Cg_ : 0;
    if (!feeds_.empty() && !load) {  // a trace's replay: its own timing (TraceFeed), an open loop
      ph.trace = true;
      ph.rate_per_client = 1;
    }
    if (ph.rate_per_client > 0 && (job_.has(kRateShapeKey) || job_.has(kArrivalsKey))) {
      shape = job_.has(kRateShapeKey) ? parse_rate_shape(job_.str(kRateShapeKey)) : constant_rate(job_.rate);
      ph.shape = &shape, ph.arrivals = parse_arrivals(job_.str(kArrivalsKey, "uniform")), ph.share = 1.0 / Cg_;
    }
    // --poll: auto only when this machine's event loops (every rank's) leave a core for the server,
    // and only on a shallow loop (loops::kPollDepthMax requests in flight at most).
    const int cores = static_cast<int>(std::thread::hardware_concurrency());
    const bool spare = threads_ * ranks_.size < cores;
    const int64_t depth = static_cast<int64_t>((C_ + threads_ - 1) / std::max(1, threads_)) * (load ? load_depth_ : P_);
    const PollPolicy& poll = job_.poll;
    if (pollable_ && ph.rate_per_client == 0 && poll.mode != PollPolicy::Mode::Off &&
        ((spare && depth <= loops::kPollDepthMax) || poll.mode == PollPolicy::Mode::Fixed))
      ph.spin_ns = poll.window_ns;
    ph.spin_adaptive = poll.mode == PollPolicy::Mode::Auto;
    ph.first_offset = ph.trace ? 0 : static_cast<double>(ranks_.rank) / ranks_.size;  // ranks do not fire together
  }

  // A client's requests in a phase: its workload stream, and its trace feed in the measured phase.
  Source source(int i, bool load) {
    return Source{gens_.empty() ? nullptr : &gens_[i], load, feeds_.empty() || load ? nullptr : feeds_[i].get()};
  }

  // One thread of a phase, once every thread is at `sync`: its blocking client, or its share of
  // the pollable ones on an event loop, run to the end of their shares.
  void run_worker(int th, StatsSet& st, const std::vector<Share>& shares, const Phase& ph, bool load,
                  std::barrier<>& sync, const std::atomic<int64_t>& t0) {
    WorkerTimes at_exit{ph.measured ? &worker_cpu_[static_cast<size_t>(th)] : nullptr,
                        ph.measured ? &worker_sched_[static_cast<size_t>(th)] : nullptr,
                        {}};
    sync.arrive_and_wait();
    if (at_exit.sched) at_exit.at_start = sched_times();
    try {
      Phase p = ph;
      p.t0 = t0.load();
      if (p.deadline != INT64_MAX) p.deadline += p.t0;
      if (!pollable_) {
        run_blocking(clients_[th], first_ + th, *st[th], shares[th], p, source(th, load));
        return;
      }
      std::vector<Assignment> mine;
      for (int i = th; i < C_; i += threads_)
        mine.push_back({&clients_[i], first_ + i, st[i].get(), shares[i], source(i, load)});
      run_loop(mine, p, load ? load_depth_ : P_);
    } catch (const std::exception& e) {
      for (int i = th; i < C_; i += threads_) st[i]->threw(std::string("driver: ") + e.what(), 0);
    } catch (...) {
      for (int i = th; i < C_; i += threads_) st[i]->threw("driver: unknown exception", 0);
    }
  }

  // Progress lines every 250 ms while the phase's threads run (joins them).
  void show_progress(const StatsSet& st, int64_t t0, std::vector<std::thread>& ts) {
    std::mutex m;
    std::condition_variable cv;
    bool running = true;
    std::thread mon([&] {
      std::unique_lock lk(m);
      while (!cv.wait_for(lk, std::chrono::milliseconds(250), [&] { return !running; })) {
        Progress pr;
        for (auto& s : st) {
          pr.done += s->done.load(std::memory_order_relaxed);
          pr.errors += s->n_failed.load(std::memory_order_relaxed);
        }
        pr.total = job_.duration_s > 0 ? 0 : share_of(job_.n, Cg_, first_, C_);
        pr.duration_s = job_.duration_s;
        pr.elapsed_s = static_cast<double>(now_ns() - t0) / 1e9;
        try {
          progress_(job_, pr);
        } catch (...) {  // a progress line is not worth a run
        }
      }
    });
    for (auto& t : ts) t.join();
    {
      std::lock_guard lk(m);
      running = false;
    }
    cv.notify_all();
    mon.join();
  }

  Job job_;                // a capacity step changes its rate and times
  const RankPlan& ranks_;  // the run's (it outlives every job), or one_process()
  Adapter& adapter_;
  const Abilities can_;        // what the adapter can do for the job besides (the runner's, asked once)
  const ProgressFn progress_;  // a copy: a Stepper outlives the call that gave it (and its default {})
  const Workload* wl_;
  const int Cg_, P_;
  int first_ = 0, C_ = 1;
  int threads_ = 1;
  int load_depth_ = 1;  // requests in flight per pollable client during the load
  bool pollable_ = false;
  bool keep_clients_ = false;             // capacity steps: the clients stay open between measured phases
  uint64_t seq_base_ = 0;                 // where the next phase's seqs start
  std::vector<double> worker_cpu_;        // the measured phase's threads' CPU time, each at its exit
  std::vector<SchedTimes> worker_sched_;  // their time on a CPU and waiting for one over the phase (-1: not read)
  std::vector<std::unique_ptr<Client>> clients_;
  std::unique_ptr<ConnectGate> gate_;  // --connect-rate: this process's clients' turns to reconnect
  std::vector<RequestGen> gens_;
  std::vector<RequestGen> replay_;                 // a crash job's: gens_ as its measured phase started
  std::vector<std::unique_ptr<TraceFeed>> feeds_;  // --trace: the measured phase's, one per client
  JobResult out_;
  Stepper::Times times_;                // the capacity search's: when the last step's phases ran
  ProfileProbe::Listener listener_;     // the capacity search's: its target's server, found at the first step
  Timeline* timeline_ = nullptr;        // the measured phase's, started with its clients (run_phase)
  std::atomic<int64_t> measure_t0_{0};  // the measured phase's start (now_ns), for a crash by duration
};

JobResult measure(const Job& job, Adapter& adapter, const Abilities& can, const ProgressFn& progress,
                  const Workload* workload, const RankPlan& ranks) {
  return Measurement(job, adapter, can, progress, workload, ranks).run();
}

JobResult measure(const Job& job, Adapter& adapter, const ProgressFn& progress, const Workload* workload,
                  const RankPlan& ranks) {
  return measure(job, adapter, adapter.abilities(job), progress, workload, ranks);
}

Stepper::Stepper(const Job& job, Adapter& adapter, const Abilities& can, const ProgressFn& progress,
                 const Workload* workload, const RankPlan& ranks)
    : m_(std::make_unique<Measurement>(job, adapter, can, progress, workload, ranks)) {
  if (!m_->open_for_steps()) m_.reset();
}

Stepper::Stepper(const Job& job, Adapter& adapter, const ProgressFn& progress, const Workload* workload,
                 const RankPlan& ranks)
    : Stepper(job, adapter, adapter.abilities(job), progress, workload, ranks) {}

Stepper::~Stepper() = default;

JobResult Stepper::step(double rate, double seconds, double warmup_s, const std::function<void()>& at_measure) {
  if (!m_) {
    JobResult r;
    r.state = JobResult::State::Interrupted;
    r.latency = std::make_shared<Histogram>();
    r.latency_failed = std::make_shared<Histogram>();
    return r;
  }
  return m_->step(rate, seconds, warmup_s, at_measure);
}

Stepper::Times Stepper::times() const { return m_ ? m_->times() : Times{}; }

}  // namespace mw
