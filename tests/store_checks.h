// Checks the keyed-store tests share (lmdb, rocksdb): a job that ran every op and verified, and
// the exit code a run of one job gets.
#pragma once
#include <doctest/doctest.h>

#include "result.h"
#include "runner.h"

namespace mw::test {

inline void check_done(const JobResult& r, uint64_t n) {
  CHECK_MESSAGE(r.state == JobResult::State::Done, r.message);
  CHECK(r.ops_ok == n);
  CHECK(r.ops_failed == 0);
  for (auto& e : r.error_samples) MESSAGE(e);
  CHECK(r.verify.checked);
  CHECK_MESSAGE(r.verify.ok, r.verify.detail);
}

inline int exit_of(const JobResult& r) {
  RunResult run;
  run.jobs.push_back(r);
  return exit_code(run);
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

}  // namespace mw::test
