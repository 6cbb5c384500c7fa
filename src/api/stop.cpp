#include "stop.h"

#include <unistd.h>

#include <algorithm>

#include "clock.h"
#include "status.h"

namespace mw {

std::atomic<bool>& stop_requested() {
  static std::atomic<bool> flag{false};
  return flag;
}

std::atomic<int>& stop_signal() {
  static std::atomic<int> sig{0};
  return sig;
}

void throw_if_stopped(const std::string& what) {
  if (stop_requested().load(std::memory_order_relaxed)) throw Interrupted("interrupted during " + what);
}

namespace {
int g_run_id = 0;
thread_local int t_opening = 0;
}  // namespace

OpeningScope::OpeningScope() { ++t_opening; }
OpeningScope::~OpeningScope() { --t_opening; }

bool stop_ends_opening() { return t_opening > 0 && stop_requested().load(std::memory_order_relaxed); }

void throw_if_stopped_opening(const std::string& what) {
  if (t_opening > 0) throw_if_stopped(what);
}

int64_t deadline_after_stop(int64_t deadline_ns) {
  if (!stop_requested().load(std::memory_order_relaxed)) return deadline_ns;
  return std::min(deadline_ns, now_ns() + 500'000'000);
}

int opening_poll_ms(int64_t left_ns) {
  const int64_t cap = t_opening > 0 ? 100 : 1000;
  return static_cast<int>(std::min<int64_t>(left_ns / 1000000 + 1, cap));
}

int run_id() { return g_run_id ? g_run_id : static_cast<int>(getpid()); }
void set_run_id(int id) { g_run_id = id; }

}  // namespace mw
