#include "api/stop.h"

#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <set>
#include <thread>

#include "util/clock.h"
#include "util/status.h"

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

namespace {
// The sockets StopShutsDown watches, and the one thread that watches them while there are any.
// Never destroyed: the watcher may still be waking when the process exits.
struct Watch {
  std::mutex mu;
  std::condition_variable cv;
  std::set<int> fds;
  bool watching = false;
};
Watch& watch() {
  static Watch* w = new Watch;
  return *w;
}
void watch_loop() {
  Watch& w = watch();
  std::unique_lock<std::mutex> lock(w.mu);
  while (!w.fds.empty()) {
    if (stop_requested().load(std::memory_order_relaxed))
      for (int fd : w.fds) shutdown(fd, SHUT_RDWR);  // under the lock: the fd is still the caller's
    w.cv.wait_for(lock, std::chrono::milliseconds(20));
  }
  w.watching = false;
}
}  // namespace

StopShutsDown::StopShutsDown(int fd) {
  if (t_opening == 0 || fd < 0) return;
  Watch& w = watch();
  std::lock_guard<std::mutex> lock(w.mu);
  fd_ = fd;
  w.fds.insert(fd);
  if (!w.watching) {
    w.watching = true;
    std::thread(watch_loop).detach();
  }
}

StopShutsDown::~StopShutsDown() {
  if (fd_ < 0) return;
  Watch& w = watch();
  std::lock_guard<std::mutex> lock(w.mu);
  w.fds.erase(fd_);
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
