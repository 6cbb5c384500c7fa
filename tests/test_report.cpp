// Reporter output is matched line by line, so formats cannot drift silently.
#include <doctest/doctest.h>

#include <unistd.h>

#include <filesystem>
#include <nlohmann/json.hpp>
#include <sstream>

#include "report/report.h"

using namespace mw;

namespace {

RunResult sample() {
  RunResult run;
  run.suite = "demo";
  run.started_at = "2026-11-29T21:50:05Z";
  run.context.host = "box";
  run.context.cpu = "CPU";
  run.context.cores = 2;
  run.context.memory_bytes = 2ull << 30;
  run.context.kernel = "Linux 6";
  run.context.virtualization = "kvm";
  run.context.build_type = "Release";
  JobResult j;
  j.job.name = "redis set";
  j.job.adapter = "redis";
  j.job.op = "set";
  j.job.clients = 1;
  j.target = "127.0.0.1:6379";
  j.latency = std::make_shared<Histogram>();
  j.latency_failed = std::make_shared<Histogram>();
  for (int i = 1; i <= 1000; ++i) j.latency->record(i * 1000);  // 1 us .. 1 ms
  j.ops_ok = 1000;
  j.elapsed_s = 0.5;
  j.rps = 2000;
  run.jobs.push_back(j);
  JobResult f = j;
  f.job.name = "redis get";
  f.job.op = "get";
  f.elapsed_s = 1.0;
  f.rps = 1000;
  f.ops_failed = 3;
  f.errors[static_cast<int>(Status::Mismatch)] = 3;
  f.error_samples = {"Mismatch: key:1 holds another value"};
  run.jobs.push_back(f);
  JobResult s;
  s.job.name = "gearman submit-bg";
  s.target = "-";
  s.state = JobResult::State::Skipped;
  s.message = "gearmand is not installed";
  run.jobs.push_back(s);
  make_notes(run);  // as the runner finishes a run
  return run;
}

std::vector<std::string> lines(const std::string& s) {
  std::vector<std::string> out;
  std::istringstream in(s);
  for (std::string l; std::getline(in, l);) out.push_back(l);
  return out;
}

}  // namespace

TEST_CASE("report: terminal table") {
  auto l = lines(format_table(sample(), Detail::Full));
  REQUIRE(l.size() >= 7);
  CHECK(l[0] ==
        "job                target           ops  c  P  time s   req/s              min ms  avg ms  p50 ms  p99 ms  "
        "max ms  errors");
  CHECK(l[1] ==
        "redis set          127.0.0.1:6379  1000  1  1   0.500  2000.0  "
        "\u2588\u2588\u2588\u2588\u2588\u2588\u2588\u2588\u2588\u2588   0.001   0.500   0.500   0.990   1.000  0");
  CHECK(l[2] ==
        "redis get          127.0.0.1:6379  1000  1  1   1.000  1000.0  \u2588\u2588\u2588\u2588\u2588        0.001   "
        "0.500   0.500   0.990   1.000  3 (Mismatch 3)");
  CHECK(l[3] ==
        "gearman submit-bg  -                  -  1  1       -       -                   -       -       -       -     "
        "  -  skipped");
  CHECK(l[4] == "FAILED: redis get on 127.0.0.1:6379: 3 of 1003 ops failed; req/s counts the 1000 that succeeded");
  CHECK(l[5] == "  Mismatch: key:1 holds another value");
  CHECK(l[6] == "skipped: gearman submit-bg: gearmand is not installed");
  CHECK(l.back() == "box: CPU, 2 cores, 2.0 GiB, Linux 6, virtualization kvm, Release build");
}

TEST_CASE("report: by default the table and at most one line a job; -v every note") {
  RunResult run = sample();
  const std::vector<std::string> full = lines(format_table(run, Detail::Full));
  // a failed job's line names the failure and its first sample; a job with nothing to say has none
  CHECK(lines(format_table(run)) ==
        std::vector<std::string>{full[0], full[1], full[2], full[3],
                                 "FAILED: redis get on 127.0.0.1:6379: 3 of 1003 ops failed; req/s counts the 1000 "
                                 "that succeeded; first: Mismatch: key:1 holds another value",
                                 "skipped: gearman submit-bg: gearmand is not installed"});
  // a profile: its lines under -v, the verdict that names a resource by default
  JobResult& set = run.jobs[0];
  set.profile.taken = true;
  set.profile.wall_s = 0.5, set.profile.ops = 1000, set.profile.cores = 2, set.profile.threads = 1;
  set.profile.limited_by = "disk flushes", set.profile.evidence = "vda: 1.0 flush per op at 0.40 ms";
  make_notes(run);
  const std::string glance = format_table(run), verbose = format_table(run, Detail::Full);
  CHECK(lines(glance).size() == 4 + 3);  // the header, 3 rows, a line for each job
  CHECK(glance.find("\nlimited by: redis set (127.0.0.1:6379): disk flushes (vda: 1.0 flush per op at 0.40 ms)\n") !=
        std::string::npos);
  CHECK(glance.find("profile: ") == std::string::npos);
  CHECK(verbose.find("\nprofile: redis set (127.0.0.1:6379): 0.500 s, 1000 ops\n") != std::string::npos);
  CHECK(verbose.find("\nlimited by: redis set (127.0.0.1:6379): disk flushes") != std::string::npos);
  // "not determined" says nothing the column does not; a warning outranks it, and says how many more
  set.profile.limited_by = "not determined";
  set.warnings = {{WarningKind::Steal, "stolen"}, {WarningKind::Other, "odd"}};
  make_notes(run);
  CHECK(lines(format_table(run))[4] == "warning: redis set (127.0.0.1:6379): stolen (1 more: -v)");
  set.warnings.clear();
  make_notes(run);
  CHECK(lines(format_table(run)).size() == 4 + 2);  // nothing for redis set
  // the run's warnings stay; the machine is -v's
  run.context.warnings = {{WarningKind::SharedCores, "server and client share this machine's 2 cores"}};
  CHECK(lines(format_table(run)).back() == "warning: server and client share this machine's 2 cores");
  CHECK(format_table(run).find("virtualization kvm") == std::string::npos);
}

TEST_CASE("report: markdown") {
  auto l = lines(format_markdown(sample(), Detail::Full));
  CHECK(l[0] ==
        "| job | target | ops | c | P | time s | req/s | min ms | avg ms | p50 ms | p99 ms | max ms | errors |");
  CHECK(l[1] == "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |");
  CHECK(l[2] ==
        "| redis set | 127.0.0.1:6379 | 1000 | 1 | 1 | 0.500 | 2000.0 | 0.001 | 0.500 | 0.500 | 0.990 | 1.000 | 0 |");
  CHECK(l[3] ==
        "| redis get | 127.0.0.1:6379 | 1000 | 1 | 1 | 1.000 | 1000.0 | 0.001 | 0.500 | 0.500 | 0.990 | 1.000 | 3 "
        "(Mismatch 3) |");
  CHECK(l[6] == "- FAILED: redis get on 127.0.0.1:6379: 3 of 1003 ops failed; req/s counts the 1000 that succeeded");
}

TEST_CASE("report: csv") {
  auto l = lines(format_csv(sample()));
  REQUIRE(l.size() == 4);
  CHECK(l[0].rfind("name,adapter,op,target,clients,pipeline,state,ops_ok,ops_failed", 0) == 0);
  CHECK(l[1] ==
        "redis "
        "set,redis,set,127.0.0.1:6379,1,1,done,1000,0,0,0.500000,2000.0,0,1000,500500,500223,900095,990207,999423,"
        "1000000,");
  CHECK(l[3].find(",skipped,") != std::string::npos);
}

TEST_CASE("report: json follows the result-file contract") {
  auto j = to_json(sample());
  CHECK(j["schema_version"] == 2);
  CHECK(j["tool"]["name"] == "mwbench");
  CHECK(j["context"]["cores"] == 2);
  auto& job = j["jobs"][0];
  CHECK(job["adapter"] == "redis");
  CHECK(job["op"] == "set");
  CHECK(job["ops_ok"] == 1000);
  CHECK(job["rps"] == 2000.0);
  CHECK(job["latency_ns"]["p50"] == 500223);
  CHECK(job["latency_ns"]["max"] == 1000000);
  CHECK(job["params"]["clients"] == 1);
  // the sparse histogram rebuilds the same percentiles
  Histogram h;
  for (auto& b : job["histogram"]["buckets"]) h.record_n(b[0].get<int64_t>(), b[1].get<uint64_t>());
  CHECK(h.count() == 1000);
  CHECK(h.percentile(99) == 990207);
  CHECK(j["jobs"][1]["errors"]["Mismatch"] == 3);
  CHECK(j["jobs"][2]["state"] == "skipped");
  CHECK(j["exit_code"] == 1);
}

TEST_CASE("report: result files are written atomically and never overwrite an earlier one") {
  std::string dir = "/tmp/mwbench-results-" + std::to_string(getpid());
  RunResult r = sample();
  std::string a = write_result_file(r, dir);
  std::string b = write_result_file(r, dir);
  CHECK(a != b);
  CHECK(a == dir + "/2026-11-29T21-50-05Z-demo.json");
  CHECK(b == dir + "/2026-11-29T21-50-05Z-demo-1.json");
  CHECK(std::filesystem::file_size(a) > 100);
  std::filesystem::remove_all(dir);
}

TEST_CASE("report: repeats show the median with min-max, and a failure in any run") {
  RunResult run = sample();
  JobResult& j = run.jobs[0];
  JobResult a = j, b = j, c = j;
  a.rps = 1800, b.rps = 2000, c.rps = 2300;
  c.ops_failed = 2;  // the fastest run had failures: they must show
  j.repeats = {a, b, c};
  make_notes(run);
  auto l = lines(format_table(run));
  CHECK(l[1].find("2000.0 (1800-2300)") != std::string::npos);
  CHECK(l[1].find("2 failed, 0 not run, in 1 of 3 runs") != std::string::npos);
  CHECK(j.failed());
  auto js = to_json(run);
  CHECK(js["jobs"][0]["repeats"].size() == 3);
  CHECK(js["jobs"][0]["rps_min"] == 1800.0);
  CHECK(js["jobs"][0]["rps_max"] == 2300.0);
  bool noted = false;
  for (auto& x : l) noted |= x.find("req/s: the median of 3 interleaved runs") == 0;
  CHECK(noted);
}
