#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string_view>

#include "queue/queue.h"
#include "results/decision_json.h"
#include "results/notes.h"
#include "results/results.h"
#include "results/writer.h"
#include "util/text.h"

namespace mw {
namespace {

using nlohmann::json;

json latency_json(const Histogram& h) {
  return {{"min", h.min()},          {"mean", h.mean()},           {"p50", h.percentile(50)}, {"p90", h.percentile(90)},
          {"p99", h.percentile(99)}, {"p999", h.percentile(99.9)}, {"max", h.max()},          {"count", h.count()}};
}

// Sparse buckets, and the exact min, max and sum: enough to merge histograms exactly.
// --find-max: what it found and every step (jobs[].capacity.steps[]); latencies in ns.
json capacity_json(const Capacity& c) {
  json steps = json::array();
  for (const CapacityStep& s : c.steps)
    steps.push_back({{"kind", s.kind},
                     {"offered", s.offered},
                     {"achieved", s.achieved},
                     {"p50", s.p50_ns},
                     {"p99", s.p99_ns},
                     {"p999", s.p999_ns},
                     {"errors", s.errors},
                     {"lag_p99", s.lag_p99_ns},
                     {"cpu", s.cpu},
                     {"loop_busy", s.loop_busy},
                     {"stall_s", s.stall_s},
                     {"stall_max_s", s.stall_max_s},
                     {"cpu_wait_s", s.cpu_wait_s >= 0 ? json(s.cpu_wait_s) : json(nullptr)},
                     {"backlog_first", s.backlog_first},
                     {"backlog_last", s.backlog_last},
                     {"warmup_s", s.warmup_s},
                     {"setup_s", s.setup_s},
                     {"verdict", s.verdict},
                     {"why", s.why}});
  return {
      {"slo", c.slo},
      {"verdict", c.verdict},
      {"max_rps", c.max_rps},
      {"repeats", {{"count", c.repeats}, {"passed", c.repeats_passed}, {"min", c.repeat_min}, {"max", c.repeat_max}}},
      {"confirmed", c.confirmed},
      {"searched_rps", c.searched_rps},
      {"step_downs", c.step_downs},
      {"first_fail", {{"offered", c.first_fail}, {"why", c.fail_why}}},
      {"advice", c.advice},
      {"precision", c.precision},
      {"step_s", c.step_s},
      {"elapsed_s", c.elapsed_s},
      {"lag_bound_ns", c.lag_bound_ns},
      {"latency_unit", "ns"},
      {"steps", steps}};
}

json histogram_json(const Histogram& h) {
  json b = json::array();
  for (auto& [v, c] : h.buckets()) b.push_back({v, c});
  json o = {{"layout", "hdr-log-linear"},
            {"unit", "ns"},
            {"significant_figures", 3},
            {"buckets", b},
            {"min", h.min()},
            {"max", h.max()}};
  if (h.sum() <= UINT64_MAX) o["sum"] = static_cast<uint64_t>(h.sum());
  return o;
}

json metrics_json(const Metrics& m) {
  json out = json::array();
  for (auto& x : m) {
    json o = {{"name", x.name}, {"value", std::isfinite(x.value) ? x.value : 0.0}, {"merge", merge_name(x.merge)}};
    if (!x.unit.empty()) o["unit"] = x.unit;
    out.push_back(std::move(o));
  }
  return out;
}

json process_json(const Profile& p, const ProcessProfile& x) {
  return {{"name", x.name},
          {"how", x.how},
          {"user_s", x.user_s},
          {"sys_s", x.sys_s},
          {"cpu_us_per_op", p.per_op(x.cpu_s() * 1e6)},
          {"user_us_per_op", p.per_op(x.user_s * 1e6)},
          {"sys_us_per_op", p.per_op(x.sys_s * 1e6)},
          {"cores_used", p.share(x.cpu_s())},
          {"busiest_thread_s", x.busiest_thread_s},
          {"busiest_thread_share", p.share(x.busiest_thread_s)},
          {"peak_rss_bytes", x.peak_rss_bytes},
          {"ctx_voluntary", x.ctx_voluntary},
          {"ctx_involuntary", x.ctx_involuntary},
          {"processes", x.processes}};
}

// The timed phase's resources (profile.h): totals, per op, and the verdict.
json profile_json(const Profile& p) {
  json self = process_json(p, p.self);
  self["share_of_cores"] = p.cores > 0 ? p.share(p.self.cpu_s()) / p.cores : 0;
  if (p.cpu_wait_s >= 0) {  // its driver threads' wait for a CPU (run-queue delay)
    self["cpu_wait_s"] = p.cpu_wait_s;
    self["cpu_wait_share"] = p.cpu_wait_share();
  }
  if (p.runnable_wait_s >= 0)  // the driver thread runnable longest: on a CPU, waiting for one
    self["runnable_thread"] = {{"cpu_s", p.runnable_cpu_s},
                               {"cpu_wait_s", p.runnable_wait_s},
                               {"cpu_share", p.share(p.runnable_cpu_s)},
                               {"cpu_wait_share", p.share(p.runnable_wait_s)}};
  json servers = json::array(), disks = json::array();
  for (auto& s : p.servers) servers.push_back(process_json(p, s));
  for (auto& d : p.disks) {
    json o = {{"path", d.path}, {"device", d.device}};
    if (!d.missing.empty()) {
      o["missing"] = d.missing;
    } else {
      const double f = static_cast<double>(d.flushes);
      o.update({{"reads", d.reads},
                {"writes", d.writes},
                {"read_bytes", d.read_bytes},
                {"write_bytes", d.write_bytes},
                {"flushes", d.flushes},
                {"flush_ms", d.flush_ms},
                {"busy_ms", d.busy_ms},
                {"reads_per_op", p.per_op(static_cast<double>(d.reads))},
                {"writes_per_op", p.per_op(static_cast<double>(d.writes))},
                {"bytes_per_op", p.per_op(static_cast<double>(d.read_bytes + d.write_bytes))},
                {"flushes_per_op", p.per_op(f)},
                {"ms_per_flush", f > 0 ? d.flush_ms / f : 0}});
    }
    disks.push_back(std::move(o));
  }
  json net = {{"counted", p.net_counted}};
  if (p.net_counted)
    net.update({{"bytes_sent", p.bytes_sent},
                {"bytes_received", p.bytes_received},
                {"sent_per_op", p.per_op(static_cast<double>(p.bytes_sent))},
                {"received_per_op", p.per_op(static_cast<double>(p.bytes_received))}});
  json locks = {{"counted", p.locks_counted}};
  if (p.locks_counted)
    locks.update({{"retries", p.lock_retries},
                  {"waited_s", p.lock_wait_s},
                  {"retries_per_op", p.per_op(static_cast<double>(p.lock_retries))}});
  json out = {{"wall_s", p.wall_s},     {"ops", p.ops},        {"cores", p.cores},    {"threads", p.threads},
              {"clients", p.clients},   {"polled", p.polled},  {"mwbench", self},     {"servers", servers},
              {"disks", disks},         {"net", net},          {"lock_waits", locks}, {"limited_by", p.limited_by},
              {"evidence", p.evidence}, {"suspect", p.suspect}};
  if (p.steal_share >= 0) out["steal_share"] = p.steal_share;  // the machine's CPU time the hypervisor took
  return out;
}

// The timeline's events (series.events): per event, a value per interval (null: not read).
json events_json(const std::vector<EventTrack>& ts) {
  json out = json::array();
  for (const EventTrack& t : ts) {
    json values = json::array();
    for (double v : t.values) values.push_back(std::isfinite(v) ? json(v) : json(nullptr));
    out.push_back({{"origin", t.origin},
                   {"source", t.source},
                   {"name", t.name},
                   {"unit", t.unit},
                   {"what", t.what},
                   {"values", std::move(values)}});
  }
  return out;
}

// The episodes of a judged series (an empty list: a quiet run), each with its ranked causes.
json episodes_json(const std::vector<Episode>& es) {
  json out = json::array();
  for (const Episode& e : es) {
    json left = json::array(), causes = json::array();
    if (e.p99) left.push_back("p99");
    if (e.throughput) left.push_back("throughput");
    for (const EpisodeCause& c : e.causes)
      causes.push_back({{"source", c.source}, {"event", c.event}, {"evidence", c.evidence}, {"score", c.score}});
    json o = {{"start_s", e.start_s},
              {"end_s", e.end_s},
              {"left", left},
              {"p99_ns", e.p99_ns},
              {"median_p99_ns", e.norm_p99_ns},
              {"rps", e.rps},
              {"median_rps", e.norm_rps},
              {"what", e.what},
              {"causes", causes}};
    if (!e.unexplained.empty()) o["unexplained"] = e.unexplained;
    out.push_back(std::move(o));
  }
  return out;
}

// A list of warnings as the file holds them: "warnings" (the texts, for people and scripts) and,
// when there are any, "warning_kinds" (one a warning, in order: what readers decide by).
void put_warnings(json& o, const std::vector<Warning>& ws) {
  json texts = json::array(), kinds = json::array();
  for (auto& w : ws) texts.push_back(w.text), kinds.push_back(warning_kind_name(w.kind));
  o["warnings"] = std::move(texts);
  if (!ws.empty()) o["warning_kinds"] = std::move(kinds);
}

// A list of notes: "notes" (the texts) and "note_kinds" (one a note, in order), both always (a
// file without them was written before notes were: its loader makes them from the figures).
void put_notes(json& o, const std::vector<Note>& ns) {
  json texts = json::array(), kinds = json::array();
  for (auto& n : ns) texts.push_back(n.text), kinds.push_back(note_kind_name(n.kind));
  o["notes"] = std::move(texts);
  o["note_kinds"] = std::move(kinds);
}

json job_json(const JobResult& j) {
  json errors = json::object();
  for (int k = 1; k < kStatusCount; ++k) errors[std::string(status_name(static_cast<Status>(k)))] = j.errors[k];
  json o = {{"name", j.job.name},
            {"adapter", j.job.adapter},
            {"op", j.job.op},
            {"target", j.target},
            {"source", j.job.source},
            {"state", state_name(j.state)},
            {"params", job_params(j.job)},
            {"server", j.server},
            {"paths", j.paths},
            {"ops_ok", j.ops_ok},
            {"ops_failed", j.ops_failed},
            {"ops_not_run", j.ops_not_run},
            {"ops_not_sent", j.ops_not_sent},
            {"warmup_ops_ok", j.warmup_ok},
            {"errors", errors},
            {"error_samples", j.error_samples},
            {"elapsed_s", j.elapsed_s},
            {"rps", j.rps},
            {"bytes", j.bytes},
            {"mb_per_s", j.mbps()},
            {"per_second", j.per_second},
            {"metrics", metrics_json(j.metrics)},
            {"verify", {{"checked", j.verify.checked}, {"ok", j.verify.ok}, {"detail", j.verify.detail}}}};
  put_warnings(o, j.warnings);
  put_notes(o, j.notes);
  if (!j.message.empty()) o["message"] = j.message;
  if (j.series_interval_s > 0) {
    json points = json::array();
    for (size_t k = 0; k < j.series.size(); ++k) {
      const SeriesInterval& iv = j.series[k];
      points.push_back({{"t_s", static_cast<double>(k) * j.series_interval_s},
                        {"ok", iv.ok},
                        {"failed", iv.failed},
                        {"rps", series_rps(j, k)},
                        {"p50", iv.percentile(50)},
                        {"p99", iv.percentile(99)},
                        {"max", iv.max}});
    }
    o["series"] = {{"interval_s", j.series_interval_s}, {"latency_unit", "ns"}, {"intervals", points}};
    if (!j.events.empty()) o["series"]["events"] = events_json(j.events);
  }
  if (j.episodes_judged) o["episodes"] = episodes_json(j.episodes);
  if (!j.slo.spec.empty()) {
    json v = json::array();
    for (auto& x : j.slo.violations) v.push_back({{"metric", x.metric}, {"text", x.text}});
    json passed = j.slo.checked ? json(j.slo.passed) : json(nullptr);  // null: the job did not run
    o["slo"] = {{"spec", j.slo.spec}, {"passed", passed}, {"violations", v}};
  }
  if (j.contract) {
    const Contract& c = *j.contract;
    o["contract"] = {{"kind", contract_name(c.kind)}, {"label", contract_label(c)}, {"detail", c.detail}};
    if (c.kind == ContractKind::PeriodicFsync) o["contract"]["interval_s"] = c.interval_s;
  }
  if (j.durability.ran) {
    const DurabilityResult& d = j.durability;
    o["durability"] = {{"victim", d.victim},
                       {"setting", d.setting},
                       {"crash_at", d.crash_at},
                       {"expect", d.expect},
                       {"ops", d.ops},
                       {"acked", d.acked},
                       {"lost", d.lost},
                       {"in_doubt", d.in_doubt},
                       {"in_doubt_kept", d.in_doubt_present},
                       {"never_sent", d.never_sent},
                       {"corrupt", d.corrupt},
                       {"recovery_s", d.recovery_s},
                       {"note", d.note},
                       {"detail", d.detail},
                       {"failed", d.failed()},
                       {"checked", d.checked},
                       {"crash", d.crash}};
    if (!d.model.empty()) o["durability"]["model"] = d.model;
    if (d.lost) o["durability"]["loss_window_s"] = d.loss_window_s;
    if (!d.level.empty()) o["durability"]["level"] = d.level;
    if (d.unrecoverable) o["durability"]["unrecoverable"] = true;
  }
  if (j.profile.taken) o["profile"] = profile_json(j.profile);
  if (StoreGuidance g = store_guidance(j); !g.figure.empty()) o["stores"] = {{"figure", g.figure}, {"rules", g.rules}};
  if (!j.workload.empty()) o["workload"] = j.workload;
  if (!j.per_op.empty()) {
    o["misses"] = j.misses;
    o["per_op"] = json::object();
    for (auto& p : j.per_op)
      o["per_op"][p.op] = {{"ops_ok", p.ops_ok},
                           {"ops_failed", p.ops_failed},
                           {"misses", p.misses},
                           {"rps", op_rps(j, p)},
                           {"latency_ns", latency_json(*p.latency)},
                           {"histogram", histogram_json(*p.latency)}};
  }
  if (j.queue) {  // a queue op: what the ledger found (queue.h)
    const queue::Figures& q = *j.queue;
    o["queue"] = {{"prefilled", q.prefilled},
                  {"produced", q.produced},
                  {"consumed", q.consumed},
                  {"drained", q.drained},
                  {"duplicates", q.duplicates},
                  {"redelivered", q.redelivered},
                  {"lost", q.lost},
                  {"undrained", q.undrained},
                  {"unexpected", q.unexpected},
                  {"corrupt", q.corrupt},
                  {"exactly_once", q.exactly_once()},
                  {"checksum_produced", q.sum_produced},
                  {"checksum_consumed", q.sum_consumed},
                  {"backlog", q.backlog}};
    if (!q.message_size.empty()) o["queue"]["message_size"] = q.message_size;  // --message-size, read
    if (q.roundtrip) {
      o["queue"]["roundtrip_latency_ns"] = latency_json(*q.roundtrip);
      o["queue"]["roundtrip_histogram"] = histogram_json(*q.roundtrip);
    }
  }
  if (j.capacity) o["capacity"] = capacity_json(*j.capacity);
  if (j.latency) {
    o["latency_ns"] = latency_json(*j.latency);
    o["histogram"] = histogram_json(*j.latency);
  }
  if (j.latency_failed && j.latency_failed->count()) {
    o["latency_failed_ns"] = latency_json(*j.latency_failed);
    o["histogram_failed"] = histogram_json(*j.latency_failed);
  }
  if (j.latency_uncorrected) {
    o["latency_uncorrected_ns"] = latency_json(*j.latency_uncorrected);
    o["histogram_uncorrected"] = histogram_json(*j.latency_uncorrected);
  }
  for (auto& s : j.sides) {  // fio's shape: jobs[].read, jobs[].write
    double secs = j.elapsed_s > 0 ? j.elapsed_s : 1;
    o["sides"][s.name] = {{"ops_ok", s.ops_ok},
                          {"bytes", s.bytes},
                          {"iops", j.elapsed_s > 0 ? static_cast<double>(s.ops_ok) / secs : 0},
                          {"mb_per_s", j.elapsed_s > 0 ? static_cast<double>(s.bytes) / 1e6 / secs : 0},
                          {"latency_ns", latency_json(*s.latency)},
                          {"histogram", histogram_json(*s.latency)}};
  }
  if (std::optional<RpsRange> range = rps_range(j)) {
    o["repeats"] = json::array();
    for (auto& r : j.repeats) o["repeats"].push_back(job_json(r));
    o["rps_median"] = j.rps;
    o["rps_min"] = range->min;
    o["rps_max"] = range->max;
  }
  if (!j.faults.empty()) {  // --fault: one object per fault (core/faults.h)
    o["faults"] = json::array();
    for (const FaultResult& f : j.faults) {
      json x = {{"fault", f.fault},
                {"kind", f.kind},
                {"at_s", f.at_s},
                {"done_s", f.done_s},
                {"window_s", f.window_s()},
                {"window_start_s", f.window_start_s},
                {"window_end_s", f.window_end_s},
                {"back", f.back},
                {"failed", f.failed},
                {"in_doubt", f.in_doubt},
                {"back_90_s", f.back_90_s >= 0 ? json(f.back_90_s) : json(nullptr)},
                {"rate_before", f.rate_before},
                {"p99_before_ns", f.p99_before_ns},
                {"p99_during_ns", f.p99_during_ns},
                {"p99_after_ns", f.p99_after_ns},
                {"ops_after", f.ops_after},
                {"acked_lost", f.lost >= 0 ? json(f.lost) : json(nullptr)},
                {"lost_note", f.lost_note},
                {"error", f.error}};
      o["faults"].push_back(std::move(x));
    }
  }
  return o;
}

}  // namespace

json job_params(const Job& job) {
  json params = {
      {"clients", job.clients},       {"pipeline", job.pipeline},     {"threads", job.threads},   {"n", job.n},
      {"duration_s", job.duration_s}, {"warmup_ops", job.warmup_ops}, {"warmup_s", job.warmup_s}, {"rate", job.rate},
      {"timeout_s", job.timeout_s},   {"poll", job.poll.text()}};
  for (auto& [k, v] : job.opts) params[k] = redact(k, v);
  if (!job.find_max.empty()) params["find_max"] = job.find_max;  // a capacity row is not a plain row
  if (!job.server_events) params["server_events"] = "off";
  return params;
}

double series_rps(const JobResult& j, size_t k) {
  double start = static_cast<double>(k) * j.series_interval_s, elapsed = j.elapsed_s;
  // the last one may be partial; one past the job's end (ops that completed after the last
  // client's end was taken) has its whole length, not a sliver that would make its rate absurd
  double len = elapsed - start > 1e-6 ? std::min(elapsed - start, j.series_interval_s) : j.series_interval_s;
  return static_cast<double>(j.series[k].ok) / len;
}

double op_rps(const JobResult& j, const OpFigures& op) {
  return j.elapsed_s > 0 ? static_cast<double>(op.ops_ok) / j.elapsed_s : 0;
}

std::optional<RpsRange> rps_range(const JobResult& j) {
  if (j.repeats.empty()) return std::nullopt;
  RpsRange r{j.rps, j.rps};
  for (auto& k : j.repeats) r.min = std::min(r.min, k.rps), r.max = std::max(r.max, k.rps);
  return r;
}

namespace {

// A decision: its rounds at the top, each alternative's verdict in its job's row (jobs[].decision),
// or, for commands (`mwbench decide`), as the top-level "decisions" (and "decision" when there is
// one).
void put_decide(json& out, const DecideResult& d) {
  out["decide"] = decide_json(d);
  json decisions = json::array();
  for (const Decision& x : d.decisions) {
    const int job = d.alternatives.at(static_cast<size_t>(x.alternative)).job;
    if (job >= 0 && static_cast<size_t>(job) < out["jobs"].size())
      out["jobs"][static_cast<size_t>(job)]["decision"] = decision_json(d, x);
    else
      decisions.push_back(decision_json(d, x));
  }
  if (decisions.empty()) return;
  if (decisions.size() == 1) out["decision"] = decisions[0];
  out["decisions"] = std::move(decisions);
}

}  // namespace

json to_json(const RunResult& r) {
  const Context& c = r.context;
  json paths = json::object();
  for (auto& [p, fs] : c.paths) paths[p] = {{"fs", fs.first}, {"device", fs.second}};
  json jobs = json::array();
  for (auto& j : r.jobs) jobs.push_back(job_json(j));
  json out = {{"schema_version", kSchemaVersion},
              {"tool", {{"name", "mwbench"}, {"version", MWBENCH_VERSION}}},
              {"suite", r.suite},
              {"command", redact_text(r.command)},
              {"started_at", r.started_at},
              {"interrupted", r.interrupted},
              {"exit_code", exit_code(r)},
              {"context",
               {{"host", c.host},
                {"cpu", c.cpu},
                {"cores", c.cores},
                {"memory_bytes", c.memory_bytes},
                {"kernel", c.kernel},
                {"os", c.os},
                {"virtualization", c.virtualization},
                {"build_type", c.build_type},
                {"libraries", c.libraries},
                {"paths", paths}}},
              {"jobs", jobs}};
  put_warnings(out["context"], c.warnings);
  put_notes(out, r.notes);
  if (!r.ranks.empty()) {  // MPI ranks, or the runs `mwbench merge` took
    out["ranks"] = json::array();
    for (auto& k : r.ranks) {
      json o = {{"rank", k.rank},
                {"host", k.host},
                {"cpu", k.cpu},
                {"cores", k.cores},
                {"memory_bytes", k.memory_bytes},
                {"kernel", k.kernel},
                {"started_at", k.started_at},
                {"source", k.source},
                {"clients", k.clients}};
      put_warnings(o, k.warnings);
      out["ranks"].push_back(std::move(o));
    }
  }
  if (!r.gate.empty()) out["gate"] = {{"passed", !r.gate_failed}, {"text", r.gate}};
  if (r.decide) put_decide(out, *r.decide);
  sanitize_json(out);  // names, replies and server info may hold bytes that are not UTF-8
  return out;
}

std::string result_text(const RunResult& r) {
  json j = to_json(r);
  std::string out = "{\n";
  bool first = true;
  for (auto& [k, v] : j.items()) {
    out += std::string(first ? "" : ",\n") + "  " + json(k).dump() + ": ";
    first = false;
    if (k != "jobs") {
      out += v.dump();
      continue;
    }
    out += "[";
    for (size_t i = 0; i < v.size(); ++i) out += std::string(i ? "," : "") + "\n    " + v[i].dump();
    out += "\n  ]";
  }
  out += "\n}\n";
  // Tests set MWBENCH_CHECK_RESULTS=1 (tests/CMakeLists.txt): every result any of them writes is
  // read back by the loader first (report and compare would read it), and one it refuses is a bug.
  if (const char* check = std::getenv("MWBENCH_CHECK_RESULTS"); check && std::string_view(check) == "1") {
    try {
      (void)parse_result(out, "the result being written");
    } catch (const SetupError& e) {
      throw std::logic_error(std::string("mwbench wrote a result its own loader refuses: ") + e.what());
    }
  }
  return out;
}

namespace {

// What is at `path` when it is there and is not a regular file ("" otherwise).
std::string not_regular(const std::string& path) {
  struct stat st {};
  if (stat(path.c_str(), &st) != 0 || S_ISREG(st.st_mode)) return "";
  if (S_ISDIR(st.st_mode)) return "a directory";
  if (S_ISFIFO(st.st_mode)) return "a FIFO";
  if (S_ISCHR(st.st_mode)) return "a character device";
  if (S_ISBLK(st.st_mode)) return "a block device";
  return S_ISSOCK(st.st_mode) ? "a socket" : "not a regular file";
}

// One identity for a path: its device and inode when it is there, else its absolute form.
std::string identity(const std::string& path) {
  struct stat st {};
  if (stat(path.c_str(), &st) == 0) return std::to_string(st.st_dev) + ":" + std::to_string(st.st_ino);
  std::error_code ec;
  return std::filesystem::weakly_canonical(std::filesystem::absolute(path, ec), ec).string();
}

}  // namespace

void check_output_targets(const std::vector<std::pair<std::string, std::string>>& outputs,
                          const std::vector<std::string>& inputs) {
  std::vector<std::string> seen;
  for (size_t i = 0; i < outputs.size(); ++i) {
    const auto& [option, path] = outputs[i];
    const std::string head = option + " " + printable(path) + ": ";
    if (path.empty()) throw SetupError(option + ": an empty path");
    if (std::string what = not_regular(path); !what.empty())
      throw SetupError(head + "is " + what + ", not a regular file: give the path of a file to write");
    std::filesystem::path dir = std::filesystem::path(path).parent_path();
    if (dir.empty()) dir = ".";
    struct stat st {};
    if (stat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode))
      throw SetupError(head + "its directory " + printable(dir.string()) + " does not exist");
    if (access(dir.c_str(), W_OK) != 0)
      throw SetupError(head + "its directory " + printable(dir.string()) + " cannot be written");
    const std::string id = identity(path);
    for (const std::string& in : inputs)
      if (identity(in) == id) throw SetupError(head + "is an input of this command: it would be overwritten");
    for (size_t k = 0; k < i; ++k)
      if (seen[k] == id)
        throw SetupError(head + "the same file as " + outputs[k].first + ": give each output its own file");
    seen.push_back(id);
  }
}

void write_file_atomic(const std::string& path, const std::string& text) {
  if (std::string what = not_regular(path); !what.empty())
    throw SetupError("cannot write " + path + ": it is " + what + ", not a regular file");
  std::string tmp = path + ".tmp." + std::to_string(getpid());
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    out << text;
    out.flush();
    if (!out) {
      unlink(tmp.c_str());
      throw SetupError("cannot write " + path + ": " + std::strerror(errno));
    }
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    int e = errno;
    unlink(tmp.c_str());
    throw SetupError("cannot write " + path + ": " + std::strerror(e));
  }
}

std::string write_result_file(const RunResult& r, const std::string& dir) {
  if (mkdir(dir.c_str(), 0755) != 0 && errno != EEXIST)
    throw SetupError("cannot create results directory " + dir + ": " + std::strerror(errno));
  std::string stamp = r.started_at;
  for (char& ch : stamp)
    if (ch == ':') ch = '-';
  std::string suite;
  for (char ch : r.suite) suite += (std::isalnum(static_cast<unsigned char>(ch)) || ch == '-' || ch == '_') ? ch : '_';
  std::string base = dir + "/" + stamp + "-" + suite;
  const std::string text = result_text(r);  // before the temp file exists: nothing left behind
  std::string tmp = base + ".json.tmp." + std::to_string(getpid());
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    out << text;
    out.flush();
    if (!out) {
      unlink(tmp.c_str());
      throw SetupError("cannot write " + tmp + ": " + std::strerror(errno));
    }
  }
  // link() fails with EEXIST instead of replacing: an earlier file is never overwritten.
  for (int k = 0; k < 1000; ++k) {
    std::string path = base + (k ? "-" + std::to_string(k) : "") + ".json";
    if (link(tmp.c_str(), path.c_str()) == 0) {
      unlink(tmp.c_str());
      return path;
    }
    if (errno != EEXIST) break;
  }
  int e = errno;
  unlink(tmp.c_str());
  throw SetupError("cannot write result file in " + dir + ": " + std::strerror(e));
}

}  // namespace mw
