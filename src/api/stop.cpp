#include "stop.h"

#include <unistd.h>

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
}  // namespace

int run_id() { return g_run_id ? g_run_id : static_cast<int>(getpid()); }
void set_run_id(int id) { g_run_id = id; }

}  // namespace mw
