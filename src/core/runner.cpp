#include "core/runner.h"

#include <signal.h>
#include <unistd.h>

#include <algorithm>

#include <chrono>
#include <cstdio>
#include <ctime>
#include <optional>

#include "api/stop.h"
#include "config/workload_spec.h"
#include "core/capacity.h"
#include "core/driver.h"
#include "core/faults.h"
#include "core/ranks.h"
#include "core/sysinfo.h"
#include "queue/queue.h"
#include "results/notes.h"
#include "services/proxy.h"
#include "services/services.h"
#include "util/text.h"

namespace mw {
namespace {

std::string utc_now() {
  std::time_t t = std::time(nullptr);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&t));
  return buf;
}

void print_progress(const Job& job, const Progress& p) {
  double rate = p.elapsed_s > 0 ? static_cast<double>(p.done) / p.elapsed_s : 0;
  double eta = 0;
  if (p.total && rate > 0)
    eta = static_cast<double>(p.total - std::min(p.done, p.total)) / rate;
  else if (p.duration_s > 0)
    eta = std::max(0.0, p.duration_s - p.elapsed_s);
  std::string done = p.total ? std::to_string(p.done) + "/" + std::to_string(p.total) : std::to_string(p.done);
  std::fprintf(stderr, "\r\033[K%s: %s  %.0f ops/s  %llu errors  ETA %.0fs",
               printable(redact_for(job, job.name)).c_str(), done.c_str(), rate,
               static_cast<unsigned long long>(p.errors), eta);
  std::fflush(stderr);
}

// --fault slow, cut: the job as its adapter sees it, through `proxy`. The servers its set-up starts
// are relayed by the ProxyRoute; an external one named by --host (and --port, else the option's
// default) is reached through a route of its own, the job's --host and --port pointing at it.
Job through(const Job& job, const AdapterSpec& spec, FaultProxy& proxy) {
  Job j = job;
  if (spec.target_option.empty() || !job.has(spec.target_option)) return j;
  const OptionSpec* port = find_option(spec.options, "port");
  const std::string given = port ? job.str("port", port->def) : "";
  char* end = nullptr;
  const long p = std::strtol(given.c_str(), &end, 10);
  if (spec.target_option != "host" || given.empty() || *end || p < 1 || p > 65535)  // refused by config.cpp before
    throw SetupError("--fault " + proxy_fault(job.faults)->text + " goes through a proxy to a host and port; " +
                     spec.name + " names its server by --" + spec.target_option);
  j.opts["port"] = std::to_string(proxy.add(job.str("host"), static_cast<int>(p)));
  j.opts["host"] = "127.0.0.1";
  // Over TLS the server's name is still --host's: sent and checked against its certificate.
  if (find_option(spec.options, "sni") && job.flag("tls") && job.str("sni").empty()) j.opts["sni"] = job.str("host");
  return j;
}

using Factory = std::function<std::unique_ptr<Adapter>(const Job&, WorkloadPtr)>;
JobResult run_made(const Job& job, const Factory& make, bool show_progress, const std::string& target,
                   const RankPlan& ranks = one_process());

}  // namespace

JobResult run_one(const Job& job, bool show_progress, const RankPlan& ranks) {
  JobResult r;
  r.job = job;
  r.target = "-";
  const AdapterSpec* spec = find_adapter(job.adapter);
  if (!spec) {
    r.state = JobResult::State::SetupFailed;
    r.message = "unknown adapter '" + job.adapter + "'";
    return r;
  }
  for (auto& o : spec->options)  // until an adapter says better: the side-by-side value
    if (o.list) {
      r.target = job.str(o.name, o.def.empty() ? "-" : o.def);
      break;
    }
  if (spec->unavailable) {
    std::string why;
    try {  // it reads the job's options: a bad value is the job's set-up error
      why = spec->unavailable(job);
    } catch (const SetupError& e) {
      r.state = JobResult::State::SetupFailed;
      r.message = e.what();
      return r;
    }
    if (!why.empty()) {
      r.state = JobResult::State::Skipped;
      r.message = why;
      return r;
    }
  }
  if (ranks.active() && spec->has(Family::Queue) && is_queue_op(job.op))  // one ledger sees every message
    return run_made(
        job,
        [](const Job& j, const WorkloadPtr&) -> std::unique_ptr<Adapter> {
          throw SetupError(j.adapter + " " + j.op +
                           " runs in one process: its exactly-once ledger is not shared across "
                           "MPI ranks (run it without mpirun)");
        },
        show_progress, r.target, ranks);
  return run_made(job, spec->make, show_progress, r.target, ranks);
}

JobResult run_one_with(const Job& job, const std::function<std::unique_ptr<Adapter>(const Job&)>& make,
                       bool show_progress) {
  return run_made(
      job, [&make](const Job& j, const WorkloadPtr&) { return make(j); }, show_progress, "-");
}

namespace {

// One job on the adapter `make` gives: its set-up (a proxy for --fault slow or cut, the adapter
// made and prepared), the measurement or the capacity search, then what is read after it (the
// verification, the metrics, the server's description) and the teardown.
class MadeRun {
 public:
  MadeRun(const Job& job, const Factory& make, bool show_progress, const std::string& target, const RankPlan& ranks)
      : job_(job), make_(make), show_progress_(show_progress), ranks_(ranks) {
    r_.job = job;
    r_.target = target;
  }

  JobResult run() {
    // Set-up: only what fails before the first measured op makes a set-up error.
    try {
      set_up_and_measure();
    } catch (const std::exception& e) {
      set_up_failed(e);
      teardown();
      return std::move(r_);
    }
    read_after();
    teardown();
    return std::move(r_);
  }

 private:
  void set_up_and_measure() {
    begin_service_claims();  // the servers this job's set-up starts or shares are its own (profile)
    // The job's workload, built once here: the adapter, the driver and the result share it.
    const AdapterSpec* spec = find_adapter(job_.adapter);
    const WorkloadPtr wl = spec ? workload_of(job_, *spec) : nullptr;
    if (const FaultSpec* f = proxy_fault(job_.faults); f && spec) route_through_proxy(*f, *spec);
    const Job& used = routed_ ? *routed_ : job_;
    set_up(used, wl);
    if (proxy_) check_proxy_routes();
    for (auto& w : a_->warnings()) r_.warnings.push_back(w);
    if (wl) r_.workload = wl->text();
    const ProgressFn progress = show_progress_ ? ProgressFn(print_progress) : ProgressFn();
    // --find-max: mwbench's CPU says nothing of its generator when the target runs inside it
    take_figures(job_.find_max.empty() ? measure(used, *a_, can_, progress, wl.get(), ranks_)
                                       : find_capacity(used, *a_, can_, wl.get(),
                                                       !spec || spec->target != TargetKind::Local, progress, ranks_));
    if (show_progress_) std::fprintf(stderr, "\r\033[K");
  }

  // --fault slow, cut: the job's connections go through mwbench's proxy.
  void route_through_proxy(const FaultSpec& f, const AdapterSpec& spec) {
    if (ranks_.active())
      throw SetupError("--fault " + f.text + " goes through a proxy on this machine: run it without mpirun");
    proxy_ = std::make_unique<FaultProxy>(job_.timeout_s);
    route_.emplace(proxy_.get());
    routed_ = through(job_, spec, *proxy_);
  }

  // The adapter made and prepared, and what it says of its target before it runs.
  void set_up(const Job& used, const WorkloadPtr& wl) {
    OpeningScope opening;  // a stop ends a slow connect, handshake or first request of the set-up
    a_ = make_(used, wl);
    r_.target = a_->target();
    r_.paths = a_->paths();
    if (ranks_.sets_up()) a_->prepare(used);  // under MPI: rank 0 alone
    if (ranks_.after_setup) ranks_.after_setup(used);
    r_.target = a_->target();  // a managed server's port is known only now
    r_.server = a_->describe();
    can_ = a_->abilities(used);
    r_.contract = can_.contract;
  }

  void check_proxy_routes() {
    if (proxy_->routes() == 0)
      throw SetupError("--fault " + proxy_fault(job_.faults)->text + ": no connection of " + job_.adapter + " " +
                       job_.op + " goes through mwbench's proxy (no TCP server started, none named by --host)");
    r_.server["proxy"] = proxy_->describe();
  }

  // The figures are the driver's; what the adapter said of the target before it ran is ours.
  void take_figures(JobResult m) {
    m.job = job_;  // as given: not the proxy's --host and --port
    m.target = r_.target;
    m.paths = std::move(r_.paths);
    m.server = std::move(r_.server);
    m.contract = std::move(r_.contract);
    m.workload = std::move(r_.workload);
    m.warnings.insert(m.warnings.begin(), r_.warnings.begin(), r_.warnings.end());
    r_ = std::move(m);
  }

  void set_up_failed(const std::exception& e) {
    if (show_progress_) std::fprintf(stderr, "\r\033[K");
    // Stopped during set-up (a preload, a server's start-up, a call cut short by the signal):
    // interrupted, not a set-up error.
    bool stopped = stop_requested().load() || dynamic_cast<const Interrupted*>(&e);
    r_.state = stopped ? JobResult::State::Interrupted : JobResult::State::SetupFailed;
    r_.message = e.what();
    if (!stopped && ranks_.setup_failed) ranks_.setup_failed(job_, r_.message);  // ends every rank
    if (!r_.latency) r_.latency = std::make_shared<Histogram>();
    if (!r_.latency_failed) r_.latency_failed = std::make_shared<Histogram>();
    if (a_) {
      try {
        r_.target = a_->target();  // a managed server's port, when it got that far
      } catch (...) {}
    }
  }

  // After the measurement (a server may have died meanwhile): what fails here fails the
  // job's verification; the figures stand.
  void read_after() {
    after("verify", [&] {
      Counts c{r_.ops_ok, r_.ops_failed, r_.ops_not_run, r_.warmup_ok};
      if (ranks_.totals) c = ranks_.totals(job_, c);  // every rank's, added up
      // A crash job's writes were checked after the restart (r.durability) instead.
      // A fault job's acknowledged writes were read back for its faults (r.faults) instead; a
      // queue's are its ledger's, which the end check counts.
      if (ranks_.sets_up() && !r_.durability.ran && (job_.faults.empty() || can_.queue))
        r_.verify = a_->verify(job_, c);
    });
    after("metrics", [&] {
      if (!r_.step_metrics) r_.metrics = a_->metrics(r_.elapsed_s);  // a search's row: its own step's (take_metrics)
    });
    if (const queue::Figures* q = can_.queue; q && r_.verify.checked) {
      r_.queue = std::make_shared<const queue::Figures>(*q);
      after("faults", [&] { queue_across(r_.faults, *q, can_.contract); });
    }
    after("server info", [&] {
      Info more = a_->describe();  // adapters may learn more while running (server version, ...)
      for (auto& [k, v] : more) r_.server[k] = v;
    });
    if (!broken_.empty()) {
      r_.verify.checked = true;
      r_.verify.ok = false;
      for (auto& b : broken_) r_.verify.detail += (r_.verify.detail.empty() ? "" : "; ") + b;
    }
  }

  template <class Fn>
  void after(const char* what, Fn&& fn) {
    try {
      fn();
    } catch (const std::exception& e) {
      broken_.push_back(std::string(what) + ": " + e.what());
    } catch (...) {
      broken_.push_back(std::string(what) + ": unknown exception");
    }
  }

  void teardown() {
    try {
      if (a_) a_->teardown();
    } catch (const std::exception& e) {
      r_.warnings.push_back({WarningKind::Teardown, std::string("teardown: ") + e.what()});
    } catch (...) {
      r_.warnings.push_back({WarningKind::Teardown, "teardown: unknown exception"});
    }
  }

  const Job& job_;
  const Factory& make_;
  const bool show_progress_;
  const RankPlan& ranks_;
  JobResult r_;
  std::unique_ptr<FaultProxy> proxy_;  // --fault slow, cut: outlives the adapter and its servers
  std::optional<ProxyRoute> route_;
  std::optional<Job> routed_;
  std::unique_ptr<Adapter> a_;
  Abilities can_;                    // what the adapter can do for the job besides, asked once after its set-up
  std::vector<std::string> broken_;  // what failed after the measurement
};

JobResult run_made(const Job& job, const Factory& make, bool show_progress, const std::string& target,
                   const RankPlan& ranks) {
  return MadeRun(job, make, show_progress, target, ranks).run();
}

}  // namespace

RunResult start_run(const RunOptions& opts) {
  RunResult run;
  run.suite = opts.suite;
  run.command = opts.command;
  run.started_at = utc_now();
  run.context = machine_context();
  return run;
}

std::string run_ended(const RankPlan& ranks) {
  std::string ended = ranks.run_ended ? ranks.run_ended() : "";
  return !ended.empty() ? ended : stop_requested().load() ? "interrupted before it started" : "";
}

JobResult run_guarded(const Job& job, bool tty, const RankPlan& ranks) {
  if (std::string ended = run_ended(ranks); !ended.empty()) {
    JobResult r;
    r.job = job;
    r.target = "-";
    r.state = JobResult::State::Skipped;
    r.message = ended;
    return r;
  }
  try {
    return run_one(job, tty, ranks);
  } catch (const std::exception& e) {  // run_one's own guards missed it: the job failed, the run goes on
    JobResult r;
    r.job = job;
    r.target = "-";
    r.state = JobResult::State::SetupFailed;
    r.message = std::string("internal error: ") + e.what();
    return r;
  }
}

std::vector<int> finish_run(RunResult& run, std::vector<std::vector<JobResult>> runs) {
  std::vector<int> rows;
  auto add = [&](JobResult r) {       // a workload's load phase stands in a row of its own, first
    r.slo = check_slo(r.job.slo, r);  // the job's row, not its load phase
    if (r.load) {
      JobResult l = *r.load;
      l.target = r.target, l.server = r.server, l.paths = r.paths, l.workload = r.workload;
      run.jobs.push_back(std::move(l));
    }
    rows.push_back(static_cast<int>(run.jobs.size()));
    run.jobs.push_back(std::move(r));
  };
  for (auto& rs : runs) {
    if (rs.size() == 1) {
      add(std::move(rs[0]));
      continue;
    }
    std::vector<size_t> order(rs.size());
    for (size_t k = 0; k < order.size(); ++k) order[k] = k;
    std::sort(order.begin(), order.end(), [&](size_t a, size_t b) { return rs[a].rps < rs[b].rps; });
    JobResult median = rs[order[order.size() / 2]];
    median.repeats = std::move(rs);
    add(std::move(median));
  }
  stop_shared_services();
  run.interrupted = stop_requested().load();
  run.signal = stop_signal().load();
  finish_context(run);
  redact_result(run);  // everything printed or written about the run comes from here
  make_notes(run);     // of the redacted figures
  return rows;
}

RunResult run_jobs(const std::vector<Job>& jobs, const RunOptions& opts) {
  RunResult run = start_run(opts);
  bool tty = opts.progress && isatty(STDERR_FILENO);
  const RankPlan& ranks = opts.ranks ? *opts.ranks : one_process();
  // Repeats are interleaved (job 1, job 2, ..., job 1, job 2, ...) so that drift on a noisy
  // machine hits every job alike.
  std::vector<std::vector<JobResult>> runs(jobs.size());
  for (int rep = 0; rep < std::max(1, opts.repeat); ++rep)
    for (size_t i = 0; i < jobs.size(); ++i) {
      if (rep > 0 && !run_ended(ranks).empty()) continue;  // what earlier repeats measured stands
      runs[i].push_back(run_guarded(jobs[i], tty, ranks));
    }
  finish_run(run, std::move(runs));
  return run;
}

}  // namespace mw
