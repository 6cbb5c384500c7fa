// compare and report on result files written by the reporters themselves.
#include <doctest/doctest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "report/report.h"
#include "report/results.h"

using namespace mw;
using nlohmann::json;

namespace {

JobResult job(const std::string& name, const std::string& path, double rps, std::vector<double> repeats = {}) {
  JobResult j;
  j.job.name = name;
  j.job.adapter = "sqlite";
  j.job.op = "insert";
  j.job.opts["path"] = path;
  j.target = path;
  j.latency = std::make_shared<Histogram>();
  for (int i = 1; i <= 100; ++i) j.latency->record(i * 10000);
  j.ops_ok = 100;
  j.elapsed_s = 100 / rps;
  j.rps = rps;
  for (double r : repeats) {
    JobResult k = j;
    k.rps = r;
    j.repeats.push_back(k);
  }
  return j;
}

LoadedRun as_loaded(const std::string& label, const RunResult& r) { return parse_result_json(to_json(r), label); }

}  // namespace

TEST_CASE("compare: jobs matched by what they measured, ratio against the first file, noise marked") {
  RunResult a, b;
  a.jobs = {job("sqlite insert", "/var/tmp", 1000, {900, 1000, 1100}), job("sqlite insert", "/dev/shm", 5000, {4900, 5000, 5100})};
  b.jobs = {job("sqlite insert", "/dev/shm", 10000, {9800, 10000, 10100}), job("sqlite insert", "/var/tmp", 1050, {1000, 1050, 1200})};
  b.jobs[1].job.n = 999;  // n does not make another job
  std::string out = format_compare({as_loaded("A.json", a), as_loaded("B.json", b)});
  std::istringstream in(out);
  std::vector<std::string> l;
  for (std::string s; std::getline(in, s);) l.push_back(s);
  REQUIRE(l.size() >= 3);
  CHECK(l[0] == "job                     A.json req/s  p99 ms  B.json req/s  p99 ms  ratio  note");
  CHECK(l[1] == "sqlite insert /var/tmp        1000.0   0.990        1050.0   0.990   1.05  within noise");
  CHECK(l[2] == "sqlite insert /dev/shm        5000.0   0.990       10000.0   0.990   2.00");
}

TEST_CASE("compare: a job only one file has, and failures, are shown") {
  RunResult a, b;
  a.jobs = {job("sqlite insert", "/var/tmp", 1000)};
  b.jobs = {job("sqlite insert", "/var/tmp", 800), job("sqlite insert", "/mnt/ssd", 3000)};
  b.jobs[0].ops_failed = 5;
  std::string out = format_compare({as_loaded("A.json", a), as_loaded("B.json", b)});
  CHECK(out.find("0.80  B.json had failures") != std::string::npos);
  CHECK(out.find("sqlite insert /mnt/ssd             -       -        3000.0") != std::string::npos);
  CHECK(out.find("(run with --repeat K to know the spread)") != std::string::npos);
}

TEST_CASE("compare: files that are not mwbench results are clear errors") {
  std::string f = "/tmp/mwbench-notresult-" + std::to_string(getpid()) + ".json";
  std::ofstream(f) << "{\"hello\": 1}";
  CHECK_THROWS_WITH_AS(load_result(f), (f + ": not an mwbench result file (no schema_version and jobs)").c_str(), SetupError);
  std::ofstream(f) << "not json";
  CHECK_THROWS_WITH_AS(load_result(f), (f + ": not JSON").c_str(), SetupError);
  std::filesystem::remove(f);
  CHECK_THROWS_WITH_AS(load_result(f), (f + ": cannot read the file").c_str(), SetupError);
}

TEST_CASE("report: HTML has a bar per job and run, a curve per job and run on the group's charts, whiskers, the context") {
  RunResult a, b;
  a.context.host = "box-a";
  a.jobs = {job("sqlite insert", "/var/tmp", 1000, {900, 1000, 1100}), job("sqlite insert", "/dev/shm", 5000)};
  b.jobs = {job("sqlite insert", "/var/tmp", 1200)};
  std::vector<LoadedRun> runs{as_loaded("A.json", a), as_loaded("B.json", b)};
  std::string html = render_html(runs);
  auto count = [&](const std::string& what) {
    size_t n = 0;
    for (size_t at = html.find(what); at != std::string::npos; at = html.find(what, at + 1)) ++n;
    return n;
  };
  CHECK(count("class=\"bar\"") == 3);
  CHECK(count("class=\"curve\"") == 3);
  CHECK(count("class=\"whisker\"") == 1);
  CHECK(count("<th>host</th><td>box-a</td>") == 1);
  CHECK(count("<section class=\"group\"") == 1);  // both paths of both files on one pair of charts
  CHECK(count("<svg ") == 2);
  CHECK(count("<script") == 1);  // the table's sorting, inline: nothing to load at view time
  CHECK(html.find(" src=") == std::string::npos);
  CHECK(html.find("src=\"http") == std::string::npos);  // (the SVG namespace URI loads nothing)
  CHECK(html.find("href=\"http") == std::string::npos);
  auto svgs = render_svgs(runs);
  CHECK(svgs.size() == 2);
  CHECK(svgs.count("rps-01.svg"));
  CHECK(svgs["latency-01.svg"].find("aria-label=\"sqlite insert: latency by percentile\"") != std::string::npos);
  CHECK(svgs["latency-01.svg"].find(">/dev/shm (A) \xC2\xB7 p99 ") != std::string::npos);
}
