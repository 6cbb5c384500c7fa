#include "runner.h"

#include <unistd.h>

#include <algorithm>

#include <chrono>
#include <cstdio>
#include <ctime>

#include "driver.h"
#include "services.h"
#include "sysinfo.h"

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
  if (p.total && rate > 0) eta = static_cast<double>(p.total - std::min(p.done, p.total)) / rate;
  else if (p.duration_s > 0) eta = std::max(0.0, p.duration_s - p.elapsed_s);
  std::string done = p.total ? std::to_string(p.done) + "/" + std::to_string(p.total) : std::to_string(p.done);
  std::fprintf(stderr, "\r\033[K%s: %s  %.0f ops/s  %llu errors  ETA %.0fs", job.name.c_str(), done.c_str(), rate,
               static_cast<unsigned long long>(p.errors), eta);
  std::fflush(stderr);
}

}  // namespace

JobResult run_one(const Job& job, bool show_progress) {
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
    std::string why = spec->unavailable(job);
    if (!why.empty()) {
      r.state = JobResult::State::Skipped;
      r.message = why;
      return r;
    }
  }
  std::unique_ptr<Adapter> a;
  try {
    a = spec->make(job);
    r.target = a->target();
    r.paths = a->paths();
    a->prepare(job);
    r.target = a->target();  // a managed server's port is known only now
    r.server = a->describe();
    for (auto& w : a->warnings()) r.warnings.push_back(w);
    measure(job, *a, r, show_progress ? ProgressFn(print_progress) : ProgressFn());
    if (show_progress) std::fprintf(stderr, "\r\033[K");
    Counts c{r.ops_ok, r.ops_failed, r.ops_not_run, r.warmup_ok};
    r.verify = a->verify(job, c);
    r.metrics = a->metrics(r.elapsed_s);
    Info after = a->describe();  // adapters may learn more while running (server version, ...)
    for (auto& [k, v] : after) r.server[k] = v;
    a->teardown();
  } catch (const std::exception& e) {
    if (show_progress) std::fprintf(stderr, "\r\033[K");
    r.state = JobResult::State::SetupFailed;
    r.message = e.what();
    if (a) {
      try {
        a->teardown();
      } catch (...) {
      }
    }
  }
  return r;
}

RunResult run_jobs(const std::vector<Job>& jobs, const RunOptions& opts) {
  RunResult run;
  run.suite = opts.suite;
  run.command = opts.command;
  run.started_at = utc_now();
  run.context = machine_context();
  bool tty = opts.progress && isatty(STDERR_FILENO);
  // Repeats are interleaved (job 1, job 2, ..., job 1, job 2, ...) so that drift on a noisy
  // machine hits every job alike.
  std::vector<std::vector<JobResult>> runs(jobs.size());
  for (int rep = 0; rep < std::max(1, opts.repeat); ++rep)
    for (size_t i = 0; i < jobs.size(); ++i) {
      if (stop_requested().load()) {
        if (rep > 0) continue;  // what earlier repeats measured stands
        JobResult r;
        r.job = jobs[i];
        r.target = "-";
        r.state = JobResult::State::Skipped;
        r.message = "interrupted before it started";
        runs[i].push_back(std::move(r));
        continue;
      }
      runs[i].push_back(run_one(jobs[i], tty));
    }
  for (auto& rs : runs) {
    if (rs.size() == 1) {
      run.jobs.push_back(std::move(rs[0]));
      continue;
    }
    std::vector<size_t> order(rs.size());
    for (size_t k = 0; k < order.size(); ++k) order[k] = k;
    std::sort(order.begin(), order.end(), [&](size_t a, size_t b) { return rs[a].rps < rs[b].rps; });
    JobResult median = rs[order[order.size() / 2]];
    median.repeats = std::move(rs);
    run.jobs.push_back(std::move(median));
  }
  stop_shared_services();
  run.interrupted = stop_requested().load();
  finish_context(run);
  redact_result(run);  // everything printed or written about the run comes from here
  return run;
}

int exit_code(const RunResult& r) {
  if (r.interrupted) return 130;
  int code = 0;
  for (auto& j : r.jobs) {
    if (j.state == JobResult::State::SetupFailed) return 2;
    if (j.failed()) code = 1;
  }
  return code;
}

}  // namespace mw
