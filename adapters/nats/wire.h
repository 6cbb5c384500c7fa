// What libnats reads from a server, checked by mwbench before libnats acts on it (conn/imports.h
// points libnats's recv, poll and close at wire.cpp). libnats 3.4 trusts the server twice over:
//   - a MSG or HMSG of any declared size is allocated and filled (MSG s 1 2000000000 followed by
//     200 MB took mwbench's memory with it): a frame over the connection's max_frame ends the
//     connection before libnats reads its header's last byte, a protocol error naming the size;
//   - its handshake ignores its own deadline while it waits for the PONG (a server that sends INFO
//     and never answers PING kept natsConnection_Connect in a busy loop forever, its buffer
//     growing): the connect's reads and waits end at the timeout, or at once on a stop.
// After a stop libnats has half a second more (the last acknowledgements, a clean-up), for all
// its connections together; then mwbench shuts their sockets down, which ends every wait of
// libnats on them, and a connect made later fails at once.
#pragma once
#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>

namespace mw::nats {

// The frames of a server's byte stream, as libnats parses them: control lines (INFO, MSG, HMSG,
// PING, PONG, +OK, -ERR), each MSG's or HMSG's payload of its declared size and the line end after
// it. feed() says how many of the bytes libnats may have: all of them, or those before the byte
// that completes a header over the limits (why() says which).
class Frames {
 public:
  static constexpr size_t kMaxLine = 64 << 10;  // an INFO of a large cluster is a few KB
  explicit Frames(uint64_t max_frame) : max_frame_(max_frame) {}
  size_t feed(const char* p, size_t n);
  const std::string& why() const { return why_; }
  bool saw_info() const { return info_; }

 private:
  bool header();  // line_ is complete: false (why_ set) when it declares too much

  enum class State { Line, Payload, End } st_ = State::Line;
  uint64_t max_frame_, left_ = 0;
  std::string line_, why_;
  bool info_ = false;
};

// One connection as mwbench watches it.
class Wire {
 public:
  Wire(uint64_t max_frame, double timeout_s);
  // Why mwbench ended the connection ("" : it did not); interrupted: by a stop.
  std::string ended() const;
  bool interrupted() const;

 private:
  friend struct WireAccess;
  void end(const std::string& why, bool interrupted);
  bool handshake_over();  // on the connecting thread: past the timeout, or stopped

  Frames frames_;              // the reading thread's alone
  const int64_t deadline_ns_;  // the connect's
  std::atomic<bool> ended_{false};
  mutable std::mutex mu_;
  std::string why_;
  bool interrupted_ = false;
};

// Points libnats's recv, poll and close at wire.cpp (once); throws SetupError when they cannot be.
void watch_libnats();

// While one lives, natsConnection_Connect on this thread belongs to `wire`: its reads are
// checked, its waits end at the timeout, and at once on a stop inside an OpeningScope (at the
// stop's grace outside it).
class Connecting {
 public:
  explicit Connecting(std::shared_ptr<Wire> wire);
  ~Connecting();
  Connecting(const Connecting&) = delete;
  Connecting& operator=(const Connecting&) = delete;
};

}  // namespace mw::nats
