#include "results/merge.h"

#include <algorithm>
#include <climits>
#include <cmath>
#include <ctime>
#include <limits>
#include <nlohmann/json.hpp>
#include <set>

#include "results/notes.h"
#include "results/results.h"
#include "results/writer.h"
#include "util/text.h"

namespace mw {
namespace {

// Parameters that differ between the parts of one run: each part's share (added up) or its own
// stream (the seed: copies started by hand should each have their own).
bool per_part(const std::string& k) {
  return k == "clients" || k == "n" || k == "rate" || k == "threads" || k == "warmup_ops" || k == "timeout_s" ||
         k == "seed";
}

std::string where(const RunResult& run, size_t i, const JobResult& j) {
  return run.label + ": job " + std::to_string(i + 1) + " (" + printable(j.job.name) + ")";
}

// a += b, refused when the sum no longer fits: more than 2^64 ops are not runs mwbench wrote.
void add_to(uint64_t& a, uint64_t b, const std::string& job, const char* what) {
  if (b > std::numeric_limits<uint64_t>::max() - a)
    throw SetupError(printable(job) + ": the runs' " + what + " add up to more than 2^64: not runs mwbench wrote");
  a += b;
}

void check_same(const std::vector<RunResult>& runs) {
  const RunResult& first = runs[0];
  for (auto& run : runs) {
    if (run.jobs.size() != first.jobs.size())
      throw SetupError(run.label + " has " + std::to_string(run.jobs.size()) + " jobs, " + first.label + " has " +
                       std::to_string(first.jobs.size()) + ": not parts of one run");
    for (size_t i = 0; i < run.jobs.size(); ++i) {
      const JobResult &a = first.jobs[i], &b = run.jobs[i];
      if (!b.repeats.empty())
        throw SetupError(where(run, i, b) + " has --repeat runs: merge runs made without --repeat");
      auto differ = [&](const std::string& what, const std::string& x, const std::string& y) {
        throw SetupError(where(run, i, b) + ": " + what + " " + printable(y.substr(0, 80)) + " is not " +
                         printable(x.substr(0, 80)) + " as in " + first.label + ": not the same job");
      };
      if (a.job.name != b.job.name) differ("name", a.job.name, b.job.name);
      if (a.job.adapter != b.job.adapter) differ("adapter", a.job.adapter, b.job.adapter);
      if (a.job.op != b.job.op) differ("op", a.job.op, b.job.op);
      const nlohmann::json pa = job_params(a.job), pb = job_params(b.job);
      std::set<std::string> keys;
      for (auto& [k, v] : pa.items()) keys.insert(k);
      for (auto& [k, v] : pb.items()) keys.insert(k);
      for (auto& k : keys) {
        if (per_part(k)) continue;
        std::string xs = pa.contains(k) ? pa[k].dump() : "(not set)", ys = pb.contains(k) ? pb[k].dump() : "(not set)";
        if (xs != ys) differ("option " + k, xs, ys);
      }
    }
  }
}

// "2026-11-30T06:21:06Z" -> seconds since the epoch; -1 when it is not that shape.
int64_t epoch_of(const std::string& iso) {
  std::tm tm{};
  const char* end = strptime(iso.c_str(), "%Y-%m-%dT%H:%M:%SZ", &tm);
  if (!end || *end) return -1;
  return static_cast<int64_t>(timegm(&tm));
}

// The runs must have measured at the same time, or their sum is not one load. A run's window
// is its start (to the second) and the sum of its jobs' measured times.
std::string overlap_warning(const std::vector<RunResult>& runs) {
  double latest_start = -1e300, earliest_end = 1e300;
  std::string late, early;
  for (auto& run : runs) {
    int64_t t = epoch_of(run.started_at);
    if (t < 0) return "cannot tell whether the runs overlapped: " + run.label + " has no start time";
    double span = 0;
    for (auto& j : run.jobs) span += j.elapsed_s;
    if (static_cast<double>(t) > latest_start) latest_start = static_cast<double>(t), late = run.label;
    if (static_cast<double>(t) + span < earliest_end) earliest_end = static_cast<double>(t) + span, early = run.label;
  }
  if (latest_start <= earliest_end + 1)  // start times have a resolution of one second
    return "";
  return "the runs did not all measure at the same time (" + late + " started " + fmt(latest_start - earliest_end, 0) +
         " s after " + early + " ended): the merged req/s is not one load on the target";
}

void add(std::shared_ptr<Histogram>& into, const std::shared_ptr<Histogram>& h, const std::string& job) {
  if (!h) return;
  if (!into) into = std::make_shared<Histogram>();
  uint64_t n = into->count();
  add_to(n, h->count(), job, "histogram counts");
  into->merge(*h);
}

template <class T>
void add_unique(std::vector<T>& to, const std::vector<T>& from, size_t cap = SIZE_MAX) {
  for (auto& s : from)
    if (to.size() < cap && std::find(to.begin(), to.end(), s) == to.end()) to.push_back(s);
}

// a += b for the clients and threads of a Job (ints).
void add_ints(int& a, int64_t b, const std::string& job, const char* what) {
  if (b < 0 || b > INT_MAX - static_cast<int64_t>(a))
    throw SetupError(printable(job) + ": the runs' " + what + " add up to more than " + std::to_string(INT_MAX) +
                     ": not runs mwbench wrote");
  a += static_cast<int>(b);
}

// Each metric says how it merges (metric.h): counts and rates add up (a part without it adds
// nothing); a fact or a statistic stays when every part shows the same value and unit, and is
// left out (and named) otherwise: a percentile per load machine is not the whole load's.
// The order is the first part's, then what only later parts have.
Metrics merge_metrics(const std::vector<const JobResult*>& parts, std::vector<std::string>& left_out) {
  Metrics out;
  std::set<std::string> seen;
  for (auto* p : parts)
    for (auto& m : p->metrics) {
      if (!seen.insert(m.name).second) continue;
      bool agree = true, same = true;  // agree: every part that has it means the same thing by it
      double sum = 0;
      for (auto* q : parts) {
        const Metric* x = find_metric(q->metrics, m.name);
        if (!x) {
          same = false;
          continue;
        }
        agree &= x->unit == m.unit && x->merge == m.merge;
        same &= x->value == m.value;
        sum += x->value;
      }
      if (agree && m.merge == Metric::Merge::Sum)
        out.push_back({m.name, sum, m.unit, m.merge});
      else if (agree && same)
        out.push_back(m);
      else
        left_out.push_back(m.name);
    }
  return out;
}

// The verdicts of the parts as one: the client's when any part was client-bound (the merged
// figure then measures mwbench too), the one they all give, else "not determined" naming each.
void merge_verdict(Profile& into, const std::vector<const Profile*>& ps, const std::vector<std::string>& labels) {
  auto said = [&](size_t k, bool verdict) {
    return (ps.size() > 1 ? labels[k] + ": " : "") +
           (verdict ? ps[k]->limited_by + " (" + ps[k]->evidence + ")" : ps[k]->evidence);
  };
  for (size_t k = 0; k < ps.size(); ++k)
    if (ps[k]->suspect) {
      into.limited_by = ps[k]->limited_by, into.evidence = said(k, false), into.suspect = true;
      return;
    }
  bool same = true, same_evidence = true;
  for (auto* p : ps) same &= p->limited_by == ps[0]->limited_by, same_evidence &= p->evidence == ps[0]->evidence;
  into.limited_by = same ? ps[0]->limited_by : "not determined";
  if (same && same_evidence) {
    into.evidence = ps[0]->evidence;
    return;
  }
  into.evidence = same ? "" : "the parts differ: ";
  for (size_t k = 0; k < ps.size(); ++k) into.evidence += (k ? "; " : "") + said(k, !same);
}

// The profiles of the parts of one job as one (none unless every part that ran has one): what
// each process counted of itself (mwbench's CPU, its sockets' bytes, its clients' lock waits)
// added up; what every part on one machine sampled of it (a server, a device) taken once per
// host, and its cores once per host; the worst steal; the verdict (merge_verdict). Per op
// figures are then over the whole load's ops.
Profile merge_profiles(const std::vector<RunResult>& runs, const std::vector<const JobResult*>& parts) {
  std::vector<const Profile*> ps;
  std::vector<std::string> labels, hosts;
  for (size_t k = 0; k < parts.size(); ++k) {
    if (!ran(*parts[k])) continue;
    if (!parts[k]->profile.taken) return {};
    ps.push_back(&parts[k]->profile), labels.push_back(runs[k].label), hosts.push_back(runs[k].context.host);
  }
  if (ps.empty()) return {};
  Profile m;
  m.taken = true;
  m.self = ps[0]->self;
  m.self.user_s = m.self.sys_s = m.self.busiest_thread_s = 0;
  m.self.peak_rss_bytes = m.self.ctx_voluntary = m.self.ctx_involuntary = 0;
  m.self.processes = 0;
  std::map<std::string, int> cores;  // per host: the most any part there could use
  std::set<std::string> seen;        // host + server, host + path
  m.cpu_wait_s = 0;                  // summed over every part's threads: -1 when a part did not read it
  for (size_t k = 0; k < ps.size(); ++k) {
    const Profile& p = *ps[k];
    m.cpu_wait_s = p.cpu_wait_s < 0 || m.cpu_wait_s < 0 ? -1 : m.cpu_wait_s + p.cpu_wait_s;
    // the thread runnable longest of all the parts' (-1 when a part did not read it)
    if (p.runnable_wait_s < 0 || (k > 0 && m.runnable_wait_s < 0))
      m.runnable_cpu_s = m.runnable_wait_s = -1;
    else if (k == 0 || p.runnable_cpu_s + p.runnable_wait_s > m.runnable_cpu_s + m.runnable_wait_s)
      m.runnable_cpu_s = p.runnable_cpu_s, m.runnable_wait_s = p.runnable_wait_s;
    m.wall_s = std::max(m.wall_s, p.wall_s);
    m.ops += p.ops;
    cores[hosts[k]] = std::max(cores[hosts[k]], p.cores);
    m.threads += p.threads, m.clients += p.clients;
    m.polled |= p.polled;
    ProcessProfile& s = m.self;
    s.user_s += p.self.user_s, s.sys_s += p.self.sys_s;
    s.busiest_thread_s = std::max(s.busiest_thread_s, p.self.busiest_thread_s);
    s.peak_rss_bytes = std::max(s.peak_rss_bytes, p.self.peak_rss_bytes);
    s.ctx_voluntary += p.self.ctx_voluntary, s.ctx_involuntary += p.self.ctx_involuntary;
    s.processes += p.self.processes;
    for (auto& x : p.servers)
      if (seen.insert(hosts[k] + "\n" + x.name + "\n" + x.how).second) m.servers.push_back(x);
    for (auto& d : p.disks)
      if (seen.insert(hosts[k] + "\n\n" + d.path).second) m.disks.push_back(d);
    m.net_counted |= p.net_counted;
    m.bytes_sent += p.bytes_sent, m.bytes_received += p.bytes_received;
    m.steal_share = std::max(m.steal_share, p.steal_share);
    m.locks_counted |= p.locks_counted;
    m.lock_retries += p.lock_retries, m.lock_wait_s += p.lock_wait_s;
  }
  for (auto& [host, n] : cores) m.cores += n;
  merge_verdict(m, ps, labels);
  return m;
}

JobResult merge_job(const std::vector<RunResult>& runs, size_t i, std::vector<Warning>& warnings) {
  std::vector<const JobResult*> parts;
  for (auto& run : runs) parts.push_back(&run.jobs[i]);
  const JobResult& first = *parts[0];
  JobResult r;
  r.job = first.job;  // its settings; each part's share added up below
  r.job.clients = r.job.threads = 0;
  r.job.n = r.job.warmup_ops = 0;
  r.job.rate = 0;
  r.target = first.target;
  r.server = first.server;
  r.workload = first.workload;
  r.state = JobResult::State::Skipped;
  r.latency = std::make_shared<Histogram>();
  r.latency_failed = std::make_shared<Histogram>();
  bool any_ran = false, verified_all = true, same_skip = true;
  std::vector<std::string> details, skipped;
  std::map<std::string, SideResult> sides;
  std::map<std::string, OpFigures> ops;
  for (size_t k = 0; k < parts.size(); ++k) {
    const JobResult& j = *parts[k];
    JobResult::State s = j.state;
    if (s == JobResult::State::SetupFailed) {
      r.state = s;
      r.message = runs[k].label + ": " + j.message;
    } else if (s == JobResult::State::Interrupted && r.state != JobResult::State::SetupFailed) {
      r.state = s;
    } else if (s == JobResult::State::Done && r.state == JobResult::State::Skipped) {
      r.state = s;
    } else if (s == JobResult::State::Skipped) {
      skipped.push_back(runs[k].label + ": " + j.message);
      same_skip &= j.message == first.message;
    }
    any_ran |= ran(j);
    const std::string& who = first.job.name;
    add_ints(r.job.clients, j.job.clients, who, "clients");
    add_ints(r.job.threads, j.job.threads, who, "threads");
    add_to(r.job.n, j.job.n, who, "n");
    r.job.rate += j.job.rate;
    add_to(r.job.warmup_ops, j.job.warmup_ops, who, "warmup_ops");
    add_to(r.ops_ok, j.ops_ok, who, "ops_ok");
    add_to(r.ops_failed, j.ops_failed, who, "ops_failed");
    add_to(r.ops_not_run, j.ops_not_run, who, "ops_not_run");
    add_to(r.ops_not_sent, j.ops_not_sent, who, "ops_not_sent");
    add_to(r.warmup_ok, j.warmup_ok, who, "warmup_ops_ok");
    add_to(r.bytes, j.bytes, who, "bytes");
    add_to(r.misses, j.misses, who, "misses");
    for (int st = 1; st < kStatusCount; ++st) add_to(r.errors[st], j.errors[st], who, "error counts");
    add_unique(r.error_samples, j.error_samples, 5);
    add_unique(r.paths, j.paths);
    add_unique(r.warnings, j.warnings);
    r.elapsed_s = std::max(r.elapsed_s, j.elapsed_s);
    if (j.per_second.size() > r.per_second.size()) r.per_second.resize(j.per_second.size(), 0);
    for (size_t s2 = 0; s2 < j.per_second.size(); ++s2) add_to(r.per_second[s2], j.per_second[s2], who, "per_second");
    add(r.latency, j.latency, who);
    add(r.latency_failed, j.latency_failed, who);
    add(r.latency_uncorrected, j.latency_uncorrected, who);
    for (auto& p : j.sides) {
      SideResult& side = sides[p.name];
      side.name = p.name;
      add_to(side.ops_ok, p.ops_ok, who, "sides' ops_ok");
      add_to(side.bytes, p.bytes, who, "sides' bytes");
      add(side.latency, p.latency, who);
    }
    for (auto& p : j.per_op) {
      OpFigures& f = ops[p.op];
      f.op = p.op;
      add_to(f.ops_ok, p.ops_ok, who, "per_op ops_ok");
      add_to(f.ops_failed, p.ops_failed, who, "per_op ops_failed");
      add_to(f.misses, p.misses, who, "per_op misses");
      add(f.latency, p.latency, who);
    }
    if (j.verify.checked) {
      r.verify.checked = true;
      verified_all &= j.verify.ok;
      if (std::find(details.begin(), details.end(), j.verify.detail) == details.end())
        details.push_back(j.verify.detail);
    }
  }
  if (r.state == JobResult::State::Skipped && !skipped.empty()) {
    r.message = same_skip ? first.message : "";  // one reason, or each run's
    for (size_t k = 0; !same_skip && k < skipped.size(); ++k) r.message += (k ? "; " : "") + skipped[k];
  }
  if (!any_ran && r.state != JobResult::State::SetupFailed && r.state != JobResult::State::Skipped)
    r.state = JobResult::State::Skipped;
  r.verify.ok = verified_all;
  for (auto& d : details) r.verify.detail += (r.verify.detail.empty() ? "" : "; ") + d;
  r.rps = r.elapsed_s > 0 ? static_cast<double>(r.ops_ok) / r.elapsed_s : 0;
  for (auto& [name, s] : sides) r.sides.push_back(s);
  // A workload's ops in the driver's order (read, update, insert, delete, rmw, scan).
  for (int k = 0; k < kKvOpCount; ++k) {
    auto it = ops.find(std::string(kv_op_name(static_cast<KvOp>(k))));
    if (it != ops.end()) r.per_op.push_back(it->second), ops.erase(it);
  }
  for (auto& [name, f] : ops) r.per_op.push_back(f);
  std::vector<std::string> left_out;
  r.metrics = merge_metrics(parts, left_out);
  if (!left_out.empty()) {
    std::string keys;
    for (auto& k : left_out) keys += (keys.empty() ? "" : ", ") + k;
    warnings.push_back({WarningKind::Merge, printable(first.job.name) + ": " + keys +
                                                " differ per run and cannot be added up: see each run"});
  }
  r.profile = merge_profiles(runs, parts);
  uint64_t counted = r.latency->count();
  if (counted != r.ops_ok)
    throw SetupError(printable(first.job.name) + ": the histograms hold " + std::to_string(counted) +
                     " successful ops, " + "the counts say " + std::to_string(r.ops_ok) +
                     ": not a file mwbench wrote, or one changed since");
  return r;
}

}  // namespace

// What makes a run that one run: when it started, where, how, and what each job measured. Two
// files with the same identity are one run given twice (a copy, or the same file): adding them
// would double it.
std::string run_identity(const RunResult& run) {
  std::string id = run.started_at + "\n" + run.context.host + "\n" + run.command + "\n" + run.suite;
  for (auto& j : run.jobs)
    id += "\n" + j.job.name + " " + std::to_string(j.ops_ok) + " " + std::to_string(j.ops_failed) + " " +
          fmt(j.elapsed_s, 9) + " " + (j.latency ? std::to_string(static_cast<uint64_t>(j.latency->sum())) : "-");
  return id;
}

void check_distinct_runs(const std::vector<RunResult>& runs) {
  std::map<std::string, const RunResult*> seen;
  for (auto& run : runs) {
    auto [it, fresh] = seen.emplace(run_identity(run), &run);
    if (!fresh)
      throw SetupError(run.label + " is the same run as " + it->second->label + " (started " +
                       printable(run.started_at) + " on " + printable(run.context.host) +
                       ", the same figures): merging it twice would count it twice");
  }
}

Merged merge_runs(const std::vector<RunResult>& runs, const std::string& command) {
  if (runs.empty()) throw SetupError("nothing to merge");
  check_same(runs);
  Merged m;
  RunResult& run = m.run;
  run.suite = runs[0].suite;
  run.command = command;
  run.started_at = runs[0].started_at;
  for (auto& r : runs) {
    run.started_at = std::min(run.started_at, r.started_at);  // ISO 8601 UTC sorts as text
    run.interrupted |= r.interrupted;
  }
  run.context = runs[0].context;  // the first run's machine; every run's paths and warnings
  run.context.paths.clear();
  run.context.warnings.clear();
  for (auto& r : runs) {
    for (auto& [p, fs] : r.context.paths) run.context.paths[p] = fs;
    add_unique(run.context.warnings, r.context.warnings);
  }
  for (size_t i = 0; i < runs[0].jobs.size(); ++i) run.jobs.push_back(merge_job(runs, i, m.warnings));
  // Every process that measured: the ranks a run already lists (an MPI run), or the run itself.
  for (auto& r : runs) {
    if (!r.ranks.empty()) {
      for (auto k : r.ranks) {
        if (k.source.empty()) k.source = r.label;
        k.rank = static_cast<int>(run.ranks.size());
        run.ranks.push_back(std::move(k));
      }
      continue;
    }
    RankContext k;
    k.rank = static_cast<int>(run.ranks.size());
    k.host = r.context.host, k.cpu = r.context.cpu, k.kernel = r.context.kernel;
    k.cores = r.context.cores;
    k.memory_bytes = r.context.memory_bytes;
    k.started_at = r.started_at;
    k.source = r.label;
    k.warnings = r.context.warnings;
    for (auto& j : r.jobs) k.clients.push_back(j.job.clients);
    run.ranks.push_back(std::move(k));
  }
  if (std::string w = overlap_warning(runs); !w.empty())
    m.warnings.insert(m.warnings.begin(), {WarningKind::NotSimultaneous, w});
  run.context.warnings.insert(run.context.warnings.end(), m.warnings.begin(), m.warnings.end());
  make_notes(run);  // of the merged figures
  return m;
}

}  // namespace mw
