// Issue 10, class 7: values that used to be accepted but were meaningless or crashed. Every
// number has a declared range; suites are bounded in size, nesting and job count before parsing.
#include <doctest/doctest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fstream>
#include <string>

#include "config/config.h"
#include "workload/rate_shape.h"

using namespace mw;

namespace {

std::string suite_error(const std::string& text) {
  static int k = 0;
  std::string path = "/tmp/mwbench-limits-" + std::to_string(getpid()) + "-" + std::to_string(k++) + ".toml";
  std::ofstream(path) << text;
  std::string msg = "no error";
  try {
    load_suite(path);
  } catch (const SetupError& e) {
    msg = e.what();
    msg = msg.rfind(path, 0) == 0 ? msg.substr(path.size()) : msg;
  }
  unlink(path.c_str());
  return msg;
}

std::string cli_error(const std::string& adapter, const std::string& key, const std::string& value) {
  try {
    expand_jobs(adapter, {{key, {value}, "--" + key}}, "cli");
  } catch (const SetupError& e) {
    return e.what();
  }
  return "no error";
}

bool has(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

std::string repeat(const std::string& s, int n) {
  std::string out;
  for (int i = 0; i < n; ++i) out += s;
  return out;
}

}  // namespace

TEST_CASE("limits: every number an adapter or the driver takes declares a range its default is in") {
  std::vector<std::pair<std::string, const std::vector<OptionSpec>*>> all{{"null", &common_options()}};
  for (auto& a : adapters()) all.push_back({a.name, &a.options});
  int numbers = 0;
  for (auto& entry : all)
    for (auto& o : *entry.second) {
      const std::string& adapter = entry.first;  // not a binding: CAPTURE under clang 14
      if (o.kind != OptionSpec::Kind::Int && o.kind != OptionSpec::Kind::Num) continue;
      ++numbers;
      CAPTURE(adapter);
      CAPTURE(o.name);
      CHECK(o.max < OptionSpec::kUnbounded);
      CHECK(o.min <= o.max);
      if (!o.def.empty()) CHECK(cli_error(adapter, o.name, o.def) == "no error");
      // one past either end is refused, naming the option and the range
      if (o.min > 0) CHECK(has(cli_error(adapter, o.name, std::to_string(o.min - 1)), o.name + " expects"));
      CHECK(has(cli_error(adapter, o.name, std::to_string(o.max * 10 + 1)), o.name + " expects"));
    }
  CHECK(numbers >= 25);
}

TEST_CASE("limits: values out of range name the option and the range") {
  CHECK(has(cli_error("null", "n", "0"), "--n: n expects a whole number from 1 to"));
  CHECK(has(cli_error("null", "clients", "4294967297"), "clients expects a whole number from 1 to 10000"));
  CHECK(has(cli_error("null", "pipeline", "4294967297"), "pipeline expects a whole number from 1 to 65536"));
  CHECK(has(cli_error("null", "threads", "-1"), "threads expects a whole number from 1 to 1024"));
  for (const char* r : {"-5", "nan", "inf", "1e400", "-inf", "0x", ""})
    CHECK(has(cli_error("null", "rate", r), "rate expects a number from 0 to 1000000000"));
  for (const char* d : {"0", "-1s", "nan", "inf", "1e400s", "800h", "0.1ms"})
    CHECK(has(cli_error("null", "duration", d), "duration expects a time from 1ms to 720h"));
  for (const char* t : {"0", "nan", "25h", "-5s"})
    CHECK(has(cli_error("null", "timeout", t), "timeout expects a time from 1ms to 24h"));
  for (const char* w : {"nan", "-5", "5x", "1e400", "1e13", "-2s", "721h"})
    CHECK(has(cli_error("null", "warmup", w), "warmup expects a count of ops from 0 to"));
  CHECK(has(cli_error("tc", "keyspace", "0"), "keyspace expects a whole number from 1"));
  CHECK(has(cli_error("disk", "bs", "0"), "bs expects a whole number from 1 to 64M"));
  CHECK(has(cli_error("disk", "mix", "101"), "mix expects a whole number from 0 to 100"));
  CHECK(has(cli_error("redis", "port", "65536"), "port expects a whole number from 1 to 65535"));
  // what is in range still works, suffixes included
  auto jobs =
      expand_jobs("null", {{"n", {"1k"}, "-n"}, {"warmup", {"2M"}, "--warmup"}, {"rate", {"0.05"}, "--rate"}}, "cli");
  REQUIRE(jobs.size() == 1);
  CHECK(jobs[0].n == 1024);
  CHECK(jobs[0].warmup_ops == 2u << 20);
  CHECK(jobs[0].rate == doctest::Approx(0.05));
}

// --rate as a shape (issue 43): its mean over its span is the job's rate, the shape its own field;
// a malformed shape or --arrivals names the option and what was expected.
TEST_CASE("limits: --rate takes a shape and --arrivals a process") {
  CHECK(has(cli_error("null", "rate", "ramp:1k..2k"), "--rate: expected ramp:FROM..TO/TIME (ramp:1k..20k/60s)"));
  CHECK(has(cli_error("null", "rate", "sine:1k+-2k/1s"), "--rate: sine: the amplitude (2k) must not exceed"));
  CHECK(has(cli_error("null", "arrivals", "bursty"), "--arrivals: expected uniform or poisson, got 'bursty'"));
  auto jobs =
      expand_jobs("null", {{"rate", {"ramp:1k..3k/1s"}, "--rate"}, {"arrivals", {"poisson"}, "--arrivals"}}, "cli");
  REQUIRE(jobs.size() == 1);
  CHECK(jobs[0].rate == doctest::Approx(2000));
  CHECK(jobs[0].str(kRateShapeKey) == "ramp:1k..3k/1s");
  CHECK(jobs[0].str(kArrivalsKey) == "poisson");
  jobs = expand_jobs("null", {{"rate", {"20k"}, "--rate"}}, "cli");
  CHECK(jobs[0].rate == 20000);
  CHECK(!jobs[0].has(kRateShapeKey));  // a constant rate: the plain open loop
  CHECK(!jobs[0].has(kArrivalsKey));
}

TEST_CASE("limits: TOML numbers: floats where whole numbers are expected, out-of-range integers") {
  CHECK(has(suite_error("[[job]]\nadapter = \"null\"\nn = 1e30\n"), ":3: n expects a whole number from 1 to"));
  CHECK(has(suite_error("[[job]]\nadapter = \"null\"\nn = 1.5\n"), ":3: n expects a whole number"));
  CHECK(has(suite_error("[[job]]\nadapter = \"null\"\nclients = 9223372036854775807\n"), ":3: clients expects"));
  CHECK(has(suite_error("[[job]]\nadapter = \"null\"\nclients = -1\n"), ":3: clients expects"));
  CHECK(has(suite_error("[[job]]\nadapter = \"null\"\nrate = nan\n"), ":3: rate expects a number"));
  CHECK(has(suite_error("[[job]]\nadapter = \"null\"\nrate = inf\n"), ":3: rate expects a number"));
  CHECK(has(suite_error("[[job]]\nadapter = \"tc\"\nkeyspace = 0\n"), ":3: keyspace expects"));
  CHECK(suite_error("[[job]]\nadapter = \"null\"\nn = 1e6\nrate = 2.5e3\n") == "no error");  // whole floats are fine
}

TEST_CASE("limits: [defaults] keys no job takes are errors; aliases apply") {
  CHECK(has(suite_error("[defaults]\nclientz = 4\n[[job]]\nadapter = \"null\"\n"),
            ":2: unknown key 'clientz' in [defaults]: neither a common option nor an option of null"));
  // a key some job takes applies to that job only
  CHECK(suite_error("[defaults]\nrows = 4\n[[job]]\nadapter = \"null\"\n[[job]]\nadapter = \"sqlite\"\n") ==
        "no error");
  std::string f = "/tmp/mwbench-limits-alias-" + std::to_string(getpid()) + ".toml";
  std::ofstream(f) << "[defaults]\ndepth = 4\n[[job]]\nadapter = \"disk\"\nops = \"read\"\n";
  Suite s = load_suite(f);
  unlink(f.c_str());
  REQUIRE(s.jobs.size() == 1);
  CHECK(s.jobs[0].pipeline == 4);
}

TEST_CASE("limits: job lists are counted before they are built") {
  std::string ints;
  for (int i = 1; i <= 101; ++i) ints += (i > 1 ? "," : "") + std::to_string(i);
  std::string e = suite_error("[[job]]\nadapter = \"null\"\nclients = [" + ints + "]\npipeline = [" + ints + "]\n");
  CHECK(has(e, ":2: the lists expand to 10201 jobs (101 clients x 101 pipeline); a run may have at most 10000 jobs"));
  // several [[job]] tables share the cap
  std::string job =
      "[[job]]\nadapter = \"null\"\nclients = [" + ints + "]\npipeline = [" + ints.substr(0, ints.find(",50,")) + "]\n";
  CHECK(has(suite_error(job + job + job), "earlier"));
  CHECK(has(
      [&] {
        try {
          check_run_count(20, 1000);
        } catch (const SetupError& x) {
          return std::string(x.what());
        }
        return std::string("no error");
      }(),
      "--repeat 1000 x 20 jobs = 20000 job runs; at most 10000"));
}

TEST_CASE("limits: suite files are bounded in kind, size and nesting before parsing") {
  CHECK(has(suite_error("[" + repeat("a.", 100000) + "a]\n"), ":1: nested 65 levels deep"));
  CHECK(has(suite_error(repeat("a.", 100000) + "a = 1\n"), ":1: nested 65 levels deep"));
  CHECK(has(suite_error("[[job]]\nadapter = \"null\"\nx = " + repeat("[", 100) + repeat("]", 100) + "\n"),
            ":3: nested 65 levels deep"));
  CHECK(has(suite_error("[[job]]\nadapter = \"null\"\nx = " + repeat("{a=", 100) + "1" + repeat("}", 100) + "\n"),
            ":3: nested"));
  // the loader from text (the fuzz targets' entry point) has the same bounds
  CHECK_THROWS_WITH_AS(parse_suite(repeat("a.", 100000) + "a = 1\n", "t.toml"),
                       doctest::Contains("t.toml:1: nested 65 levels"), SetupError);
  CHECK_THROWS_WITH_AS(parse_suite(std::string(5 << 20, '#'), "t.toml"), doctest::Contains("t.toml: 5242880 bytes"),
                       SetupError);
  // brackets, braces and dots inside strings and comments are not nesting
  std::string quiet = "[[job]] # " + repeat("[{.", 100) + "\nadapter = \"null\"\nname = \"" + repeat("[{.", 100) +
                      "\"\n[[job]]\nadapter = 'null'\nname = '''" + repeat("[{.\n", 100) + "'''\n";
  CHECK(suite_error(quiet) == "no error");
  CHECK(has(suite_error("[[job]]\nadapter = \"null\"\nname = \"" + repeat("x", 5 << 20) + "\"\n"),
            "bytes; a suite file may have at most 4 MiB"));
  std::string dir = "/tmp/mwbench-limits-dir-" + std::to_string(getpid());
  mkdir(dir.c_str(), 0700);
  try {
    load_suite(dir);
    FAIL("a directory loaded");
  } catch (const SetupError& e) {
    CHECK(has(e.what(), ": is a directory; a suite is a TOML file"));
  }
  rmdir(dir.c_str());
  std::string fifo = dir + ".fifo";
  REQUIRE(mkfifo(fifo.c_str(), 0600) == 0);
  try {
    load_suite(fifo);  // must not block waiting for a writer
    FAIL("a FIFO loaded");
  } catch (const SetupError& e) {
    CHECK(has(e.what(), ": is a FIFO; a suite is a TOML file"));
  }
  unlink(fifo.c_str());
  try {
    load_suite("/dev/zero");
    FAIL("a device loaded");
  } catch (const SetupError& e) {
    CHECK(has(e.what(), "/dev/zero: is a device"));
  }
}
