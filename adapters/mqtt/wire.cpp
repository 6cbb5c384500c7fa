#include "adapters/mqtt/wire.h"

#include <unistd.h>

#include <algorithm>
#include <unordered_map>

#include "adapters/conn/imports.h"
#include "util/status.h"

namespace mw::mqtt {
namespace {

const char* packet_name(unsigned char type) {
  static constexpr const char* names[16] = {"reserved", "CONNECT",  "CONNACK",    "PUBLISH", "PUBACK",      "PUBREC",
                                            "PUBREL",   "PUBCOMP",  "SUBSCRIBE",  "SUBACK",  "UNSUBSCRIBE", "UNSUBACK",
                                            "PINGREQ",  "PINGRESP", "DISCONNECT", "AUTH"};
  return names[type >> 4];
}

}  // namespace

size_t Packets::feed(const unsigned char* p, size_t n) {
  size_t i = 0;
  while (i < n) {
    switch (st_) {
      case State::Header:
        type_ = p[i++];
        length_ = 0, mult_ = 1, length_bytes_ = 0;
        st_ = State::Length;
        break;
      case State::Length: {
        const unsigned char b = p[i];
        length_ += (b & 127u) * mult_;
        mult_ *= 128;
        ++length_bytes_;
        if (b & 128u) {
          if (length_bytes_ == 4) {
            why_ = std::string("protocol error: a ") + packet_name(type_) + " packet's length runs past 4 bytes";
            return i;
          }
          ++i;
          break;
        }
        if (length_ > max_frame_) {
          why_ = std::string("protocol error: a ") + packet_name(type_) + " packet declares " +
                 std::to_string(length_) + " bytes, more than the " + std::to_string(max_frame_) + " this job can take";
          return i;
        }
        left_ = length_;
        st_ = left_ ? State::Payload : State::Header;
        ++i;
        break;
      }
      case State::Payload: {
        const uint64_t take = std::min<uint64_t>(left_, n - i);
        i += take;
        if ((left_ -= take) == 0) st_ = State::Header;
        break;
      }
    }
  }
  return n;
}

std::string Wire::ended() const {
  std::lock_guard lk(mu_);
  return why_;
}

namespace {

void* real_read = nullptr;  // what libmosquitto called before (libc's, or a sanitizer's interceptor)

// libmosquitto's sockets and their wires. Never destroyed: a session may read while the process
// exits.
struct Registry {
  std::mutex mu;
  std::unordered_map<int, std::shared_ptr<Wire>> by_fd;
};
Registry& reg() {
  static Registry* r = new Registry;
  return *r;
}

}  // namespace

struct WireAccess {
  // libmosquitto's read: a watched socket's bytes are checked; a wire that ended reads end of file.
  static ssize_t read(int fd, void* buf, size_t count) {
    auto call = reinterpret_cast<ssize_t (*)(int, void*, size_t)>(real_read);
    std::shared_ptr<Wire> w;
    {
      Registry& r = reg();
      std::lock_guard lk(r.mu);
      if (auto it = r.by_fd.find(fd); it != r.by_fd.end()) w = it->second;
    }
    if (!w) return call(fd, buf, count);
    if (w->ended_.load()) return 0;
    const ssize_t n = call(fd, buf, count);
    if (n <= 0) return n;
    const size_t ok = w->packets_.feed(static_cast<const unsigned char*>(buf), static_cast<size_t>(n));
    if (ok < static_cast<size_t>(n)) {
      std::lock_guard lk(w->mu_);
      w->why_ = w->packets_.why();
      w->ended_ = true;
    }
    return static_cast<ssize_t>(ok);  // 0: end of file
  }
};

void watch_libmosquitto() {
  static std::once_flag once;
  static std::string failed;
  std::call_once(once, [] {
    if (!conn::hook_import("libmosquitto.so", "read", reinterpret_cast<void*>(&WireAccess::read), &real_read, failed) &&
        failed.empty())
      failed = "unknown";
  });
  if (!failed.empty()) throw SetupError("mqtt: cannot watch what libmosquitto reads: " + failed);
}

void watch(int fd, std::shared_ptr<Wire> wire) {
  Registry& r = reg();
  std::lock_guard lk(r.mu);
  r.by_fd[fd] = std::move(wire);
}

void unwatch(int fd, const Wire* wire) {
  Registry& r = reg();
  std::lock_guard lk(r.mu);
  if (auto it = r.by_fd.find(fd); it != r.by_fd.end() && it->second.get() == wire) r.by_fd.erase(it);
}

}  // namespace mw::mqtt
