// --reconnect-backoff (Job::reconnect_backoff_s), for clients that hold a connection of their own
// (conn/client.h's, postgres's): a client whose connection is lost tries again before its next op,
// at once the first time, 10 ms after a try that failed, then twice as long after each further
// one, up to the longest wait given; a success starts it over.
#pragma once
#include <poll.h>

#include <algorithm>
#include <cstdint>

#include "api/stop.h"
#include "util/clock.h"

namespace mw {

class ReconnectBackoff {
 public:
  // Waits until the next try is due; a stop ends the wait.
  void wait() const {
    while (now_ns() < next_try_ && !stop_requested().load(std::memory_order_relaxed))
      poll(nullptr, 0, static_cast<int>(std::clamp<int64_t>((next_try_ - now_ns()) / 1'000'000, 1, 50)));
  }
  // A try failed: the next waits twice as long as the last (10 ms first), `max_s` at most.
  void failed(double max_s) {
    backoff_ns_ = std::min(static_cast<int64_t>(max_s * 1e9), backoff_ns_ > 0 ? backoff_ns_ * 2 : int64_t{10'000'000});
    next_try_ = now_ns() + backoff_ns_;
  }
  void succeeded() { backoff_ns_ = 0; }

 private:
  int64_t next_try_ = 0;    // the next try not before this (now_ns)
  int64_t backoff_ns_ = 0;  // the wait after the last failed one
};

}  // namespace mw
