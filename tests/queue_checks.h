// What the queue tests share (redis, gearman, sqlite, rabbitmq, nats, beanstalkd): a job whose every message
// came out exactly once.
#pragma once
#include <doctest/doctest.h>

#include "queue.h"
#include "result.h"

namespace mw::test {

inline void check_exactly_once(const JobResult& r, uint64_t n) {
  CAPTURE(r.message);
  CAPTURE(r.verify.detail);
  CHECK(r.state == JobResult::State::Done);
  CHECK(r.ops_ok == n);
  CHECK(r.ops_failed == 0);
  CHECK(r.ops_not_run == 0);
  CHECK(r.verify.checked);
  CHECK(r.verify.ok);
  REQUIRE(r.queue);
  CHECK(r.queue->exactly_once());
  CHECK(r.queue->consumed == r.queue->produced);
  CHECK(r.queue->sum_consumed == r.queue->sum_produced);
  CHECK(r.verify.detail.find("every message exactly once") != std::string::npos);
}

}  // namespace mw::test
