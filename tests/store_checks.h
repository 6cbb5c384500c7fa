// Checks the keyed-store tests share (lmdb, rocksdb, postgres, mariadb): a job that ran every op and
// verified, one whose filesystem filled up, and the exit code a run of one job gets.
#pragma once
#include <doctest/doctest.h>

#include <fstream>
#include <string>

#include "core/runner.h"
#include "results/result.h"
#include "tests/helpers.h"

namespace mw::test {

// A trace of a cache's writes (issue 43), at DIR/cond.csv: set of a new key (a), add of a key that
// is there (a: not stored), set of a key that is there (a), add of a new key (b), replace of a key
// not there (c: not stored), set of a new key (d), replace of a key there (d), then a get of each.
// Replayed on one client (in the trace's order) as fast as it goes: job J's trace options.
inline void cond_trace(Job& j, const std::string& dir) {
  const std::string path = dir + "/cond.csv";
  std::ofstream(path) << "time,op,key,value_size\n"
                         "0.00,set,a,10\n0.01,add,a,20\n0.02,set,a,15\n0.03,add,b,30\n0.04,replace,c,40\n"
                         "0.05,set,d,50\n0.06,replace,d,60\n"
                         "0.07,get,a,0\n0.08,get,b,0\n0.09,get,c,0\n0.10,get,d,0\n";
  j.clients = 1;
  j.opts["trace"] = path;
  j.opts["speed"] = "max";
}

inline const OpFigures* op_of(const JobResult& r, const std::string& op) {
  for (auto& o : r.per_op)
    if (o.op == op) return &o;
  return nullptr;
}

// What cond_trace's replay leaves on a store with conditional writes: the 7 writes complete, 2 of
// them not stored (the add of a, the replace of c); a holds its second set (15 B), b its add (30 B),
// d its replace (60 B), c nothing: the gets read 105 B and miss once. Bytes: those stored and read.
inline void check_cond_replay(const JobResult& r) {
  CHECK_MESSAGE(r.state == JobResult::State::Done, r.message);
  for (auto& e : r.error_samples) MESSAGE(e);
  CHECK(r.ops_failed == 0);
  CHECK(r.ops_ok == 11);
  const OpFigures* w = op_of(r, "update");
  const OpFigures* g = op_of(r, "read");
  REQUIRE(w);
  REQUIRE(g);
  CHECK(w->ops_ok == 7);
  CHECK(w->not_stored == 2);
  CHECK(w->misses == 0);
  CHECK(g->ops_ok == 4);
  CHECK(g->misses == 1);  // c
  CHECK(r.bytes == (10 + 15 + 30 + 50 + 60) + (15 + 30 + 60));
}

inline void check_done(const JobResult& r, uint64_t n) {
  CHECK_MESSAGE(r.state == JobResult::State::Done, r.message);
  CHECK(r.ops_ok == n);
  CHECK(r.ops_failed == 0);
  for (auto& e : r.error_samples) MESSAGE(e);
  CHECK(r.verify.checked);
  CHECK_MESSAGE(r.verify.ok, r.verify.detail);
}

// Job j (a mix job on a store with a crash check) killed halfway: its updates, which write its 200
// keys again and again, and its inserts each checked by the version in their values; its reads
// are no writes. The store flushes at each commit: nothing acknowledged is lost.
inline void check_mix_crash(Job j) {
  j.opts["mix"] = "read:20,update:60,insert:20";
  j.opts["keyspace"] = "200";
  j.opts["crash"] = "kill";
  j.opts["expect"] = "durable";
  JobResult r = run_one(j);
  CAPTURE(r.message);
  CAPTURE(r.durability.detail);
  REQUIRE(r.durability.ran);
  CHECK(r.durability.checked);
  CHECK(r.durability.acked > 0);
  CHECK(r.durability.acked < r.ops_ok);  // the reads are no writes: not counted
  CHECK(r.durability.lost == 0);
  CHECK(r.durability.corrupt == 0);
  CHECK(!r.failed());
}

// Job j (a mix job on a store) with every abstract op over 2,000 zipfian keys, 2 clients: all
// checked and verified, deleted keys missed; then without deletes, where every read must hit.
inline void check_every_kv_op(Job j) {
  j.opts["mix"] = "read:40,update:20,insert:10,rmw:10,delete:10,scan:10";
  j.opts["keyspace"] = "2000";
  j.opts["keys"] = "zipfian";
  j.opts["value-size"] = "20-300";
  j.clients = 2;
  JobResult r = run_one(j);
  check_done(r, j.n);
  CHECK(r.misses > 0);  // deleted keys are read again
  j.opts["mix"] = "read:80,update:10,rmw:10";
  r = run_one(j);
  check_done(r, j.n);
  CHECK(r.misses == 0);
}

// A job of n inserts into a table whose filesystem filled up during it: the inserts past the
// space failed, each counted as an error (a sample of their message kept), the others have their
// figures and passed the end check; the run's exit status is 1. `rows`: the table's rows after.
inline void check_filled_up(const JobResult& r, uint64_t n, uint64_t rows) {
  CHECK_MESSAGE(r.state == JobResult::State::Done, r.message);
  CHECK(r.ops_ok > 0);
  CHECK(r.ops_failed > 0);
  CHECK(r.ops_ok + r.ops_failed + r.ops_not_run == n);
  CHECK(r.errors[static_cast<int>(Status::Error)] == r.ops_failed);
  CHECK(!r.error_samples.empty());
  REQUIRE(r.latency);
  CHECK(r.latency->count() == r.ops_ok);  // the figures of the ops that passed
  CHECK_MESSAGE(r.verify.ok, r.verify.detail);
  CHECK(rows == r.ops_ok);  // every acknowledged insert, and only those
  CHECK(exit_of(r) == 1);
}

// What a sync level keeps of the acknowledged commits across a power cut.
enum class PowerKeeps {
  All,         // every acknowledged commit (expect durable)
  AllButLast,  // all but at most the last commit (one op is one write transaction)
  None,        // nothing synced since the set-up: every acknowledged put is lost
};
// An embedded store's --crash power job of 200 puts, cut at 50%, judged by what its level keeps.
inline void check_power_puts(Job j, PowerKeeps keeps) {
  j.opts["crash"] = "power";
  j.opts["expect"] = keeps == PowerKeeps::All ? "durable" : "any";
  JobResult r = run_one(j, false);
  REQUIRE_MESSAGE(r.state == JobResult::State::Done, r.message);
  const DurabilityResult& d = r.durability;
  CHECK(d.model == "mwbench-pagecache-1");
  CHECK(d.acked >= j.n / 2);
  CHECK(d.acked + d.in_doubt + d.never_sent == j.n);
  switch (keeps) {
    case PowerKeeps::All: CHECK(d.lost == 0); break;
    case PowerKeeps::AllButLast: CHECK(d.lost <= 1); break;
    case PowerKeeps::None: CHECK(d.lost == d.acked); break;
  }
  CHECK(d.corrupt == 0);
  CHECK(exit_of(r) == 0);
}

// A managed server's --crash power job of n inserts, cut at 50%, at a level that acknowledges
// before it flushes: it loses acknowledged inserts, the oldest at most `window_s` (its flush
// interval, plus slack for a loaded machine) before the crash; expect any, so a finding.
inline void check_power_loss(Job j, double window_s) {
  j.opts["crash"] = "power";
  JobResult r = run_one(j);
  REQUIRE_MESSAGE(r.durability.ran, r.message);
  const DurabilityResult& d = r.durability;
  CHECK(d.model == "mwbench-pagecache-1");
  CHECK(d.acked + d.in_doubt >= j.n / 2);  // cut at half the ops done: a timed-out one is done, in doubt
  CHECK(d.acked + d.in_doubt + d.never_sent == j.n);
  CHECK(d.corrupt == 0);
  CHECK(d.lost > 0);
  CHECK(d.loss_window_s <= window_s);
  CHECK(!r.failed());
}

}  // namespace mw::test
