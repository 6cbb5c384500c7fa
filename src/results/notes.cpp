// The notes under the summary table, made from a job's typed fields (notes.h).
#include "results/notes.h"

#include "queue/queue.h"  // Figures: a queue job's message sizes
#include "results/writer.h"
#include "util/text.h"

namespace mw {

namespace {

std::string ms(int64_t ns) { return fmt(static_cast<double>(ns) / 1e6, 3); }

std::string us(double v) { return fmt(v, v < 10 ? 2 : 1) + " us"; }
std::string mib(uint64_t b) { return fmt(static_cast<double>(b) / (1024.0 * 1024), 1) + " MiB"; }

std::string process_text(const Profile& p, const ProcessProfile& x) {
  std::string s = x.name + " " + us(p.per_op(x.cpu_s() * 1e6)) + " CPU per op (user " + us(p.per_op(x.user_s * 1e6)) +
                  ", sys " + us(p.per_op(x.sys_s * 1e6)) + "), " + fmt(p.share(x.cpu_s()) * 100, 0) + "% of a core";
  if (x.processes > 1) s += " over " + std::to_string(x.processes) + " processes";
  s += ", busiest thread " + fmt(p.share(x.busiest_thread_s) * 100, 0) + "%";
  s += ", peak RSS " + mib(x.peak_rss_bytes) + ", " + std::to_string(x.ctx_voluntary + x.ctx_involuntary) +
       " context switches (" + std::to_string(x.ctx_involuntary) + " involuntary)";
  return s;
}

std::string disk_text(const Profile& p, const DiskProfile& d) {
  if (!d.missing.empty()) return d.path + ": no disk figures (" + d.missing + ")";
  auto per = [&](uint64_t v) { return fmt(p.per_op(static_cast<double>(v)), 2); };
  std::string s = d.path + " on " + d.device + ": per op " + per(d.reads) + " reads, " + per(d.writes) + " writes, " +
                  fmt(p.per_op(static_cast<double>(d.read_bytes + d.write_bytes)), 0) + " bytes, " + per(d.flushes) +
                  " flushes";
  if (d.flushes) s += ", " + fmt(d.flush_ms / static_cast<double>(d.flushes), 3) + " ms per flush";
  return s + " (the device's counts: every process's I/O)";
}

std::string times(int n) { return n == 1 ? "once" : std::to_string(n) + " times"; }

// Under 0.1 s of measured phase a figure means little (a load phase is a set-up, not a figure).
constexpr double kTooShortS = 0.1;

// How long the search took, and its own set-up between steps as a share of the time it measured.
std::string timing(const Capacity& c) {
  if (c.elapsed_s <= 0 || c.steps.empty()) return "";
  double setup = 0;
  for (const CapacityStep& s : c.steps) setup += s.setup_s;
  const double measured = c.step_s * static_cast<double>(c.steps.size());
  return " in " + fmt(c.elapsed_s, 1) + " s (set-up between steps " + fmt(setup / measured * 100, 2) +
         "% of the step time)";
}

}  // namespace

std::vector<std::string> profile_lines(const std::string& name, const JobResult& j) {
  const Profile& p = j.profile;
  if (!p.taken) return {};
  std::vector<std::string> out{"profile: " + name + ": " + fmt(p.wall_s, 3) + " s, " + std::to_string(p.ops) + " ops"};
  out.push_back("  " + process_text(p, p.self) + ", " + fmt(p.cores ? p.share(p.self.cpu_s()) / p.cores * 100 : 0, 0) +
                "% of its " + std::to_string(p.cores) + " cores");
  if (p.threads == 1 && p.runnable_wait_s >= 0) {
    out.push_back("  mwbench's driver thread ran " + fmt(p.share(p.runnable_cpu_s) * 100, 0) +
                  "% of the phase and waited " + fmt(p.share(p.runnable_wait_s) * 100, 0) +
                  "% for a CPU (/proc/thread-self/schedstat)");
  } else if (p.cpu_wait_s >= 0) {
    std::string l = "  mwbench waited for a CPU " + fmt(p.cpu_wait_share() * 100, 0) + "% of the phase (" +
                    fmt(p.cpu_wait_s, 3) + " s over " + std::to_string(p.threads) + " driver threads";
    if (p.runnable_wait_s >= 0)
      l += "; the one runnable longest ran " + fmt(p.share(p.runnable_cpu_s) * 100, 0) + "% and waited " +
           fmt(p.share(p.runnable_wait_s) * 100, 0) + "%";
    out.push_back(l + ": /proc/thread-self/schedstat)");
  }
  for (auto& s : p.servers) out.push_back("  " + process_text(p, s) + " (" + s.how + ")");
  for (auto& d : p.disks) out.push_back("  " + disk_text(p, d));
  if (p.net_counted)
    out.push_back("  network: " + fmt(p.per_op(static_cast<double>(p.bytes_sent)), 1) + " bytes sent, " +
                  fmt(p.per_op(static_cast<double>(p.bytes_received)), 1) + " received per op");
  if (p.steal_share >= 0)
    out.push_back("  machine: " + fmt(p.steal_share * 100, 1) +
                  "% of its CPU time stolen by the hypervisor (steal, /proc/stat)");
  if (p.locks_counted)
    out.push_back("  lock waits: " + std::to_string(p.lock_retries) + " busy retries (" +
                  fmt(p.per_op(static_cast<double>(p.lock_retries)), 2) + " per op), " + fmt(p.lock_wait_s, 3) +
                  " s asleep over " + std::to_string(p.clients) + " clients");
  out.push_back(limited_by_line(name, p));
  return out;
}

std::string limited_by_line(const std::string& name, const Profile& p) {
  return "limited by: " + name + ": " + p.limited_by + " (" + p.evidence + ")";
}

std::vector<std::string> guidance_lines(const std::string& name, const JobResult& j) {
  StoreGuidance g = store_guidance(j);
  if (g.figure.empty()) return {};
  std::vector<std::string> out{"stores: " + name + ": " + g.figure};
  for (auto& r : g.rules) out.push_back("  " + r);
  return out;
}

std::vector<std::string> capacity_notes(const JobResult& j, const std::string& name) {
  std::vector<std::string> out;
  if (!j.capacity) return out;
  const Capacity& c = *j.capacity;
  const std::string steps = std::to_string(c.steps.size()) + " steps of " + fmt(c.step_s, 2) + " s" + timing(c);
  const std::string fail =
      c.first_fail > 0 ? "; first failing rate " + fmt(c.first_fail, 1) + " req/s: " + c.fail_why : "";
  if (c.verdict == CapacityVerdict::Found) {
    std::string s = "max at SLO: " + name + ": " + fmt(c.max_rps, 1) + " req/s at " + c.slo;
    if (c.repeats)
      s += std::string(c.confirmed ? ", confirmed" : "") + " (" + std::to_string(c.repeats_passed) + " of " +
           std::to_string(c.repeats) + " repeats passed, achieved " + fmt(c.repeat_min, 1) + "-" +
           fmt(c.repeat_max, 1) + " req/s)";
    if (c.step_downs > 0)
      s += "; stepped down " + times(c.step_downs) + " from " + fmt(c.searched_rps, 1) +
           " req/s, which had passed once in the search";
    // the bracket it ended with: within --find-precision, unless the steps ran out first
    const std::string bracket = c.first_fail > 0
                                    ? ", bracket within " + fmt((c.first_fail / c.max_rps - 1) * 100, 1) + "%"
                                    : ", no failing rate within the steps";
    out.push_back(s + fail + "; " + steps + bracket);
  } else if (c.verdict == CapacityVerdict::None) {
    // the lowest p99 of the open-loop steps: how far from the bound the target came
    const CapacityStep* best = nullptr;
    for (const CapacityStep& s : c.steps)
      if (s.offered > 0 && s.achieved > 0 && (!best || s.p99_ns < best->p99_ns)) best = &s;
    const std::string lowest = best ? "; the lowest p99 seen " + fmt(best->p99_ns / 1e6, 3) + " ms, at " +
                                          fmt(best->offered, best->offered < 100 ? 2 : 1) + " req/s offered"
                                    : "";
    out.push_back("NO RATE MET THE SLO: " + name + ": " + c.slo + ": " + c.fail_why +
                  (c.first_fail > 0 ? " (lowest rate tried " + fmt(c.first_fail, 2) + " req/s)" : "") + lowest + "; " +
                  steps);
  } else if (c.verdict == CapacityVerdict::ClientBound) {
    out.push_back("CLIENT-BOUND: " + name + ": at " + fmt(c.first_fail, 1) + " req/s offered, " + c.fail_why + "; " +
                  c.advice + (c.max_rps > 0 ? " (" + fmt(c.max_rps, 1) + " req/s had passed, below the limit)" : "") +
                  "; " + steps);
  } else {
    out.push_back("interrupted: " + name + ": the capacity search stopped after " + steps);
  }
  return out;
}

std::string note_name(const JobResult& j) { return j.job.name + (j.target != "-" ? " (" + j.target + ")" : ""); }

std::string fault_line(const std::string& name, const FaultResult& f) {
  std::string s = "fault: " + name + ": " + f.fault;
  if (f.at_s == 0 && f.done_s == 0 && !f.error.empty()) return s + ": " + f.error;
  s += " at " + fmt(f.at_s, 2) + " s" +
       (f.delay_s > 0 ? " (each chunk relayed " + ms(static_cast<int64_t>(f.delay_s * 1e9)) + " ms late, each way)"
                      : "") +
       ": unavailable " + fmt(f.window_s(), 3) + " s (" + fmt(f.window_start_s, 2) + "-" + fmt(f.window_end_s, 2) +
       " s" + (f.back ? ")" : ", never back)");
  uint64_t failed = 0;
  std::string kinds;
  for (const auto& [k, c] : f.failed) failed += c, kinds += (kinds.empty() ? "" : ", ") + k + " " + std::to_string(c);
  s += ", " + std::to_string(failed) + " failed" + (kinds.empty() ? "" : " (" + kinds + ")");
  s += ", " + std::to_string(f.in_doubt) + " in doubt";
  s += f.back_90_s >= 0 ? "; back to 90% after " + fmt(f.back_90_s, 2) + " s" : "; never back to 90%";
  s += "; p99 ms before " + ms(static_cast<int64_t>(f.p99_before_ns)) + ", during " +
       ms(static_cast<int64_t>(f.p99_during_ns)) + ", after " +
       (f.back_90_s >= 0 ? ms(static_cast<int64_t>(f.p99_after_ns)) : std::string("-"));  // none: never back
  s += "; " + std::to_string(f.ops_after) + " ops after";
  if (!f.node.empty()) s += "; killed " + f.node;
  if (!f.promoted.empty()) s += (f.node.empty() ? "; primary now " : "; leader now ") + f.promoted;
  if (f.messages_lost >= 0)
    s += "; messages " + std::to_string(f.messages_lost) + " acknowledged lost, " +
         std::to_string(f.messages_duplicated) + " duplicated, " + std::to_string(f.messages_reordered) +
         " out of order (contract " + f.queue_contract + ")";
  else if (!f.queue_note.empty())
    s += "; messages " + f.queue_note;
  else
    s += f.lost >= 0 ? "; " + std::to_string(f.lost) + " acknowledged writes lost"
                     : "; writes not read back: " + f.lost_note;
  if (!f.error.empty()) s += "; " + f.error;
  return s;
}

// --reconnect-every: how many connections the measured phase opened and how long each open
// took, apart from the ops' latency; the wait for --connect-rate's turns, summed. "" without one.
std::string connect_line(const std::string& name, const JobResult& j) {
  if (j.job.reconnect_every == 0 || !j.connect || !j.connect->count()) return {};
  const Histogram& h = *j.connect;
  std::string s = "connect: " + (name.empty() ? "" : name + ": ") + std::to_string(h.count()) +
                  " new connections (one every " + std::to_string(j.job.reconnect_every) + " ops), each open ms mean " +
                  ms(static_cast<int64_t>(h.mean())) + " p50 " + ms(h.percentile(50)) + " p99 " + ms(h.percentile(99)) +
                  " max " + ms(h.max()) + ", not in the ops' latency";
  if (j.connect_full || j.connect_resumed) {  // over TLS: the handshakes apart
    auto part = [](const std::shared_ptr<Histogram>& p, const char* what) {
      const uint64_t n = p ? p->count() : 0;
      return std::to_string(n) + " " + what + (n ? " (p50 " + ms(p->percentile(50)) + ")" : "");
    };
    s += "; TLS handshakes: " + part(j.connect_resumed, "resumed") + ", " + part(j.connect_full, "full");
  }
  if (j.job.connect_rate > 0)
    s += "; " + fmt(j.connect_wait_s, 2) + " s waited in all for --connect-rate " +
         fmt(j.job.connect_rate, j.job.connect_rate < 10 ? 2 : 0) + "/s";
  return s;
}

std::vector<Note> job_notes(const JobResult& j) {
  std::vector<Note> out;
  auto add = [&](NoteKind k, std::string text) { out.push_back({k, std::move(text)}); };
  auto add_all = [&](NoteKind k, const std::vector<std::string>& lines) {
    for (auto& l : lines) add(k, l);
  };
  const std::string n = note_name(j);
  switch (j.state) {
    case JobResult::State::Skipped: add(NoteKind::Skipped, "skipped: " + n + ": " + j.message); return out;
    case JobResult::State::SetupFailed: add(NoteKind::SetupError, "SET-UP ERROR: " + n + ": " + j.message); return out;
    case JobResult::State::Interrupted:
      add(NoteKind::Interrupted, "interrupted: " + n + ": " + (j.message.empty() ? "partial figures" : j.message));
      break;
    case JobResult::State::Done: break;
  }
  uint64_t total = j.ops_ok + j.ops_failed + j.ops_not_run;
  // a crash job's are in doubt / never sent; a fault job's are its faults' (their lines say)
  if ((j.ops_failed || j.ops_not_run) && !j.durability.ran && j.faults.empty()) {
    std::string s = "FAILED: " + j.job.name + " on " + j.target + ": " + std::to_string(j.ops_failed) + " of " +
                    std::to_string(total) + " ops failed";
    if (j.ops_not_run) s += ", " + std::to_string(j.ops_not_run) + " not run (client stopped)";
    s += "; req/s counts the " + std::to_string(j.ops_ok) + " that succeeded";
    add(NoteKind::Failed, s);
    for (auto& e : j.error_samples) add(NoteKind::ErrorSample, "  " + e);
  }
  if (j.verify.checked && !j.verify.ok) add(NoteKind::VerifyFailed, "VERIFY FAILED: " + n + ": " + j.verify.detail);
  add_all(NoteKind::Capacity, capacity_notes(j, n));
  if (!j.slo.passed) {
    std::string s = "SLO MISSED: " + n + ":";
    for (size_t i = 0; i < j.slo.violations.size(); ++i) s += (i ? "; " : " ") + j.slo.violations[i].text;
    add(NoteKind::SloMissed, s + " (!: the cells that miss it)");
  } else if (j.slo.checked) {
    add(NoteKind::SloMet, "SLO met: " + n + ": " + j.slo.spec);
  }
  for (auto& s : j.sides) {
    if (!s.ops_ok || j.elapsed_s <= 0) continue;
    const Histogram& h = *s.latency;
    add(NoteKind::Side, n + " " + s.name + ": " + std::to_string(s.ops_ok) + " ops, " +
                            fmt(static_cast<double>(s.ops_ok) / j.elapsed_s, 0) + " IOPS, " +
                            fmt(static_cast<double>(s.bytes) / 1e6 / j.elapsed_s, 2) + " MB/s, latency ms p50 " +
                            ms(h.percentile(50)) + " p99 " + ms(h.percentile(99)) + " max " + ms(h.max()));
  }
  if (!j.workload.empty() && j.job.op != "load") add(NoteKind::Workload, n + ": " + j.workload);
  if (j.queue && !j.queue->message_size.empty() && j.job.opts.count("message-size"))  // as a mix's values
    add(NoteKind::Workload, n + ": messages of " + j.queue->message_size + " bytes");
  for (auto& o : j.per_op) {  // a workload's ops, under its row
    const Histogram& h = *o.latency;
    std::string s = "  " + o.op + ": " + std::to_string(o.ops_ok) + " ops";
    if (j.elapsed_s > 0) s += ", " + fmt(op_rps(j, o), 1) + " req/s";
    if (h.count())
      s += ", latency ms p50 " + ms(h.percentile(50)) + " p99 " + ms(h.percentile(99)) + " max " + ms(h.max());
    if (o.misses || o.op == "read")
      s += ", " + std::to_string(o.misses) + " misses (hit ratio " +
           fmt(o.ops_ok ? 100.0 * static_cast<double>(o.ops_ok - o.misses) / static_cast<double>(o.ops_ok) : 0, 2) +
           "%)";
    if (o.not_stored) s += ", " + std::to_string(o.not_stored) + " not stored";
    if (o.ops_failed) s += ", " + std::to_string(o.ops_failed) + " failed";
    add(NoteKind::PerOp, s);
  }
  if (!j.metrics.empty()) {
    add(NoteKind::ProtocolMetrics, n + ":");
    for (auto& line : metric_lines(j.metrics)) add(NoteKind::ProtocolMetrics, "  " + line);
  }
  if (j.contract)
    add(NoteKind::Contract, "contract: " + n + ": " + contract_label(*j.contract) +
                                (j.contract->detail.empty() ? "" : " (" + j.contract->detail + ")"));
  add_all(NoteKind::Profile, profile_lines(n, j));
  add_all(NoteKind::Episode, episode_lines(n, j));
  add_all(NoteKind::Stores, guidance_lines(n, j));
  for (const FaultResult& f : j.faults) add(NoteKind::Fault, fault_line(n, f));
  if (std::string s = connect_line(n, j); !s.empty()) add(NoteKind::Connect, s);
  return out;
}

std::vector<std::string> episode_lines(const std::string& name, const JobResult& j) {
  std::vector<std::string> out;
  for (size_t i = 0; i < j.episodes.size() && i < kEpisodeLines; ++i) {
    const Episode& e = j.episodes[i];
    std::string s = "episode: " + name + ": " + fmt(e.start_s, 1) + "-" + fmt(e.end_s, 1) + " s: " + e.what + ": ";
    if (e.causes.empty()) s += e.unexplained;
    for (size_t c = 0; c < e.causes.size() && c < kEpisodeCauses; ++c) s += (c ? "; " : "") + e.causes[c].evidence;
    out.push_back(std::move(s));
  }
  if (j.episodes.size() > kEpisodeLines)
    out.push_back("episode: " + name + ": and " + std::to_string(j.episodes.size() - kEpisodeLines) +
                  " more (the JSON's jobs[].episodes has them all)");
  return out;
}

std::vector<Note> run_notes(const RunResult& r) {
  for (auto& j : r.jobs)
    if (!j.repeats.empty())
      return {{NoteKind::Repeats, "req/s: the median of " + std::to_string(j.repeats.size()) +
                                      " interleaved runs (min-max); the other columns are the median run's"}};
  return {};
}

std::string capacity_warning(const JobResult& j) {
  if (!j.capacity || j.capacity->verdict != CapacityVerdict::Found) return "";
  const Capacity& c = *j.capacity;
  if (c.confirmed) return "";
  if (c.repeats == 0) return "not confirmed: " + fmt(c.max_rps, 1) + " req/s passed once, never repeated";
  return "not confirmed: " + fmt(c.max_rps, 1) + " req/s missed the SLO in " +
         std::to_string(c.repeats - c.repeats_passed) + " of its " + std::to_string(c.repeats) + " repeats" +
         (c.step_downs > 0 ? " after stepping down " + times(c.step_downs) : "") +
         ": it is at the edge, not below it (a busy machine, or a target whose capacity varies)";
}

bool of_figures(const Warning& w) {
  return w.kind == WarningKind::TooShort || w.kind == WarningKind::NotConfirmed ||
         w.kind == WarningKind::BehindSchedule;
}

namespace {

// --rate by --duration: the ops due before the end that were not sent by then, when they are 1% of
// those due or more (one due just before the end and sent just after it is no finding).
std::string behind_warning(const JobResult& j) {
  const uint64_t due = j.ops_ok + j.ops_failed + j.ops_not_sent;
  if (j.ops_not_sent == 0 || static_cast<double>(j.ops_not_sent) < 0.01 * static_cast<double>(due)) return "";
  return "behind schedule: " + std::to_string(j.ops_not_sent) + " of the " + std::to_string(due) +
         " ops due by the end of --duration were not sent by then (the clients fell behind --rate " +
         grouped(j.job.rate) + "/s: each waited for its replies); req/s and the latency are those of the ops sent";
}

}  // namespace

std::vector<Warning> figure_warnings(const JobResult& j) {
  std::vector<Warning> out;
  // a job that did not run has no figures to warn of
  if (j.state == JobResult::State::Skipped || j.state == JobResult::State::SetupFailed) return out;
  if (std::string w = capacity_warning(j); !w.empty()) out.push_back({WarningKind::NotConfirmed, std::move(w)});
  if (std::string w = behind_warning(j); !w.empty()) out.push_back({WarningKind::BehindSchedule, std::move(w)});
  if (j.state == JobResult::State::Done && j.elapsed_s > 0 && j.elapsed_s < kTooShortS && j.ops_ok > 0 &&
      j.job.op != "load")
    out.push_back({WarningKind::TooShort, "measured for only " + fmt(j.elapsed_s * 1000, 1) +
                                              " ms; too short to mean much (raise -n or use --duration)"});
  return out;
}

void make_notes(RunResult& r) {
  for (auto& j : r.jobs) {
    j.notes = job_notes(j);
    std::erase_if(j.warnings, of_figures);
    for (Warning& w : figure_warnings(j)) j.warnings.push_back(std::move(w));
  }
  r.notes = run_notes(r);
  make_durability_notes(r);
}

}  // namespace mw
