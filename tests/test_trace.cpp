// Trace replay (--trace, workload/trace.h): the three formats' lines, the streamed reader (plain
// and zstd) and its bad input, and replays on Tokyo Cabinet with known counts, misses and timing.
#include <doctest/doctest.h>
#include <zstd.h>

#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "config/config.h"
#include "config/workload_spec.h"
#include "core/runner.h"
#include "tests/helpers.h"
#include "tests/store_checks.h"
#include "util/status.h"
#include "workload/trace.h"

using namespace mw;

namespace {

TraceRecord line_of(TraceFormat f, const std::string& line) {
  TraceRecord r;
  bool skip = false;
  std::string why;
  CHECK_MESSAGE(parse_trace_line(f, line, r, skip, why), why);
  CHECK(!skip);
  return r;
}

std::string why_of(TraceFormat f, const std::string& line) {
  TraceRecord r;
  bool skip = false;
  std::string why;
  CHECK(!parse_trace_line(f, line, r, skip, why));
  return why;
}

void write(const std::string& path, const std::string& text) { std::ofstream(path, std::ios::binary) << text; }

std::string zstd_of(const std::string& text) {
  std::string out(ZSTD_compressBound(text.size()), '\0');
  out.resize(ZSTD_compress(out.data(), out.size(), text.data(), text.size(), 3));
  return out;
}

std::vector<TraceRecord> read_all(const std::string& path, bool skip_bad = false) {
  TraceReader reader(path, nullptr, skip_bad);
  std::vector<TraceRecord> out;
  TraceRecord r;
  while (reader.next(r)) out.push_back(r);
  return out;
}

std::string error_of(const std::string& path) {
  try {
    read_all(path);
  } catch (const SetupError& e) {
    return e.what();
  }
  return "no error";
}

}  // namespace

TEST_CASE("trace: each format's lines become requests") {
  TraceRecord t = line_of(TraceFormat::Twitter, "12,q:q:1:8WTfjZU,30,61,7,add,3600");
  CHECK(t.t == 12);
  CHECK(t.key == trace_key_id("q:q:1:8WTfjZU"));
  CHECK(t.key_size == 30);
  CHECK(t.value_size == 61);
  CHECK(t.client == 7);
  CHECK(t.op == TraceOp::Add);
  CHECK(t.ttl == 3600);
  CHECK(kv_op_of(t.op) == KvOp::Update);
  CHECK(line_of(TraceFormat::Twitter, "0,a,b,c,1,1,2,get,0").key == trace_key_id("a,b,c"));  // a key with commas

  TraceRecord c = line_of(TraceFormat::Csv, "0.25,incr,user:1,8");
  CHECK(c.t == 0.25);
  CHECK(c.op == TraceOp::Incr);
  CHECK(kv_op_of(c.op) == KvOp::Rmw);
  CHECK(c.value_size == 8);

  TraceRecord m =
      line_of(TraceFormat::Monitor, R"(1339518083.107412 [0 127.0.0.1:60866] "SET" "k\x01" "a\"b\n" "EX" "60")");
  CHECK(m.t == doctest::Approx(1339518083.107412));
  CHECK(m.op == TraceOp::Set);
  CHECK(m.key == trace_key_id(std::string("k\x01")));
  CHECK(m.value_size == 4);
  CHECK(m.ttl == 60);
  CHECK(m.client == trace_key_id("127.0.0.1:60866"));
  CHECK(line_of(TraceFormat::Monitor, R"(1.5 [0 unix:/tmp/r.sock] "setex" "k" "10" "xyz")").ttl == 10);
  CHECK(line_of(TraceFormat::Monitor, R"(1.5 [0 1.2.3.4:5] "del" "k")").op == TraceOp::Delete);
  TraceRecord r;
  bool skip = false;
  std::string why;
  CHECK(parse_trace_line(TraceFormat::Monitor, R"(1.5 [0 1.2.3.4:5] "PING")", r, skip, why));
  CHECK(skip);
  CHECK(parse_trace_line(TraceFormat::Csv, "time,op,key,value_size", r, skip, why));
  CHECK(skip);

  CHECK(why_of(TraceFormat::Twitter, "12,k,30,61,7,fetch,0").find("expected an op (get, gets") == 0);
  CHECK(why_of(TraceFormat::Twitter, "12,k,30").find("expected timestamp,key,key size") == 0);
  CHECK(why_of(TraceFormat::Twitter, "x,k,30,61,7,get,0").find("expected a timestamp in seconds") == 0);
  CHECK(why_of(TraceFormat::Twitter, "1,k,30,9999999,7,get,0").find("expected a value size from 0 to 1 MiB") == 0);
  CHECK(why_of(TraceFormat::Csv, "1,get,k").find("expected time,op,key,value_size") == 0);
  CHECK(why_of(TraceFormat::Monitor, R"(1.5 [0 1.2.3.4:5] "get")").find("expected the key of get") == 0);
}

TEST_CASE("trace: the reader streams plain and zstd files alike and names bad input by file:line") {
  test::TempDir d;
  std::string text = "time,op,key,value_size\n";
  for (int i = 0; i < 20000; ++i) text += std::to_string(i / 1000.0) + ",set,key" + std::to_string(i) + ",100\n";
  write(d.path + "/t.csv", text);
  write(d.path + "/t.csv.zst", zstd_of(text));
  const std::vector<TraceRecord> plain = read_all(d.path + "/t.csv"), packed = read_all(d.path + "/t.csv.zst");
  REQUIRE(plain.size() == 20000);
  REQUIRE(packed.size() == 20000);
  for (size_t i = 0; i < plain.size(); i += 997) CHECK(packed[i].key == plain[i].key);
  CHECK(TraceReader(d.path + "/t.csv.zst", nullptr, false).format() == TraceFormat::Csv);

  const std::string z = zstd_of(text);
  write(d.path + "/cut.zst", z.substr(0, z.size() - 7));
  CHECK(error_of(d.path + "/cut.zst").find("truncated zstd frame") != std::string::npos);
  write(d.path + "/back.csv", "time,op,key,value_size\n1,get,a,0\n0.5,get,b,0\n");
  CHECK(error_of(d.path + "/back.csv") ==
        d.path + "/back.csv:3: the timestamp goes backwards (0.500000 after 1.000000)");
  write(d.path + "/bad.csv", "time,op,key,value_size\n1,get,a,0\n2,fly,b,0\n3,get,c,0\n");
  CHECK(error_of(d.path + "/bad.csv").find(d.path + "/bad.csv:3: expected an op") == 0);
  TraceReader skipping(d.path + "/bad.csv", nullptr, true);
  TraceRecord r;
  int n = 0;
  while (skipping.next(r)) ++n;
  CHECK(n == 2);
  CHECK(skipping.skipped() == 1);
  CHECK(skipping.first_bad().find("bad.csv:3: expected an op") != std::string::npos);
}

namespace {

// A trace of 300 requests over 1 s: 100 sets of k0..k99, then 100 gets of those (hits) and 100
// gets of keys never written (misses), each a known size.
std::string csv_trace() {
  std::string t = "time,op,key,value_size\n";
  for (int i = 0; i < 300; ++i) {
    const std::string key = i < 200 ? "k" + std::to_string(i % 100) : "never" + std::to_string(i);
    t += std::to_string(i / 300.0) + "," + (i < 100 ? "set" : "get") + "," + key + "," + std::to_string(10 + i) + "\n";
  }
  return t;
}

Job replay(const std::string& dir, const std::string& trace, const std::string& speed, int clients = 2) {
  Job j = test::make_job("tc", "mix", 10000, clients);
  j.opts = {{"path", dir}, {"trace", trace}, {"speed", speed}, {"kind", "hash"}};
  return j;
}

}  // namespace

TEST_CASE("trace: a replay on a store runs every line at the trace's timing, its misses the hit ratio") {
  test::TempDir d;
  write(d.path + "/t.csv", csv_trace());
  JobResult r = run_one(replay(d.path, d.path + "/t.csv", "1"));
  CHECK_MESSAGE(r.state == JobResult::State::Done, r.message);
  CHECK(r.ops_ok == 300);
  CHECK(r.ops_failed == 0);
  for (auto& e : r.error_samples) MESSAGE(e);
  CHECK(r.misses == 100);  // the hit ratio of the reads: 100 of 200
  CHECK(r.elapsed_s == doctest::Approx(1.0).epsilon(0.15));

  // A Twitter trace: whole seconds spread within them; 2 seconds at --speed 2 last 1 s.
  std::string tw;
  for (int i = 0; i < 400; ++i)
    tw += std::to_string(i / 200) + ",key" + std::to_string(i % 50) + ",5,40," + std::to_string(i % 7) + "," +
          (i < 100 ? "set" : "get") + ",0\n";
  write(d.path + "/t.tw", tw);
  JobResult fast = run_one(replay(d.path + "", d.path + "/t.tw", "2", 3));
  CHECK_MESSAGE(fast.state == JobResult::State::Done, fast.message);
  CHECK(fast.ops_ok == 400);
  CHECK(fast.misses == 0);
  CHECK(fast.elapsed_s == doctest::Approx(1.0).epsilon(0.15));

  // its zstd copy replays the same
  write(d.path + "/t.tw.zst", zstd_of(tw));
  JobResult packed = run_one(replay(d.path, d.path + "/t.tw.zst", "2", 3));
  CHECK(packed.ops_ok == 400);
  CHECK(packed.misses == fast.misses);
  CHECK(packed.elapsed_s == doctest::Approx(1.0).epsilon(0.15));

  // --speed max: as fast as the clients go (one client: in the trace's order, so no read is
  // sent before the write it follows)
  JobResult max = run_one(replay(d.path, d.path + "/t.tw.zst", "max", 1));
  CHECK(max.ops_ok == 400);
  CHECK(max.misses == 0);
  CHECK(max.elapsed_s < 0.5);
}

// The options: a trace is a workload's job (op mix), not beside --mix or --ops; --speed is a
// factor or max; a store that is not keyed, or a malformed line, stops before any op (exit 2).
TEST_CASE("trace: its options are checked before any op") {
  auto error = [](const std::vector<Setting>& s, const std::string& adapter = "null") {
    try {
      for (const Job& j : expand_jobs(adapter, s, "cli")) {
        const AdapterSpec* spec = find_adapter(j.adapter);
        REQUIRE(spec);
        workload_of(j, *spec);
      }
    } catch (const SetupError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  test::TempDir d;
  const std::string t = d.path + "/t.csv";
  write(t, "time,op,key,value_size\n0,set,a,10\n0.1,get,a,0\n");
  const Setting trace{"trace", {t}, "--trace"};
  const std::vector<Job> jobs = expand_jobs("null", {trace}, "cli");
  REQUIRE(jobs.size() == 1);
  CHECK(jobs[0].op == "mix");
  CHECK(error({trace}) == "no error");
  CHECK(error({trace, {"mix", {"read:1"}, "--mix"}}) == "--trace: give --mix or --trace, not both");
  CHECK(error({trace, {"speed", {"fast"}, "--speed"}}).find("--speed: expected a factor") == 0);
  CHECK(error({trace, {"speed", {"max"}, "--speed"}}) == "no error");
  // the trace's keys are its own: a shift of hot keys has none to move (it was taken, then ignored)
  CHECK(error({trace, {"hot-shift", {"1s"}, "--hot-shift"}}) ==
        "--hot-shift: a trace's replay uses the trace's own keys; give --hot-shift or --trace, not both");
  CHECK(error({trace}, "echo") == "--trace: echo is not a keyed store");
  CHECK(error({trace, {"trace-format", {"twitter"}, "--trace-format"}}).find(t + ":1: expected timestamp,key") == 0);
  write(t, "time,op,key,value_size\n");
  CHECK(error({trace}).find("an empty trace") != std::string::npos);
}

// The event loop's replay: redis (a server mwbench starts), its clients pollable, -P 1 and 4.
TEST_CASE("trace: a replay on redis through the event loop keeps the timing and the misses") {
  test::TempDir d;
  write(d.path + "/t.csv", csv_trace());
  for (int p : {1, 4}) {
    CAPTURE(p);
    Job j = test::make_job("redis", "mix", 10000, 2);
    j.pipeline = p;
    j.opts = {{"trace", d.path + "/t.csv"}};
    JobResult r = run_one(j);
    CHECK_MESSAGE(r.state == JobResult::State::Done, r.message);
    CHECK(r.ops_ok == 300);
    CHECK(r.ops_failed == 0);
    for (auto& e : r.error_samples) MESSAGE(e);
    CHECK(r.misses == 100);
    CHECK(r.elapsed_s == doctest::Approx(1.0).epsilon(0.15));
  }
}

// A trace's add and replace with their conditions on redis (SET NX, XX: a nil reply is "not
// stored", never an error), its set an upsert; blocking and pipelined, each on keys of its own.
TEST_CASE("trace: add and replace on redis store only where their condition holds") {
  test::TempDir d;
  for (int p : {1, 4}) {
    CAPTURE(p);
    Job j = test::make_job("redis", "mix", 10000);
    j.pipeline = p;
    test::cond_trace(j, d.path);
    j.opts["key-prefix"] = "cond" + std::to_string(p) + ":";
    const JobResult r = run_one(j);
    test::check_cond_replay(r);
    CHECK(r.workload.find("write as set") == std::string::npos);
  }
}

// A store without conditional writes (Tokyo Cabinet) writes a trace's add and replace as sets, and
// the workload's description says so: every write stored, every get a hit.
TEST_CASE("trace: on a store without conditional writes, add and replace write as set") {
  test::TempDir d;
  Job j = test::make_job("tc", "mix", 10000);
  j.opts = {{"path", d.path}, {"kind", "hash"}};
  test::cond_trace(j, d.path);
  const JobResult r = run_one(j);
  CHECK_MESSAGE(r.state == JobResult::State::Done, r.message);
  CHECK(r.ops_failed == 0);
  REQUIRE(test::op_of(r, "update"));
  CHECK(test::op_of(r, "update")->not_stored == 0);
  CHECK(r.misses == 0);
  CHECK(r.bytes == (10 + 20 + 15 + 30 + 40 + 50 + 60) + (15 + 30 + 40 + 60));
  CHECK(r.workload.find("the trace's add and replace write as set (tc has no conditional write)") != std::string::npos);
}
