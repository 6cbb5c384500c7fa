#include <doctest/doctest.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "api/adapter.h"
#include "api/fault.h"
#include "config/config.h"
#include "durability/durability.h"
#include "tests/helpers.h"

using namespace mw;

#define CHECK_HAS(text, part)                  \
  do {                                         \
    std::string s_ = (text);                   \
    CAPTURE(s_);                               \
    CHECK(s_.find(part) != std::string::npos); \
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
  CHECK_HAS(load_error("[[job]]\nadapter = \"sqlite\"\nclinets = 4\n"),
            ":3: unknown option 'clinets' for sqlite; expected one of");
  CHECK_HAS(load_error("[[job]]\nadapter = \"nosuch\"\n"), ":2: unknown adapter 'nosuch'");
  CHECK_HAS(load_error("[[job]]\nadapter = \"sqlite\"\nops = [\"read-all\", \"delete\"]\n"),
            ":3: sqlite has no op 'delete'");
  CHECK_HAS(load_error("[[job]]\nadapter = \"sqlite\"\n\nrows = \"many\"\n"), ":4: rows expects a whole number");
  CHECK_HAS(load_error("[[job]]\nadapter = \"sqlite\"\njournal_mode = \"fast\"\n"),
            ":3: journal-mode expects one of delete, truncate");
  CHECK_HAS(load_error("[[job]]\nadapter = \"sqlite\"\nrows = [1, 2]\n"), ":3: rows takes one value, not a list");
  CHECK_HAS(load_error("[[job]]\nadapter = \"sqlite\"\nclients = 0\n"),
            ":3: clients expects a whole number from 1 to 10000");
  CHECK_HAS(load_error("[[job]\nadapter = 1\n"), ":1:");
  CHECK_HAS(load_error("[suite]\nname = \"x\"\n"), ":1: no [[job]] tables");
  CHECK_HAS(load_error("[[job]]\nops = [\"nop\"]\n"), ":1: job has no adapter");
  CHECK_HAS(load_error("[[jobs]]\nadapter = \"null\"\n"), ":1: unknown section 'jobs'");
  CHECK_HAS(load_error("[[job]]\nadapter = \"null\"\nduration = \"soon\"\n"),
            ":3: duration expects a time from 1ms to 720h");
  // a queue's message_size takes --value-size's sizes, checked before anything runs
  CHECK_HAS(load_error("[[job]]\nadapter = \"redis\"\nops = [\"produce\"]\nmessage_size = \"1000-100\"\n"),
            ":4: --message-size: inverted range '1000-100'; expected LO-HI with LO <= HI");
  CHECK_HAS(load_error("[[job]]\nadapter = \"beanstalkd\"\nmessage_size = \"10:50,64:50\"\n"),
            ":3: --message-size: a message is 48 (its id, stamp and checksum) to 16777216 bytes");
}

TEST_CASE("config: command-line settings expand the same way") {
  auto jobs = expand_jobs("null", {{"clients", {"1", "8"}, "--clients"}, {"n", {"1k"}, "-n"}}, "cli");
  REQUIRE(jobs.size() == 2);
  CHECK(jobs[0].clients == 1);
  CHECK(jobs[1].clients == 8);
  CHECK(jobs[1].n == 1024);
  CHECK(jobs[1].name == "null nop clients=8");
  auto q = expand_jobs("redis", {{"ops", {"produce"}, "--ops"}, {"message-size", {"48:90,64k:10"}, "--message-size"}},
                       "cli");
  REQUIRE(q.size() == 1);
  CHECK(q[0].opts.at("message-size") == "48:90,64k:10");
  try {
    expand_jobs("redis", {{"message-size", {"64-32"}, "--message-size"}}, "cli");
    FAIL("no error");
  } catch (const SetupError& e) {
    CHECK(std::string(e.what()) == "--message-size: inverted range '64-32'; expected LO-HI with LO <= HI");
  }
  try {
    expand_jobs("null", {{"n", {"ten"}, "-n"}}, "cli");
    FAIL("no error");
  } catch (const SetupError& e) {
    CHECK_HAS(std::string(e.what()), "-n: n expects a whole number");
  }
}

TEST_CASE("config: a list of an option some ops do not use expands only the jobs of the ops that do") {
  if (!find_adapter("redis")) return;
  auto jobs =
      expand_jobs("redis", {{"ops", {"set", "produce"}, "--ops"}, {"queue", {"list", "stream"}, "--queue"}}, "cli");
  REQUIRE(jobs.size() == 3);  // set once (it uses no queue), produce per queue kind
  CHECK(jobs[0].op == "set");
  CHECK_FALSE(jobs[0].has("queue"));
  CHECK(jobs[0].name == "redis set");
  CHECK(jobs[1].opts["queue"] == "list");
  CHECK(jobs[2].opts["queue"] == "stream");
  CHECK(jobs[2].op == "produce");
}

TEST_CASE("config: an adapter's aliases (fio's names for disk) work in suites") {
  auto jobs = expand_jobs(
      "disk", {{"pattern", {"randrw"}, "x:2"}, {"iodepth", {"64"}, "x:3"}, {"rwmixread", {"75"}, "x:4"}}, "x");
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

// The summary says "too short to mean much" of a job measured for under 0.1 s (results/notes.cpp),
// and no suite shipped in configs/ may say it of its own jobs (#29). A job runs for a set time
// (duration; --find-max's steps are timed), or its count lasts 0.1 s even at the ceiling below:
// what its adapter and op could do at most, whatever the job's options. A ceiling is twice the
// fastest that adapter and op went in the suites' runs on the 2-core VM or in the docs' tables
// (each figure and its source: docs/measurements/from-code.md), except the disk's, which is a fast
// NVMe disk's. A count job whose
// adapter and op have no ceiling here fails: give it a duration, or a ceiling with its source.
// A crash job is measured until its crash: crash-at of its duration, or of its count at the
// crash ceilings below (its req/s stands beside its verdict in the durability table, and the
// summary warns of it as of any other job).
namespace {
struct Ceiling {
  const char* adapter;
  const char* op;
  double per_s;                                                // ops per second
  std::vector<std::pair<const char*, const char*>> when = {};  // only for jobs with these options
};

std::string opts_text(const Job& j) {
  std::string t;
  for (auto& [k, v] : j.opts) t += (t.empty() ? "" : " ") + k + "=" + v;
  return t;
}

double ceiling_of(const std::vector<Ceiling>& ceilings, const Job& j) {
  for (const Ceiling& c : ceilings)  // the first that matches
    if (j.adapter == c.adapter && j.op == c.op &&
        std::all_of(c.when.begin(), c.when.end(), [&](const auto& w) { return j.str(w.first) == w.second; }))
      return c.per_s;
  return 0;
}

// How long a job of a shipped suite is measured at least, or 0 with `why` when it cannot be told.
double shortest_phase_s(const Job& j, std::string& why) {
  static const std::vector<Ceiling> ceilings = {
      {"gearman", "submit-bg", 31140},                // builtin queue, 1 client
      {"gearman", "consume", 46490},                  // builtin
      {"redis", "consume", 138040},                   // list (BRPOP)
      {"rabbitmq", "consume", 107180},                // classic, 2 consumers, 16 in flight
      {"rabbitmq", "produce", 167480},                // without confirms
      {"rabbitmq", "roundtrip", 188000},              // without confirms
      {"nats", "consume", 141340},                    // JetStream
      {"beanstalkd", "consume", 27900},               // no binlog
      {"mqtt", "consume", 303370, {{"qos", "0"}}},    // 4 consumers
      {"mqtt", "consume", 241340},                    // QoS 1 (and 2), persistent sessions
      {"mqtt", "produce", 230200, {{"qos", "0"}}},    // QoS 0
      {"mqtt", "produce", 87160},                     // QoS 1 (and 2)
      {"mqtt", "roundtrip", 159550, {{"qos", "0"}}},  // QoS 0
      {"mqtt", "roundtrip", 26720},                   // QoS 1 (and 2)
      {"postgres", "consume", 8710},                  // batch 16
      {"couchdb", "insert", 724},                     // pouchdb-server
      {"disk", "read", 5000},                         // 1 MiB reads, one pass of a fast NVMe disk
  };
  // The crash jobs' writes, at the settings persistence.toml runs them with (the fastest of kill
  // and power, from the run of the suite in docs/measurements/durability.md): twice that.
  static const std::vector<Ceiling> crash_ceilings = {
      {"redis", "set", 197900, {{"persistence", "aof-always"}}},  // 4 clients, 16 in flight
      {"redis", "set", 1225900},                                  // persistence=none, power
      {"tc", "put", 167920},                                      // hash
      {"tc", "put-sync", 9580},                                   // hash
      {"lmdb", "put", 6000, {{"sync", "full"}}},
      {"lmdb", "put", 8920, {{"sync", "nometasync"}}},
      {"lmdb", "put", 89200, {{"sync", "nosync"}}},
      {"rocksdb", "put", 8740, {{"sync", "true"}}},
      {"rocksdb", "put", 40530, {{"disable-wal", "true"}}},
      {"rocksdb", "put", 37610, {{"sync", "false"}}},
      {"couchdb", "insert", 724},
      {"rabbitmq", "produce", 20030, {{"queue-type", ""}}},  // classic, confirms
  };
  const bool crash = j.has("crash");
  const double at = crash ? parse_crash_at(j.str("crash-at", "50%")) : 1.0;
  if (j.duration_s > 0) return j.duration_s * at;
  if (!j.find_max.empty()) return 1;  // its steps are timed (step-duration)
  const double per_s = ceiling_of(crash ? crash_ceilings : ceilings, j);
  if (per_s <= 0) {
    why = crash ? "a crash job counted in ops with no crash ceiling: give it a duration"
                : "a count job with no ceiling: give it a duration";
    return 0;
  }
  return static_cast<double>(j.n) * at / per_s;
}
}  // namespace

TEST_CASE("config: no job of a shipped suite is measured for too short a time") {
  int suites = 0, crash_jobs = 0;
  for (auto& e : std::filesystem::directory_iterator(std::string(MWBENCH_SOURCE_DIR) + "/configs")) {
    if (e.path().extension() != ".toml") continue;
    ++suites;
    Suite s = load_suite(e.path().string());
    for (const Job& j : s.jobs) {
      CAPTURE(j.source);
      CAPTURE(j.name);
      CAPTURE(j.op);
      CAPTURE(j.n);
      const std::string opts = opts_text(j);
      CAPTURE(opts);
      crash_jobs += j.has("crash");
      std::string why;
      const double phase_s = shortest_phase_s(j, why);
      CHECK_MESSAGE(why.empty(), why);
      if (why.empty()) CHECK(phase_s >= 0.1);
    }
  }
  CHECK(suites >= 10);
  CHECK(crash_jobs >= 70);  // persistence.toml's
}

// persistence.toml answers "what does each level of safety cost and buy" under a kill and under
// a power cut: every level killed there is power-cut there too, where the adapter can be (the
// same adapter, op and settings; a kill of gearman's store alone has no power cut: a power cut
// takes gearmand with it).
TEST_CASE("config: persistence.toml power-cuts every level it kills") {
  Suite s = load_suite(std::string(MWBENCH_SOURCE_DIR) + "/configs/persistence.toml");
  auto level = [](const Job& j) {
    std::map<std::string, std::string> o = j.opts;
    for (const char* k : {"crash", "crash-at", "expect", "keyspace"}) o.erase(k);
    return o;
  };
  int killed = 0;
  for (const Job& k : s.jobs) {
    if (k.str("crash") != "kill" || k.has("crash-target")) continue;
    const AdapterSpec* spec = find_adapter(k.adapter);
    REQUIRE(spec);
    if (std::find(spec->crash_kinds.begin(), spec->crash_kinds.end(), CrashKind::Power) == spec->crash_kinds.end())
      continue;
    ++killed;
    CAPTURE(k.source);
    CAPTURE(k.name);
    const std::string opts = opts_text(k);
    CAPTURE(opts);
    const bool twin = std::any_of(s.jobs.begin(), s.jobs.end(), [&](const Job& p) {
      return p.str("crash") == "power" && p.adapter == k.adapter && p.op == k.op && level(p) == level(k);
    });
    CHECK_MESSAGE(twin, "killed, never power-cut");
  }
  CHECK(killed >= 30);
}

TEST_CASE("config: every shipped suite loads") {
  for (const char* name : {"quick", "queues-and-caches", "storage-media", "vm-sanity", "ycsb", "caches", "persistence",
                           "queues", "capacity", "queues-capacity", "failover"}) {
    CAPTURE(name);
    Suite s = load_suite(std::string(MWBENCH_SOURCE_DIR) + "/configs/" + name + ".toml");
    CHECK(!s.jobs.empty());
  }
}

// failover.toml: every set-up's primary (or leader) killed under load, the synchronous ones beside
// the asynchronous: Redis and PostgreSQL two ways each, NATS R3, a RabbitMQ quorum queue on 3 nodes.
TEST_CASE("config: failover.toml kills each replicated set-up's primary or leader under load") {
  Suite s = load_suite(std::string(MWBENCH_SOURCE_DIR) + "/configs/failover.toml");
  REQUIRE(s.jobs.size() == 6);
  std::map<std::string, int> by;
  for (const Job& j : s.jobs) {
    CAPTURE(j.name);
    ++by[j.adapter];
    REQUIRE(j.faults.size() == 1);
    CHECK(j.duration_s > 0);
    CHECK(j.faults[0].at_s(j.duration_s) < j.duration_s);
    CHECK((j.faults[0].kind == FaultKind::KillPrimary || j.faults[0].kind == FaultKind::KillNode));
    CHECK(j.reconnect_backoff_s > 0);
  }
  CHECK(by == std::map<std::string, int>{{"nats", 1}, {"postgres", 2}, {"rabbitmq", 1}, {"redis", 2}});
}

// #28: configs/capacity.toml puts Redis, memcached, PostgreSQL, a CouchDB-compatible server and two
// queues side by side, each searched (--find-max) under a latency bound that fits it, nothing failed.
TEST_CASE("config: capacity.toml searches four stores and two queues' round trips at an SLO each") {
  Suite s = load_suite(std::string(MWBENCH_SOURCE_DIR) + "/configs/capacity.toml");
  std::set<std::string> stores, queues;
  for (const Job& j : s.jobs) {
    CAPTURE(j.name);
    CHECK(j.find_max.find("p99<") == 0);
    CHECK(j.find_max.find("errors=0") != std::string::npos);
    const AdapterSpec* spec = find_adapter(j.adapter);
    REQUIRE(spec);
    if (j.op == "roundtrip") {
      CHECK(spec->has(Family::Queue));
      CHECK(std::stoi(j.str("consumers", "0")) > 0);
      queues.insert(j.adapter + " " + j.str("queue"));
    } else {
      stores.insert(j.adapter);
    }
  }
  CHECK(stores == std::set<std::string>{"couchdb", "memcached", "postgres", "redis"});
  CHECK(queues.size() == 2);
}

// #26: one table answers "which queue for N messages/s, durable, with p99 under 10 ms". Every queue
// adapter is searched (roundtrip at p99<10ms, the same producers and consumers) under both
// contracts, the jobs of each contract together; what each row is set up as is what its adapter
// declares (Abilities::contract), so a setting that does not give its group's contract fails here.
TEST_CASE("config: queues-capacity searches every queue under both contracts, grouped") {
  Suite s = load_suite(std::string(MWBENCH_SOURCE_DIR) + "/configs/queues-capacity.toml");
  const std::string durable = "durable ", forget = "fire-and-forget ";
  // A queue is its adapter, and for Redis the kind of queue (lists and streams are both kept).
  auto queue_of = [](const Job& j) { return j.adapter + (j.adapter == "redis" ? " " + j.str("queue") : ""); };
  std::map<std::string, ContractKind> durable_kind;  // per queue: its durable rows' weakest contract
  std::set<std::string> forgetting;
  bool in_forget = false;
  for (const Job& j : s.jobs) {
    CAPTURE(j.name);
    CHECK(j.op == "roundtrip");
    CHECK(j.find_max == "p99<10ms");
    CHECK(j.clients == 4);
    CHECK(j.str("consumers") == "4");
    CHECK(j.step_s >= 1);
    const bool is_durable = j.name.rfind(durable, 0) == 0, is_forget = j.name.rfind(forget, 0) == 0;
    REQUIRE((is_durable || is_forget));
    if (is_forget) in_forget = true;
    CHECK_MESSAGE(is_forget == in_forget, "a durable job after the fire-and-forget ones: keep each contract together");
    std::optional<Contract> c = test::make_adapter(j.adapter, j)->abilities(j).contract;
    REQUIRE(c.has_value());
    CAPTURE(contract_label(*c));
    if (is_durable) {
      CHECK((c->kind == ContractKind::FsyncPerAck || c->kind == ContractKind::PeriodicFsync));
      auto [it, fresh] = durable_kind.emplace(queue_of(j), c->kind);
      if (!fresh) it->second = std::min(it->second, c->kind);
    } else {
      CHECK(c->kind != ContractKind::FsyncPerAck);
      forgetting.insert(queue_of(j));
    }
  }
  // Each fire-and-forget row promises less than the same queue's durable rows.
  for (const Job& j : s.jobs) {
    if (j.name.rfind(forget, 0) != 0 || !durable_kind.count(queue_of(j))) continue;
    CAPTURE(j.name);
    CHECK(test::make_adapter(j.adapter, j)->abilities(j).contract->kind < durable_kind.at(queue_of(j)));
  }
  std::set<std::string> durables;
  for (auto& [q, k] : durable_kind) durables.insert(q);
  CHECK(durables == forgetting);
  for (const AdapterSpec& a : adapters()) {  // every queue there is
    if (!a.has(Family::Queue)) continue;
    CAPTURE(a.name);
    CHECK(std::any_of(durables.begin(), durables.end(),
                      [&](const std::string& q) { return q == a.name || q.rfind(a.name + " ", 0) == 0; }));
  }
  CHECK(durables.count("redis list"));
  CHECK(durables.count("redis stream"));
}

// --rate's shapes and --arrivals in a suite (issue 43): a number as before, a shape as a string,
// per job or in [defaults]; a bad one names file:line.
TEST_CASE("config: a suite's rate takes a shape, and arrivals a process") {
  const std::string f = write_suite(
      "[defaults]\narrivals = \"poisson\"\n[[job]]\nadapter = \"null\"\nrate = 500\n[[job]]\nadapter = \"null\"\n"
      "rate = \"spike:1k,+3k@1s/1s\"\n");
  const Suite s = load_suite(f);
  unlink(f.c_str());
  REQUIRE(s.jobs.size() == 2);
  CHECK(s.jobs[0].rate == 500);
  CHECK(!s.jobs[0].has("rate_shape"));
  CHECK(s.jobs[0].str("arrivals") == "poisson");
  CHECK(s.jobs[1].rate == doctest::Approx(2500));  // 1k for 1 s, 4k for 1 s
  CHECK(s.jobs[1].str("rate_shape") == "spike:1k,+3k@1s/1s");
  CHECK_HAS(load_error("[[job]]\nadapter = \"null\"\nrate = \"ramp:1k..2k\"\n"),
            ":3: expected ramp:FROM..TO/TIME (ramp:1k..20k/60s), got '1k..2k'");
  CHECK_HAS(load_error("[[job]]\nadapter = \"null\"\narrivals = \"bursty\"\n"),
            ":3: expected uniform or poisson, got 'bursty'");
}

TEST_CASE("config: a suite moves a workload's hot keys (hot-shift)") {
  const std::string f =
      write_suite("[[job]]\nadapter = \"null\"\nmix = \"read:9,update:1\"\nkeys = \"zipfian\"\nhot-shift = \"2s\"\n");
  const Suite s = load_suite(f);
  unlink(f.c_str());
  REQUIRE(s.jobs.size() == 1);
  CHECK(s.jobs[0].str("hot-shift") == "2s");
  CHECK_HAS(load_error("[[job]]\nadapter = \"null\"\nmix = \"read:1\"\nkeys = \"zipfian\"\nhot-shift = \"later\"\n"),
            "--hot-shift: expected a time from 10ms to 24h (10s, 500ms), got 'later'");
}
