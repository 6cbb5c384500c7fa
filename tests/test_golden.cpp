// The result file's bytes held still: the writer's text for a run that holds every field, a
// merge and a redaction of it, every committed example read and written again, and the reader's
// message for each field of that run removed or given a wrong value. tests/golden/ holds what
// mwbench wrote before the field tables (src/results/tables.cpp) drove the writer and reader: a
// change to a field shows here. Small texts are held whole, large ones as their FNV-1a digest.
//   GOLDEN_WRITE=1 build/tests/unit_tests -sf='*/test_golden.cpp'   writes them again
// A text that differs is written beside the build (golden-NAME.new) to diff.
#include <doctest/doctest.h>

#include <cmath>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>
#include <sstream>
#include <utility>

#include "queue/queue.h"
#include "results/merge.h"
#include "results/notes.h"
#include "results/results.h"
#include "results/writer.h"
#include "tests/helpers.h"

using namespace mw;
using nlohmann::json;

namespace {

constexpr size_t kWholeBelow = 64 * 1024;  // a text this long or longer is held as its digest

std::string digest(const std::string& text) {
  uint64_t h = 14695981039346656037ull;
  for (unsigned char c : text) h = (h ^ c) * 1099511628211ull;
  char b[64];
  std::snprintf(b, sizeof b, "fnv1a64 %016llx %zu\n", static_cast<unsigned long long>(h), text.size());
  return b;
}

void golden(const std::string& name, const std::string& text) {
  const std::string dir = std::string(MWBENCH_SOURCE_DIR) + "/tests/golden";
  const bool whole = text.size() < kWholeBelow;
  const std::string path = dir + "/" + name + (whole ? "" : ".fnv");
  const std::string held = whole ? text : digest(text);
  if (std::getenv("GOLDEN_WRITE")) {
    std::filesystem::create_directories(dir);
    std::ofstream(path, std::ios::binary) << held;
    return;
  }
  std::ifstream in(path, std::ios::binary);
  REQUIRE_MESSAGE(in.good(), path << " is missing (GOLDEN_WRITE=1 writes it)");
  std::stringstream ss;
  ss << in.rdbuf();
  if (ss.str() != held) {
    const std::string out = "golden-" + name + ".new";
    std::ofstream(out, std::ios::binary) << text;
    FAIL_CHECK(path << " differs: this build's text is in " << std::filesystem::absolute(out).string());
  }
}

RunResult run_with(const std::vector<JobResult>& jobs) {
  RunResult r;
  r.suite = "hostile";
  r.started_at = "2026-11-30T03:00:00Z";
  r.command = "mwbench test";
  r.context.host = "box";
  r.jobs = jobs;
  make_notes(r);
  return r;
}

std::shared_ptr<Histogram> histogram_of(std::initializer_list<std::pair<int64_t, uint64_t>> values) {
  auto h = std::make_shared<Histogram>();
  for (auto [v, n] : values) h->record_n(v, n);
  return h;
}

JobResult everything_job() {
  JobResult j = test::done_result("redis", "mix", "redis mix", 1000);
  j.job.clients = 4, j.job.pipeline = 16, j.job.threads = 2, j.job.rate = 2500.5, j.job.duration_s = 1.5;
  j.job.warmup_ops = 10, j.job.timeout_s = 2, j.job.poll = parse_poll("50us"), j.job.source = "suite.toml:3";
  j.job.opts["host"] = "127.0.0.1";
  j.job.opts["password"] = "hunter22";
  j.server = {{"name", "redis-server"}, {"managed", "yes"}};
  j.paths = {"/tmp"};
  j.ops_failed = 2, j.ops_not_run = 1, j.warmup_ok = 7, j.bytes = 4096, j.misses = 3;
  j.errors[static_cast<int>(Status::Timeout)] = 2;
  j.error_samples = {"timeout after 2 s"};
  j.latency_failed = histogram_of({{2'000'000'000, 2}});
  j.latency_uncorrected = histogram_of({{900, 60}, {1'500'000, 40}});
  j.send_lag = histogram_of({{900, 60}});
  j.per_second = {60, 40};
  j.series_interval_s = 0.05;
  SeriesInterval a, b;
  a.ok = 60, a.failed = 2, a.max = 90000;
  a.buckets = {{static_cast<uint16_t>(CompactLayout::index_of(1000)), 30},
               {static_cast<uint16_t>(CompactLayout::index_of(5000)), 29},
               {static_cast<uint16_t>(CompactLayout::index_of(90000)), 1}};
  b.ok = 40, b.max = 7000, b.buckets = {{static_cast<uint16_t>(CompactLayout::index_of(7000)), 40}};
  j.series = {a, b};
  j.ops_not_sent = 4;
  j.job.server_events = false;
  j.events = {{"machine", "machine", "psi_cpu_some", "share", "CPU pressure", {0.25, std::nan("")}},
              {"server", "redis-server", "rdb_bgsave_in_progress", "", "a snapshot", {1, 0}}};
  j.episodes_judged = true;
  Episode e;
  e.start_s = 0.05, e.end_s = 0.1, e.p99 = true, e.throughput = true, e.p99_ns = 90000, e.norm_p99_ns = 5000;
  e.rps = 800, e.norm_rps = 1200, e.what = "p99 0.09 ms (median interval 0.005 ms), throughput -33%";
  e.causes = {{"redis-server", "rdb_bgsave_in_progress", "a snapshot in the episode, none outside", 2.5}};
  Episode quiet = e;
  quiet.p99 = false, quiet.causes.clear(), quiet.unexplained = "no event read moved with it";
  j.episodes = {e, quiet};
  j.per_op = {{"read", 60, 1, 3, histogram_of({{1000, 60}})}, {"update", 40, 1, 0, histogram_of({{3000, 40}})}};
  j.sides = {{"read", 60, 245760, histogram_of({{800, 60}})}};
  j.metrics = {count_metric("connections opened", 4), {"document length", 84, "bytes", Metric::Merge::Same}};
  j.verify = {true, false, "3 keys missing"};
  j.warnings = {{WarningKind::Other, "the server shares this machine's cores"}};
  j.workload = "read:60,update:40 zipfian";
  j.slo = {"p99<2ms", true, false, {{"p99", "p99 2.310 ms, wanted < 2ms"}}};
  j.contract = Contract{ContractKind::PeriodicFsync, 1, "appendfsync everysec"};
  DurabilityResult& d = j.durability;
  d.ran = true, d.victim = "redis-server", d.setting = "persistence=aof-everysec", d.level = "aof-everysec";
  d.note = "fsync once a second", d.crash_at = 0.5, d.ops = 100, d.acked = 90, d.lost = 2;
  d.in_doubt = 5, d.in_doubt_present = 1, d.never_sent = 5, d.recovery_s = 0.25, d.loss_window_s = 0.1;
  d.detail = "key 7 lost", d.unrecoverable = true, d.model = "mwbench-pagecache-1";
  auto q = std::make_shared<queue::Figures>();
  q->prefilled = 5, q->produced = 100, q->consumed = 99, q->drained = 1, q->duplicates = 1, q->redelivered = 2;
  q->lost = 1, q->undrained = 3, q->unexpected = 1, q->corrupt = 1;
  q->sum_produced = 0xfedcba9876543210ull, q->sum_consumed = 12345;
  q->roundtrip = histogram_of({{20000, 99}});
  q->backlog = {3, -1};
  q->message_size = "48:90,65536:10";
  j.queue = q;
  JobResult k = j;
  k.rps = 900;
  j.repeats = {k, j};
  return j;
}

JobResult profiled_job() {
  JobResult j = test::done_result("null", "nop", "null nop", 50000);
  Profile& p = j.profile;
  p.taken = true, p.wall_s = 0.7123456789, p.ops = 35617, p.cores = 2, p.threads = 1, p.clients = 3, p.polled = true;
  p.self = {"mwbench", "self", 0.3333333, 0.1, 0.29999999, 12345678, 17, 4, 1};
  p.servers = {{"redis-server", "managed", 0.25, 0.05, 0.2123456789, 9876543, 100, 2, 3}};
  p.disks = {{"/var/tmp", "vda", "", 12, 345, 49152, 1413120, 340, 123.456, 456.789},
             {"/dev/shm", "", "tmpfs: no block device"}};
  p.net_counted = true, p.bytes_sent = 1234567, p.bytes_received = 7654321, p.steal_share = 0.0123456789;
  p.locks_counted = true, p.lock_retries = 96, p.lock_wait_s = 1.94;
  p.cpu_wait_s = 0.02, p.runnable_cpu_s = 0.6, p.runnable_wait_s = 0.01;
  p.limited_by = "client CPU", p.evidence = "mwbench's busiest thread at 42% of one core", p.suspect = true;
  FaultResult f;
  f.fault = "restart@40%/1s", f.kind = "restart", f.at_s = 0.3, f.done_s = 0.4, f.window_start_s = 0.29;
  f.window_end_s = 0.45, f.failed = {{"Error", 3}, {"Timeout", 1}}, f.in_doubt = 2, f.back_90_s = 0.2;
  f.rate_before = 50000, f.p99_before_ns = 1000, f.p99_during_ns = 90000, f.p99_after_ns = 1200, f.ops_after = 100;
  f.lost = 1, f.lost_note = "";
  FaultResult g = f;
  g.fault = "kill@80%", g.kind = "kill", g.back = false, g.back_90_s = -1, g.lost = -1;
  g.lost_note = "not read back: the server did not come back", g.error = "restart failed";
  j.faults = {f, g};
  return j;
}

JobResult capacity_job() {
  JobResult j = test::done_result("null", "nop", "null nop find", 5000);
  j.job.find_max = "p99<1ms";
  auto c = std::make_shared<Capacity>();
  c->slo = "p99<1ms";
  c->verdict = CapacityVerdict::Found;
  c->max_rps = 952.4;
  c->repeat_min = 950, c->repeat_max = 955, c->repeats = 3, c->repeats_passed = 3, c->confirmed = true;
  c->searched_rps = 1000, c->step_downs = 1, c->first_fail = 1000, c->fail_why = "p99 3 ms";
  c->advice = "", c->elapsed_s = 12.5, c->lag_bound_ns = 100000;
  CapacityStep p;
  p.kind = StepKind::Probe, p.achieved = 1200, p.p50_ns = 1000, p.p99_ns = 5000, p.p999_ns = 9000, p.cpu = 0.5;
  CapacityStep s = p;
  s.kind = StepKind::Search, s.offered = 1000, s.verdict = StepVerdict::Pass, s.cpu_wait_s = 0.01, s.stall_s = 0.1,
  s.stall_max_s = 0.05;
  s.backlog_first = 1.5, s.backlog_last = 2.5, s.warmup_s = 1, s.setup_s = 0.2, s.errors = 3, s.lag_p99_ns = 700;
  CapacityStep r = s;
  r.kind = StepKind::Repeat, r.verdict = StepVerdict::Fail, r.why = "p99 3 ms, wanted p99<1ms", r.cpu_wait_s = -1;
  CapacityStep cb = s;
  cb.verdict = StepVerdict::ClientBound, cb.why = "send lag";
  c->steps = {p, s, r, cb};
  j.capacity = c;
  j.step_metrics = true;
  return j;
}

JobResult crash_job(const char* crash, const char* expect) {
  JobResult j = test::done_result("redis", "set", std::string("redis set crash ") + crash, 2000);
  DurabilityResult& d = j.durability;
  d.ran = true, d.crash = *crash_names.parse(crash), d.expect = *expectation_names.parse(expect),
  d.victim = "redis-server", d.ops = 100, d.acked = 100;
  d.lost = std::string(expect) == "durable" ? 0 : 3;
  d.note = "no fsync";
  d.checked = std::string(crash) != "torn";
  d.restart_failed = std::string(crash) == "power";
  j.contract = Contract{ContractKind::Memory, 0, "no persistence"};
  return j;
}

JobResult skipped_job() {
  JobResult s;
  s.job.name = "skipped";
  s.target = "-";
  s.state = JobResult::State::Skipped;
  s.message = "no server: apt-get install redis-server";
  return s;
}

RunResult everything_run() {
  RunResult run = run_with({everything_job(), profiled_job(), capacity_job(), crash_job("kill", "durable"),
                            crash_job("power", "any"), crash_job("torn", "any"), skipped_job()});
  run.interrupted = true, run.signal = SIGTERM;
  run.gate = "redis mix: slower\n", run.gate_failed = true;
  run.context.libraries = {{"hiredis", "1.1.0"}};
  run.context.paths = {{"/tmp", {"ext4", "/dev/vda1"}}};
  run.context.warnings = {{WarningKind::CpuScaling, "CPU scaling is enabled"}};
  run.context.cpu = "cpu", run.context.kernel = "6.1", run.context.os = "Debian", run.context.cores = 2;
  run.context.memory_bytes = 1 << 30, run.context.build_type = "Release", run.context.virtualization = "kvm";
  RankContext rank;
  rank.host = "box", rank.clients = {4, 1, 1, 1, 1, 1, 1}, rank.warnings = {{WarningKind::Other, "w"}};
  run.ranks = {rank, rank};
  return run;
}

// Every key path of a document (objects and the first element of arrays), as JSON pointers.
void paths_of(const json& v, const std::string& at, std::vector<std::string>& out, int depth = 0) {
  if (depth > 12) return;
  if (v.is_object()) {
    for (auto& [k, x] : v.items()) {
      std::string key = k;
      std::string esc;
      for (char c : key) esc += c == '~' ? std::string("~0") : c == '/' ? std::string("~1") : std::string(1, c);
      out.push_back(at + "/" + esc);
      paths_of(x, at + "/" + esc, out, depth + 1);
    }
  } else if (v.is_array() && !v.empty()) {
    out.push_back(at + "/0");
    paths_of(v[0], at + "/0", out, depth + 1);
  }
}

std::string load_error(const json& doc) {
  try {
    RunResult r = parse_result_json(doc, "bad.json");
    return "loaded: " + std::to_string(r.jobs.size()) + " " + std::to_string(std::hash<std::string>()(result_text(r)));
  } catch (const SetupError& e) {
    return e.what();
  }
}

}  // namespace

TEST_CASE("golden: the writer's bytes") {
  RunResult run = everything_run();
  const std::string text = result_text(run);
  golden("everything.json", text);
  CHECK(result_text(parse_result(text, "x.json")) == text);  // what was written is what is read back
  for (auto& e : std::filesystem::directory_iterator(std::string(MWBENCH_SOURCE_DIR) + "/results/examples")) {
    if (e.path().extension() != ".json") continue;
    golden("example-" + e.path().filename().string(), result_text(load_result(e.path().string())));
  }
  // merge of two runs
  RunResult a = parse_result(text, "a.json"), b = parse_result(text, "b.json");
  b.started_at = "2026-11-30T03:00:01Z";
  for (auto& j : a.jobs) j.repeats.clear();
  for (auto& j : b.jobs) j.repeats.clear();
  Merged m = merge_runs({a, b}, "mwbench merge a b");
  golden("merged.json", result_text(m.run));
  // redaction
  RunResult red = everything_run();
  red.command = "mwbench redis --password hunter22 --url redis://u:hunter22@h/";
  red.jobs[0].message = "auth hunter22 failed";
  red.jobs[0].verify.detail = "password=hunter22";
  redact_result(red);
  golden("redacted.json", result_text(red));
}

TEST_CASE("golden: the reader's messages") {
  const json doc = to_json(everything_run());
  std::vector<std::string> paths;
  paths_of(doc, "", paths);
  std::string out, sampled;  // every path's lines; every tenth path's
  const json values[] = {json(json::value_t::discarded),
                         json(nullptr),
                         json("x"),
                         json(-1),
                         json(1.5),
                         json::array(),
                         json::object(),
                         json(true),
                         json(1e300)};
  // One copy of the document, each change undone after its load. Each load reads the whole
  // document and writes it again: under the sanitizers (MWBENCH_SANITIZED) every tenth path's
  // changes are read, checked against their own golden text, which the Release run checks too.
  json d = doc;
  for (size_t i = 0; i < paths.size(); ++i) {
    const std::string& p = paths[i];
    const bool sample = i % 10 == 0;
    if (p.find("/buckets/0/") != std::string::npos || (test::kSanitized && !sample)) continue;
    const json::json_pointer ptr(p);
    for (const json& v : values) {
      std::string got;
      if (v.is_discarded()) {
        json& parent = d[ptr.parent_pointer()];
        if (parent.is_object()) {
          json held = std::move(parent[ptr.back()]);
          parent.erase(ptr.back());
          got = load_error(d);
          parent[ptr.back()] = std::move(held);
        } else {
          json held = std::move(parent[0]);
          parent.erase(0);
          got = load_error(d);
          parent.insert(parent.begin(), std::move(held));
        }
      } else {
        json& at = d[ptr];
        json held = std::exchange(at, v);
        got = load_error(d);
        at = std::move(held);
      }
      const std::string line = p + " <- " + (v.is_discarded() ? std::string("(gone)") : v.dump()) + ": " + got + "\n";
      out += line;
      if (sample) sampled += line;
    }
  }
  CHECK(d == doc);
  if (!test::kSanitized) golden("errors.txt", out);
  golden("errors-sampled.txt", sampled);
}
