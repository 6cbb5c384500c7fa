// services/proxy.h's FaultProxy alone, between the test and an echo server of its own on 127.0.0.1
// (no adapter): the bytes relayed intact both ways, a slow's delay on every round trip, a cut's
// resets and refused connects, relaying again after each, and a destructor that leaves neither a
// listener nor a thread. The delays are large beside a loopback round trip, so that a loaded
// machine keeps the bounds: a round trip during a slow cannot take less than twice the delay.
#include <doctest/doctest.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <ctime>
#include <filesystem>
#include <random>
#include <string>
#include <thread>

#include "services/proxy.h"
#include "tests/fake_server.h"
#include "util/clock.h"

using namespace mw;
using test::FakeServer;

namespace {

constexpr int kWaitMs = 10'000;  // every wait of the test's own: a relay that lost bytes fails, never hangs

uint64_t fnv(std::string_view s, uint64_t h = 1469598103934665603ull) {
  for (unsigned char c : s) h = (h ^ c) * 1099511628211ull;
  return h;
}

// Sends back every byte it reads; counts and hashes what it read (one connection at a time).
struct Echo {
  std::atomic<uint64_t> got{0}, hash{fnv("")};
  FakeServer server{[this](int fd, const std::atomic<bool>& done) {
    std::string in;
    while (FakeServer::read_some(fd, in, done)) {
      if (in.empty()) continue;
      got += in.size();
      hash = fnv(in, hash.load());
      if (!FakeServer::send_all(fd, in, done)) return;
      in.clear();
    }
  }};
};

// A connection to 127.0.0.1:port, or -errno (ECONNREFUSED: nothing listens).
int connect_to(int port) {
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = htons(static_cast<uint16_t>(port));
  if (connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0) return fd;
  const int err = errno;
  close(fd);
  return -err;
}

// Sends `out` and reads as many bytes back, both at once (neither side's buffers can fill); what
// came back, shorter when the connection ended or kWaitMs passed without progress. `error`: the
// errno of the send or read that failed, 0 otherwise.
std::string relay(int fd, std::string_view out, int* error = nullptr) {
  std::string in;
  size_t sent = 0;
  if (error) *error = 0;
  while (in.size() < out.size()) {
    pollfd p{fd, static_cast<short>(POLLIN | (sent < out.size() ? POLLOUT : 0)), 0};
    if (poll(&p, 1, kWaitMs) <= 0) break;
    if (p.revents & POLLOUT) {
      const ssize_t n =
          send(fd, out.data() + sent, std::min<size_t>(out.size() - sent, 65536), MSG_NOSIGNAL | MSG_DONTWAIT);
      if (n > 0) sent += static_cast<size_t>(n);
      if (n < 0 && errno != EAGAIN) {
        if (error) *error = errno;
        break;
      }
    }
    if (p.revents & (POLLIN | POLLHUP | POLLERR)) {
      char buf[65536];
      const ssize_t n = recv(fd, buf, sizeof buf, MSG_DONTWAIT);
      if (n == 0) break;
      if (n < 0 && errno != EAGAIN) {
        if (error) *error = errno;
        break;
      }
      if (n > 0) in.append(buf, static_cast<size_t>(n));
    }
  }
  return in;
}

// One round trip of a short message, in ns; -1 when it did not come back whole.
int64_t round_trip(int fd) {
  const int64_t t = now_ns();
  return relay(fd, "ping\n") == "ping\n" ? now_ns() - t : -1;
}

// The shortest of three round trips (a loaded machine delays one now and then, seldom all three).
int64_t best_of_3(int fd) {
  int64_t best = -1;
  for (int i = 0; i < 3; ++i)
    if (const int64_t t = round_trip(fd); t >= 0 && (best < 0 || t < best)) best = t;
  return best;
}

// What a read of the connection says within kWaitMs: its errno (ECONNRESET: reset), 0 when it
// closed cleanly, -1 when nothing came.
int read_end(int fd) {
  pollfd p{fd, POLLIN, 0};
  if (poll(&p, 1, kWaitMs) <= 0) return -1;
  char c;
  const ssize_t n = recv(fd, &c, 1, 0);
  return n < 0 ? errno : n == 0 ? 0 : -1;
}

int threads() {
  int n = 0;
  for ([[maybe_unused]] auto& e : std::filesystem::directory_iterator("/proc/self/task")) ++n;
  return n;
}

// Waits up to kWaitMs for this process's threads to be `want` (an echo's talk ends a moment after
// its connection); what they are at the end.
int threads_settle(int want) {
  const int64_t until = now_ns() + kWaitMs * 1'000'000ll;
  while (threads() != want && now_ns() < until) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  return threads();
}

}  // namespace

TEST_CASE("proxy: 1 MB relayed each way intact, every byte value, to a route of its own port") {
  Echo echo;
  FaultProxy proxy(5);
  const int port = proxy.add("127.0.0.1", echo.server.port());
  CHECK(port != echo.server.port());
  CHECK(proxy.describe() ==
        "127.0.0.1:" + std::to_string(port) + " -> 127.0.0.1:" + std::to_string(echo.server.port()));
  std::string data(1 << 20, '\0');
  std::mt19937_64 rng(44);
  for (char& c : data) c = static_cast<char>(rng());
  const int fd = connect_to(port);
  REQUIRE(fd >= 0);
  const std::string back = relay(fd, data);
  CHECK(echo.got == data.size());  // client -> server
  CHECK(echo.hash == fnv(data));
  CHECK(back.size() == data.size());  // and back
  CHECK(fnv(back) == fnv(data));
  CHECK(proxy.relayed() == 1);
  close(fd);
}

TEST_CASE("proxy: slow holds every chunk DELAY each way while it lasts; after it, relayed at once again") {
  constexpr int64_t delay = 200'000'000;
  Echo echo;
  FaultProxy proxy(5);
  const int port = proxy.add("127.0.0.1", echo.server.port());
  const int fd = connect_to(port);
  REQUIRE(fd >= 0);
  const int64_t before = best_of_3(fd);
  CHECK(before >= 0);
  CHECK(before < delay);
  proxy.slow(delay);
  for (int i = 0; i < 3; ++i) {
    const int64_t during = round_trip(fd);
    CHECK(during >= 2 * delay);  // held on the way there and on the way back
  }
  const int fresh = connect_to(port);  // a connection made meanwhile too
  REQUIRE(fresh >= 0);
  CHECK(round_trip(fresh) >= 2 * delay);
  proxy.slow(0);
  const int64_t after = best_of_3(fd);
  CHECK(after >= 0);
  CHECK(after < delay);
  close(fd);
  close(fresh);
}

// The server closes at once; the client sends a line and closes its side. The proxy holds the line
// for the delay, the client's socket read to its end and shut: such a socket reports a hang-up at
// every wait, whatever it is watched for, and the loop spun at a full core until the line was due.
TEST_CASE("proxy: a connection closed both ways while a slow holds its last bytes costs no CPU") {
  FakeServer closer{[](int, const std::atomic<bool>&) {}};
  FaultProxy proxy(5);
  const int port = proxy.add("127.0.0.1", closer.port());
  proxy.slow(1'000'000'000);
  const int fd = connect_to(port);
  REQUIRE(fd >= 0);
  REQUIRE(send(fd, "x\n", 2, MSG_NOSIGNAL) == 2);
  REQUIRE(shutdown(fd, SHUT_WR) == 0);
  CHECK(read_end(fd) == 0);  // the server's close, passed on at once
  auto cpu = [] {
    timespec t{};
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
    return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_nsec) / 1e9;
  };
  const double before = cpu();
  std::this_thread::sleep_for(std::chrono::milliseconds(600));
  CHECK(cpu() - before < 0.15);  // a spinning loop takes most of the 0.6 s
  close(fd);
}

TEST_CASE("proxy: cut resets an open connection and refuses new ones; after it, relayed again") {
  Echo echo;
  FaultProxy proxy(5);
  const int port = proxy.add("127.0.0.1", echo.server.port());
  const int fd = connect_to(port);
  REQUIRE(fd >= 0);
  CHECK(round_trip(fd) >= 0);
  CHECK(proxy.cut(true) == "");
  CHECK(read_end(fd) == ECONNRESET);  // an RST, not a clean close
  close(fd);
  CHECK(proxy.resets() == 1);
  const int refused = connect_to(port);
  if (refused >= 0) {  // connected after all: then reset before a reply
    int err = 0;
    CHECK(relay(refused, "ping\n", &err).empty());
    close(refused);
  } else {
    CHECK(refused == -ECONNREFUSED);
  }
  CHECK(proxy.cut(false) == "");
  const int again = connect_to(port);  // the same port as before the cut
  REQUIRE(again >= 0);
  CHECK(round_trip(again) >= 0);
  CHECK(relay(again, "after the cut\n") == "after the cut\n");
  close(again);
}

TEST_CASE("proxy: a route to a server that is gone resets the client's connection") {
  int dead_port = 0;
  const int l = test::listen_loopback(1, dead_port);
  REQUIRE(l >= 0);
  close(l);  // nothing listens there now
  FaultProxy proxy(5);
  const int fd = connect_to(proxy.add("127.0.0.1", dead_port));
  REQUIRE(fd >= 0);  // the proxy accepts, then finds the server gone
  int err = 0;
  CHECK(relay(fd, "ping\n", &err).empty());
  CHECK(err == ECONNRESET);
  close(fd);
}

TEST_CASE("proxy: its destructor resets what it relays, closes its listener and leaves no thread") {
  Echo echo;
  const int alone = threads();  // the test's and the echo's accepter
  int port = 0, fd = -1;
  {
    FaultProxy proxy(5);
    port = proxy.add("127.0.0.1", echo.server.port());
    fd = connect_to(port);
    REQUIRE(fd >= 0);
    CHECK(round_trip(fd) >= 0);
    CHECK(threads() >= alone + 1);
  }
  CHECK(read_end(fd) == ECONNRESET);
  close(fd);
  CHECK(connect_to(port) == -ECONNREFUSED);
  CHECK(threads_settle(alone) == alone);
}
