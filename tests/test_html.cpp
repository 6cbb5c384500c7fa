// The HTML report's model and text: groups, scales, the verdict, the workload view, the
// sortable table. (tests/html_test.sh renders a real run in Chromium.)
#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

#include "queue/queue.h"
#include "report/html_model.h"
#include "report/report.h"
#include "results/results.h"
#include "tests/helpers.h"

using namespace mw;

namespace {

JobResult job(const std::string& adapter, const std::string& op, const std::string& name, double rps,
              const std::string& path = "") {
  JobResult j = test::done_result(adapter, op, name, rps);
  if (!path.empty()) j.job.opts["path"] = path;
  if (!path.empty()) j.target = path;
  return j;
}

// A workload job and its load phase, as the runner writes them: the load first.
std::vector<JobResult> workload_job(const std::string& adapter, const std::string& kind, double rps, uint64_t misses) {
  JobResult j = job(adapter, "mix", "B " + adapter + (kind.empty() ? "" : " mix"), rps);
  if (!kind.empty()) j.job.opts["kind"] = kind;
  j.workload = "read:95,update:5 zipfian theta 0.99 over 1000 keys, values 100 B";
  for (auto [op, n] : {std::pair{"read", 95}, {"update", 5}}) {
    OpFigures o;
    o.op = op;
    o.ops_ok = static_cast<uint64_t>(n);
    o.misses = std::string(op) == "read" ? misses : 0;
    o.latency = std::make_shared<Histogram>();
    for (int i = 0; i < n; ++i) o.latency->record(2000 + i);
    j.per_op.push_back(o);
  }
  j.misses = misses;
  JobResult l = job(adapter, "load", j.job.name + " load", rps * 2);
  l.job.opts = j.job.opts;
  l.workload = j.workload;
  return {l, j};
}

RunResult loaded(const std::string& label, const std::vector<JobResult>& jobs, std::vector<Warning> warnings = {}) {
  RunResult r;
  r.suite = "t";
  r.context.cores = 2;
  r.context.warnings = std::move(warnings);
  r.jobs = jobs;
  return parse_result_json(to_json(r), label);
}

size_t count(const std::string& s, const std::string& what) {
  size_t n = 0;
  for (size_t at = s.find(what); at != std::string::npos; at = s.find(what, at + 1)) ++n;
  return n;
}

}  // namespace

TEST_CASE("html: groups by adapter and op, the side-by-side axis within; one-job groups of an adapter merge") {
  std::vector<JobResult> jobs{job("sqlite", "insert", "sqlite insert", 300, "/var/tmp"),
                              job("sqlite", "insert", "sqlite insert", 9000, "/dev/shm"),
                              job("redis", "set", "redis set", 20000), job("redis", "get", "redis get", 21000),
                              job("redis", "ping", "redis ping", 22000)};
  for (auto& j : workload_job("null", "", 5e6, 0)) jobs.push_back(j);
  for (auto& j : workload_job("tc", "hash", 1e5, 10)) jobs.push_back(j);
  jobs[0].job.clients = jobs[1].job.clients = 4;  // "sqlite insert /var/tmp c=4": the shared end goes to the title
  std::vector<RunResult> runs{loaded("2026-11-30T06-33-54Z-quick.json", jobs)};
  html::Page page = html::build_page(runs);
  REQUIRE(page.groups.size() == 3);
  CHECK(page.tags[0] == "quick");
  CHECK(page.groups[0].title == "sqlite insert (c=4)");
  CHECK(page.groups[0].entries.size() == 2);
  CHECK(page.groups[0].entries[0].label == "/var/tmp");  // what the rows share is the title's
  CHECK(page.groups[1].title == "redis: set, get, ping");
  CHECK(page.groups[1].entries[2].label == "ping");
  const html::Group& w = page.groups[2];
  CHECK(w.title == "Workload read:95,update:5 zipfian theta 0.99 over 1000 keys, values 100 B");
  CHECK(w.short_title == "workload read:95,update:5");
  REQUIRE(w.entries.size() == 2);  // the mixes on the charts...
  CHECK(w.loads.size() == 2);      // ...their load phases in the table
  CHECK(html::load_of(page, w.entries[1])->rps == doctest::Approx(2e5));
  // colours: one per drawn entry of a group, from the palette's start
  CHECK(page.groups[1].entries[0].colour == 0);
  CHECK(page.groups[1].entries[2].colour == 2);
}

TEST_CASE("html: each group on its own scale; a log axis when it spans more than 100x") {
  auto caption_of = [](double low) {
    std::vector<RunResult> runs{loaded("a.json", {job("disk", "randread", "disk randread", 1e6, "/dev/shm"),
                                                  job("disk", "randread", "disk randread", low, "/var/tmp")})};
    html::Page page = html::build_page(runs);
    return html::throughput_chart(page, page.groups[0]);
  };
  std::string log = caption_of(1000), linear = caption_of(1e4);
  CHECK(log.find("log scale") != std::string::npos);
  CHECK(log.find(">100</text>") != std::string::npos);  // decades, from below the smallest bar
  CHECK(log.find(">1M</text>") != std::string::npos);
  CHECK(linear.find("log scale") == std::string::npos);  // exactly 100x is still linear
  CHECK(linear.find(">0</text>") != std::string::npos);
  CHECK(linear.find(">1M</text>") != std::string::npos);
}

TEST_CASE("html: the verdict names the fastest, by how much, with p99, and what is suspect") {
  JobResult slow = job("sqlite", "insert", "sqlite insert", 250, "/var/tmp");
  JobResult fast = job("sqlite", "insert", "sqlite insert", 1000, "/dev/shm");
  fast.warnings = {{WarningKind::Adapter, "O_DIRECT on tmpfs still goes through memory: not a device figure"}};
  JobResult served = job("redis", "set", "redis set", 20000);
  served.server = {{"managed", "yes"}};
  JobResult skipped = job("redis", "get", "redis get", 1);
  skipped.rps = skipped.elapsed_s = 0;
  skipped.ops_ok = 0;
  skipped.state = JobResult::State::Skipped;
  skipped.message = "redis-server is not installed";
  std::string shared = "server and client share this machine's 2 cores: the server's figures are a lower bound";
  std::vector<RunResult> runs{
      loaded("a.json", {slow, fast, served, skipped},
             {{WarningKind::SharedCores, shared},
              {WarningKind::CpuScaling, "CPU frequency scaling is enabled (governor ondemand)"}})};
  std::string html = render_html(runs);
  CAPTURE(html);
  // single runs: the ratio of the figures, and nothing decided
  CHECK(html.find("<b class=\"best\">/dev/shm</b> is fastest: 1,000 req/s, p99 99.0 \xC2\xB5s; <b>4.00\xC3\x97</b> "
                  "the req/s of /var/tmp (250 req/s, p99 99.0 \xC2\xB5s): single runs, nothing decided (--decide "
                  "decides).") != std::string::npos);
  CHECK(html.find("Suspect: /dev/shm: O_DIRECT on tmpfs") != std::string::npos);
  // the shared cores are said where a server ran, the rest for the whole file
  CHECK(count(html, "Suspect: " + shared) == 2);  // verdict list and the group's line
  CHECK(html.find("Every figure of a.json is suspect:</b> CPU frequency scaling") != std::string::npos);
  CHECK(html.find("Not measured: <b>get</b> skipped: redis-server is not installed") != std::string::npos);
  CHECK(html.find(">skipped: redis-server is not installed</text>") != std::string::npos);
  CHECK(count(html, "<li class=\"verdict\">") == 2);
  // verdict first, then the charts, the table, the context
  CHECK(html.find("id=\"verdict\"") < html.find("id=\"groups\""));
  CHECK(html.find("id=\"groups\"") < html.find("id=\"jobs\""));
}

TEST_CASE("html: figures whose repeats overlap are within noise, and a later file is compared with the first") {
  JobResult a = job("null", "nop", "null nop", 1000), b = job("null", "nop", "null nop", 1050);
  for (double r : {990.0, 1000.0, 1100.0}) a.repeats.push_back(job("null", "nop", "null nop", r));
  for (double r : {1000.0, 1050.0, 1200.0}) b.repeats.push_back(job("null", "nop", "null nop", r));
  std::vector<RunResult> runs{loaded("a.json", {a}), loaded("b.json", {b})};
  std::string html = render_html(runs);
  CHECK(html.find("<b class=\"best\">null nop (b)</b> is fastest: 1,050 req/s") != std::string::npos);
  CHECK(html.find("<span class=\"noise\">within noise</span> of null nop (a)") != std::string::npos);
  CHECK(html.find("b against a: <b>1.05\xC3\x97</b>.") != std::string::npos);
  CHECK(html.find("<span class=\"badge noise\">within noise</span> b and a") != std::string::npos);
  CHECK(count(html, "class=\"whisker\"") == 2);
}

TEST_CASE("html: per workload, the adapters side by side with per-op rows and the hit ratio") {
  std::vector<JobResult> jobs;
  for (auto& j : workload_job("null", "", 5e6, 0)) jobs.push_back(j);
  for (auto& j : workload_job("tc", "hash", 1e5, 19)) jobs.push_back(j);
  std::vector<RunResult> runs{loaded("a.json", jobs)};
  html::Page page = html::build_page(runs);
  std::string t = html::workload_table(page, page.groups[0]);
  CAPTURE(t);
  CHECK(t.find("<th class=\"num\">null</th><th class=\"num\">tc mix hash</th>") != std::string::npos);
  CHECK(t.find("<tr><th>load phase req/s</th><td class=\"num best\">10,000,000 req/s</td><td class=\"num\">200,000 "
               "req/s</td></tr>") != std::string::npos);
  CHECK(t.find("<tr><th>read hit ratio</th><td class=\"num best\">100.0%</td><td class=\"num\">80.00%</td></tr>") !=
        std::string::npos);  // 76 of 95 reads hit
  CHECK(t.find("<tr><th>failed ops</th><td class=\"num\">0</td><td class=\"num\">0</td></tr>") !=
        std::string::npos);  // a tie has no best
  CHECK(t.find("<th>read p99</th>") != std::string::npos);
  CHECK(t.find("<th>update req/s</th>") != std::string::npos);
  CHECK(t.find("<th>insert") == std::string::npos);  // not in the mix
  std::string html = render_html(runs);
  CHECK(count(html, "<table class=\"workload\">") == 1);
  // null beside the stores is the driver's own cost: shown, not ranked
  CHECK(html.find(
            "<b>tc mix hash</b>: 100,000 req/s, p99 99.0 \xC2\xB5s; nothing else to rank it against. The driver alone "
            "(null, not ranked): 5,000,000 req/s") != std::string::npos);
}

TEST_CASE("html: the table sorts by numbers (data-v), numbers right-aligned with units") {
  JobResult failed = job("sqlite", "insert", "sqlite insert", 800, "/mnt/nfs");
  failed.ops_failed = 3;
  std::vector<RunResult> runs{loaded("a.json", {job("sqlite", "insert", "sqlite insert", 1234.5, "/var/tmp"), failed})};
  std::string t = html::results_table(html::build_page(runs));
  CAPTURE(t);
  CHECK(t.find("<td class=\"num\" data-v=\"1234.500\">1,235<span class=\"u\"> req/s</span></td>") != std::string::npos);
  CHECK(t.find("<tr class=\"failed\">") != std::string::npos);
  CHECK(t.find("<span class=\"badge bad\">FAILED</span> 800<span class=\"u\"> req/s</span>") != std::string::npos);
  CHECK(t.find("<td class=\"num bad\" data-v=\"3\">3</td>") != std::string::npos);
  CHECK(count(t, "<th class=\"num\">") == 4);
}

TEST_CASE("html: names, workloads and warnings from a file are escaped; long labels are cut to their lane") {
  std::vector<JobResult> jobs = workload_job("null", "", 1e6, 0);
  for (auto& j : jobs) j.workload = "<script>alert(1)</script>";
  jobs[1].warnings = {{WarningKind::Other, "<img src=x onerror=alert(2)>"}};
  jobs.push_back(job("null", "nop", std::string(300, 'x') + "<b>", 10));
  std::string html = render_html({loaded("<i>.json", jobs)});
  CHECK(html.find("<script>alert") == std::string::npos);
  CHECK(html.find("&lt;script&gt;alert(1)&lt;/script&gt;") != std::string::npos);
  CHECK(html.find("<img") == std::string::npos);
  CHECK(html.find("<i>") == std::string::npos);
  CHECK(html.find("xxxxxxxxxx\xE2\x80\xA6</text>") != std::string::npos);  // the row label, cut
  CHECK(count(html, "<script>") == 1);                                     // the page's own
}

TEST_CASE("html: formatting helpers") {
  CHECK(html::rate(25862.3) == "25,862");
  CHECK(html::rate(1234567) == "1,234,567");
  CHECK(html::rate(63.21) == "63.2");
  CHECK(html::duration_ns(850) == "850 ns");
  CHECK(html::duration_ns(12345) == "12.3 \xC2\xB5s");
  CHECK(html::duration_ns(1.5e9) == "1.50 s");
  CHECK(html::compact(2500) == "2.5k");
  CHECK(html::compact(1e6) == "1M");
  CHECK(html::ratio(1000) == "1000\xC3\x97");
  CHECK(html::fit("abcdef", 1000, 11) == "abcdef");
  CHECK(html::fit("\xC3\xA9\xC3\xA9\xC3\xA9\xC3\xA9\xC3\xA9\xC3\xA9", 30, 11) ==
        "\xC3\xA9\xE2\x80\xA6");  // whole UTF-8
}

TEST_CASE("html: a queue op's backlog per second is read back from the JSON and drawn") {
  JobResult a = job("redis", "roundtrip", "redis roundtrip list", 1000);
  JobResult b = job("redis", "roundtrip", "redis roundtrip stream", 900);
  auto fig = std::make_shared<queue::Figures>();
  fig->produced = fig->consumed = 3000;
  fig->backlog = {10, 2500, -1};
  a.queue = fig;
  RunResult run = loaded("q", {a, b});
  REQUIRE(run.jobs.size() == 2);
  REQUIRE(run.jobs[0].queue);
  CHECK(run.jobs[0].queue->backlog == std::vector<int64_t>{10, 2500, -1});
  CHECK((!run.jobs[1].queue || run.jobs[1].queue->backlog.empty()));
  const std::vector<RunResult> runs = {run};
  html::Page page = html::build_page(runs);
  REQUIRE(page.groups.size() == 1);
  std::string svg = html::backlog_chart(page, page.groups[0]);
  CHECK(svg.find("backlog: messages produced and not yet consumed") != std::string::npos);
  CHECK(count(svg, "class=\"curve\"") == 1);  // only the job with a backlog
  CHECK(svg.find("list \xC2\xB7 max 2.5k") != std::string::npos);
  JobResult c = job("redis", "set", "redis set", 1000);  // no queue op: no chart
  const std::vector<RunResult> plain = {loaded("s", {c})};
  html::Page none = html::build_page(plain);
  CHECK(html::backlog_chart(none, none.groups[0]).empty());
}
