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
#include "results/tables.h"
#include "results/writer.h"
#include "util/text.h"

namespace mw {
namespace fields {

// a += b, refused when the sum no longer fits: more than 2^64 ops are not runs mwbench wrote.
void Merging::add(uint64_t& a, uint64_t b, const std::string& what) const {
  if (b > std::numeric_limits<uint64_t>::max() - a)
    throw SetupError(printable(job) + ": the runs' " + what + " add up to more than 2^64: not runs mwbench wrote");
  a += b;
}

// a += b for the clients and threads of a Job (ints).
void Merging::add(int& a, int64_t b, const std::string& what) const {
  if (b < 0 || b > INT_MAX - static_cast<int64_t>(a))
    throw SetupError(printable(job) + ": the runs' " + what + " add up to more than " + std::to_string(INT_MAX) +
                     ": not runs mwbench wrote");
  a += static_cast<int>(b);
}

}  // namespace fields

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

template <class T>
void add_unique(std::vector<T>& to, const std::vector<T>& from, size_t cap = SIZE_MAX) {
  for (auto& s : from)
    if (to.size() < cap && std::find(to.begin(), to.end(), s) == to.end()) to.push_back(s);
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
  std::map<std::string, int> cores;  // per host: the most any part there could use
  std::set<std::string> seen;        // host + server, host + path
  m.cpu_wait_s = 0;                  // summed over every part's threads: -1 when a part did not read it
  for (size_t k = 0; k < ps.size(); ++k) {
    const Profile& p = *ps[k];
    profile_table().merge(m, p, fields::Merging{"", k});  // each field's rule (tables_parts.cpp)
    m.cpu_wait_s = p.cpu_wait_s < 0 || m.cpu_wait_s < 0 ? -1 : m.cpu_wait_s + p.cpu_wait_s;
    // the thread runnable longest of all the parts' (-1 when a part did not read it)
    if (p.runnable_wait_s < 0 || (k > 0 && m.runnable_wait_s < 0))
      m.runnable_cpu_s = m.runnable_wait_s = -1;
    else if (k == 0 || p.runnable_cpu_s + p.runnable_wait_s > m.runnable_cpu_s + m.runnable_wait_s)
      m.runnable_cpu_s = p.runnable_cpu_s, m.runnable_wait_s = p.runnable_wait_s;
    cores[hosts[k]] = std::max(cores[hosts[k]], p.cores);
    for (auto& x : p.servers)
      if (seen.insert(hosts[k] + "\n" + x.name + "\n" + x.how).second) m.servers.push_back(x);
    for (auto& d : p.disks)
      if (seen.insert(hosts[k] + "\n\n" + d.path).second) m.disks.push_back(d);
  }
  for (auto& [host, n] : cores) m.cores += n;
  merge_verdict(m, ps, labels);
  return m;
}

// The state of a job of several parts: a part's failed set-up (named), else an interruption,
// else done when a part ran it; skipped when every part skipped it.
void merge_state(JobResult& r, const JobResult& part, const std::string& label) {
  using State = JobResult::State;
  if (part.state == State::SetupFailed) {
    r.state = part.state;
    r.message = label + ": " + part.message;
  } else if ((part.state == State::Interrupted && r.state != State::SetupFailed) ||
             (part.state == State::Done && r.state == State::Skipped)) {
    r.state = part.state;
  }
}

// A workload's ops in the driver's order (read, update, insert, delete, rmw, scan), then any other
// by name; the sides by name.
void order_figures(JobResult& r) {
  auto rank = [](const OpFigures& o) {
    for (int k = 0; k < kKvOpCount; ++k)
      if (o.op == kv_op_name(static_cast<KvOp>(k))) return k;
    return kKvOpCount;
  };
  std::stable_sort(r.per_op.begin(), r.per_op.end(), [&](const OpFigures& a, const OpFigures& b) {
    return rank(a) != rank(b) ? rank(a) < rank(b) : rank(a) == kKvOpCount && a.op < b.op;
  });
  std::sort(r.sides.begin(), r.sides.end(), [](const SideResult& a, const SideResult& b) { return a.name < b.name; });
}

// A job of the runs as one: each field by its rule (tables.cpp: counts and histograms added, the
// longest phase, the first part's settings with each part's share added up); here what needs
// every part at once: its state and message, the end check, the protocol metrics, the profile.
JobResult merge_job(const std::vector<RunResult>& runs, size_t i, std::vector<Warning>& warnings) {
  std::vector<const JobResult*> parts;
  for (auto& run : runs) parts.push_back(&run.jobs[i]);
  const JobResult& first = *parts[0];
  JobResult r;
  r.state = JobResult::State::Skipped;
  r.latency = std::make_shared<Histogram>();
  r.latency_failed = std::make_shared<Histogram>();
  bool any_ran = false, verified_all = true, same_skip = true;
  std::vector<std::string> details, skipped;
  for (size_t k = 0; k < parts.size(); ++k) {
    const JobResult& j = *parts[k];
    if (j.state == JobResult::State::Skipped) {
      skipped.push_back(runs[k].label + ": " + j.message);
      same_skip &= j.message == first.message;
    }
    merge_state(r, j, runs[k].label);
    any_ran |= ran(j);
    job_table().merge(r, j, fields::Merging{first.job.name, k});
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
  order_figures(r);
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
