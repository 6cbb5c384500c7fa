#include <algorithm>
#include <nlohmann/json.hpp>
#include <set>

#include "report/gate.h"
#include "report/report.h"
#include "report/text_table.h"
#include "results/results.h"
#include "util/text.h"

namespace mw {

namespace {

std::string job_key(const JobResult& j) {
  std::string key = j.job.adapter + "|" + j.job.op + "|" + j.job.name;
  const nlohmann::json params = job_params(j.job);
  for (auto& [k, v] : params.items())
    if (k != "n" && k != "duration_s" && k != "warmup_ops" && k != "warmup_s" && k != "timeout_s" && k != "poll")
      key += "|" + k + "=" + v.dump();  // a run with another --poll (or from before it) compares with this one
  return key;
}

// The job's name, and where it ran when that tells side-by-side rows apart.
std::string display_name(const JobResult& j) {
  std::string name = j.job.name;
  const nlohmann::json params = job_params(j.job);
  for (const char* k : {"path", "queue", "kind"}) {
    auto it = params.find(k);
    if (it != params.end() && it->is_string()) name += " " + it->get<std::string>();
  }
  if (j.job.clients != 1 && name.find("clients=") == std::string::npos) name += " c=" + std::to_string(j.job.clients);
  if (j.job.pipeline != 1 && name.find("pipeline=") == std::string::npos)
    name += " P=" + std::to_string(j.job.pipeline);
  return name;
}

}  // namespace

std::string contracts_differ(const JobResult& a, const JobResult& b) {
  if (!a.contract || !b.contract) return {};
  const std::string x = contract_label(*a.contract), y = contract_label(*b.contract);
  return x == y ? "" : "different durability contracts: " + x + " vs " + y;
}

std::string failure_note(const RunResult& run, const JobResult& job) {
  if (job.state == JobResult::State::SetupFailed)
    return run.label + " set-up failed" + (job.message.empty() ? "" : ": " + job.message);
  if (job.state == JobResult::State::Skipped)
    return run.label + " skipped" + (job.message.empty() ? "" : ": " + job.message);
  std::string note;
  uint64_t failed = job.ops_failed, not_run = job.ops_not_run;
  for (auto& r : job.repeats) failed += r.ops_failed, not_run += r.ops_not_run;
  if (job.repeats.empty() ? failed + not_run > 0 : [&] {
        for (auto& r : job.repeats)
          if (r.ops_failed || r.ops_not_run) return true;
        return false;
      }())
    note = run.label + " had failures (" + std::to_string(failed) + " failed, " + std::to_string(not_run) + " not run)";
  if (unverified(job)) {
    std::string detail = job.verify.detail;
    for (auto& r : job.repeats)
      if (detail.empty() && r.verify.checked && !r.verify.ok) detail = r.verify.detail;
    note += (note.empty() ? "" : "; ") + run.label + " unverified" + (detail.empty() ? "" : ": " + detail);
  }
  if (job.state == JobResult::State::Interrupted)
    note += (note.empty() ? "" : "; ") + run.label + " interrupted (partial)";
  return note;
}

bool within_noise(const JobResult& a, const JobResult& b) {
  std::optional<RpsRange> x = rps_range(a), y = rps_range(b);
  return x && y && y->min <= x->max && x->min <= y->max;
}

std::vector<MatchedJob> match_jobs(const std::vector<RunResult>& runs) {
  std::vector<const RunResult*> of;
  for (auto& r : runs) of.push_back(&r);
  return match_jobs(of);
}

std::vector<MatchedJob> match_jobs(const std::vector<const RunResult*>& runs) {
  // A job is matched by its name; names some run holds more than once, by what the job measured.
  std::set<std::string> shared_names;
  for (auto* run : runs) {
    std::set<std::string> names;
    for (auto& j : run->jobs)
      if (!names.insert(j.job.name).second) shared_names.insert(j.job.name);
  }
  std::vector<MatchedJob> rows;
  std::map<std::string, size_t> row_of;  // name, or key#k (the k-th job with that key in a run) -> row
  for (size_t r = 0; r < runs.size(); ++r) {
    std::map<std::string, int> seen;
    const auto& jobs = runs[r]->jobs;
    for (size_t i = 0; i < jobs.size(); ++i) {
      std::string key = "name=" + jobs[i].job.name;
      if (shared_names.count(jobs[i].job.name)) {
        key = job_key(jobs[i]);
        key += "#" + std::to_string(seen[key]++);
      }
      auto [it, fresh] = row_of.emplace(key, rows.size());
      if (fresh) rows.push_back({display_name(jobs[i]), std::vector<int>(runs.size(), -1)});
      rows[it->second].index[r] = static_cast<int>(i);
    }
  }
  return rows;
}

bool unconfirmed(const JobResult& j) {
  return j.capacity && j.capacity->verdict == CapacityVerdict::Found && !j.capacity->confirmed;
}

std::string found_rate(const Capacity& c) {
  if (c.verdict != CapacityVerdict::Found) return capacity_verdict_name(c.verdict);
  std::string s = fmt(c.max_rps, 1) + " req/s";
  if (!c.confirmed)
    s +=
        " not confirmed (" + std::to_string(c.repeats_passed) + " of " + std::to_string(c.repeats) + " repeats passed)";
  return s;
}

std::string capacity_change(const JobResult& base, const JobResult& now) {
  if (!base.capacity || !now.capacity) return "";
  const Capacity &b = *base.capacity, &n = *now.capacity;
  std::string s = "max at SLO " + n.slo + ": " + found_rate(b) + " -> " + found_rate(n);
  if (b.verdict == CapacityVerdict::Found && n.verdict == CapacityVerdict::Found && b.max_rps > 0)
    s += " (" + fmt(n.max_rps / b.max_rps, 2) + "x)";
  return s + (b.slo != n.slo ? " (the SLOs differ: " + b.slo + " vs " + n.slo + ")" : "");
}

namespace {

// What the table holds, for the legend under it.
struct Seen {
  bool failed = false, tested = false, minmax = false, unconfirmed = false;
};

std::vector<std::string> compare_head(const std::vector<RunResult>& runs) {
  std::vector<std::string> head{"job"};
  for (size_t r = 0; r < runs.size(); ++r) {
    head.push_back(runs[r].label + " req/s");
    head.push_back("p99 ms");
    if (r > 0) head.insert(head.end(), {"ratio", "95% CI", "p", "verdict"});
  }
  head.push_back("note");
  return head;
}

// A run's req/s and p99 cells for its job; a run that failed says so in its own cell, never as a
// plain figure, and so does a found rate whose repeats did not all pass.
void figure_cells(const JobResult& job, std::vector<std::string>& row, Seen& seen) {
  const bool had = ran(job);
  std::string mark = had ? failure_mark(job) : "";
  seen.failed |= !mark.empty();
  if (had && unconfirmed(job)) {
    mark += (mark.empty() ? "" : " ") + std::string("unconfirmed");
    seen.unconfirmed = true;
  }
  row.push_back(had ? fmt(job.rps, 1) + (mark.empty() ? "" : " " + mark) : std::string(state_name(job.state)));
  row.push_back(had && job.latency ? fmt(latency_at(job, 99) / 1e6, 3) : "-");
}

// A later run's ratio, its interval, p-value and verdict against the first run's job (a single
// run each: a ratio, and nothing decided: --repeat or --decide decides); what differs in the note.
void ratio_cells(const JobResult& base, const JobResult& job, std::vector<std::string>& row, std::string& note,
                 Seen& seen) {
  if (std::string d = contracts_differ(base, job); !d.empty()) note += (note.empty() ? "" : "; ") + d;
  if (std::string d = capacity_change(base, job); !d.empty()) note += (note.empty() ? "" : "; ") + d;
  const Comparison c = judge_rps(base, job);
  const bool tested = c.method == Comparison::Method::MannWhitney;
  row.push_back(fmt(c.ratio, 2));
  row.push_back(tested ? fmt(*c.lo, 2) + "-" + fmt(*c.hi, 2) : "-");
  row.push_back(tested ? p_text(*c.p) : "-");
  row.push_back(c.method == Comparison::Method::Single
                    ? "not decided"
                    : verdict_word(c) + (c.method == Comparison::Method::MinMax ? " (min-max)" : ""));
  seen.tested |= tested;
  seen.minmax |= c.method == Comparison::Method::MinMax;
}

std::vector<std::string> compare_row(const std::vector<RunResult>& runs, const MatchedJob& m, Seen& seen) {
  std::vector<std::string> row{m.name};
  std::string note;
  const JobResult* base = m.index[0] >= 0 ? &runs[0].jobs[static_cast<size_t>(m.index[0])] : nullptr;
  for (size_t r = 0; r < runs.size(); ++r) {
    if (m.index[r] < 0) {
      row.insert(row.end(), r > 0 ? 6 : 2, "-");
      continue;
    }
    const JobResult& job = runs[r].jobs[static_cast<size_t>(m.index[r])];
    figure_cells(job, row, seen);
    if (std::string why = failure_note(runs[r], job); !why.empty()) note += (note.empty() ? "" : "; ") + why;
    if (r == 0) continue;
    if (!base || !ran(job) || !ran(*base) || base->rps <= 0)
      row.insert(row.end(), 4, "-");
    else
      ratio_cells(*base, job, row, note, seen);
  }
  row.push_back(note);
  return row;
}

std::string compare_legend(const std::string& first, const Seen& seen) {
  std::string out = "ratio: req/s against " + printable(first);
  if (seen.tested)
    out += "; with " + std::to_string(kMinSignificanceRuns) +
           "+ runs each: the Hodges-Lehmann estimate of the ratio with its 95% CI, and the two-sided Mann-Whitney U "
           "p-value over the runs' req/s (significant below " +
           fmt(kSignificance, 2) + ")";
  if (seen.minmax) out += "; (min-max): 2-4 runs, slower or faster only when the min-max ranges are apart";
  if (!seen.tested)
    out += seen.minmax ? " (--repeat 5 or more gives p-values)"
                       : "; single runs: nothing decided (run with --repeat 5 or more, or decide within one run with "
                         "--decide)";
  if (seen.failed) out += "; FAILED: some ops failed or were not run; unverified: the end check failed";
  if (seen.unconfirmed)
    out +=
        "; unconfirmed: a --find-max rate that missed the SLO in some of its repeats (at the edge; the gate never "
        "takes it as a baseline or a pass)";
  return out + "\n";
}

}  // namespace

std::string format_compare(const std::vector<RunResult>& runs) {
  const std::vector<std::string> head = compare_head(runs);
  std::vector<std::vector<std::string>> t{head};
  Seen seen;
  for (auto& m : match_jobs(runs)) t.push_back(compare_row(runs, m, seen));
  for (auto& row : t)  // names, labels and notes come from files: shown, never obeyed by the terminal
    for (auto& cell : row) cell = printable(cell);
  std::string out = render_table(t, [&](size_t i) { return i == 0 || i + 1 == head.size() || head[i] == "verdict"; });
  out += compare_legend(runs[0].label, seen);
  for (auto& r : runs)  // a file's own decision, made over its paired rounds
    if (r.decide) {
      out += printable(r.label) + " decided:\n";
      for (auto& line : decision_lines(*r.decide, true)) out += "  " + printable(line) + "\n";
    }
  for (auto& r : runs) {
    const Context& c = r.context;
    out +=
        printable(r.label + ": " + c.host + ", " + c.cpu + ", " + std::to_string(c.cores) + " cores, " + r.started_at) +
        "\n";
  }
  return out;
}

}  // namespace mw
