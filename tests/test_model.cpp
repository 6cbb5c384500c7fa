// The one result model (#23 item 2): warnings are typed (no reader tests their words), and what a
// job's profile and store rules hold survives the file, merge, MPI's merge and CSV.
#include <doctest/doctest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>
#include <regex>
#include <sstream>

#include "report/report.h"
#include "results/merge.h"
#include "results/results.h"
#include "tests/helpers.h"

namespace mw {
namespace {

using nlohmann::json;

RunResult run_of(const std::vector<JobResult>& jobs, const std::string& started = "2026-12-02T17:00:00Z") {
  RunResult r;
  r.suite = "model";
  r.started_at = started;
  r.command = "mwbench test";
  r.context.host = "box";
  r.context.cores = 2;
  r.jobs = jobs;
  make_notes(r);  // as the runner finishes a run
  return r;
}

JobResult done_job(const std::string& name, double rps) { return test::done_result("null", "nop", name, rps); }

}  // namespace

// The words warnings and the notes under the table start with: what a reader testing text would
// look for. (The loader's legacy_warning_kind reads them once, for files written before kinds.)
TEST_CASE("warnings: no reader in src/ tests a warning's or a note's words") {
  namespace fs = std::filesystem;
  const std::vector<std::string> words = {"server and client share",
                                          "mwbench was built as",
                                          "CPU frequency scaling",
                                          "limited by the client",
                                          "the hypervisor took",
                                          "the run never settled",
                                          "never settled",
                                          "teardown:",
                                          "warm-up:",
                                          "load:",
                                          "-P ",
                                          "rank ",
                                          "O_DIRECT on",
                                          "buffered reads of",
                                          "values of up to",
                                          "warning",
                                          "stores:",
                                          "profile:",
                                          "limited by:",
                                          "machine:",
                                          "SLO MISSED",
                                          "SLO met",
                                          "FAILED",
                                          "VERIFY FAILED",
                                          "SET-UP ERROR",
                                          "skipped:",
                                          "interrupted:",
                                          "contract:",
                                          "req/s:",
                                          "max at SLO",
                                          "NO RATE MET",
                                          "CLIENT-BOUND",
                                          "not confirmed",
                                          "the runs did not",
                                          "cannot tell whether",
                                          "differ per run",
                                          "measured for only"};
  // a search for a literal: x.find("..."), x.rfind("...", 0), x.starts_with("..."), ends_with, compare
  const std::regex search(
      R"re(\.(find|rfind|starts_with|ends_with|compare)\(\s*(\d+\s*,\s*\d+\s*,\s*)?"((\\.|[^"\\])*)")re");
  std::vector<std::string> found;
  size_t files = 0;
  for (const auto& e : fs::recursive_directory_iterator(fs::path(MWBENCH_SOURCE_DIR) / "src")) {
    if (!e.is_regular_file() || (e.path().extension() != ".cpp" && e.path().extension() != ".h")) continue;
    const std::string rel = e.path().lexically_relative(MWBENCH_SOURCE_DIR).string();
    if (rel == "src/results/results.cpp") continue;  // the loader: legacy_warning_kind, for old files
    ++files;
    std::ifstream in(e.path());
    int line_no = 0;
    for (std::string line; std::getline(in, line);) {
      ++line_no;
      for (std::sregex_iterator m(line.begin(), line.end(), search), end; m != end; ++m) {
        const std::string lit = (*m)[3];
        for (const std::string& w : words)
          if (!lit.empty() && (lit.rfind(w, 0) == 0 || w.rfind(lit, 0) == 0))
            found.push_back(rel + ":" + std::to_string(line_no) + ": \"" + lit + "\"");
      }
    }
  }
  CHECK(files > 100);
  std::string all;
  for (auto& f : found) all += f + "\n";
  CAPTURE(all);
  CHECK(found.empty());
}

TEST_CASE("warnings: their kinds are written and read back; a file without kinds gets them from their words") {
  JobResult j = done_job("null nop", 1000);
  j.warnings = {
      {WarningKind::Unsettled, "throughput fell 40% from the first third to the last (...): the run never settled"},
      {WarningKind::Steal, "the hypervisor took 12% of the machine's CPU time during the phase (steal)"},
      {WarningKind::Adapter, "O_DIRECT on tmpfs still goes through memory: not a device figure"},
      {WarningKind::Other, "a warning of no kind"}};
  RunResult run = run_of({j});
  run.context.warnings = {{WarningKind::SharedCores, "server and client share this machine's 2 cores: lower bound"},
                          {WarningKind::Merge, "null nop: note differ per run and cannot be added up: see each run"}};
  RankContext rank;
  rank.host = "box", rank.clients = {1}, rank.warnings = {{WarningKind::DebugBuild, "mwbench was built as Debug"}};
  run.ranks = {rank};
  const std::string text = result_text(run);
  const json doc = json::parse(text);
  CHECK(doc["jobs"][0]["warnings"][0] == j.warnings[0].text);  // the texts stay strings, for scripts
  CHECK(doc["jobs"][0]["warning_kinds"] == json({"unsettled", "steal", "adapter", "other"}));
  CHECK(doc["context"]["warning_kinds"] == json({"shared-cores", "merge"}));
  CHECK(doc["ranks"][0]["warning_kinds"] == json({"debug-build"}));
  RunResult back = parse_result(text, "r.json");
  CHECK(back.jobs[0].warnings == j.warnings);
  CHECK(back.context.warnings == run.context.warnings);
  CHECK(back.ranks[0].warnings == rank.warnings);
  CHECK(result_text(back) == text);

  // A file of before kinds: the loader maps the words they started with, once; a kind it does not
  // know (a newer mwbench's) is "other"; kinds that do not match the warnings are refused.
  json old = doc;
  old["jobs"][0].erase("warning_kinds");
  old["context"].erase("warning_kinds");
  old["ranks"][0].erase("warning_kinds");
  RunResult legacy = parse_result_json(old, "old.json");
  std::vector<WarningKind> kinds;
  for (auto& w : legacy.jobs[0].warnings) kinds.push_back(w.kind);
  CHECK(kinds ==
        std::vector<WarningKind>{WarningKind::Unsettled, WarningKind::Steal, WarningKind::Other, WarningKind::Other});
  CHECK(legacy.context.warnings[0].kind == WarningKind::SharedCores);
  CHECK(legacy.ranks[0].warnings[0].kind == WarningKind::DebugBuild);
  json newer = doc;
  newer["jobs"][0]["warning_kinds"][3] = "kind-of-tomorrow";
  CHECK(parse_result_json(newer, "new.json").jobs[0].warnings[3].kind == WarningKind::Other);
  json bad = doc;
  bad["context"]["warning_kinds"].erase(1);
  CHECK_THROWS_WITH(parse_result_json(bad, "bad.json"), "bad.json: context.warning_kinds: 1 kinds for 2 warnings");
  // The committed examples (schema 1): their shared-cores warning is known by its kind.
  RunResult ex = load_result(std::string(MWBENCH_SOURCE_DIR) + "/results/examples/quick.json");
  REQUIRE(!ex.context.warnings.empty());
  CHECK(ex.context.warnings[0].kind == WarningKind::SharedCores);
}

TEST_CASE("notes: --quiet's are what went wrong or what --find-max found: no warning, profile or contract, by kind") {
  JobResult j = done_job("null nop", 1000);
  j.elapsed_s = 0.05;  // too short: a warning of the table's own
  j.warnings = {{WarningKind::Other, "something"}};
  RunResult run = run_of({j});
  run.context.warnings = {{WarningKind::CpuScaling, "CPU frequency scaling is enabled"}};
  // the words are the same: only the kind decides
  run.jobs[0].notes = {{NoteKind::Contract, "a"},    {NoteKind::Profile, "b"},         {NoteKind::Failed, "c"},
                       {NoteKind::ErrorSample, "d"}, {NoteKind::ProtocolMetrics, "e"}, {NoteKind::SloMissed, "f"},
                       {NoteKind::Stores, "g"},      {NoteKind::VerifyFailed, "h"},    {NoteKind::Workload, "i"}};
  run.notes = {{NoteKind::Repeats, "j"}};
  CHECK(summary_notes(run).size() == 10 + 3);  // the notes, then the two warnings of the job and the run's
  CHECK(quiet_notes(run) == std::vector<std::string>{"c", "d", "f", "h"});
  run.jobs[0].state = JobResult::State::Skipped;
  run.jobs[0].notes = {{NoteKind::Skipped, "skipped: why"}};
  CHECK(quiet_notes(run) == std::vector<std::string>{"skipped: why"});
}

TEST_CASE("notes: typed, carried by the run, written beside their kinds and read back; a file of before gets them") {
  JobResult j = done_job("redis get", 1000);
  j.target = "127.0.0.1:6379";
  j.ops_failed = 3;
  j.errors[static_cast<int>(Status::Mismatch)] = 3;
  j.error_samples = {"Mismatch: key:1 holds another value"};
  j.verify = {true, false, "key:7 is missing"};
  JobResult skipped;
  skipped.job.name = "gearman submit-bg", skipped.target = "-";
  skipped.state = JobResult::State::Skipped, skipped.message = "gearmand is not installed";
  JobResult repeated = done_job("null nop", 1000);
  repeated.repeats = {repeated, repeated};
  RunResult run = run_of({j, skipped, repeated});
  auto kinds = [](const std::vector<Note>& ns) {
    std::vector<NoteKind> out;
    for (auto& n : ns) out.push_back(n.kind);
    return out;
  };
  CHECK(kinds(run.jobs[0].notes) ==
        std::vector<NoteKind>{NoteKind::Failed, NoteKind::ErrorSample, NoteKind::VerifyFailed});
  CHECK(kinds(run.jobs[1].notes) == std::vector<NoteKind>{NoteKind::Skipped});
  CHECK(run.jobs[2].notes.empty());
  CHECK(kinds(run.notes) == std::vector<NoteKind>{NoteKind::Repeats});
  const std::string text = result_text(run);
  const json doc = json::parse(text);
  CHECK(doc["jobs"][0]["notes"][0] ==
        "FAILED: redis get on 127.0.0.1:6379: 3 of 103 ops failed; req/s counts the 100 that succeeded");
  CHECK(doc["jobs"][0]["note_kinds"] == json({"failed", "error-sample", "verify-failed"}));
  CHECK(doc["jobs"][1]["note_kinds"] == json({"skipped"}));
  CHECK(doc["jobs"][2]["notes"] == json::array());
  CHECK(doc["note_kinds"] == json({"repeats"}));
  RunResult back = parse_result(text, "r.json");
  for (size_t i = 0; i < run.jobs.size(); ++i) CHECK(back.jobs[i].notes == run.jobs[i].notes);
  CHECK(back.notes == run.notes);
  CHECK(result_text(back) == text);
  // the table prints the notes the run carries, in order, warnings after each job's
  std::vector<std::string> printed;
  for (auto& n : run.jobs[0].notes) printed.push_back(n.text);
  printed.push_back(run.jobs[1].notes[0].text);
  printed.push_back(run.notes[0].text);
  CHECK(summary_notes(back) == printed);
  back.jobs[0].notes = {{NoteKind::VerifyFailed, "VERIFY FAILED: as the file says"}};
  CHECK(format_table(back).find("\nVERIFY FAILED: as the file says\n") != std::string::npos);

  // A file of before notes: the loader makes them from its figures, kinds and words alike.
  json old = doc;
  for (auto& o : old["jobs"]) o.erase("notes"), o.erase("note_kinds");
  old.erase("notes"), old.erase("note_kinds");
  RunResult legacy = parse_result_json(old, "old.json");
  for (size_t i = 0; i < run.jobs.size(); ++i) CHECK(legacy.jobs[i].notes == run.jobs[i].notes);
  CHECK(legacy.notes == run.notes);
  // a kind of a newer mwbench's is "other"; notes without their kinds, or as many, are refused
  json newer = doc;
  newer["jobs"][0]["note_kinds"][2] = "kind-of-tomorrow";
  CHECK(parse_result_json(newer, "new.json").jobs[0].notes[2].kind == NoteKind::Other);
  json bad = doc;
  bad["jobs"][0]["note_kinds"].erase(1);
  CHECK_THROWS_WITH(parse_result_json(bad, "bad.json"), "bad.json: jobs[0].note_kinds: 2 kinds for 3 notes");
  bad = doc;
  bad["jobs"][1].erase("note_kinds");
  CHECK_THROWS_WITH(parse_result_json(bad, "bad.json"), "bad.json: jobs[1]: missing \"note_kinds\"");
  // The committed examples, of schema 1 and of schema 2 before notes: made once, by the loader.
  for (const char* name : {"quick.json", "vm-sanity.json"}) {
    if (test::kSanitized && std::string(name) == "vm-sanity.json") continue;  // 1.7 MB: the same code, less data
    CAPTURE(name);
    RunResult ex = load_result(std::string(MWBENCH_SOURCE_DIR) + "/results/examples/" + name);
    size_t profile = 0;
    for (auto& e : ex.jobs) {
      CHECK(e.notes == job_notes(e));
      for (auto& n : e.notes) profile += n.kind == NoteKind::Profile;
    }
    if (std::string(name) == "vm-sanity.json") CHECK(profile > 0);  // its jobs' profiles, in words
  }
}

TEST_CASE("notes: --quiet leaves out a found rate's warning at the edge, by its being a warning") {
  JobResult j = done_job("oracle ask", 1000);
  auto c = std::make_shared<Capacity>();
  c->slo = "p99<1ms", c->verdict = CapacityVerdict::Found, c->max_rps = 5000, c->repeats = 3, c->repeats_passed = 2;
  c->repeat_min = 4900, c->repeat_max = 5100, c->step_s = 1;
  j.capacity = c;
  RunResult run = run_of({j});
  REQUIRE(run.jobs[0].notes.size() == 1);
  CHECK(run.jobs[0].notes[0].kind == NoteKind::Capacity);
  const std::string edge =
      "warning: oracle ask: not confirmed: 5000.0 req/s missed the SLO in 1 of its 3 repeats: it is at the "
      "edge, not below it (a busy machine, or a target whose capacity varies)";
  auto all = summary_notes(run), quiet = quiet_notes(run);
  CHECK(std::find(all.begin(), all.end(), edge) != all.end());
  CHECK(std::find(quiet.begin(), quiet.end(), edge) == quiet.end());
  CHECK(quiet == std::vector<std::string>{run.jobs[0].notes[0].text});
}

TEST_CASE("warnings: merge's have kinds, in the merged run's file, its table and HTML; -q leaves them out") {
  JobResult a = done_job("null nop", 1000), b = done_job("null nop", 1000);
  RunResult ra = run_of({a}, "2026-12-02T17:00:00Z"), rb = run_of({b}, "2026-12-02T17:05:00Z");
  ra.context.host = "a", rb.context.host = "b";
  Merged m =
      merge_runs({parse_result(result_text(ra), "a.json"), parse_result(result_text(rb), "b.json")}, "mwbench merge");
  REQUIRE(m.warnings.size() == 1);
  CHECK(m.warnings[0].kind == WarningKind::NotSimultaneous);
  REQUIRE(m.run.context.warnings.size() == 1);
  CHECK(m.run.context.warnings[0] == m.warnings[0]);
  const json doc = json::parse(result_text(m.run));
  CHECK(doc["context"]["warning_kinds"] == json({"not-simultaneous"}));
  RunResult back = parse_result(doc.dump(), "m.json");
  CHECK(back.context.warnings == m.warnings);
  const std::string words = "the runs did not all measure at the same time (b.json started 300 s after a.json ended)";
  CHECK(render_html({back}).find(words) != std::string::npos);
  bool in_table = false, in_quiet = false;
  for (auto& n : summary_notes(back)) in_table |= n.find(words) != std::string::npos;
  for (auto& n : quiet_notes(back)) in_quiet |= n.find(words) != std::string::npos;
  CHECK(in_table);
  CHECK_FALSE(in_quiet);
}

}  // namespace mw

namespace mw {
namespace {

// A part's profile: this process's mwbench, a server and a disk it sampled on its host.
Profile part_profile(double self_cpu_s, const std::string& verdict, const std::string& evidence, bool suspect = false) {
  Profile p;
  p.taken = true, p.wall_s = 1, p.ops = 100, p.cores = 2, p.threads = 1, p.clients = 2, p.steal_share = 0.01;
  p.self = {"mwbench", "self", self_cpu_s, 0, self_cpu_s / 2, 1000, 10, 1, 1};
  p.servers = {{"redis-server", "listening on port 6379", 0.5, 0.1, 0.4, 5000, 20, 2, 1}};
  p.disks = {{"/var/tmp", "vda", "", 1, 2, 4096, 8192, 50, 10, 100}};
  p.net_counted = true, p.bytes_sent = 1000, p.bytes_received = 2000;
  p.limited_by = verdict, p.evidence = evidence, p.suspect = suspect;
  return p;
}

}  // namespace

TEST_CASE("merge: the profiles of the parts are one profile; a server or device of one host is counted once") {
  JobResult a = done_job("null nop", 1000), b = done_job("null nop", 1000);
  a.profile = part_profile(0.3, "server CPU", "redis-server at 95% of one core");
  b.profile = part_profile(0.2, "server CPU", "redis-server at 95% of one core");
  b.profile.steal_share = 0.2;
  RunResult ra = run_of({a}, "2026-12-02T17:00:00Z"), rb = run_of({b}, "2026-12-02T17:00:00Z");
  ra.label = "a.json", rb.label = "b.json";
  rb.command = "mwbench test b";
  Profile m = merge_runs({ra, rb}, "merge").run.jobs[0].profile;
  REQUIRE(m.taken);
  CHECK(m.ops == 200);
  CHECK(m.self.cpu_s() == doctest::Approx(0.5));  // each process's own CPU added up
  CHECK(m.self.processes == 2);
  CHECK(m.cores == 2);             // one host: its cores once
  REQUIRE(m.servers.size() == 1);  // the server both sampled, once
  CHECK(m.servers[0].cpu_s() == doctest::Approx(0.6));
  REQUIRE(m.disks.size() == 1);
  CHECK(m.disks[0].flushes == 50);
  CHECK(m.bytes_sent == 2000);
  CHECK(m.steal_share == doctest::Approx(0.2));  // the worst
  CHECK(m.limited_by == "server CPU");
  CHECK(m.evidence == "redis-server at 95% of one core");
  // Two hosts: each one's cores, server and disk.
  rb.context.host = "other";
  m = merge_runs({ra, rb}, "merge").run.jobs[0].profile;
  CHECK(m.cores == 4);
  CHECK(m.servers.size() == 2);
  CHECK(m.disks.size() == 2);
  // Verdicts that differ say so; one client-bound part makes the merged figure suspect.
  rb.jobs[0].profile.limited_by = "disk flushes", rb.jobs[0].profile.evidence = "vda: 1.0 flush per op";
  m = merge_runs({ra, rb}, "merge").run.jobs[0].profile;
  CHECK(m.limited_by == "not determined");
  CHECK(m.evidence ==
        "the parts differ: a.json: server CPU (redis-server at 95% of one core); b.json: disk flushes "
        "(vda: 1.0 flush per op)");
  rb.jobs[0].profile = part_profile(0.99, "client CPU", "mwbench at 99% of its cores", true);
  m = merge_runs({ra, rb}, "merge").run.jobs[0].profile;
  CHECK(m.limited_by == "client CPU");
  CHECK(m.evidence == "b.json: mwbench at 99% of its cores");
  CHECK(m.suspect);
  // A part without a profile (a file of before profiles): no profile rather than part of one.
  rb.jobs[0].profile = {};
  CHECK(!merge_runs({ra, rb}, "merge").run.jobs[0].profile.taken);
  // Through the file: the merged profile is written and read back.
  rb.jobs[0].profile = part_profile(0.2, "server CPU", "redis-server at 95% of one core");
  RunResult merged = merge_runs({ra, rb}, "merge").run;
  RunResult back = parse_result(result_text(merged), "m.json");
  CHECK(back.jobs[0].profile.taken);
  CHECK(result_text(back) == result_text(merged));
}

TEST_CASE("csv: the profile's main figures, when a job of the run has a profile") {
  JobResult a = done_job("null nop", 1000), b = done_job("null nop 2", 1000);
  a.profile = part_profile(0.3, "server CPU", "redis-server at 95% of one core");
  RunResult run = run_of({a, b});
  std::istringstream in(format_csv(run));
  std::string header, row_a, row_b;
  std::getline(in, header), std::getline(in, row_a), std::getline(in, row_b);
  CHECK(header.size() > 40);
  CHECK(header.substr(header.size() - 71) == ",verify,client_cpu_share,server_cpu_us_per_op,flushes_per_op,limited_by");
  // mwbench 0.3 s of 2 cores over 1 s; the server 0.6 s over 100 ops; 50 flushes over 100 ops
  CHECK(row_a.substr(row_a.size() - 34) == ",0.1500,6000.000,0.5000,server CPU");
  CHECK(row_b.substr(row_b.size() - 5) == ",,,,,");
  CHECK(format_csv(run_of({b})).find("limited_by") == std::string::npos);  // no profile, no columns
}

}  // namespace mw

namespace mw {

TEST_CASE("stores and steal: written, read back from the file, and shown in the HTML report") {
  JobResult j = test::done_result("disk", "fdatasync", "disk fdatasync", 300);
  j.latency = std::make_shared<Histogram>();
  for (int i = 0; i < 100; ++i) j.latency->record(i < 98 ? 600'000 : 12'000'000);
  j.profile.taken = true, j.profile.wall_s = 0.3, j.profile.ops = 100, j.profile.steal_share = 0.137;
  j.profile.disks = {{"/var/tmp", "vda", "", 0, 266, 0, 678900, 100, 21.2, 24}};
  j.profile.limited_by = "disk flushes", j.profile.evidence = "vda: 1.0 flush per op at 0.21 ms";
  const std::string text = result_text(run_of({j}));
  const json doc = json::parse(text);
  REQUIRE(doc["jobs"][0].contains("stores"));
  CHECK(doc["jobs"][0]["stores"]["figure"] == "a write and its fdatasync: p50 0.60 ms, p99 12.0 ms, max 12.0 ms");
  CHECK(doc["jobs"][0]["stores"]["rules"][0] ==
        "etcd: p99 12.0 ms: over the 10 ms its WAL syncs should stay under (etcd_disk_wal_fsync_duration_seconds p99)");
  CHECK(doc["jobs"][0]["profile"]["steal_share"] == 0.137);
  RunResult back = parse_result(text, "vm.json");
  CHECK(back.jobs[0].profile.steal_share == 0.137);
  CHECK(guidance_lines("d", back.jobs[0]) == guidance_lines("d", j));  // the same words from the file's figures
  CHECK(result_text(back) == text);
  const std::string html = render_html({back});
  CHECK(html.find("<th>CPU steal</th><td>disk fdatasync: 13.7% of the machine's CPU time taken by the hypervisor") !=
        std::string::npos);
  CHECK(html.find("<th>stores</th><td>disk fdatasync: a write and its fdatasync: p50 0.60 ms, p99 12.0 ms") !=
        std::string::npos);
  CHECK(html.find("<td>etcd: p99 12.0 ms: over the 10 ms") != std::string::npos);
  // a job whose op measures no such latency has none, in the file or the report
  JobResult plain = done_job("null nop", 1000);
  CHECK(!json::parse(result_text(run_of({plain})))["jobs"][0].contains("stores"));
  json bad = doc;
  bad["jobs"][0]["stores"]["rules"] = "etcd";
  CHECK_THROWS_WITH(parse_result_json(bad, "bad.json"),
                    "bad.json: jobs[0].stores.rules: expected an array, got string");

  // The file says what its op's latency is and whether its adapter is the driver alone: a build
  // without that adapter draws it as it was written. A file of before (no "latency_is") is read
  // with this build's registry.
  CHECK(doc["jobs"][0]["latency_is"] == "fdatasync");
  json other = doc;
  other["jobs"][0]["adapter"] = "etcd-disk";  // no such adapter in this build
  RunResult foreign = parse_result_json(other, "other.json");
  CHECK(foreign.jobs[0].latency_is == LatencyKind::Fdatasync);
  CHECK(guidance_lines("d", foreign.jobs[0]) == guidance_lines("d", j));
  json before = doc;
  before["jobs"][0].erase("latency_is");
  CHECK(parse_result_json(before, "before.json").jobs[0].latency_is == LatencyKind::Fdatasync);
  JobResult base = test::done_result("null", "nop", "null nop", 1000);
  const json b = json::parse(result_text(run_of({base})));
  CHECK(b["jobs"][0]["baseline"] == true);
  json renamed = b;
  renamed["jobs"][0]["adapter"] = "noop";  // a build whose driver-alone adapter has another name
  CHECK(parse_result_json(renamed, "renamed.json").jobs[0].baseline);
  renamed["jobs"][0].erase("latency_is");  // a file of before: this build's registry knows no "noop"
  renamed["jobs"][0].erase("baseline");
  CHECK_FALSE(parse_result_json(renamed, "renamed.json").jobs[0].baseline);
  bad = doc;
  bad["jobs"][0]["latency_is"] = "fsync please";
  CHECK_THROWS_WITH(parse_result_json(bad, "bad.json"), doctest::Contains("jobs[0].latency_is"));
}

}  // namespace mw

namespace mw {

namespace {

using nlohmann::json;

// The lines of `text` that are exactly `line`.
size_t lines_equal(const std::string& text, const std::string& line) {
  size_t n = 0;
  std::istringstream in(text);
  for (std::string l; std::getline(in, l);) n += l == line;
  return n;
}

// A crash job's figures as the driver leaves them.
JobResult crash_result(const std::string& adapter, const std::string& op, const std::string& crash) {
  JobResult j = test::done_result(adapter, op, adapter + " " + op, 1000);
  DurabilityResult& d = j.durability;
  d.ran = true, d.crash = *crash_names.parse(crash), d.victim = adapter + "-server", d.crash_at = 0.5;
  d.expect = Expectation::Any;
  d.ops = 100, d.acked = 90, d.never_sent = 8, d.in_doubt = 2, d.in_doubt_present = 1, d.recovery_s = 0.2;
  return j;
}

}  // namespace

TEST_CASE(
    "durability notes: typed, made once with the run, written and read back; the table prints the ones it carries") {
  JobResult killed = crash_result("redis", "set", "kill");
  killed.durability.setting = "persistence=aof-everysec", killed.durability.level = "aof-everysec";
  killed.durability.note = "safe only with appendfsync always";
  killed.durability.lost = 3, killed.durability.loss_window_s = 0.8;
  killed.durability.detail = "key:7 was acknowledged and is missing";
  JobResult cut = crash_result("sqlite", "insert", "power");
  cut.durability.model = "mwbench-pagecache-1";
  RunResult run = run_of({killed, cut});
  const std::string text = result_text(run);
  const json doc = json::parse(text);
  // the caveats of the table (the run's), then each crash job's lines (its own)
  CHECK(doc["note_kinds"] == json({"crash-model", "crash-model"}));
  REQUIRE(doc["notes"].size() == 2);
  CHECK(doc["notes"][0].get<std::string>().find("note: a process kill is not a power cut: ") == 0);
  CHECK(doc["notes"][1].get<std::string>().find("note: a power cut is modelled by mwbench's FUSE page-cache layer "
                                                "(mwbench-pagecache-1): ") == 0);
  CHECK(doc["jobs"][0]["note_kinds"] == json({"durability", "durability", "durability", "durability"}));
  CHECK(doc["jobs"][0]["notes"] ==
        json({"  redis set: safe only with appendfsync always",
              "  redis set: aof-everysec lost 0.8 s of writes (3 acknowledged, the oldest 0.800 s before the crash)",
              "  redis set: 1 of 2 writes in doubt were kept", "  redis set: key:7 was acknowledged and is missing"}));
  CHECK(doc["jobs"][1]["notes"] == json({"  sqlite insert: 1 of 2 writes in doubt were kept"}));
  RunResult back = parse_result(text, "r.json");
  CHECK(back.notes == run.notes);
  for (size_t i = 0; i < run.jobs.size(); ++i) CHECK(back.jobs[i].notes == run.jobs[i].notes);
  CHECK(result_text(back) == text);
  // under the durability table, once (not under the summary), as the run holds them
  const std::string table = format_table(back, Detail::Full);
  CHECK(lines_equal(table, doc["notes"][0].get<std::string>()) == 1);
  CHECK(lines_equal(table, "  redis set: key:7 was acknowledged and is missing") == 1);
  CHECK(table.find("  redis set: key:7") > table.find("recovery s"));
  json edited = doc;
  edited["jobs"][0]["notes"][3] = "  redis set: as the file says";
  edited["notes"][1] = "note: the file's own caveat";
  const RunResult read = parse_result_json(edited, "e.json");
  CHECK(lines_equal(format_table(read, Detail::Full), "  redis set: as the file says") == 1);
  CHECK(lines_equal(format_table(read, Detail::Full), "note: the file's own caveat") == 1);
  CHECK(format_table(read, Detail::Full).find("key:7 was acknowledged") ==
        std::string::npos);  // the report makes none of its own
  CHECK(lines_equal(format_markdown(read, Detail::Full), "-   redis set: as the file says") == 1);
  // merge and rank 0 make them again of the figures they hold: once
  RunResult again = run;
  make_notes(again);
  CHECK(again.notes == run.notes);
  CHECK(again.jobs[0].notes == run.jobs[0].notes);

  // Files of before: with notes but none of the durability table's (written before they were
  // typed), and without notes at all; the loader makes them from the figures, once.
  json older = doc;
  older["notes"] = json::array(), older["note_kinds"] = json::array();
  for (auto& o : older["jobs"]) o["notes"] = json::array(), o["note_kinds"] = json::array();
  json oldest = doc;
  oldest.erase("notes"), oldest.erase("note_kinds");
  for (auto& o : oldest["jobs"]) o.erase("notes"), o.erase("note_kinds");
  for (const json& old : {older, oldest}) {
    RunResult legacy = parse_result_json(old, "old.json");
    CHECK(legacy.notes == run.notes);
    for (size_t i = 0; i < run.jobs.size(); ++i) CHECK(legacy.jobs[i].notes == run.jobs[i].notes);
  }
}

TEST_CASE("warnings: too short and not confirmed are made once with the run, written with their kinds and read back") {
  JobResult fast = done_job("null nop", 100000);  // 100 ops in 1 ms
  JobResult edge = done_job("oracle ask", 1000);
  auto c = std::make_shared<Capacity>();
  c->slo = "p99<1ms", c->verdict = CapacityVerdict::Found, c->max_rps = 5000, c->repeats = 3, c->repeats_passed = 2;
  c->repeat_min = 4900, c->repeat_max = 5100, c->step_s = 1;
  edge.capacity = c;
  RunResult run = run_of({fast, edge, done_job("null nop 2", 1000)});
  const std::string text = result_text(run);
  const json doc = json::parse(text);
  CHECK(doc["jobs"][0]["warnings"] ==
        json({"measured for only 1.0 ms; too short to mean much (raise -n or use --duration)"}));
  CHECK(doc["jobs"][0].value("warning_kinds", json::array()) == json({"too-short"}));
  CHECK(doc["jobs"][1]["warnings"] ==
        json({"not confirmed: 5000.0 req/s missed the SLO in 1 of its 3 repeats: it is at the edge, not below it (a "
              "busy machine, or a target whose capacity varies)"}));
  CHECK(doc["jobs"][1].value("warning_kinds", json::array()) == json({"not-confirmed"}));
  CHECK(doc["jobs"][2]["warnings"] == json::array());  // 0.1 s: long enough
  RunResult back = parse_result(text, "r.json");
  for (size_t i = 0; i < run.jobs.size(); ++i) CHECK(back.jobs[i].warnings == run.jobs[i].warnings);
  CHECK(result_text(back) == text);
  // the reports print what the run holds, and work out none of their own
  json edited = doc;
  edited["jobs"][0]["warnings"][0] = "as the file says";
  edited["jobs"][1]["warnings"][0] = "the file's words";
  const std::string table = format_table(parse_result_json(edited, "e.json"));
  CHECK(lines_equal(table, "warning: null nop: as the file says") == 1);
  CHECK(lines_equal(table, "warning: oracle ask: the file's words") == 1);
  CHECK(table.find("too short to mean much") == std::string::npos);
  CHECK(table.find("not confirmed") == std::string::npos);
  // made again of the figures where they change (merge, MPI's rank 0): once, of the new figures
  RunResult again = run;
  make_notes(again);
  CHECK(again.jobs[0].warnings == run.jobs[0].warnings);
  RunResult ra = run_of({done_job("null nop", 100000)}),
            rb = run_of({done_job("null nop", 50000)}, "2026-12-02T17:00:01Z");
  RunResult merged =
      merge_runs({parse_result(result_text(ra), "a.json"), parse_result(result_text(rb), "b.json")}, "mwbench merge")
          .run;
  CHECK(merged.jobs[0].warnings ==
        std::vector<Warning>{{parse_warning_kind("too-short").value_or(WarningKind::Other),
                              "measured for only 2.0 ms; too short to mean much (raise -n or use --duration)"}});
  // A file of before: the loader makes them from its figures, once.
  json old = doc;
  for (auto& o : old["jobs"]) o["warnings"] = json::array(), o.erase("warning_kinds");
  RunResult legacy = parse_result_json(old, "old.json");
  for (size_t i = 0; i < run.jobs.size(); ++i) CHECK(legacy.jobs[i].warnings == run.jobs[i].warnings);
}

}  // namespace mw
