// A test's own small server on 127.0.0.1, for the faults a real server cannot show (a broker that
// declares a 2 GB message, one that never finishes its handshake): each connection is served by
// `talk` on a thread of its own, with the fd and a flag that says the test is done. The destructor
// sets the flag, waits for every talk, and closes every connection.
#pragma once
#include <doctest/doctest.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "tests/helpers.h"

namespace mw::test {

class FakeServer {
 public:
  using Talk = std::function<void(int fd, const std::atomic<bool>& done)>;
  explicit FakeServer(Talk talk) : talk_(std::move(talk)) {
    fd_ = listen_loopback(16, port_);
    REQUIRE(fd_ >= 0);
    accepter_ = std::thread([this] { serve(); });
  }
  ~FakeServer() { stop(); }
  FakeServer(const FakeServer&) = delete;
  FakeServer& operator=(const FakeServer&) = delete;
  int port() const { return port_; }
  // Ends every connection now (what the destructor does).
  void stop() {
    if (done_.exchange(true)) return;
    accepter_.join();
    for (auto& t : talks_) t.join();
    close(fd_);
  }

  // For talks: waits up to 50 ms for bytes, appends them to `in`; false once the peer closed
  // or the test is done.
  static bool read_some(int fd, std::string& in, const std::atomic<bool>& done) {
    if (done) return false;
    pollfd p{fd, POLLIN, 0};
    if (poll(&p, 1, 50) <= 0) return true;
    char buf[65536];
    const ssize_t n = recv(fd, buf, sizeof buf, 0);
    if (n <= 0) return false;
    in.append(buf, static_cast<size_t>(n));
    return true;
  }
  // Sends all of `data` unless the peer goes away or the test is done.
  static bool send_all(int fd, std::string_view data, const std::atomic<bool>& done) {
    while (!data.empty()) {
      if (done) return false;
      pollfd p{fd, POLLOUT, 0};
      if (poll(&p, 1, 50) <= 0) continue;
      const ssize_t n = send(fd, data.data(), data.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
      if (n < 0 && errno != EAGAIN) return false;
      if (n > 0) data.remove_prefix(static_cast<size_t>(n));
    }
    return true;
  }
  // Sends `total` bytes of 'x' (a payload as large as a hostile length says).
  static bool send_filler(int fd, uint64_t total, const std::atomic<bool>& done) {
    const std::string chunk(1 << 20, 'x');
    for (uint64_t sent = 0; sent < total; sent += chunk.size())
      if (!send_all(fd, std::string_view(chunk).substr(0, std::min<uint64_t>(chunk.size(), total - sent)), done))
        return false;
    return true;
  }

 private:
  void serve() {
    while (!done_) {
      pollfd p{fd_, POLLIN, 0};
      if (poll(&p, 1, 50) <= 0) continue;
      const int c = accept(fd_, nullptr, nullptr);
      if (c < 0) continue;
      talks_.emplace_back([this, c] {
        talk_(c, done_);
        close(c);
      });
    }
  }

  Talk talk_;
  int fd_ = -1, port_ = 0;
  std::atomic<bool> done_{false};
  std::thread accepter_;
  std::vector<std::thread> talks_;  // the accepter's until stop() joins it
};

}  // namespace mw::test
