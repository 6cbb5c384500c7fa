// What the queue tests share (redis, gearman, sqlite, rabbitmq, nats): a job whose every message
// came out exactly once.
#pragma once
#include <doctest/doctest.h>

#include <chrono>
#include <functional>
#include <thread>

#include "driver.h"
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

// Measures the prepared job while `act` (deleting its queue, stopping the server) runs once,
// `after_ms` into it.
inline JobResult measure_while(const Job& j, Adapter& a, int after_ms, const std::function<void()>& act) {
  std::thread t([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(after_ms));
    act();
  });
  JobResult r = measure(j, a);
  t.join();
  return r;
}

}  // namespace mw::test
