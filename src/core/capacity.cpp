#include "capacity.h"

#include <algorithm>
#include <cmath>
#include <thread>

#include "ranks.h"
#include "series.h"
#include "slo.h"
#include "stop.h"
#include "text.h"

namespace mw {

namespace {

constexpr int kMaxSearchSteps = 24;       // bracketing and bisection together
constexpr double kStartShare = 0.8;       // the first step offers this share of the probe's rate
constexpr double kGrow = 1.25, kShrink = 0.5;
constexpr double kFloorShare = 1.0 / 1024;  // below this share of the probe's rate: no rate passes

std::string rate(double r) { return fmt(r, r < 100 ? 2 : 1); }
std::string ms(double ns) { return fmt(ns / 1e6, 3) + " ms"; }

// Why the step failed: every bound it missed, joined.
std::string failures(const JobResult& r, double offered, const StepRules& rules) {
  std::vector<std::string> why;
  for (auto& v : check_slo(rules.slo, r).violations) why.push_back(v.text);
  if (r.rps < kAchievedShare * offered)
    why.push_back("achieved " + rate(r.rps) + " of " + rate(offered) + " req/s offered (" +
                  fmt(offered > 0 ? r.rps / offered * 100 : 0, 1) + "%, wanted at least " +
                  fmt(kAchievedShare * 100, 0) + "%)");
  if (const uint64_t bad = r.ops_failed + r.ops_not_run; bad > 0) {
    std::string kinds;
    for (int k = 1; k < kStatusCount; ++k)
      if (r.errors[k]) kinds += (kinds.empty() ? "" : ", ") + std::string(status_name(static_cast<Status>(k))) + " " +
                                std::to_string(r.errors[k]);
    why.push_back(std::to_string(bad) + " ops failed or not run" + (kinds.empty() ? "" : " (" + kinds + ")"));
  }
  if (std::string w = settle_warning(r.series, r.series_interval_s, r.elapsed_s); !w.empty())
    why.push_back(w.substr(0, w.find(':')) + ": it never settled");
  if (r.verify.checked && !r.verify.ok) why.push_back("verification failed: " + r.verify.detail);
  std::string out;
  for (auto& w : why) out += (out.empty() ? "" : "; ") + w;
  return out;
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

}  // namespace

double lag_bound_ns(const std::string& slo) {
  double tightest = 0;
  for (const SloTerm& t : parse_slo(slo))
    if (double b = slo_latency_bound(t); b > 0) tightest = tightest > 0 ? std::min(tightest, b) : b;
  return std::max(kMinLagBoundNs, tightest / 4);
}

CapacityStep judge_step(const JobResult& r, double offered, const std::string& kind, const StepRules& rules) {
  CapacityStep s;
  s.kind = kind;
  s.offered = offered;
  s.achieved = r.rps;
  if (r.latency && r.latency->count()) {
    s.p50_ns = static_cast<double>(r.latency->percentile(50));
    s.p99_ns = static_cast<double>(r.latency->percentile(99));
    s.p999_ns = static_cast<double>(r.latency->percentile(99.9));
  }
  s.errors = r.ops_failed + r.ops_not_run;
  if (r.send_lag && r.send_lag->count()) s.lag_p99_ns = static_cast<double>(r.send_lag->percentile(99));
  s.cpu = r.elapsed_s > 0 ? r.own_cpu_s / r.elapsed_s : 0;
  s.loop_busy = r.loop_busy;
  if (offered <= 0) return s;  // the probe: an estimate, not judged
  if (r.state == JobResult::State::Interrupted) {
    s.verdict = "fail";
    s.why = "interrupted";
    return s;
  }
  if (std::string w = client_limit(s, r.loop_threads, rules); !w.empty()) {
    s.verdict = "client-bound";
    s.why = w;
    return s;
  }
  s.why = failures(r, offered, rules);
  s.verdict = s.why.empty() ? "pass" : "fail";
  return s;
}

Capacity search_capacity(Capacity c, int repeat, const StepFn& measure) {
  auto stopped = [&] {
    if (!stop_requested().load()) return false;
    c.verdict = "interrupted";
    return true;
  };
  auto client_bound = [&](const CapacityStep& s) {
    c.verdict = "client-bound";
    c.first_fail = s.offered;
    c.fail_why = s.why;
    c.advice = "the figures would be mwbench's, not the target's: give its clients more threads (--threads), "
               "more clients (-c), or more load machines (mpirun), then search again";
  };
  const CapacityStep probe = measure(0, "probe");
  c.steps.push_back(probe);
  if (stopped()) return c;
  if (probe.achieved <= 0) {
    c.verdict = "none";
    c.fail_why = "the closed-loop probe completed no op" + (probe.why.empty() ? "" : ": " + probe.why);
    return c;
  }
  double lo = 0, hi = 0;  // the highest rate that passed, the lowest that failed (0: none yet)
  double r = kStartShare * probe.achieved;
  for (int n = 0; n < kMaxSearchSteps; ++n) {
    if (lo > 0 && hi > 0 && hi - lo <= c.precision * lo) break;
    const CapacityStep s = measure(r, "search");
    c.steps.push_back(s);
    if (stopped()) return c;
    if (s.verdict == "client-bound") {
      c.max_rps = lo;
      client_bound(s);
      return c;
    }
    if (s.verdict == "pass") lo = std::max(lo, r);
    else if (hi == 0 || r < hi) hi = r, c.fail_why = s.why;
    if (hi == 0) r = r * kGrow;            // bracketing upwards: no failure yet
    else if (lo == 0) r = r * kShrink;     // bracketing downwards: no pass yet
    else r = (lo + hi) / 2;                // bisection
    if (lo == 0 && r < kFloorShare * probe.achieved) break;
  }
  c.first_fail = hi;
  if (lo == 0) {
    c.verdict = "none";
    return c;
  }
  c.max_rps = lo;
  c.verdict = "found";
  for (int k = 0; k < repeat; ++k) {
    const CapacityStep s = measure(lo, "repeat");
    c.steps.push_back(s);
    if (stopped()) return c;
    if (s.verdict == "client-bound") {
      client_bound(s);
      return c;
    }
    c.repeat_min = c.repeats == 0 ? s.achieved : std::min(c.repeat_min, s.achieved);
    c.repeat_max = std::max(c.repeat_max, s.achieved);
    ++c.repeats;
    c.repeats_passed += s.verdict == "pass";
  }
  return c;
}

JobResult find_capacity(const Job& job, Adapter& adapter, const Workload* workload, bool judge_cpu,
                        const ProgressFn& progress) {
  if (rank_plan().active())
    throw SetupError("--find-max runs in one process: its steps are not yet spread over MPI ranks (run it without "
                     "mpirun)");
  StepRules rules{job.find_max, lag_bound_ns(job.find_max), judge_cpu,
                  std::max(1, static_cast<int>(std::thread::hardware_concurrency()))};
  Stepper stepper(job, adapter, progress, workload);
  const double warmup = job.warmup_s > 0 ? job.warmup_s : job.step_s / 5;
  std::vector<JobResult> kept;  // each step's figures: the reported row is one of them
  auto measure = [&](double rate, const std::string& kind) {
    JobResult r = stepper.step(rate, job.step_s, warmup);
    CapacityStep s = judge_step(r, rate, kind, rules);
    kept.push_back(std::move(r));
    return s;
  };
  Capacity plan;
  plan.slo = job.find_max;
  plan.precision = job.find_precision;
  plan.step_s = job.step_s;
  plan.lag_bound_ns = rules.lag_bound_ns;
  auto cap = std::make_shared<Capacity>(search_capacity(plan, job.find_repeat, measure));
  // The row: the median repeat at the found rate, or the step that ended the search.
  size_t pick = kept.size() - 1;
  std::vector<size_t> repeats;
  for (size_t k = 0; k < cap->steps.size() && k < kept.size(); ++k)
    if (cap->steps[k].kind == "repeat" && cap->steps[k].verdict != "client-bound") repeats.push_back(k);
  if (!repeats.empty()) {
    std::sort(repeats.begin(), repeats.end(), [&](size_t a, size_t b) { return kept[a].rps < kept[b].rps; });
    pick = repeats[repeats.size() / 2];
  }
  JobResult out = std::move(kept[pick]);
  out.job = job;
  out.capacity = std::move(cap);
  if (stop_requested().load()) out.state = JobResult::State::Interrupted;
  return out;
}

}  // namespace mw
