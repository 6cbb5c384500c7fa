// Hostile input to the core (issue 10): bytes that are not UTF-8 on their way to the JSON and
// the terminal (class 1), exceptions thrown by an adapter's code in a worker thread or after
// the measurement (classes 1 and 6), and result files mwbench did not write (class 5).
#include <doctest/doctest.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <deque>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <random>
#include <sstream>
#include <stdexcept>

#include "core/driver.h"
#include "core/runner.h"
#include "queue/queue.h"
#include "report/report.h"
#include "results/results.h"
#include "tests/helpers.h"
#include "util/text.h"

using namespace mw;
using nlohmann::json;

namespace {

bool dumps(const std::string& s) {
  try {
    (void)json(s).dump();
    return true;
  } catch (const json::exception&) {
    return false;
  }
}

RunResult run_with(const std::vector<JobResult>& jobs) {
  RunResult r;
  r.suite = "hostile";
  r.started_at = "2026-11-30T03:00:00Z";
  r.command = "mwbench test";
  r.context.host = "box";
  r.jobs = jobs;
  make_notes(r);  // as the runner finishes a run
  return r;
}

JobResult done_job(const std::string& name, double rps) { return test::done_result("null", "nop", name, rps); }

}  // namespace

// ---- class 1: bytes from outside ------------------------------------------------------------

TEST_CASE("hostile text: bytes that are not UTF-8 become U+FFFD; valid text is left alone") {
  const std::string bad[] = {"\xff",
                             "\xfe",
                             "a\x80",
                             "\xc0\x80",
                             "\xc1\xbf",
                             "\xe0\x80\x80",
                             "\xed\xa0\x80",
                             "\xf0\x80\x80\x80",
                             "\xf4\x90\x80\x80",
                             "\xf5\x80\x80\x80",
                             "\xe2\x82",
                             "cut \xf0\x9f\x98",
                             "\xc3",
                             "ok\xc3(",
                             "-ERR \xff"};
  for (auto& s : bad) {
    CAPTURE(s);
    CHECK(!dumps(s));  // what made nlohmann's dump() throw type_error 316
    std::string v = valid_utf8(s);
    CHECK(dumps(v));
    CHECK(v.find("\xEF\xBF\xBD") != std::string::npos);
  }
  for (std::string s :
       {"plain", "caf\xc3\xa9", "\xe2\x82\xac 5", "\xf0\x9f\x98\x80", "\xed\x9f\xbf", "\xf4\x8f\xbf\xbf"})
    CHECK(valid_utf8(s) == s);
  CHECK(valid_utf8("a\xffz") == "a\xEF\xBF\xBDz");
  // the terminal is shown control bytes, never given them
  CHECK(printable("a\x1b[2Jb") == "a\\x1b[2Jb");
  CHECK(printable("line\nnext\tx\r\x7f") == "line\\nnext\\tx\\r\\x7f");
  CHECK(printable("\xc2\x9b"
                  "31m") == "\\u009b31m");  // C1 CSI
  CHECK(printable("caf\xc3\xa9 \xe2\x96\x88") == "caf\xc3\xa9 \xe2\x96\x88");
  CHECK(html_text("<b a=\"1\">&\x1b") == "&lt;b a=&quot;1&quot;&gt;&amp;\\x1b");
}

TEST_CASE("hostile text: roff (the manual page) is given text, never requests") {
  CHECK(roff_text(".SH x\n'br\nok. 'q'") == "\\&.SH x\n\\&'br\nok. 'q'");  // a leading . or ' only
  CHECK(roff_text("--no-save a\\fBb") == "\\-\\-no\\-save a\\efBb");
  CHECK(roff_text("say \"x\"") == "say \\(dqx\\(dq");
  CHECK(roff_text("caf\xc3\xa9 \xe2\x80\x94 \xf0\x9f\x98\x80") == "caf\\[u00E9] \\[u2014] \\[u1F600]");
  CHECK(roff_text("a\x1b[2J\xc2\x9b\tz\xff") == "a\\ex1b[2J\\eu009b z\\[uFFFD]");
}

TEST_CASE("hostile text: a run with bytes that are not UTF-8 everywhere is written, read back and printed") {
  JobResult j = done_job("job \xff\x1b[2J", 1000);
  j.target = "127.0.0.1:\xfe";
  j.error_samples = {"Error: -ERR \xff\xfe", "Error: cut \xe2\x82"};
  j.ops_failed = 2;
  j.errors[static_cast<int>(Status::Error)] = 2;
  j.server = {{"version", "7.\xff"}, {"na\xffme", "x"}};
  j.metrics = {{"body {\"ok\":\"\xc3\"}", 1, "\xff", Metric::Merge::Same}};
  j.warnings = {{WarningKind::Other, "warn \xff"}};
  j.verify = {true, false, "key:1 holds \xff\xff"};
  j.job.opts["path"] = "/tmp/\xff";
  JobResult s;
  s.job.name = "skipped \xff";
  s.target = "-";
  s.state = JobResult::State::Skipped;
  s.message = "because \xc0\xaf";
  RunResult r = run_with({j, s});
  r.suite = "su\xffite";
  r.command = "mwbench --name \xff";
  r.context.host = "h\xffost";
  r.context.libraries["li\xff"] = "1.\xff";
  r.context.warnings = {{WarningKind::Other, "ctx \xff"}};
  std::string text;
  REQUIRE_NOTHROW(text = result_text(r));
  json back = json::parse(text);  // valid JSON, valid UTF-8
  CHECK(back["jobs"][0]["name"] == "job \xEF\xBF\xBD\x1b[2J");
  CHECK(back["jobs"][0]["error_samples"][0] == "Error: -ERR \xEF\xBF\xBD\xEF\xBF\xBD");
  CHECK(back["jobs"][0]["server"]["version"] == "7.\xEF\xBF\xBD");
  CHECK(back["jobs"][0]["server"].contains("na\xEF\xBF\xBDme"));
  CHECK(back["context"]["host"] == "h\xEF\xBF\xBDost");
  // it loads as a result file, and compare and report show it
  RunResult run = parse_result(text, "bytes.json");
  CHECK(run.jobs[0].job.name == "job \xEF\xBF\xBD\x1b[2J");
  std::string cmp = format_compare({run, run});
  CHECK(cmp.find('\x1b') == std::string::npos);
  CHECK(cmp.find("job \xEF\xBF\xBD\\x1b[2J") != std::string::npos);
  std::string html = render_html({run});
  CHECK(html.find('\x1b') == std::string::npos);
  CHECK(json(html).dump().size() > 0);  // the page is valid UTF-8
  // the terminal, Markdown and CSV show the bytes, never obey them
  for (const std::string& out : {format_table(r), format_markdown(r), format_csv(r)}) {
    CHECK(out.find('\x1b') == std::string::npos);
    CHECK(dumps(out));
  }
  // the result file is written, and no temp file stays behind
  test::TempDir dir("/tmp");
  std::string path = write_result_file(r, dir.path);
  CHECK(json::parse(std::ifstream(path))["jobs"][1]["message"] == "because \xEF\xBF\xBD\xEF\xBF\xBD");
  size_t files = 0;
  for (auto& e : std::filesystem::directory_iterator(dir.path))
    files += 1 + (e.path().string().find(".tmp.") != std::string::npos) * 100;
  CHECK(files == 1);
}

TEST_CASE("hostile text: a | in a name keeps the Markdown table's columns; CSV formulas are neutralised") {
  const std::vector<std::string> names = {
      "a|b", "|", "x || y", "=HYPERLINK(\"http://e\")", "+1+2", "-2+3", "@SUM(A1)", "\t=1", "\r=1", "plain"};
  std::vector<JobResult> jobs;
  for (auto& n : names) jobs.push_back(done_job(n, 100));
  jobs.back().target = "=cmd|' /C calc'!A0";
  RunResult r = run_with(jobs);
  const std::string md = format_markdown(r);
  std::istringstream in(md);
  std::string line;
  size_t rows = 0, want = 0;
  while (std::getline(in, line) && line.rfind("|", 0) == 0) {
    size_t cols = 0;  // columns: | not preceded by a backslash
    for (size_t i = 0; i < line.size(); ++i) cols += line[i] == '|' && (i == 0 || line[i - 1] != '\\');
    if (!want) want = cols;
    CAPTURE(line);
    CHECK(cols == want);
    ++rows;
  }
  CHECK(rows == 2 + names.size());
  CHECK(md.find("| a\\|b |") != std::string::npos);
  const std::string csv = format_csv(r);
  std::istringstream cin(csv);
  std::getline(cin, line);  // the header
  size_t checked = 0;
  while (std::getline(cin, line)) {
    CAPTURE(line);
    const char first = line[0] == '"' ? line[1] : line[0];
    CHECK(std::string("=+-@").find(first) == std::string::npos);
    CHECK(line.find(",=") == std::string::npos);  // the target cell too
    ++checked;
  }
  CHECK(checked == names.size());
  CHECK(csv.find("'=HYPERLINK") != std::string::npos);
  CHECK(csv.find("plain,") != std::string::npos);  // an ordinary name is left alone
}

TEST_CASE("hostile text: bidirectional controls are escaped for the terminal, Markdown, CSV and the HTML") {
  const std::vector<std::pair<std::string, std::string>> controls = {
      {"\\u202e", "\xE2\x80\xAE"}, {"\\u202a", "\xE2\x80\xAA"}, {"\\u202b", "\xE2\x80\xAB"},
      {"\\u202c", "\xE2\x80\xAC"}, {"\\u202d", "\xE2\x80\xAD"}, {"\\u2066", "\xE2\x81\xA6"},
      {"\\u2067", "\xE2\x81\xA7"}, {"\\u2068", "\xE2\x81\xA8"}, {"\\u2069", "\xE2\x81\xA9"},
      {"\\u200e", "\xE2\x80\x8E"}, {"\\u200f", "\xE2\x80\x8F"}, {"\\u061c", "\xD8\x9C"}};
  for (const auto& control : controls) {
    const std::string& escaped = control.first;  // not a structured binding: clang 14 (the sanitizer
    const std::string& bytes = control.second;   // build) cannot capture one in CAPTURE
    CAPTURE(escaped);
    CHECK(printable("exe." + bytes + "txt") == "exe." + escaped + "txt");
    CHECK(html_text("a" + bytes + "b") == "a" + escaped + "b");
    RunResult r = run_with({done_job("job " + bytes + "name", 10)});
    for (const std::string& out : {format_table(r), format_markdown(r), format_csv(r)}) {
      CHECK(out.find(bytes) == std::string::npos);
      CHECK(out.find("job " + escaped + "name") != std::string::npos);
    }
  }
  CHECK(printable("\xE2\x80\x94 \xE2\x80\x99 \xE2\x81\xB0") ==
        "\xE2\x80\x94 \xE2\x80\x99 \xE2\x81\xB0");  // others stay
}

namespace {

// A pollable client whose server is a pipe (as in test_driver.cpp); it throws from reap()
// or submit() once it reaches seq `throw_at`, as a client with a bug in its reply parser would.
class ThrowingClient final : public Client {
 public:
  ThrowingClient(uint64_t throw_at, bool in_submit) : throw_at_(throw_at), in_submit_(in_submit) {
    if (pipe2(p_, O_NONBLOCK | O_CLOEXEC) != 0) throw SetupError("pipe");
  }
  ~ThrowingClient() override { close(p_[0]), close(p_[1]); }
  OpResult run(uint64_t) override { return {Status::Unsupported}; }
  int fd() const override { return p_[0]; }
  void submit(uint64_t seq) override {
    if (in_submit_ && seq >= throw_at_) throw std::runtime_error("submit: bad state");
    queued_.push_back(seq);
    if (write(p_[1], "x", 1) != 1) throw std::runtime_error("pipe full");
  }
  size_t reap(std::span<Completion> out) override {
    char buf[256];
    ssize_t n = read(p_[0], buf, std::min(sizeof buf, out.size()));
    size_t k = 0;
    for (ssize_t i = 0; i < n; ++i) {
      if (!in_submit_ && queued_.front() >= throw_at_)
        throw json::type_error::create(302, "type must be string, but is number", nullptr);
      out[k++] = {queued_.front(), {Status::Ok, 1}};
      queued_.pop_front();
    }
    return k;
  }

 private:
  int p_[2] = {-1, -1};
  uint64_t throw_at_;
  bool in_submit_;
  std::deque<uint64_t> queued_;
};

class ThrowingAdapter final : public Adapter {
 public:
  ThrowingAdapter(uint64_t throw_at, bool in_submit) : throw_at_(throw_at), in_submit_(in_submit) {}
  std::unique_ptr<Client> open(const Job&, int client) override {
    return std::make_unique<ThrowingClient>(client == 0 ? throw_at_ : UINT64_MAX, in_submit_);
  }
  std::string target() const override { return "pipe"; }
  uint64_t throw_at_;
  bool in_submit_;
};

}  // namespace

TEST_CASE(
    "hostile adapter: a blocking client that throws in its worker thread fails with the reason; the job goes on") {
  Job j = test::make_job("null", "nop", 1000, 2);
  j.opts["throw-every"] = "100";
  JobResult r = run_one(j);
  CHECK(r.state == JobResult::State::Done);
  CHECK(r.ops_failed == 2);  // one per client: each stops at its first throw
  CHECK(r.ops_ok + r.ops_failed + r.ops_not_run == 1000);
  CHECK(r.ops_not_run > 0);
  REQUIRE(!r.error_samples.empty());
  CHECK(r.error_samples[0] == "Error: client threw an exception: thrown on purpose (--throw-every)");
  RunResult run = run_with({r});
  CHECK(exit_code(run) == 1);
}

TEST_CASE(
    "hostile adapter: a pollable client that throws from reap() or submit() fails its ops in flight; the others go "
    "on") {
  for (bool in_submit : {false, true}) {
    CAPTURE(in_submit);
    ThrowingAdapter a(5, in_submit);
    Job j = test::make_job("pipe", "x", 400, 2);
    j.pipeline = 4;
    JobResult r;
    REQUIRE_NOTHROW(r = measure(j, a));
    CHECK(r.ops_ok >= 200);  // client 1 never throws: its 200 ops all succeed
    CHECK(r.ops_failed >= 1);
    CHECK(r.ops_ok + r.ops_failed + r.ops_not_run == 400);
    REQUIRE(!r.error_samples.empty());
    CHECK(r.error_samples[0].find("Error: client threw an exception: ") == 0);
    CHECK(r.error_samples[0].find(in_submit ? "submit: bad state" : "type must be string") != std::string::npos);
  }
}

// ---- class 6: what fails after the measurement --------------------------------------------

namespace {

// Measures like the null adapter; then, as if its server was killed meanwhile, verify(),
// metrics() or describe() throw.
class DyingAdapter final : public Adapter {
 public:
  explicit DyingAdapter(int fail) : fail_(fail) {}
  std::unique_ptr<Client> open(const Job&, int) override {
    struct Ok final : Client {
      OpResult run(uint64_t) override { return {}; }
    };
    return std::make_unique<Ok>();
  }
  Verdict verify(const Job&, const Counts&) override {
    if (fail_ & 1) throw SetupError("cannot connect to 127.0.0.1:1: Connection refused");
    return {true, true, ""};
  }
  Metrics metrics(double) override {
    if (fail_ & 2) throw std::runtime_error("INFO: connection reset");
    return {};
  }
  Info describe() override {
    if ((fail_ & 4) && ++described_ > 1) throw std::runtime_error("server went away");
    return {{"server", "dying 1.0"}};
  }
  void teardown() override {
    if (fail_ & 8) throw std::runtime_error("cannot stop the server");
  }
  std::string target() const override { return "dying"; }
  int fail_, described_ = 0;
};

}  // namespace

TEST_CASE(
    "outcome: verify, metrics or describe throwing after the measurement fails verification, keeps the figures, exit "
    "1") {
  struct Case {
    int fail;
    const char* detail;
  };
  for (Case c : {Case{1, "verify: cannot connect to 127.0.0.1:1: Connection refused"},
                 Case{2, "metrics: INFO: connection reset"}, Case{4, "server info: server went away"},
                 Case{7,
                      "verify: cannot connect to 127.0.0.1:1: Connection refused; metrics: INFO: connection reset; "
                      "server info: server went away"}}) {
    CAPTURE(c.fail);
    Job j = test::make_job("dying", "nop", 500, 2);
    JobResult r = run_one_with(j, [&](const Job&) { return std::make_unique<DyingAdapter>(c.fail); });
    CHECK(r.state == JobResult::State::Done);
    CHECK(r.ops_ok == 500);
    CHECK(r.rps > 0);
    CHECK(r.latency->count() == 500);
    CHECK(r.verify.checked);
    CHECK(!r.verify.ok);
    CHECK(r.verify.detail == c.detail);
    CHECK(r.server.at("server") == "dying 1.0");
    RunResult run = run_with({r});
    CHECK(exit_code(run) == 1);
    std::string table = format_table(run);
    CHECK(table.find("VERIFY FAILED: dying nop (dying): " + std::string(c.detail)) != std::string::npos);
    CHECK(table.find("set-up error") == std::string::npos);
  }
  // a teardown that throws is a warning; the run stands
  JobResult t =
      run_one_with(test::make_job("dying", "nop", 100), [](const Job&) { return std::make_unique<DyingAdapter>(8); });
  CHECK(t.state == JobResult::State::Done);
  CHECK(!t.failed());
  REQUIRE(!t.warnings.empty());
  CHECK(t.warnings.back().text == "teardown: cannot stop the server");
  // failing before the measurement is still a set-up error
  JobResult s = run_one_with(test::make_job("dying", "nop", 100), [](const Job&) -> std::unique_ptr<Adapter> {
    throw SetupError("cannot connect to 127.0.0.1:1");
  });
  CHECK(s.state == JobResult::State::SetupFailed);
  CHECK(s.message == "cannot connect to 127.0.0.1:1");
}

TEST_CASE("outcome: compare and the HTML report show a run that failed as such, not as a plain figure") {
  JobResult good = done_job("null nop", 1000);
  JobResult unverified = done_job("null nop", 900);
  unverified.verify = {true, false, "key:7 missing"};
  JobResult failed = done_job("null nop", 800);
  failed.ops_failed = 4;
  failed.ops_not_run = 6;
  JobResult setup;
  setup.job = good.job;
  setup.target = "-";
  setup.state = JobResult::State::SetupFailed;
  setup.message = "cannot connect";
  JobResult rep = done_job("null nop", 950);
  JobResult rep_bad = rep;
  rep_bad.ops_failed = 1;
  rep.repeats = {rep_bad, rep, rep};
  auto load = [](const std::string& label, const JobResult& j) {
    return parse_result_json(to_json(run_with({j})), label);
  };
  std::vector<RunResult> runs{load("A.json", good), load("B.json", unverified), load("C.json", failed),
                              load("D.json", setup), load("E.json", rep)};
  std::string out = format_compare(runs);
  CAPTURE(out);
  CHECK(out.find("1000.0") != std::string::npos);
  CHECK(out.find("900.0 unverified") != std::string::npos);
  CHECK(out.find("800.0 FAILED") != std::string::npos);
  CHECK(out.find("setup-failed") != std::string::npos);
  CHECK(out.find("950.0 FAILED") != std::string::npos);  // a failure in any repeat shows
  CHECK(out.find("B.json unverified: key:7 missing") != std::string::npos);
  CHECK(out.find("C.json had failures (4 failed, 6 not run)") != std::string::npos);
  CHECK(out.find("D.json set-up failed: cannot connect") != std::string::npos);
  CHECK(out.find("E.json had failures (1 failed, 0 not run)") != std::string::npos);
  CHECK(out.find("FAILED: some ops failed or were not run") != std::string::npos);
  // a good pair has no such mark
  std::string fine = format_compare({load("A.json", good), load("A2.json", good)});
  CHECK(fine.find("FAILED") == std::string::npos);
  CHECK(fine.find("unverified") == std::string::npos);

  std::string html = render_html(runs);
  auto count = [&](const std::string& what) {
    size_t n = 0;
    for (size_t at = html.find(what); at != std::string::npos; at = html.find(what, at + 1)) ++n;
    return n;
  };
  CHECK(count("class=\"bar\"") == 1);         // A alone is a plain bar
  CHECK(count("class=\"bar failed\"") == 3);  // B, C, E; D has no figure to draw
  CHECK(html.find(">900 req/s unverified  B</text>") != std::string::npos);
  CHECK(html.find(">800 req/s FAILED  C</text>") != std::string::npos);
  CHECK(html.find(">950 req/s FAILED  E</text>") != std::string::npos);  // a failure in any repeat shows
  CHECK(html.find(">set-up failed: cannot connect</text>") != std::string::npos);
  // the table and the verdict say it too: FAILED badges, red rows, not ranked
  CHECK(count("<span class=\"badge bad\">FAILED</span>") == 2);
  CHECK(count("<span class=\"badge bad\">unverified</span>") == 1);
  CHECK(count("<span class=\"badge bad\">setup-failed</span>") == 1);
  CHECK(html.find("Not ranked: <b>null nop (B)</b> unverified: key:7 missing; "
                  "<b>null nop (C)</b> FAILED (4 failed, 6 not run)") != std::string::npos);
}

// ---- class 5: result files mwbench did not write ------------------------------------------

namespace {

json good_doc() {
  JobResult a = done_job("null nop", 1000);
  a.job.opts["path"] = "/tmp";
  JobResult r = done_job("null nop", 900);
  r.repeats = {r, r, r};
  JobResult s;
  s.job.name = "skipped";
  s.target = "-";
  s.state = JobResult::State::Skipped;
  RunResult run = run_with({a, r, s});
  run.context.libraries["x"] = "1";
  run.context.paths["/tmp"] = {"tmpfs", "tmpfs"};
  run.context.warnings = {{WarningKind::Other, "w"}};
  return to_json(run);
}

// Loads `text` and returns the one-line error, or "" when it loaded.
std::string load_error(std::string_view text) {
  try {
    parse_result(text, "bad.json");
    return "";
  } catch (const SetupError& e) {
    return e.what();
  }
}

}  // namespace

TEST_CASE(
    "hostile result files: wrong types, missing keys, bad buckets, absurd values: one line naming the file and the "
    "field") {
  REQUIRE(load_error(good_doc().dump()).empty());
  struct Case {
    const char* pointer;  // where to change the good document
    json value;           // what to put there; a discarded value removes the key
    const char* expect;   // what the one line says
  };
  const json gone = json(json::value_t::discarded);
  const Case cases[] = {
      {"", json::array(), "not an mwbench result file"},
      {"/schema_version", "1", "schema_version \"1\" is not one this mwbench reads (1 or 2)"},
      {"/schema_version", 3, "schema_version 3 is not one"},
      {"/jobs", json::object(), "not an mwbench result file"},
      {"/suite", gone, "missing \"suite\""},
      {"/started_at", 5, "started_at: expected a string, got number"},
      {"/command", nullptr, "command: expected a string, got null"},
      {"/interrupted", "no", "interrupted: expected true or false, got string"},
      {"/context", json::array(), "context: expected an object, got array"},
      {"/context/host", gone, "context: missing \"host\""},
      {"/context/cores", -1, "context.cores: -1 is negative"},
      {"/context/cores", 1.5, "context.cores: expected a whole number"},
      {"/context/memory_bytes", "lots", "context.memory_bytes: expected a whole number"},
      {"/context/libraries", json{{"x", 1}}, "context.libraries.x: expected a string, got number"},
      {"/context/paths", json{{"/", "tmpfs"}}, "context.paths./: expected an object, got string"},
      {"/context/paths/~1tmp/fs", gone, "context.paths./tmp: missing \"fs\""},
      {"/context/warnings", "w", "context.warnings: expected an array, got string"},
      {"/context/warnings", json::array({1}), "context.warnings[0]: expected a string, got number"},
      {"/jobs/0", 5, "jobs[0]: expected an object, got number"},
      {"/jobs/0/name", gone, "jobs[0]: missing \"name\""},
      {"/jobs/0/name", 1, "jobs[0].name: expected a string, got number"},
      {"/jobs/0/state", "exploded", "jobs[0].state: \"exploded\" is not done, interrupted, setup-failed or skipped"},
      {"/jobs/0/params", json::array(), "jobs[0].params: expected an object, got array"},
      {"/jobs/0/params/path", json{{"a", 1}},
       "jobs[0].params.path: expected a string, number or true/false, got object"},
      {"/jobs/0/params/clients", "4", "jobs[0].params.clients: expected a whole number (1 to 1000000), got string"},
      {"/jobs/0/params/clients", 0, "jobs[0].params.clients: 0 is out of range (1 to 1000000)"},
      {"/jobs/0/params/pipeline", 1e12, "jobs[0].params.pipeline: expected a whole number"},
      {"/jobs/0/ops_ok", -1, "jobs[0].ops_ok: -1 is negative"},
      {"/jobs/0/ops_ok", 1e30,
       "jobs[0].ops_ok: expected a whole number (0 to 1000000000000000), got a fraction or an overflow"},
      {"/jobs/0/ops_ok", 18446744073709551615ull, "jobs[0].ops_ok: 18446744073709551615 is out of range"},
      {"/jobs/0/ops_failed", "0", "jobs[0].ops_failed: expected a whole number"},
      {"/jobs/0/ops_not_run", gone, "jobs[0]: missing \"ops_not_run\""},
      {"/jobs/0/rps", -5, "jobs[0].rps: -5 is out of range (0 to 1e15)"},
      {"/jobs/0/rps", 1e300, "jobs[0].rps: 1e+300 is out of range"},
      {"/jobs/0/elapsed_s", nullptr, "jobs[0].elapsed_s: expected a number, got null"},
      {"/jobs/0/latency_ns", 3, "jobs[0].latency_ns: expected an object, got number"},
      {"/jobs/0/latency_ns/p99", gone, "jobs[0].latency_ns: missing \"p99\""},
      {"/jobs/0/latency_ns/p99", "fast", "jobs[0].latency_ns.p99: expected a number, got string"},
      {"/jobs/0/histogram", json::array(), "jobs[0].histogram: expected an object, got array"},
      {"/jobs/0/histogram/buckets", json::object(), "jobs[0].histogram.buckets: expected an array, got object"},
      {"/jobs/0/histogram/buckets/0", json::array({1}),
       "jobs[0].histogram.buckets[0]: expected [value, count], got an array of 1"},
      {"/jobs/0/histogram/buckets/0", json::array({1, 2, 3}), "buckets[0]: expected [value, count], got an array of 3"},
      {"/jobs/0/histogram/buckets/0", 7, "buckets[0]: expected [value, count], got number"},
      {"/jobs/0/histogram/buckets/0", json::array({-1, 1}), "buckets[0][0]: -1 is negative"},
      {"/jobs/0/histogram/buckets/0", json::array({1, -1}), "buckets[0][1]: -1 is negative"},
      {"/jobs/0/histogram/buckets/0", json::array({"1", 1}), "buckets[0][0]: expected a whole number"},
      {"/jobs/0/histogram/buckets/0", json::array({100000000000000000LL, 1}),
       "buckets[0][0]: 100000000000000000 is out of range"},
      {"/jobs/0/histogram/buckets/0", json::array({1, 1000000000000000000LL}),
       "buckets[0][1]: 1000000000000000000 is out of range"},
      {"/jobs/0/histogram/buckets",
       json::array({json::array({1, 900000000000000LL}), json::array({2, 900000000000000LL})}),
       "jobs[0].histogram.buckets: counts add up to more than 1e15"},
      {"/jobs/0/verify", true, "jobs[0].verify: expected an object, got boolean"},
      {"/jobs/0/verify/ok", "yes", "jobs[0].verify.ok: expected true or false, got string"},
      {"/jobs/0/verify/detail", gone, "jobs[0].verify: missing \"detail\""},
      {"/jobs/0/warnings", json::array({nullptr}), "jobs[0].warnings[0]: expected a string, got null"},
      {"/jobs/0/message", 5, "jobs[0].message: expected a string, got number"},
      {"/jobs/1/repeats", json::object(), "jobs[1].repeats: expected an array, got object"},
      {"/jobs/1/repeats/0/rps", gone, "jobs[1].repeats[0]: missing \"rps\""},
      {"/jobs/1/repeats/0/state", 7, "jobs[1].repeats[0].state: expected a string, got number"},
      {"/jobs/1/rps_min", 5000, "jobs[1].rps_min: is above rps_max"},
      {"/jobs/2/target", json::array(), "jobs[2].target: expected a string, got array"},
  };
  for (auto& c : cases) {
    std::string where = c.pointer;
    CAPTURE(where);
    json doc = good_doc();
    json::json_pointer p(c.pointer);
    if (c.value.is_discarded())
      doc[p.parent_pointer()].erase(p.back());
    else
      doc[p] = c.value;
    std::string err = load_error(doc.dump());
    CAPTURE(err);
    CHECK(err.rfind("bad.json: ", 0) == 0);
    CHECK(err.find(c.expect) != std::string::npos);
    CHECK(err.find('\n') == std::string::npos);
  }
  CHECK(sizeof cases / sizeof cases[0] == 59);
}

TEST_CASE("hostile result files: not JSON, empty, too deep, cut short; a directory, a FIFO, a device, too large") {
  std::string good = good_doc().dump();
  const std::pair<std::string, const char*> texts[] = {
      {"", "bad.json: empty file, not JSON"},
      {"  \n\t", "bad.json: empty file, not JSON"},
      {"not json", "bad.json: not JSON"},
      {good.substr(0, good.size() / 2), "bad.json: not JSON"},
      {std::string(100000, '['), "bad.json: nested deeper than 32 levels"},
      {std::string(100000, '[') + std::string(100000, ']'), "bad.json: nested deeper than 32 levels"},
      {"{\"schema_version\":1,\"jobs\":[" + std::string(40, '{').replace(1, 0, "") + "]}",
       "nested deeper than 32 levels"},
      {"{\"schema_version\":1,\"jobs\":[\"\xff\"]}", "bad.json: not JSON"},
      {"null", "not an mwbench result file"},
      {"1e400", "bad.json: not JSON"},
      {std::string("{\"a\":\0}", 7), "bad.json: not JSON"},
      {"{\"schema_version\":1,\"jobs\":[]} trailing", "bad.json: not JSON"},
  };
  for (auto& [text, expect] : texts) {
    std::string err = load_error(text), head = text.substr(0, 60);
    CAPTURE(head);
    CAPTURE(err);
    CHECK(err.find(expect) != std::string::npos);
  }
  // quotes and brackets inside strings do not count as nesting
  json deep_string = good_doc();
  deep_string["command"] = std::string(1000, '[') + "\"{";
  CHECK(load_error(deep_string.dump()).empty());

  test::TempDir dir("/tmp");
  std::string fifo = dir.path + "/fifo.json", sparse = dir.path + "/huge.json", missing = dir.path + "/missing.json";
  REQUIRE(mkfifo(fifo.c_str(), 0600) == 0);
  { std::ofstream(sparse) << ""; }
  std::filesystem::resize_file(sparse, (size_t{300} << 20));  // sparse: nothing is written
  const std::pair<std::string, std::string> files[] = {
      {dir.path, dir.path + ": is a directory, not a result file"},
      {fifo, fifo + ": not a regular file (a FIFO, socket or device), not a result file"},
      {"/dev/null", "/dev/null: not a regular file (a FIFO, socket or device), not a result file"},
      {sparse, sparse + ": larger than 256 MiB: not a result file mwbench wrote"},
      {missing, missing + ": cannot read the file"},
  };
  for (auto& [f, expect] : files) CHECK_THROWS_WITH_AS(load_result(f), expect.c_str(), SetupError);
}

TEST_CASE("hostile result files: random damage to a good file gives a SetupError or a loaded run, nothing else") {
  std::string good = result_text(run_with({done_job("null nop", 1000)}));
  std::mt19937 rng(10);
  const char alphabet[] = "{}[]\":,-0123456789.eE+ntrufalse\\\xff\x80 ";
  int loaded = 0, refused = 0;
  const int files = test::kSanitized ? 600 : 3000;  // the fuzzer fuzz_result goes on from here
  for (int k = 0; k < files; ++k) {
    std::string t = good;
    for (int n = 1 + static_cast<int>(rng() % 4); n > 0; --n) {
      size_t at = rng() % t.size();
      switch (rng() % 3) {
        case 0: t[at] = alphabet[rng() % (sizeof alphabet - 1)]; break;
        case 1: t.erase(at, 1 + rng() % 8); break;
        default: t.insert(at, 1, alphabet[rng() % (sizeof alphabet - 1)]);
      }
      if (t.empty()) t = "x";
    }
    try {
      RunResult r = parse_result(t, "fuzz.json");
      (void)format_compare({r, r});
      (void)render_html({r});
      ++loaded;
    } catch (const SetupError&) {
      ++refused;
    }
  }
  CHECK(loaded + refused == files);
  CHECK(refused > files / 3);
}

TEST_CASE("result files: every example mwbench wrote still loads") {
  size_t n = 0;
  for (auto& e : std::filesystem::directory_iterator(std::string(MWBENCH_SOURCE_DIR) + "/results/examples")) {
    if (e.path().extension() != ".json") continue;
    CAPTURE(e.path().string());
    RunResult r;
    REQUIRE_NOTHROW(r = load_result(e.path().string()));
    CHECK(!r.jobs.empty());
    CHECK(r.label == e.path().filename().string());
    ++n;
  }
  CHECK(n >= 5);
}

namespace {

std::shared_ptr<Histogram> histogram_of(std::initializer_list<std::pair<int64_t, uint64_t>> values) {
  auto h = std::make_shared<Histogram>();
  for (auto [v, n] : values) h->record_n(v, n);
  return h;
}

// A job with every part a result file holds: typed settings, series, per-op and per-side
// figures, a queue's ledger, an SLO, a contract, a crash, and failed and uncorrected latencies.
JobResult everything_job() {
  JobResult j = done_job("redis mix", 1000);
  j.job.op = "mix";
  j.job.clients = 4, j.job.pipeline = 16, j.job.threads = 2, j.job.rate = 2500.5, j.job.duration_s = 1.5;
  j.job.warmup_ops = 10, j.job.timeout_s = 2, j.job.poll = parse_poll("50us"), j.job.source = "suite.toml:3";
  j.job.opts["host"] = "127.0.0.1";
  j.server = {{"name", "redis-server"}, {"managed", "yes"}};
  j.paths = {"/tmp"};
  j.ops_failed = 2, j.ops_not_run = 1, j.ops_not_sent = 4, j.warmup_ok = 7, j.bytes = 4096, j.misses = 3;
  j.errors[static_cast<int>(Status::Timeout)] = 2;
  j.error_samples = {"timeout after 2 s"};
  j.latency_failed = histogram_of({{2'000'000'000, 2}});
  j.latency_uncorrected = histogram_of({{900, 60}, {1'500'000, 40}});
  j.per_second = {60, 40};
  j.series_interval_s = 0.05;
  SeriesInterval a, b;
  a.ok = 60, a.failed = 2, a.max = 90000;
  a.buckets = {{static_cast<uint16_t>(CompactLayout::index_of(1000)), 30},
               {static_cast<uint16_t>(CompactLayout::index_of(5000)), 29},
               {static_cast<uint16_t>(CompactLayout::index_of(90000)), 1}};
  b.ok = 40, b.max = 7000, b.buckets = {{static_cast<uint16_t>(CompactLayout::index_of(7000)), 40}};
  j.series = {a, b};
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
  d.expect = Expectation::Durable, d.note = "fsync once a second", d.crash_at = 0.5, d.ops = 100, d.acked = 90,
  d.lost = 2;
  d.in_doubt = 5, d.in_doubt_present = 1, d.never_sent = 5, d.recovery_s = 0.25, d.loss_window_s = 0.1;
  d.detail = "key 7 lost", d.unrecoverable = true;
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

// A job with a resource profile of every kind of figure: mwbench and a server, a disk with
// figures and one without, the sockets' bytes, the lock waits, and the verdict.
JobResult profiled_job() {
  JobResult j = done_job("null nop", 50000);
  Profile& p = j.profile;
  p.taken = true, p.wall_s = 0.7123456789, p.ops = 35617, p.cores = 2, p.threads = 1, p.clients = 3, p.polled = true;
  p.self = {"mwbench", "self", 0.3333333, 0.1, 0.29999999, 12345678, 17, 4, 1};
  p.servers = {{"redis-server", "managed", 0.25, 0.05, 0.2123456789, 9876543, 100, 2, 3}};
  p.disks = {{"/var/tmp", "vda", "", 12, 345, 49152, 1413120, 340, 123.456, 456.789},
             {"/dev/shm", "", "tmpfs: no block device"}};
  p.net_counted = true, p.bytes_sent = 1234567, p.bytes_received = 7654321, p.steal_share = 0.0123456789;
  p.locks_counted = true, p.lock_retries = 96, p.lock_wait_s = 1.94;
  p.limited_by = "client CPU", p.evidence = "mwbench's busiest thread at 42% of one core", p.suspect = true;
  return j;
}

}  // namespace

TEST_CASE("result files: a run read back is the run written, and writing it again gives the same text") {
  RunResult run = run_with({everything_job(), profiled_job()});
  run.interrupted = true, run.signal = SIGTERM;
  run.gate = "redis mix: slower\n", run.gate_failed = true;
  run.context.libraries = {{"hiredis", "1.1.0"}};
  run.context.paths = {{"/tmp", {"ext4", "/dev/vda1"}}};
  run.context.warnings = {{WarningKind::CpuScaling, "CPU scaling is enabled"}};
  RankContext rank;
  rank.host = "box", rank.clients = {4, 1}, rank.warnings = {{WarningKind::Other, "w"}};
  run.ranks = {rank, rank};
  const std::string text = result_text(run);
  RunResult back = parse_result(text, "r.json");
  CHECK(result_text(back) == text);
  // what the reports read is typed, not text: the job's settings, the queue's ledger, the signal
  CHECK(back.label == "r.json");
  CHECK(back.signal == SIGTERM);
  CHECK(back.gate_failed);
  REQUIRE(back.jobs.size() == 2);
  const JobResult& j = back.jobs[0];
  CHECK(j.job.clients == 4);
  CHECK(j.job.pipeline == 16);
  CHECK(j.job.poll.text() == "50us");
  CHECK(j.job.opts.at("host") == "127.0.0.1");
  CHECK(j.latency->percentile(99) == run.jobs[0].latency->percentile(99));
  CHECK(j.latency->sum() == run.jobs[0].latency->sum());
  REQUIRE(j.queue);
  CHECK(j.queue->sum_produced == 0xfedcba9876543210ull);
  CHECK(j.queue->backlog == std::vector<int64_t>{3, -1});
  CHECK(j.queue->roundtrip->count() == 99);
  CHECK(!j.slo.passed);
  CHECK(j.contract->kind == ContractKind::PeriodicFsync);
  REQUIRE(j.series.size() == 2);
  CHECK(j.series[0].percentile(50) == run.jobs[0].series[0].percentile(50));
  CHECK(j.series[0].percentile(99) == run.jobs[0].series[0].percentile(99));
  CHECK(j.repeats.size() == 2);
  const Profile& p = back.jobs[1].profile;  // the profile's figures, not only its verdict
  CHECK(p.taken);
  CHECK(p.self.busiest_thread_s == run.jobs[1].profile.self.busiest_thread_s);
  REQUIRE(p.servers.size() == 1);
  CHECK(p.servers[0].peak_rss_bytes == 9876543);
  REQUIRE(p.disks.size() == 2);
  CHECK(p.disks[0].flushes == 340);
  CHECK(p.disks[1].missing == "tmpfs: no block device");
  CHECK(p.lock_retries == 96);
  CHECK(p.limited_by == "client CPU");
  CHECK(exit_code(back) == exit_code(run));
  // The examples (schema 1): the first writing brings them to schema 2, the next gives the same text.
  for (auto& e : std::filesystem::directory_iterator(std::string(MWBENCH_SOURCE_DIR) + "/results/examples")) {
    if (e.path().extension() != ".json") continue;
    if (test::kSanitized && e.file_size() > 200'000) continue;  // the same code, less data (tests/CMakeLists.txt)
    CAPTURE(e.path().string());
    const std::string once = result_text(load_result(e.path().string()));
    CHECK(result_text(parse_result(once, "again.json")) == once);
  }
}

TEST_CASE("result files: schema 1 (the committed examples) and 2 (written now) load with their fields; 3 is refused") {
  // Version 1: the examples as they were written, jobs and context read field by field.
  struct Example {
    const char* file;
    const char* suite;
    size_t jobs;
    const char* first;
    uint64_t first_ok;
  };
  const Example examples[] = {{"queues-and-caches.json", "queues-and-caches", 13, "gearman submit-bg", 5000},
                              {"quick.json", "quick", 7, "sqlite read-all", 200},
                              {"quick-2.json", "quick", 7, "sqlite read-all", 200},
                              {"storage-media.json", "storage-media", 14, "sqlite read-all journal-mode=delete", 100}};
  const std::string dir = std::string(MWBENCH_SOURCE_DIR) + "/results/examples/";
  for (const Example& e : examples) {
    CAPTURE(e.file);
    REQUIRE(json::parse(std::ifstream(dir + e.file))["schema_version"] == 1);
    RunResult r = load_result(dir + e.file);
    CHECK(r.suite == e.suite);
    CHECK(r.context.host == "vm");
    CHECK(r.context.cores == 2);
    REQUIRE(r.jobs.size() == e.jobs);
    CHECK(r.jobs[0].job.name == e.first);
    CHECK(r.jobs[0].ops_ok == e.first_ok);
    CHECK(r.jobs[0].state == JobResult::State::Done);
    REQUIRE(r.jobs[0].latency);
    CHECK(r.jobs[0].latency->count() == e.first_ok);
  }
  // Version 2 as committed: vm-sanity.json, `run configs/vm-sanity.toml --repeat 5` of its ten
  // jobs (the gate's baseline in docs/guide/slos-and-gates.md), each with its five runs and its profile.
  {
    const std::string file = dir + "vm-sanity.json";
    REQUIRE(json::parse(std::ifstream(file))["schema_version"] == 2);
    RunResult r = load_result(file);
    CHECK(r.suite == "vm-sanity");
    CHECK(r.context.host == "vm");
    CHECK(r.context.cores == 2);
    REQUIRE(r.jobs.size() == 10);
    CHECK(r.jobs[0].job.name == "cached reads (hdparm -T)");
    CHECK(r.jobs[9].job.name == "redis ping");
    for (const JobResult& k : r.jobs) {
      CAPTURE(k.job.name);
      CHECK(k.state == JobResult::State::Done);
      CHECK(k.repeats.size() == 5);
      REQUIRE(k.latency);
      CHECK(k.latency->count() == k.ops_ok);
      CHECK(k.elapsed_s >= 0.1);  // none too short to mean much
      CHECK(k.profile.taken);
      CHECK(k.profile.ops == k.ops_ok + k.ops_failed);
    }
  }
  // Version 2: what this mwbench writes, with the fields schema 2 names.
  JobResult j = done_job("null mix", 1000);
  j.job.op = "mix";
  j.misses = 3;
  OpFigures read{"read", 100, 0, 3, j.latency};
  j.per_op = {read};
  j.series_interval_s = 1;
  j.series.resize(2);
  j.series[0].ok = 60, j.series[1].ok = 40;
  j.durability.ran = true, j.durability.victim = "redis-server", j.durability.ops = 100;
  j.durability.acked = 100, j.durability.lost = 2, j.durability.expect = Expectation::Durable;
  RunResult run = run_with({j});
  RankContext rank;
  rank.host = "box", rank.clients = {1};
  run.ranks = {rank};
  test::TempDir tmp;
  const std::string file = write_result_file(run, tmp.path);
  REQUIRE(json::parse(std::ifstream(file))["schema_version"] == 2);
  RunResult back = load_result(file);
  REQUIRE(back.jobs.size() == 1);
  const JobResult& b = back.jobs[0];
  CHECK(b.ops_ok == 100);
  CHECK(b.misses == 3);
  REQUIRE(b.per_op.size() == 1);
  CHECK(b.per_op[0].op == "read");
  CHECK(b.per_op[0].misses == 3);
  REQUIRE(b.series.size() == 2);
  CHECK(b.series[1].ok == 40);
  REQUIRE(b.durability.ran);
  CHECK(b.durability.lost == 2);
  CHECK(b.durability.failed());
  REQUIRE(back.ranks.size() == 1);
  CHECK(back.ranks[0].host == "box");
  // A newer schema, or none this mwbench knows: one line naming the file, not a guess at its fields.
  for (const char* version : {"3", "0", "\"2\""}) {
    json doc = json::parse(std::ifstream(file));
    doc["schema_version"] = json::parse(version);
    const std::string newer = tmp.path + "/newer.json";
    std::ofstream(newer) << doc.dump();
    CHECK_THROWS_WITH_AS(
        load_result(newer),
        (newer + ": schema_version " + version + " is not one this mwbench reads (1 or 2): written by a newer mwbench?")
            .c_str(),
        SetupError);
  }
}
