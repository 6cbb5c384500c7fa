// What libmosquitto reads from a broker, checked by mwbench before libmosquitto acts on it
// (conn/imports.h points libmosquitto's read at wire.cpp). libmosquitto 2.0 allocates the remaining
// length a packet declares and fills it as the bytes come (a broker that declared 256 MB took
// mwbench's memory with it): a packet over the session's max_frame ends the connection before
// libmosquitto reads the last byte of its length, a protocol error naming the size.
#pragma once
#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>

namespace mw::mqtt {

// The packets of a broker's byte stream: a fixed header byte, a remaining length (one to four
// bytes of seven bits each), that many bytes. feed() says how many of the bytes libmosquitto may
// have: all of them, or those before the byte that completes a length over max_frame (why()).
class Packets {
 public:
  explicit Packets(uint64_t max_frame) : max_frame_(max_frame) {}
  size_t feed(const unsigned char* p, size_t n);
  const std::string& why() const { return why_; }

 private:
  enum class State { Header, Length, Payload } st_ = State::Header;
  uint64_t max_frame_, length_ = 0, mult_ = 1, left_ = 0;
  int length_bytes_ = 0;
  unsigned char type_ = 0;
  std::string why_;
};

// One session's connection as mwbench watches it.
class Wire {
 public:
  explicit Wire(uint64_t max_frame) : packets_(max_frame) {}
  // Why mwbench ended the connection ("" : it did not).
  std::string ended() const;

 private:
  friend struct WireAccess;
  Packets packets_;  // the reading thread's alone
  std::atomic<bool> ended_{false};
  mutable std::mutex mu_;
  std::string why_;
};

// Points libmosquitto's read at wire.cpp (once); throws SetupError when it cannot be.
void watch_libmosquitto();
// From now on libmosquitto's reads of socket `fd` are `wire`'s (whatever the fd was before).
void watch(int fd, std::shared_ptr<Wire> wire);
// Forgets `fd`, when it is still `wire`'s.
void unwatch(int fd, const Wire* wire);

}  // namespace mw::mqtt
