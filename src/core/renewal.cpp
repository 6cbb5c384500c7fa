#include "core/renewal.h"

#include <time.h>

#include <algorithm>
#include <cerrno>

#include "api/stop.h"
#include "util/clock.h"

namespace mw {

bool ConnectGate::wait(int64_t deadline) {
  int64_t turn = 0;
  {
    std::lock_guard lk(mu_);
    turn = std::max(now_ns(), next_);
    next_ = turn + gap_ns_;
  }
  constexpr int64_t kSlice = 50'000'000;
  while (!stop_requested().load(std::memory_order_relaxed)) {
    const int64_t until = std::min({turn, deadline, now_ns() + kSlice});
    timespec ts{static_cast<time_t>(until / 1'000'000'000), static_cast<long>(until % 1'000'000'000)};
    while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, nullptr) == EINTR) {}
    if (until >= turn) return true;
    if (until >= deadline) return false;  // a turn past the phase's end: the client is done
  }
  return false;
}

Renewal::Took Renewal::renew(std::unique_ptr<Client>& slot, int i, int64_t deadline) const {
  Took took;
  if (gate) {
    const int64_t t = now_ns();
    const bool turn = gate->wait(deadline);
    took.wait_ns = now_ns() - t;
    if (!turn) return took;
  }
  slot.reset();          // closed: the adapter's client ends its connection
  OpeningScope opening;  // a stop ends a slow connect or handshake
  const int64_t t = now_ns();
  slot = open(i);
  took.connect_ns = now_ns() - t;
  took.renewed = true;
  if (slot) took.handshake = slot->handshake();
  return took;
}

}  // namespace mw
