#include "core/rounds.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>

#include "api/stop.h"
#include "results/results.h"
#include "util/text.h"

namespace mw {

std::string alternative_label(size_t i) {
  std::string s(1, static_cast<char>('A' + i % 26));
  return i < 26 ? s : s + std::to_string(i / 26 + 1);
}

DecideResult plan_decision(const std::vector<std::string>& names, const DecideOptions& o) {
  if (names.size() < 2)
    throw SetupError("a decision needs two alternatives or more, got " + std::to_string(names.size()) +
                     " (give a list, more jobs or another command: the first is the baseline)");
  if (!(o.settings.margin > 0 && o.settings.margin < 1))
    throw SetupError("--margin expects a percentage above 0% and below 100% (5%), got " +
                     fmt(o.settings.margin * 100, 2) + "%");
  if (o.settings.max_rounds < decide::kMinRounds || o.settings.max_rounds > decide::kMaxRounds)
    throw SetupError("--max-rounds expects " + std::to_string(decide::kMinRounds) + " to " +
                     std::to_string(decide::kMaxRounds) + " (a decision looks first after round " +
                     std::to_string(decide::kMinRounds) + "), got " + std::to_string(o.settings.max_rounds));
  DecideResult d;
  d.metric = o.metric;
  d.pattern = o.pattern;
  d.higher_is_better = o.higher_is_better;
  d.settings = o.settings;
  d.settings.min_rounds = decide::kMinRounds;
  d.max_time_s = o.max_time_s;
  for (size_t i = 0; i < names.size(); ++i) d.alternatives.push_back({alternative_label(i), names[i], "", -1});
  auto find = [&](const std::string& who, const std::string& option) {
    for (size_t i = 0; i < d.alternatives.size(); ++i)
      if (d.alternatives[i].label == who || d.alternatives[i].name == who) return static_cast<int>(i);
    std::string known;
    for (auto& a : d.alternatives) known += (known.empty() ? "" : ", ") + a.label + " (" + a.name + ")";
    throw SetupError(option + ": '" + who + "' is not an alternative: " + known);
  };
  if (!o.baseline.empty()) d.baseline = find(o.baseline, "--baseline");
  d.questions.assign(names.size(), {});
  for (const std::string& e : o.expect) {
    auto [who, q] = decide::parse_expect(e);
    const int a = find(who, "--expect " + e);
    if (a == d.baseline)
      throw SetupError("--expect " + e + ": " + who + " is the baseline (its ratio is 1 by definition)");
    d.questions[static_cast<size_t>(a)].push_back(q);
  }
  if (o.noninferior > 0)
    for (size_t a = 0; a < names.size(); ++a)
      if (static_cast<int>(a) != d.baseline) d.questions[a].push_back({true, o.noninferior});
  d.seed = o.seed ? o.seed : static_cast<uint64_t>(std::chrono::steady_clock::now().time_since_epoch().count());
  return d;
}

namespace {
constexpr size_t kFailedStart = 3;  // an alternative failed in each of its first this many runs ends the rounds
}  // namespace

void run_rounds(DecideResult& d, const RunAlternative& run, const std::function<void(const DecideResult&)>& progress) {
  const decide::Schedule schedule(d.settings);
  decide::RoundOrder order(static_cast<int>(d.alternatives.size()), d.seed);
  const auto start = std::chrono::steady_clock::now();
  auto elapsed = [&] { return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(); };
  d.stopped.clear();
  decide_rounds(d, schedule);  // a decision of no rounds yet: each alternative undecided
  while (d.stopped.empty()) {
    const int done = static_cast<int>(d.rounds.size());
    if (done >= d.settings.max_rounds) {
      d.stopped = "max-rounds";
      break;
    }
    // A round that would end past the budget is not begun (rounds take about the same time).
    if (d.max_time_s > 0 && done > 0 && elapsed() * (done + 1) / done > d.max_time_s) {
      d.stopped = "max-time";
      break;
    }
    DecisionRound round;
    round.order = order.next();
    round.runs.resize(d.alternatives.size());
    for (int a : round.order) {
      if (stop_requested().load()) {
        round.runs[static_cast<size_t>(a)].why = "interrupted";
        continue;
      }
      RoundRun r = run(a);
      round.runs[static_cast<size_t>(a)] = std::move(r.run);
      if (!r.fatal.empty() && d.stopped.empty()) {
        d.stopped = "failed";
        d.stop_detail = r.fatal;
      }
    }
    d.rounds.push_back(std::move(round));
    decide_rounds(d, schedule);
    for (size_t a = 0; a < d.alternatives.size() && d.stopped.empty() && d.rounds.size() == kFailedStart; ++a)
      if (std::none_of(d.rounds.begin(), d.rounds.end(), [&](const DecisionRound& k) { return k.runs[a].ok; })) {
        d.stopped = "failed";  // it would fail in every round
        d.stop_detail = d.alternatives[a].label + " (" + d.alternatives[a].name + ") failed in each of its first " +
                        std::to_string(kFailedStart) + " runs: " + d.rounds.back().runs[a].why;
      }
    if (stop_requested().load())
      d.stopped = "interrupted";
    else if (d.stopped.empty() && all_settled(d))
      d.stopped = "decided";
    if (progress) progress(d);
  }
  d.elapsed_s = elapsed();
}

void show_progress(const DecideResult& d, bool tty) {
  static bool shown = false;
  if (!tty) {
    if (shown) std::fprintf(stderr, "\r\033[K");
    shown = false;
    return;
  }
  std::string line = "round " + std::to_string(d.rounds.size()) + ":";
  for (const Decision& x : d.decisions)
    line += " " + d.alternatives[static_cast<size_t>(x.alternative)].label + " " + fmt(x.estimate.ratio, 3) + "x " +
            decide::verdict_name(x.estimate.verdict);
  std::fprintf(stderr, "\r\033[K%s", printable(line).c_str());
  std::fflush(stderr);
  shown = true;
}

DecisionRun decision_run(const JobResult& r, const std::string& metric) {
  DecisionRun x;
  x.wall_s = r.elapsed_s;
  const Profile& p = r.profile;
  if (p.taken) {
    x.steal = p.steal_share;
    x.client_bound = p.suspect;
    double servers = 0;
    for (auto& s : p.servers) servers += s.cpu_s();
    x.cpu_self = p.per_op(p.self.cpu_s());
    x.cpu_servers = p.servers.empty() ? -1 : p.per_op(servers);
  }
  if (r.state != JobResult::State::Done) {
    x.why = std::string(state_name(r.state)) + (r.message.empty() ? "" : ": " + r.message);
    return x;
  }
  if (r.failed_once()) {
    x.why = r.ops_failed || r.ops_not_run
                ? std::to_string(r.ops_failed) + " ops failed, " + std::to_string(r.ops_not_run) + " not run"
                : "verification failed: " + r.verify.detail;
    return x;
  }
  if (metric == "p99")
    x.value = latency_at(r, 99);
  else if (metric == "cpu")
    x.value = p.taken && x.cpu_self >= 0 ? x.cpu_self + std::max(0.0, x.cpu_servers) : 0;
  else
    x.value = r.rps;
  x.ok = x.value > 0;
  if (!x.ok) x.why = "no " + metric + " figure";
  return x;
}

RunResult run_decision(const std::vector<Job>& jobs, const RunOptions& ro, const DecideOptions& o) {
  std::vector<std::string> names;
  for (const Job& j : jobs) names.push_back(j.name);
  auto d = std::make_shared<DecideResult>(plan_decision(names, o));
  for (size_t i = 0; i < jobs.size(); ++i) {
    const AdapterSpec* spec = find_adapter(jobs[i].adapter);
    d->alternatives[i].reset = spec && !spec->reset.empty() ? spec->reset : kDefaultReset;
    if (o.drop_caches) d->alternatives[i].reset += "; the page cache dropped (--drop-caches)";
  }
  RunResult run = start_run(ro);
  const bool tty = ro.progress && isatty(STDERR_FILENO);
  std::vector<std::vector<JobResult>> runs(jobs.size());
  run_rounds(
      *d,
      [&](int a) {
        const Job& job = jobs[static_cast<size_t>(a)];
        RoundRun out;
        if (o.drop_caches) try {
            drop_page_cache();
          } catch (const SetupError& e) {
            out.run.why = out.fatal = e.what();
            return out;
          }
        runs[static_cast<size_t>(a)].push_back(run_guarded(job, tty));
        const JobResult& r = runs[static_cast<size_t>(a)].back();
        out.run = decision_run(r, o.metric);
        if (r.state == JobResult::State::SetupFailed ||
            (r.state == JobResult::State::Skipped && !stop_requested().load()))
          out.fatal = job.name + ": " + out.run.why;  // it would fail in every round
        return out;
      },
      [&](const DecideResult& now) { show_progress(now, tty); });
  show_progress(*d, false);
  for (size_t i = 0; i < jobs.size(); ++i)  // a job a stop left without any run
    if (runs[i].empty()) runs[i].push_back(run_guarded(jobs[i], false));
  run.decide = d;
  std::vector<int> rows = finish_run(run, std::move(runs));
  for (size_t i = 0; i < rows.size(); ++i) d->alternatives[i].job = rows[i];
  if (o.gate) {
    run.gate = decision_gate_text(*d);
    run.gate_failed = decision_exit_code(*d, true) == 3;
  }
  return run;
}

void drop_page_cache() {
  ::sync();
  int fd = ::open("/proc/sys/vm/drop_caches", O_WRONLY | O_CLOEXEC);
  if (fd < 0 || ::write(fd, "3\n", 2) != 2) {
    const int e = errno;
    if (fd >= 0) ::close(fd);
    throw SetupError(std::string("--drop-caches: cannot write /proc/sys/vm/drop_caches: ") + std::strerror(e) +
                     " (it needs root)");
  }
  ::close(fd);
}

std::string decision_gate_text(const DecideResult& d) {
  std::string failed;
  for (const Decision& x : d.decisions) {
    const std::string& label = d.alternatives[static_cast<size_t>(x.alternative)].label;
    if (x.estimate.verdict == decide::Verdict::Slower) failed += (failed.empty() ? "" : "; ") + label + " slower";
    for (const Asked& q : x.asked)
      if (q.outcome != decide::Outcome::Met)
        failed += (failed.empty() ? "" : "; ") + label + decide::question_text(q.question) + " " +
                  decide::outcome_name(q.outcome);
  }
  return failed.empty() ? "decision gate passed\n" : "decision gate FAILED: " + failed + "\n";
}

int decision_exit_code(const DecideResult& d, bool gate) {
  return gate && decision_gate_text(d).rfind("decision gate FAILED", 0) == 0 ? 3 : 0;
}

}  // namespace mw
