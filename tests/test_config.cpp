#include <doctest/doctest.h>
#include <unistd.h>

#include <fstream>
#include <string>

#include "config.h"

using namespace mw;

#define CHECK_HAS(text, part)                          \
  do {                                                 \
    std::string s_ = (text);                           \
    CAPTURE(s_);                                       \
    CHECK(s_.find(part) != std::string::npos);         \
  } while (0)

namespace {
std::string write_suite(const std::string& text) {
  static int k = 0;
  std::string path = "/tmp/mwbench-test-" + std::to_string(getpid()) + "-" + std::to_string(k++) + ".toml";
  std::ofstream(path) << text;
  return path;
}

std::string load_error(const std::string& text) {
  std::string f = write_suite(text);
  try {
    load_suite(f);
  } catch (const SetupError& e) {
    unlink(f.c_str());
    std::string msg = e.what();
    return msg.substr(f.size());  // drop the path: the rest starts with :line:
  }
  unlink(f.c_str());
  return "no error";
}
}  // namespace

TEST_CASE("config: lists expand into one job per value, side-by-side axis innermost") {
  std::string f = write_suite(R"(
[defaults]
n = 500
warmup = "2s"

[[job]]
adapter = "sqlite"
ops = ["read-all", "insert"]
path = ["/var/tmp", "/dev/shm"]
journal_mode = ["delete", "wal"]
clients = 4
)");
  Suite s = load_suite(f);
  unlink(f.c_str());
  REQUIRE(s.jobs.size() == 8);
  CHECK(s.jobs[0].op == "read-all");
  CHECK(s.jobs[0].opts.at("path") == "/var/tmp");
  CHECK(s.jobs[1].opts.at("path") == "/dev/shm");
  CHECK(s.jobs[1].opts.at("journal-mode") == "delete");
  CHECK(s.jobs[2].opts.at("journal-mode") == "wal");
  CHECK(s.jobs[4].op == "insert");
  CHECK(s.jobs[0].n == 500);
  CHECK(s.jobs[0].warmup_s == 2.0);
  CHECK(s.jobs[0].clients == 4);
  CHECK(s.jobs[2].name == "sqlite read-all journal-mode=wal");
  CHECK(s.jobs[0].source.find(":7") != std::string::npos);
}

TEST_CASE("config: errors name file:line and what was expected") {
  CHECK_HAS(load_error("[[job]]\nadapter = \"sqlite\"\nclinets = 4\n"), ":3: unknown option 'clinets' for sqlite; expected one of");
  CHECK_HAS(load_error("[[job]]\nadapter = \"nosuch\"\n"), ":2: unknown adapter 'nosuch'");
  CHECK_HAS(load_error("[[job]]\nadapter = \"sqlite\"\nops = [\"read-all\", \"delete\"]\n"), ":3: sqlite has no op 'delete'");
  CHECK_HAS(load_error("[[job]]\nadapter = \"sqlite\"\n\nrows = \"many\"\n"), ":4: rows expects a whole number");
  CHECK_HAS(load_error("[[job]]\nadapter = \"sqlite\"\njournal_mode = \"fast\"\n"), ":3: journal-mode expects one of delete, truncate");
  CHECK_HAS(load_error("[[job]]\nadapter = \"sqlite\"\nrows = [1, 2]\n"), ":3: rows takes one value, not a list");
  CHECK_HAS(load_error("[[job]]\nadapter = \"sqlite\"\nclients = 0\n"), ":3: clients expects a whole number from 1 to 10000");
  CHECK_HAS(load_error("[[job]\nadapter = 1\n"), ":1:");
  CHECK_HAS(load_error("[suite]\nname = \"x\"\n"), ":1: no [[job]] tables");
  CHECK_HAS(load_error("[[job]]\nops = [\"nop\"]\n"), ":1: job has no adapter");
  CHECK_HAS(load_error("[[jobs]]\nadapter = \"null\"\n"), ":1: unknown section 'jobs'");
  CHECK_HAS(load_error("[[job]]\nadapter = \"null\"\nduration = \"soon\"\n"), ":3: duration expects a time from 1ms to 720h");
}

TEST_CASE("config: command-line settings expand the same way") {
  auto jobs = expand_jobs("null", {{"clients", {"1", "8"}, "--clients"}, {"n", {"1k"}, "-n"}}, "cli");
  REQUIRE(jobs.size() == 2);
  CHECK(jobs[0].clients == 1);
  CHECK(jobs[1].clients == 8);
  CHECK(jobs[1].n == 1024);
  CHECK(jobs[1].name == "null nop clients=8");
  try {
    expand_jobs("null", {{"n", {"ten"}, "-n"}}, "cli");
    FAIL("no error");
  } catch (const SetupError& e) {
    CHECK_HAS(std::string(e.what()), "-n: n expects a whole number");
  }
}

TEST_CASE("config: a list of an option some ops do not use expands only the jobs of the ops that do") {
  if (!find_adapter("redis")) return;
  auto jobs = expand_jobs("redis", {{"ops", {"set", "produce"}, "--ops"}, {"queue", {"list", "stream"}, "--queue"}},
                          "cli");
  REQUIRE(jobs.size() == 3);  // set once (it uses no queue), produce per queue kind
  CHECK(jobs[0].op == "set");
  CHECK_FALSE(jobs[0].has("queue"));
  CHECK(jobs[0].name == "redis set");
  CHECK(jobs[1].opts["queue"] == "list");
  CHECK(jobs[2].opts["queue"] == "stream");
  CHECK(jobs[2].op == "produce");
}

TEST_CASE("config: an adapter's aliases (fio's names for disk) work in suites") {
  auto jobs = expand_jobs("disk", {{"pattern", {"randrw"}, "x:2"}, {"iodepth", {"64"}, "x:3"}, {"rwmixread", {"75"}, "x:4"}}, "x");
  REQUIRE(jobs.size() == 1);
  CHECK(jobs[0].op == "randrw");
  CHECK(jobs[0].pipeline == 64);
  CHECK(jobs[0].opts.at("mix") == "75");
}

TEST_CASE("config: sizes and durations") {
  CHECK(parse_size("4k", "x") == 4096);
  CHECK(parse_size("1M", "x") == 1048576);
  CHECK(parse_size("10", "x") == 10);
  CHECK_THROWS_AS(parse_size("1.5x", "x"), SetupError);
  CHECK_THROWS_AS(parse_size("-1", "x"), SetupError);
  CHECK(parse_duration("500ms", "d") == doctest::Approx(0.5));
  CHECK(parse_duration("2m", "d") == 120);
  CHECK(parse_duration("3", "d") == 3);
  CHECK_THROWS_AS(parse_duration("fast", "d"), SetupError);
}

TEST_CASE("config: every shipped suite loads") {
  for (const char* name : {"quick", "queues-and-caches", "storage-media", "vm-sanity", "ycsb", "caches",
                           "persistence", "queues", "capacity"}) {
    CAPTURE(name);
    Suite s = load_suite(std::string(MWBENCH_SOURCE_DIR) + "/configs/" + name + ".toml");
    CHECK(!s.jobs.empty());
  }
}
