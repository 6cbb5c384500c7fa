#include "cluster/mpi_run.h"

#include <signal.h>
#include <unistd.h>

#include <time.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>

#include "cluster/mpi.h"
#include "core/driver.h"
#include "core/live.h"
#include "core/ranks.h"
#include "report/report.h"
#include "results/merge.h"
#include "results/results.h"
#include "results/slo.h"
#include "util/series.h"
#include "util/text.h"

namespace mw {
namespace {

using nlohmann::json;

enum Tag { kJobs = 10, kCounts = 11, kDecision = 12, kResult = 13, kExit = 14, kStepOrder = 15, kStepFigures = 16 };

struct Shared {
  bool jobs_sent = false;
  int job = -1;                // index of the job running (after_setup counts them)
  std::map<int, int> lost_in;  // rank -> the job during which it stopped answering
  std::string ended;           // why the remaining jobs do not run
};

Shared& shared() {
  static Shared s;
  return s;
}

std::string host_name() {
  char h[256] = {};
  gethostname(h, sizeof h - 1);
  return h;
}

[[noreturn]] void stop_all(int code, const std::string& why) {
  std::fprintf(stderr, "mwbench: rank %d (%s): %s\n", mpi::rank(), printable(host_name()).c_str(),
               printable(why).c_str());
  mpi::abort(code);
}

std::string lost_text() {
  std::string out;
  for (int r : mpi::lost()) out += (out.empty() ? "" : ", ") + std::to_string(r);
  return out;
}

void barrier(const char* where, const Job& job) {
  if (mpi::barrier()) return;
  if (stop_requested().load()) stop_all(128 + (stop_signal().load() ? stop_signal().load() : SIGINT), "interrupted");
  if (mpi::rank() == 0)
    stop_all(2,
             "rank " + lost_text() + " stopped answering " + where + " of " + job.name + ": every rank stops (exit 2)");
  stop_all(2, "rank 0 stopped answering " + std::string(where) + " of " + job.name + ": every rank stops (exit 2)");
}

// The ranks' counts added up on rank 0, which then tells every rank whether the run goes on.
// Under --metrics-listen each rank's live counters come along: exact at the phase's end.
Counts totals(const Job& job, const Counts& mine) {
  json c = {mine.ok, mine.failed, mine.not_run, mine.warmup_ok};
  if (mpi::rank() != 0 && live::enabled()) c.push_back(live::snapshot());
  auto all = mpi::gather(c.dump(), kCounts);
  Shared& s = shared();
  std::string decision = "go";
  Counts sum;
  if (mpi::rank() == 0) {
    for (size_t r = 0; r < all.size(); ++r) {
      json v = all[r] ? json::parse(*all[r], nullptr, false) : json();
      if (v.is_array() && v.size() == 5 && v[4].is_string()) live::remote(static_cast<int>(r), v[4].get<std::string>());
      if (v.is_array() && v.size() == 5) v.erase(4);
      if (!v.is_array() || v.size() != 4) {
        if (!s.lost_in.count(static_cast<int>(r))) s.lost_in[static_cast<int>(r)] = s.job;
        continue;
      }
      sum.ok += v[0].get<uint64_t>(), sum.failed += v[1].get<uint64_t>();
      sum.not_run += v[2].get<uint64_t>(), sum.warmup_ok += v[3].get<uint64_t>();
    }
    if (!s.lost_in.empty()) {
      s.ended = "not run: rank " + lost_text() + " stopped answering during " + job.name;
      decision = s.ended;
    }
  }
  if (!mpi::send_all(decision, kDecision) && mpi::rank() != 0) decision = "not run: rank 0 stopped answering";
  if (mpi::rank() != 0 && decision != "go") s.ended = decision;
  return mpi::rank() == 0 ? sum : mine;
}

void step_order(const Job& job, StepOrder& order);
RankPlan::StepFigures step_figures(const Job& job, const JobResult& mine, const std::string& note);

// This process's part of the run, with the hooks that tie it to the other ranks: run_ranked
// passes it to the runner (RunOptions::ranks).
RankPlan make_plan() {
  RankPlan plan;
  plan.rank = mpi::rank();
  plan.size = mpi::size();
  plan.after_setup = [](const Job& job) {
    ++shared().job;
    barrier("after the set-up", job);
  };
  plan.before_measure = [](const Job& job) { barrier("before the measured phase", job); };
  plan.totals = totals;
  plan.setup_failed = [](const Job& job, const std::string& why) {
    stop_all(2, printable(job.name) + ": " + why + "; every rank stops (exit 2)");
  };
  plan.run_ended = [] { return shared().ended; };
  plan.step_order = step_order;
  plan.step_figures = step_figures;
  return plan;
}

json job_json(const Job& j) {
  return {{"name", j.name},
          {"adapter", j.adapter},
          {"op", j.op},
          {"n", j.n},
          {"duration_s", j.duration_s},
          {"warmup_ops", j.warmup_ops},
          {"warmup_s", j.warmup_s},
          {"clients", j.clients},
          {"pipeline", j.pipeline},
          {"threads", j.threads},
          {"rate", j.rate},
          {"timeout_s", j.timeout_s},
          {"interval_s", j.interval_s},
          {"source", j.source},
          {"opts", j.opts},
          {"find_max", j.find_max},
          {"find_precision", j.find_precision},
          {"step_s", j.step_s},
          {"find_repeat", j.find_repeat}};
}

Job job_of(const json& o) {
  Job j;
  j.name = o.at("name"), j.adapter = o.at("adapter"), j.op = o.at("op"), j.n = o.at("n");
  j.duration_s = o.at("duration_s"), j.warmup_ops = o.at("warmup_ops"), j.warmup_s = o.at("warmup_s");
  j.clients = o.at("clients"), j.pipeline = o.at("pipeline"), j.threads = o.at("threads"), j.rate = o.at("rate");
  j.timeout_s = o.at("timeout_s"), j.interval_s = o.at("interval_s"), j.source = o.at("source");
  j.opts = o.at("opts").get<std::map<std::string, std::string>>();
  j.find_max = o.at("find_max"), j.find_precision = o.at("find_precision"), j.step_s = o.at("step_s");
  j.find_repeat = o.at("find_repeat");
  return j;
}

// A rank's result as it travels to rank 0: the result file's JSON without its histograms
// buckets (reading ten thousand [value, count] pairs as JSON costs far more than merging them),
// then the buckets packed as [n, value, count, ...] in a fixed order: per job, histogram,
// histogram_failed, histogram_uncorrected, per_op.*, sides.* (by name); then per job its time
// series with each interval's compact histogram, which the JSON holds only as percentiles:
// [intervals, then per interval ok, failed, max, n, index, count, ...].
template <class Fn>
void each_histogram(json& doc, const Fn& fn) {
  for (auto& j : doc["jobs"]) {
    for (const char* k : {"histogram", "histogram_failed", "histogram_uncorrected"})
      if (j.contains(k)) fn(j[k]);
    for (const char* group : {"per_op", "sides"})
      if (j.contains(group))
        for (auto& [name, part] : j[group].items()) fn(part["histogram"]);
  }
}

std::string pack(const RunResult& run) {
  json doc = to_json(run);
  std::vector<uint64_t> blob;
  each_histogram(doc, [&](json& h) {
    json& b = h["buckets"];
    blob.push_back(b.size());
    for (auto& pair : b) blob.push_back(pair[0].get<uint64_t>()), blob.push_back(pair[1].get<uint64_t>());
    b = json::array();
  });
  for (auto& j : run.jobs) {
    blob.push_back(j.series.size());
    for (auto& iv : j.series) {
      blob.insert(blob.end(), {iv.ok, iv.failed, static_cast<uint64_t>(iv.max), iv.buckets.size()});
      for (auto [index, n] : iv.buckets) blob.push_back(index), blob.push_back(n);
    }
  }
  std::string text = doc.dump();
  uint64_t len = text.size();
  std::string out(reinterpret_cast<const char*>(&len), sizeof len);
  out += text;
  out.append(reinterpret_cast<const char*>(blob.data()), blob.size() * sizeof(uint64_t));
  return out;
}

// The buckets back in their places, then through the loader every result file goes through.
using Series = std::vector<SeriesInterval>;

RunResult unpack(const std::string& msg, const std::string& label) {
  auto bad = [&](const std::string& what) { return SetupError(label + ": " + what); };
  uint64_t len = 0;
  if (msg.size() < sizeof len) throw bad("a result of " + std::to_string(msg.size()) + " bytes");
  std::memcpy(&len, msg.data(), sizeof len);
  if (len > msg.size() - sizeof len || (msg.size() - sizeof len - len) % sizeof(uint64_t))
    throw bad("a result whose parts do not add up");
  json doc = json::parse(std::string_view(msg).substr(sizeof len, len), nullptr, false);
  if (doc.is_discarded() || !doc.is_object() || !doc.contains("jobs") || !doc["jobs"].is_array())
    throw bad("not a result");
  std::vector<uint64_t> blob((msg.size() - sizeof len - len) / sizeof(uint64_t));
  std::memcpy(blob.data(), msg.data() + sizeof len + len, blob.size() * sizeof(uint64_t));
  size_t at = 0;
  each_histogram(doc, [&](json& h) {
    if (at >= blob.size() || blob[at] > (blob.size() - at - 1) / 2) throw bad("histogram buckets cut short");
    json& b = h["buckets"];
    for (uint64_t k = blob[at++]; k > 0; --k, at += 2) b.push_back({blob[at], blob[at + 1]});
  });
  RunResult run = parse_result_json(doc, label);  // the buckets in place: every reader's checks
  auto take = [&](uint64_t most) {
    if (at >= blob.size() || blob[at] > most) throw bad("a time series cut short or out of range");
    return blob[at++];
  };
  for (auto& j : run.jobs) {  // the series' own buckets, which the file holds only as percentiles
    Series s(take((blob.size() - at) / 4));
    for (auto& iv : s) {
      iv.ok = take(UINT64_MAX), iv.failed = take(UINT64_MAX);
      iv.max = static_cast<int64_t>(take(CompactLayout::kMaxValue));
      iv.buckets.resize(take((blob.size() - at) / 2));
      for (auto& [index, n] : iv.buckets) {
        index = static_cast<uint16_t>(take(CompactLayout::kLen - 1));
        n = take(UINT64_MAX);
      }
    }
    j.series = std::move(s);
  }
  if (at != blob.size()) throw bad("histogram buckets left over");
  return run;
}

// Each rank's result says what it ran: its clients, its share of -n, --rate and the warm-up;
// the merge adds them up to the job's.
void own_shares(RunResult& run, const RankPlan& plan) {
  for (auto& r : run.jobs) {
    Job& j = r.job;
    auto [first, count] = plan.clients(std::max(1, j.clients));
    int all = std::max(1, j.clients);
    j.n = share_of(j.n, all, first, count);
    j.warmup_ops = share_of(j.warmup_ops, all, first, count);
    j.rate = j.rate * count / all;
    j.clients = count;
  }
}

// A rank that stopped answering: the job it was in fails (its share is missing), the run says so.
void mark_lost(RunResult& run, const std::vector<Job>& jobs) {
  for (auto [rank, k] : shared().lost_in) {
    std::string why = "rank " + std::to_string(rank) + " stopped answering";
    if (k < 0 || k >= static_cast<int>(jobs.size())) {
      run.context.warnings.push_back(
          {WarningKind::RankLost, why + " before its result was sent: its figures are missing"});
      continue;
    }
    const Job& job = jobs[static_cast<size_t>(k)];
    run.context.warnings.push_back(
        {WarningKind::RankLost, why + " during " + job.name + ": its figures are missing from the merge"});
    for (auto& r : run.jobs) {
      if (r.job.name != job.name) continue;
      RankPlan theirs;
      theirs.rank = rank;
      theirs.size = mpi::size();
      auto [first, count] = theirs.clients(std::max(1, job.clients));
      if (job.duration_s <= 0) r.ops_not_run += share_of(job.n, std::max(1, job.clients), first, count);
      r.verify.checked = true;
      r.verify.ok = false;
      r.verify.detail += (r.verify.detail.empty() ? "" : "; ") + why + " during the run; its share is missing";
      break;
    }
  }
}

// Interval k of every rank added up (each on its rank's own clock), and whether the whole
// never settled, in place of each rank's own word on it.
void merge_series(RunResult& run, const std::vector<RunResult>& ranks) {
  for (size_t i = 0; i < run.jobs.size(); ++i) {
    JobResult& j = run.jobs[i];
    Series all;
    for (auto& rank : ranks) {
      if (i >= rank.jobs.size()) continue;
      const Series& s = rank.jobs[i].series;
      if (s.size() > all.size()) all.resize(s.size());
      for (size_t k = 0; k < s.size(); ++k) all[k].merge(s[k]);
    }
    if (all.empty()) continue;
    j.series = std::move(all);
    j.series_interval_s = ranks[0].jobs[i].series_interval_s;
    std::erase_if(j.warnings, [](const Warning& w) { return w.kind == WarningKind::Unsettled; });
    if (std::string w = settle_warning(j.series, j.series_interval_s, j.elapsed_s); !w.empty())
      j.warnings.push_back({WarningKind::Unsettled, std::move(w)});
  }
}

// --find-max: rank 0's order for the next step (or the end) to every rank, checked where it lands.
void step_order(const Job& job, StepOrder& order) {
  std::string bytes = mpi::rank() == 0 ? step_order_bytes(order) : std::string();
  if (mpi::send_all(bytes, kStepOrder)) {
    if (mpi::rank() == 0) return;
    try {
      order = step_order_of(bytes);
    } catch (const SetupError& e) {
      stop_all(2, "the capacity search of " + job.name + ": rank 0 sent " + e.what() + "; every rank stops (exit 2)");
    }
    return;
  }
  if (mpi::rank() == 0)
    stop_all(2, "rank " + lost_text() + " stopped answering during the capacity search of " + job.name +
                    ": every rank stops (exit 2)");
  stop_all(2, "rank 0 stopped answering during the capacity search of " + job.name + ": every rank stops (exit 2)");
}

// --find-max: a step's figures from every rank, merged on rank 0 as a run's job is, with every
// rank's note. Each message: the note's length, the note, then the step packed as a result.
RankPlan::StepFigures step_figures(const Job& job, const JobResult& mine, const std::string& note) {
  RunResult one;
  one.jobs.push_back(mine);
  uint64_t len = note.size();
  std::string text(reinterpret_cast<const char*>(&len), sizeof len);
  text += note;
  text += pack(one);
  auto all = mpi::gather(text, kStepFigures);
  if (mpi::rank() != 0) return {};
  RankPlan::StepFigures out;
  std::vector<RunResult> runs;
  for (size_t r = 0; r < all.size(); ++r) {
    const std::string label = "rank " + std::to_string(r);
    if (!all[r])
      stop_all(2,
               label + " stopped answering during the capacity search of " + job.name + ": every rank stops (exit 2)");
    const std::string& msg = *all[r];
    uint64_t n = 0;
    if (msg.size() >= sizeof n) std::memcpy(&n, msg.data(), sizeof n);
    if (msg.size() < sizeof n || n > msg.size() - sizeof n) throw SetupError(label + ": a capacity step cut short");
    out.notes.push_back(msg.substr(sizeof n, n));
    runs.push_back(unpack(msg.substr(sizeof n + n), label));
  }
  Merged m = merge_runs(runs, "");
  merge_series(m.run, runs);
  out.merged = std::move(m.run.jobs.at(0));
  return out;
}

RunResult run_ranked(const std::vector<Job>& jobs, RunOptions opts) {
  const RankPlan plan = make_plan();
  opts.ranks = &plan;
  RunResult mine = run_jobs(jobs, opts);
  own_shares(mine, plan);
  auto texts = mpi::gather(pack(mine), kResult);
  if (mpi::rank() != 0) return mine;
  auto t0 = std::chrono::steady_clock::now();  // the merge's own cost, from every rank's text
  timespec c0{}, c1{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &c0);
  std::vector<RunResult> runs;
  for (size_t r = 0; r < texts.size(); ++r) {
    if (!texts[r]) {
      if (!shared().lost_in.count(static_cast<int>(r))) shared().lost_in[static_cast<int>(r)] = -1;
      continue;
    }
    runs.push_back(unpack(*texts[r], "rank " + std::to_string(r)));
  }
  Merged m = merge_runs(runs, mine.command);
  RunResult& run = m.run;  // rank 0's context, with every rank's warnings
  merge_series(run, runs);
  for (size_t i = 0; i < run.jobs.size() && i < mine.jobs.size(); ++i)  // --find-max: rank 0 searched
    if (mine.jobs[i].capacity) run.jobs[i].capacity = mine.jobs[i].capacity;
  for (auto& r : run.jobs)  // the SLOs, on the merged figures (a load phase's row has none)
    for (auto& job : jobs)
      if (job.name == r.job.name && !job.slo.empty()) {
        r.job.slo = job.slo;
        r.slo = check_slo(job.slo, r);
      }
  for (size_t k = 0; k < run.ranks.size(); ++k) {
    run.ranks[k].rank = std::stoi(runs[k].label.substr(5));
    run.ranks[k].source.clear();
  }
  mark_lost(run, jobs);
  run.interrupted = mine.interrupted;
  run.signal = mine.signal;
  make_notes(run);  // of the figures as re-judged here (SLOs, series, lost ranks)
  double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &c1);
  double cpu = static_cast<double>(c1.tv_sec - c0.tv_sec) * 1e3 + static_cast<double>(c1.tv_nsec - c0.tv_nsec) / 1e6;
  if (opts.progress)
    std::fprintf(stderr, "ranks: %zu of %d merged in %.1f ms (%.1f ms CPU)\n", runs.size(), mpi::size(), ms, cpu);
  return run;
}

int follow() {
  std::string text;
  if (!mpi::send_all(text, kJobs)) {
    std::fprintf(stderr, "mwbench: rank %d: rank 0 stopped answering before sending the jobs\n", mpi::rank());
    mpi::finish();
    return 2;
  }
  json doc = json::parse(text, nullptr, false);
  if (!doc.is_object() || doc.contains("exit")) {
    int code = doc.is_object() && doc["exit"].is_number_integer() ? doc["exit"].get<int>() : 2;
    mpi::finish();
    return code;
  }
  std::vector<Job> jobs;
  for (auto& j : doc.at("jobs")) jobs.push_back(job_of(j));
  set_run_id(doc.at("run_id").get<int>());
  for (auto& job : jobs) {
    const AdapterSpec* spec = find_adapter(job.adapter);
    std::string why = !spec ? "unknown adapter" : spec->unavailable ? spec->unavailable(job) : "";
    if (!why.empty()) stop_all(2, job.name + ": cannot run here: " + why + "; every rank stops (exit 2)");
  }
  RunOptions opts{doc.at("suite"), doc.at("command"), false, 1};
  const bool live_on = doc.value("live", false);  // rank 0 serves --metrics-listen: send it this rank's counters
  if (live_on) {
    live::enable(true);
    mpi::on_beats([] { return live::snapshot(); }, nullptr);
  }
  RunResult mine = run_ranked(jobs, opts);
  if (live_on) mpi::on_beats(nullptr, nullptr), live::enable(false);
  std::string end;
  if (!mpi::send_all(end, kExit)) end = "1";  // rank 0 is gone: nothing was written
  // "CODE R R ...": the exit code, and the ranks rank 0 lost. This rank may not have noticed
  // them (it watches rank 0 alone), and MPI_Finalize would wait for them for ever.
  std::istringstream in(end);
  int code = 1;
  in >> code;
  for (int r; in >> r;) mpi::forget(r);
  mpi::finish();
  return code;
}

}  // namespace

int mpi_enter(int& argc, char**& argv) {
  int n = mpi::launched_size();
  if (n <= 1) return -1;
  if (!mpi::built()) {
    std::fprintf(stderr,
                 "mwbench: started by mpirun as one of %d processes, but this mwbench was built without MPI: "
                 "install libopenmpi-dev (scripts/setup) and rebuild, or run it without mpirun\n",
                 n);
    return 2;
  }
  try {
    mpi::start(argc, argv);
  } catch (const SetupError& e) {
    std::fprintf(stderr, "mwbench: %s\n", e.what());
    if (mpi::started()) mpi::abort(2);
    return 2;
  }
  if (mpi::rank() != 0) {
    try {
      return follow();
    } catch (const std::exception& e) {
      stop_all(2, std::string("internal error: ") + e.what());
    }
  }
  return -1;
}

int mpi_leave(int code) {
  if (!mpi::started()) return code;
  std::string text = json{{"exit", code}}.dump();
  if (!shared().jobs_sent)
    mpi::send_all(text, kJobs);  // nothing to run: the ranks end too
  else {
    text = std::to_string(code);
    for (int r : mpi::lost()) text += " " + std::to_string(r);
    mpi::send_all(text, kExit);
  }
  // A rank died, and the others went on because mpirun was told to (--enable-recovery). Open MPI
  // 4.1's mpirun then exits 0 whatever the ranks return, MPI_Abort included: say what this was.
  const char* recovery = std::getenv("OMPI_MCA_orte_enable_recovery");
  if (!mpi::lost().empty() && code != 0 && recovery && std::string(recovery) != "0")
    std::fprintf(stderr,
                 "mwbench: exit %d (mpirun --enable-recovery exits 0 whatever its ranks return: this line and "
                 "the result file's exit_code say how the run ended)\n",
                 code);
  mpi::finish();
  return code;
}

void check_ranks(const std::vector<Job>& jobs, int repeat) {
  if (!mpi::started()) return;
  int ranks = mpi::size();
  if (repeat > 1) throw SetupError("--repeat does not combine with mpirun: run mpirun K times, or merge runs");
  for (auto& j : jobs) {
    // Only a target other machines can reach (AdapterSpec::target), or none (null: the driver
    // alone); a job on local files or a server mwbench starts would measure one per rank.
    const AdapterSpec* spec = find_adapter(j.adapter);
    if (!spec || spec->target == TargetKind::Local)
      throw SetupError(j.name + ": " + j.adapter + " works on this machine's files: under mpirun every rank would " +
                       "measure its own; run it without mpirun");
    if (spec->target == TargetKind::External && !j.has(spec->target_option))
      throw SetupError(j.name + ": under mpirun give an external target (--" + spec->target_option + "): a server " +
                       "mwbench starts itself runs on one machine and cannot be shared by " + std::to_string(ranks) +
                       " ranks");
    if (j.clients < ranks)
      throw SetupError(j.name + ": -c " + std::to_string(j.clients) + " is fewer than the " + std::to_string(ranks) +
                       " ranks: clients are split across ranks, give -c " + std::to_string(ranks) + " or more");
  }
}

RunResult run_everywhere(const std::vector<Job>& jobs, const RunOptions& opts) {
  if (!mpi::started()) return run_jobs(jobs, opts);
  // --metrics-listen: rank 0 alone listens, and serves every rank's counters (live.h).
  json doc = {{"jobs", json::array()},
              {"suite", opts.suite},
              {"command", opts.command},
              {"run_id", run_id()},
              {"live", live::enabled()}};
  if (live::enabled()) mpi::on_beats(nullptr, [](int rank, const std::string& text) { live::remote(rank, text); });
  for (auto& j : jobs) doc["jobs"].push_back(job_json(j));
  std::string text = doc.dump();
  shared().jobs_sent = true;
  if (!mpi::send_all(text, kJobs)) stop_all(2, "rank " + lost_text() + " stopped answering before the run");
  return run_ranked(jobs, opts);
}

}  // namespace mw
