// SQLite's busy handler, counted: the lock waits of a job's clients (Abilities::lock_waits).
#include <sqlite3.h>

#include <algorithm>
#include <iterator>

#include "adapters/sqlite/sqlite.h"

namespace mw {

namespace {
// sqliteDefaultBusyCallback's schedule (sqlite3's main.c): the sleep before retry `count` and the
// sleeps before it, in ms.
constexpr int kDelays[] = {1, 2, 5, 10, 15, 20, 25, 25, 25, 50, 50, 100};
constexpr int kTotals[] = {0, 1, 3, 8, 18, 33, 53, 78, 103, 128, 178, 228};
constexpr int kSteps = static_cast<int>(std::size(kDelays));
}  // namespace

BusyWaits::BusyWaits(double timeout_s) : timeout_ms_(std::max(1, static_cast<int>(timeout_s * 1000))) {}

void BusyWaits::install(sqlite3* db) { sqlite3_busy_handler(db, &BusyWaits::on_busy, this); }

LockWaits BusyWaits::read() const {
  return {retries_.load(std::memory_order_relaxed),
          static_cast<double>(slept_ms_.load(std::memory_order_relaxed)) / 1000};
}

int BusyWaits::on_busy(void* self, int count) {
  auto* w = static_cast<BusyWaits*>(self);
  int delay = count < kSteps ? kDelays[count] : kDelays[kSteps - 1];
  int prior = count < kSteps ? kTotals[count] : kTotals[kSteps - 1] + kDelays[kSteps - 1] * (count - (kSteps - 1));
  delay = std::min(delay, w->timeout_ms_ - prior);
  if (delay <= 0) return 0;  // the timeout is spent: SQLITE_BUSY
  w->retries_.fetch_add(1, std::memory_order_relaxed);
  w->slept_ms_.fetch_add(static_cast<uint64_t>(delay), std::memory_order_relaxed);
  sqlite3_sleep(delay);
  return 1;
}

}  // namespace mw
