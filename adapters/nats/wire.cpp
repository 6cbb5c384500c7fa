#include "adapters/nats/wire.h"

#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <condition_variable>
#include <cstring>
#include <system_error>
#include <thread>
#include <unordered_map>

#include "adapters/conn/imports.h"
#include "api/stop.h"
#include "util/clock.h"
#include "util/status.h"

namespace mw::nats {

size_t Frames::feed(const char* p, size_t n) {
  size_t i = 0;
  while (i < n) {
    switch (st_) {
      case State::Payload: {
        const uint64_t take = std::min<uint64_t>(left_, n - i);
        i += take;
        if ((left_ -= take) == 0) st_ = State::End;
        break;
      }
      case State::End: {  // libnats skips what follows a payload up to its '\n'
        const auto* nl = static_cast<const char*>(std::memchr(p + i, '\n', n - i));
        if (!nl) return n;
        i = static_cast<size_t>(nl - p) + 1;
        st_ = State::Line;
        break;
      }
      case State::Line: {
        const auto* nl = static_cast<const char*>(std::memchr(p + i, '\n', n - i));
        const size_t take = static_cast<size_t>((nl ? nl : p + n) - (p + i));
        if (line_.size() + take > kMaxLine) {
          why_ = "protocol error: a line of more than " + std::to_string(kMaxLine) + " bytes from the server";
          return i;
        }
        line_.append(p + i, take);
        if (!nl) return n;
        if (!header()) return static_cast<size_t>(nl - p);
        line_.clear();
        i = static_cast<size_t>(nl - p) + 1;
        break;
      }
    }
  }
  return n;
}

bool Frames::header() {
  std::string_view l(line_);
  if (!l.empty() && l.back() == '\r') l.remove_suffix(1);
  std::string op(l.substr(0, l.find_first_of(" \t")));
  for (char& c : op) c = static_cast<char>(c >= 'a' && c <= 'z' ? c - 32 : c);
  if (op == "INFO") info_ = true;
  if (op != "MSG" && op != "HMSG") return true;
  // The size is the last argument (HMSG: of headers and payload together). One libnats cannot
  // read fails the connection in libnats: no payload follows it here either.
  const size_t end = l.find_last_not_of(" \t");
  const size_t from = l.find_last_of(" \t", end) + 1;
  if (end == std::string_view::npos || from <= op.size()) return true;
  uint64_t size = 0;
  for (char c : l.substr(from, end + 1 - from)) {
    if (c < '0' || c > '9') return true;
    size = size > (UINT64_MAX - 9) / 10 ? UINT64_MAX : size * 10 + static_cast<uint64_t>(c - '0');
  }
  if (size > max_frame_) {
    why_ = "protocol error: " + op + " declares " + std::to_string(size) + " bytes, more than the " +
           std::to_string(max_frame_) + " this job can take";
    return false;
  }
  left_ = size;
  st_ = size ? State::Payload : State::End;
  return true;
}

namespace {

// After a stop, libnats has half a second from the moment mwbench first sees it, for all it still
// does together (the last acknowledgements, the clean-up on the server): then every wait of its
// ends, and a connect made later fails at once.
constexpr int64_t kStopGraceNs = 500'000'000;
std::atomic<int64_t> g_stop_seen_ns{0};

int64_t stop_cut_ns() {
  if (!stop_requested().load()) {
    g_stop_seen_ns = 0;  // a test cleared the flag: the next stop has its grace again
    return INT64_MAX;
  }
  int64_t seen = 0;
  g_stop_seen_ns.compare_exchange_strong(seen, now_ns());
  return g_stop_seen_ns.load() + kStopGraceNs;
}

}  // namespace

Wire::Wire(uint64_t max_frame, double timeout_s)
    : frames_(max_frame), deadline_ns_(now_ns() + static_cast<int64_t>(timeout_s * 1e9)) {}

std::string Wire::ended() const {
  std::lock_guard lk(mu_);
  return why_;
}

bool Wire::interrupted() const {
  std::lock_guard lk(mu_);
  return interrupted_;
}

void Wire::end(const std::string& why, bool interrupted) {
  std::lock_guard lk(mu_);
  if (ended_.exchange(true)) return;  // the first reason stands
  why_ = why;
  interrupted_ = interrupted;
}

bool Wire::handshake_over() {
  if (ended_.load()) return true;
  const int64_t now = now_ns();
  if (stop_ends_opening() || now >= stop_cut_ns()) {
    end("interrupted during the connect", true);
    return true;
  }
  if (now < deadline_ns_) return false;
  if (frames_.saw_info())
    end("the server sent INFO but did not answer PING within the timeout", false);
  else
    end("no INFO from the server within the timeout", false);
  return true;
}

namespace {

// What libnats called before (libc's, or a sanitizer's interceptor), set before the hooks.
void* real_recv = nullptr;
void* real_poll = nullptr;
void* real_close = nullptr;
ssize_t call_recv(int fd, void* buf, size_t len, int flags) {
  return reinterpret_cast<ssize_t (*)(int, void*, size_t, int)>(real_recv)(fd, buf, len, flags);
}
int call_poll(pollfd* fds, nfds_t n, int timeout_ms) {
  return reinterpret_cast<int (*)(pollfd*, nfds_t, int)>(real_poll)(fds, n, timeout_ms);
}
int call_close(int fd) { return reinterpret_cast<int (*)(int)>(real_close)(fd); }

// libnats's sockets and their wires. Never destroyed: libnats's threads may still read while the
// process exits.
struct Registry {
  std::mutex mu;
  std::condition_variable cv;
  std::unordered_map<int, std::shared_ptr<Wire>> by_fd;
  bool watching = false;
};
Registry& reg() {
  static Registry* r = new Registry;
  return *r;
}

thread_local std::shared_ptr<Wire> t_connecting;  // Connecting's

}  // namespace

struct WireAccess {
  static Frames& frames(Wire& w) { return w.frames_; }
  static bool ended(const Wire& w) { return w.ended_.load(); }
  static void end(Wire& w, const std::string& why, bool interrupted) { w.end(why, interrupted); }
  static bool handshake_over(Wire& w) { return w.handshake_over(); }
  // After a stop's grace, every connection's socket is shut down: libnats's waits on it end.
  static void watch_loop() {
    Registry& r = reg();
    std::unique_lock lk(r.mu);
    while (!r.by_fd.empty()) {
      if (now_ns() >= stop_cut_ns())
        for (auto& [fd, w] : r.by_fd) {
          if (ended(*w)) continue;
          end(*w, "interrupted: mwbench closed the connection after the stop", true);
          shutdown(fd, SHUT_RDWR);  // under the lock: libnats's close of fd waits for it
        }
      r.cv.wait_for(lk, std::chrono::milliseconds(50));
    }
    r.watching = false;
  }

  // libnats's recv: on the connecting thread the socket becomes the wire's; every read is
  // checked; a wire that ended reads end of file.
  static ssize_t recv(int fd, void* buf, size_t len, int flags) {
    std::shared_ptr<Wire> w = t_connecting;
    if (w) {
      Registry& r = reg();
      std::lock_guard lk(r.mu);
      if (auto& slot = r.by_fd[fd]; slot != w) slot = w;
      if (!r.watching) {
        try {  // called from C: nothing may be thrown through libnats
          std::thread(watch_loop).detach();
          r.watching = true;                  // before watch_loop can look: it waits for the lock held here
        } catch (const std::system_error&) {  // no thread now: the next read tries again
        }
      }
    } else {
      Registry& r = reg();
      std::lock_guard lk(r.mu);
      if (auto it = r.by_fd.find(fd); it != r.by_fd.end()) w = it->second;
    }
    if (!w) return call_recv(fd, buf, len, flags);
    if (t_connecting && handshake_over(*w)) return 0;
    if (ended(*w)) return 0;
    const ssize_t n = call_recv(fd, buf, len, flags);
    if (n <= 0 || (flags & MSG_PEEK)) return n;
    Frames& f = frames(*w);
    const size_t ok = f.feed(static_cast<const char*>(buf), static_cast<size_t>(n));
    if (ok < static_cast<size_t>(n)) end(*w, f.why(), false);
    return static_cast<ssize_t>(ok);  // 0: end of file
  }

  // libnats's poll: on the connecting thread, in slices that see the timeout and a stop.
  static int poll(pollfd* fds, nfds_t n, int timeout_ms) {
    Wire* w = t_connecting.get();
    if (!w) return call_poll(fds, n, timeout_ms);
    const int64_t until = now_ns() + int64_t{timeout_ms} * 1'000'000;
    for (bool first = true;; first = false) {
      // As a timeout: libnats gives up, or reads end of file. The wire's deadline comes first, so
      // the reason given is the wire's.
      if (handshake_over(*w)) return 0;
      const int64_t left = timeout_ms < 0 ? INT64_MAX : until - now_ns();
      if (!first && left <= 0) return 0;
      const int got = call_poll(fds, n, static_cast<int>(std::clamp<int64_t>(left / 1'000'000, 0, 50)));
      if (got > 0 || (got < 0 && errno != EINTR)) return got;
    }
  }

  static int close(int fd) {
    Registry& r = reg();
    std::lock_guard lk(r.mu);
    r.by_fd.erase(fd);
    return call_close(fd);
  }
};

void watch_libnats() {
  static std::once_flag once;
  static std::string failed;
  std::call_once(once, [] {
    const struct {
      const char* symbol;
      void* hook;
      void** real;
    } hooks[] = {{"recv", reinterpret_cast<void*>(&WireAccess::recv), &real_recv},
                 {"poll", reinterpret_cast<void*>(&WireAccess::poll), &real_poll},
                 {"close", reinterpret_cast<void*>(&WireAccess::close), &real_close}};
    for (const auto& h : hooks)
      if (std::string why; !conn::hook_import("libnats.so", h.symbol, h.hook, h.real, why)) {
        failed = why;
        return;
      }
  });
  if (!failed.empty()) throw SetupError("nats: cannot watch what libnats reads: " + failed);
}

Connecting::Connecting(std::shared_ptr<Wire> wire) { t_connecting = std::move(wire); }
Connecting::~Connecting() { t_connecting.reset(); }

}  // namespace mw::nats
