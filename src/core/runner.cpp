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
        [](const Job& j, WorkloadPtr) -> std::unique_ptr<Adapter> {
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
      job, [&make](const Job& j, WorkloadPtr) { return make(j); }, show_progress, "-");
}

namespace {

JobResult run_made(const Job& job, const Factory& make, bool show_progress, const std::string& target,
                   const RankPlan& ranks) {
  JobResult r;
  r.job = job;
  r.target = target;
  std::unique_ptr<FaultProxy> proxy;  // --fault slow, cut: outlives the adapter and its servers
  std::optional<ProxyRoute> route;
  std::optional<Job> routed;
  std::unique_ptr<Adapter> a;
  Abilities can;  // what the adapter can do for the job besides, asked once after its set-up
  auto teardown = [&] {
    try {
      if (a) a->teardown();
    } catch (const std::exception& e) {
      r.warnings.push_back({WarningKind::Teardown, std::string("teardown: ") + e.what()});
    } catch (...) {
      r.warnings.push_back({WarningKind::Teardown, "teardown: unknown exception"});
    }
  };
  // Set-up: only what fails before the first measured op makes a set-up error.
  try {
    begin_service_claims();  // the servers this job's set-up starts or shares are its own (profile)
    // The job's workload, built once here: the adapter, the driver and the result share it.
    const AdapterSpec* spec = find_adapter(job.adapter);
    const WorkloadPtr wl = spec ? workload_of(job, *spec) : nullptr;
    if (const FaultSpec* f = proxy_fault(job.faults); f && spec) {
      if (ranks.active())
        throw SetupError("--fault " + f->text + " goes through a proxy on this machine: run it without mpirun");
      proxy = std::make_unique<FaultProxy>(job.timeout_s);
      route.emplace(proxy.get());
      routed = through(job, *spec, *proxy);
    }
    const Job& used = routed ? *routed : job;
    {
      OpeningScope opening;  // a stop ends a slow connect, handshake or first request of the set-up
      a = make(used, wl);
      r.target = a->target();
      r.paths = a->paths();
      if (ranks.sets_up()) a->prepare(used);  // under MPI: rank 0 alone
      if (ranks.after_setup) ranks.after_setup(used);
      r.target = a->target();  // a managed server's port is known only now
      r.server = a->describe();
      can = a->abilities(used);
      r.contract = can.contract;
    }
    if (proxy) {
      if (proxy->routes() == 0)
        throw SetupError("--fault " + proxy_fault(job.faults)->text + ": no connection of " + job.adapter + " " +
                         job.op + " goes through mwbench's proxy (no TCP server started, none named by --host)");
      r.server["proxy"] = proxy->describe();
    }
    for (auto& w : a->warnings()) r.warnings.push_back(w);
    if (wl) r.workload = wl->text();
    const ProgressFn progress = show_progress ? ProgressFn(print_progress) : ProgressFn();
    // --find-max: mwbench's CPU says nothing of its generator when the target runs inside it
    JobResult m = job.find_max.empty() ? measure(used, *a, can, progress, wl.get(), ranks)
                                       : find_capacity(used, *a, can, wl.get(),
                                                       !spec || spec->target != TargetKind::Local, progress, ranks);
    m.job = job;  // as given: not the proxy's --host and --port
    // The figures are the driver's; what the adapter said of the target before it ran is ours.
    m.target = r.target;
    m.paths = std::move(r.paths);
    m.server = std::move(r.server);
    m.contract = std::move(r.contract);
    m.workload = std::move(r.workload);
    m.warnings.insert(m.warnings.begin(), r.warnings.begin(), r.warnings.end());
    r = std::move(m);
    if (show_progress) std::fprintf(stderr, "\r\033[K");
  } catch (const std::exception& e) {
    if (show_progress) std::fprintf(stderr, "\r\033[K");
    // Stopped during set-up (a preload, a server's start-up, a call cut short by the signal):
    // interrupted, not a set-up error.
    bool stopped = stop_requested().load() || dynamic_cast<const Interrupted*>(&e);
    r.state = stopped ? JobResult::State::Interrupted : JobResult::State::SetupFailed;
    r.message = e.what();
    if (!stopped && ranks.setup_failed) ranks.setup_failed(job, r.message);  // ends every rank
    if (!r.latency) r.latency = std::make_shared<Histogram>();
    if (!r.latency_failed) r.latency_failed = std::make_shared<Histogram>();
    if (a) {
      try {
        r.target = a->target();  // a managed server's port, when it got that far
      } catch (...) {}
    }
    teardown();
    return r;
  }
  // After the measurement (a server may have died meanwhile): what fails here fails the
  // job's verification; the figures stand.
  std::vector<std::string> broken;
  auto after = [&](const char* what, auto&& fn) {
    try {
      fn();
    } catch (const std::exception& e) {
      broken.push_back(std::string(what) + ": " + e.what());
    } catch (...) {
      broken.push_back(std::string(what) + ": unknown exception");
    }
  };
  after("verify", [&] {
    Counts c{r.ops_ok, r.ops_failed, r.ops_not_run, r.warmup_ok};
    if (ranks.totals) c = ranks.totals(job, c);  // every rank's, added up
    // A crash job's writes were checked after the restart (r.durability) instead.
    // A fault job's acknowledged writes were read back for its faults (r.faults) instead; a
    // queue's are its ledger's, which the end check counts.
    if (ranks.sets_up() && !r.durability.ran && (job.faults.empty() || can.queue)) r.verify = a->verify(job, c);
  });
  after("metrics", [&] {
    if (!r.step_metrics) r.metrics = a->metrics(r.elapsed_s);  // a search's row: its own step's (take_metrics)
  });
  if (const queue::Figures* q = can.queue; q && r.verify.checked) {
    r.queue = std::make_shared<const queue::Figures>(*q);
    after("faults", [&] { queue_across(r.faults, *q, can.contract); });
  }
  after("server info", [&] {
    Info more = a->describe();  // adapters may learn more while running (server version, ...)
    for (auto& [k, v] : more) r.server[k] = v;
  });
  if (!broken.empty()) {
    r.verify.checked = true;
    r.verify.ok = false;
    for (auto& b : broken) r.verify.detail += (r.verify.detail.empty() ? "" : "; ") + b;
  }
  teardown();
  return r;
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
