// The round trip of this machine's network stack: each client sends --size bytes over a TCP
// connection on the loopback interface to an echo server inside mwbench and reads them back.
// Nothing is parsed or stored: the figure is what any request-reply protocol (Redis, memcached,
// PostgreSQL) pays per request on loopback before its server does any work.
#include "adapters/echo/echo.h"

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <mutex>
#include <thread>
#include <vector>

#include "api/options.h"

namespace mw {
namespace {

enum class Op { Tcp };

struct EchoOptions {
  uint64_t size = 1;
};

void no_delay(int fd) {
  int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
}

// Moves exactly n bytes (send or recv); false on an error or the end of the stream.
template <class F>
bool all(F io, char* p, size_t n) {
  while (n > 0) {
    ssize_t k = io(p, n);
    if (k < 0 && errno == EINTR) continue;
    if (k <= 0) return false;
    p += k, n -= static_cast<size_t>(k);
  }
  return true;
}

// The echo server: one thread accepts, one thread per connection echoes what it reads.
class EchoServer {
 public:
  EchoServer() {
    fd_ = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd_ < 0) throw SetupError(std::string("echo: socket: ") + std::strerror(errno));
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof a;
    if (bind(fd_, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 || listen(fd_, 128) != 0 ||
        getsockname(fd_, reinterpret_cast<sockaddr*>(&a), &len) != 0) {
      int e = errno;
      ::close(fd_);
      throw SetupError(std::string("echo: cannot listen on 127.0.0.1: ") + std::strerror(e));
    }
    port_ = ntohs(a.sin_port);
    acceptor_ = std::thread([this] { accept_loop(); });
  }
  ~EchoServer() {
    stop_ = true;
    acceptor_.join();
    {
      std::lock_guard lk(m_);
      for (int c : conns_) shutdown(c, SHUT_RDWR);  // wakes the echo threads
    }
    for (auto& t : echoes_) t.join();
    for (int c : conns_) ::close(c);
    ::close(fd_);
  }
  int port() const { return port_; }

 private:
  void accept_loop() {
    while (!stop_) {
      pollfd p{fd_, POLLIN, 0};
      if (poll(&p, 1, 50) <= 0) continue;
      int c = accept4(fd_, nullptr, nullptr, SOCK_CLOEXEC);
      if (c < 0) continue;
      no_delay(c);
      std::lock_guard lk(m_);
      conns_.push_back(c);
      echoes_.emplace_back([c] {
        std::vector<char> b(64 << 10);
        for (;;) {
          ssize_t k = recv(c, b.data(), b.size(), 0);
          if (k < 0 && errno == EINTR) continue;
          if (k <= 0 ||
              !all([c](char* at, size_t n) { return send(c, at, n, MSG_NOSIGNAL); }, b.data(), static_cast<size_t>(k)))
            return;
        }
      });
    }
  }
  int fd_ = -1, port_ = 0;
  std::atomic<bool> stop_{false};
  std::thread acceptor_;
  std::mutex m_;
  std::vector<int> conns_;
  std::vector<std::thread> echoes_;
};

class EchoClient final : public Client {
 public:
  EchoClient(int port, size_t size, double timeout_s) : buf_(size, 'x') {
    fd_ = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    a.sin_port = htons(static_cast<uint16_t>(port));
    if (fd_ < 0 || connect(fd_, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
      int e = errno;
      if (fd_ >= 0) ::close(fd_);
      throw SetupError("echo: cannot connect to 127.0.0.1:" + std::to_string(port) + ": " + std::strerror(e));
    }
    no_delay(fd_);
    timeval tv{static_cast<time_t>(timeout_s),
               static_cast<suseconds_t>((timeout_s - static_cast<double>(static_cast<time_t>(timeout_s))) * 1e6)};
    setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  }
  ~EchoClient() override { ::close(fd_); }
  OpResult run(uint64_t) override {
    const size_t n = buf_.size();
    if (!all([this](char* p, size_t k) { return send(fd_, p, k, MSG_NOSIGNAL); }, buf_.data(), n))
      return {Status::Error, 0, "send failed"};
    if (!all([this](char* p, size_t k) { return recv(fd_, p, k, 0); }, buf_.data(), n))
      return {errno == EAGAIN ? Status::Timeout : Status::Error, 0, "no echo"};
    return {Status::Ok, static_cast<uint32_t>(n)};
  }

 private:
  int fd_ = -1;
  std::vector<char> buf_;
};

class EchoAdapter final : public Adapter {
 public:
  explicit EchoAdapter(const Job& j) : o_(options_of<EchoOptions>(j)) {}
  void prepare(const Job&) override { server_ = std::make_unique<EchoServer>(); }
  std::unique_ptr<Client> open(const Job& j, int) override {
    return std::make_unique<EchoClient>(server_->port(), o_.size, j.timeout_s > 0 ? j.timeout_s : 5);
  }
  std::string target() const override { return "127.0.0.1 (loopback)"; }
  Info describe() override { return {{"size", std::to_string(o_.size)}, {"server", "in-process echo, TCP_NODELAY"}}; }
  void teardown() override { server_.reset(); }

 private:
  EchoOptions o_;
  std::unique_ptr<EchoServer> server_;
};

}  // namespace

AdapterSpec echo_adapter_spec() {
  return {.name = "echo",
          .summary = "the loopback round trip: TCP messages echoed by a server inside mwbench, nothing served",
          .ops = {{"tcp", Op::Tcp}},
          .default_ops = "tcp",
          .options = {opt(&EchoOptions::size,
                          {.name = "size", .help = "bytes sent and echoed per op", .min = 1, .max = 1 << 20})},
          .unavailable = nullptr,
          .make = [](const Job& j, WorkloadPtr) { return std::make_unique<EchoAdapter>(j); },
          .connects = true,
          .latency_is = {{"tcp", LatencyKind::RoundTrip}},
          .reset = "a new echo server inside mwbench each run"};
}

}  // namespace mw
