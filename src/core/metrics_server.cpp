#include "core/metrics_server.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <vector>

#include "core/live.h"
#include "util/clock.h"
#include "util/status.h"

namespace mw {

namespace {

SetupError bad(const std::string& spec, const std::string& why) {
  return SetupError("--metrics-listen " + spec + ": " + why);
}

struct Conn {
  int fd;
  int64_t deadline;
  std::string in, out;
  size_t sent = 0;
};

// The reply to a request whose head is complete (`head`: up to the blank line).
std::string reply(const std::string& head) {
  auto status = [](const char* code, const std::string& body, const char* type = "text/plain; charset=utf-8") {
    return std::string("HTTP/1.1 ") + code + "\r\nContent-Type: " + type +
           "\r\nContent-Length: " + std::to_string(body.size()) + "\r\nConnection: close\r\n\r\n" + body;
  };
  const size_t sp1 = head.find(' '), sp2 = head.find(' ', sp1 + 1);
  if (sp1 == std::string::npos || sp2 == std::string::npos) return status("400 Bad Request", "bad request\n");
  const std::string method = head.substr(0, sp1), target = head.substr(sp1 + 1, sp2 - sp1 - 1);
  if (method != "GET" && method != "HEAD") return status("405 Method Not Allowed", "GET /metrics\n");
  const std::string path = target.substr(0, target.find('?'));
  if (path != "/metrics" && path != "/") return status("404 Not Found", "GET /metrics\n");
  std::string r = status("200 OK", live::render(), "text/plain; version=0.0.4; charset=utf-8");
  if (method == "HEAD") r.resize(r.find("\r\n\r\n") + 4);
  return r;
}

}  // namespace

MetricsServer::MetricsServer(const std::string& spec, bool any) {
  const size_t colon = spec.rfind(':');
  if (colon == std::string::npos || colon == 0 || colon + 1 == spec.size())
    throw bad(spec, "expected ADDR:PORT (127.0.0.1:9464, [::1]:9464)");
  std::string host = spec.substr(0, colon), port_text = spec.substr(colon + 1);
  char* end = nullptr;
  errno = 0;
  long port = std::strtol(port_text.c_str(), &end, 10);
  if (*end || errno || port < 0 || port > 65535) throw bad(spec, "the port must be 0 to 65535");
  sockaddr_storage ss{};
  socklen_t len = 0;
  bool loopback = false;
  if (host.size() > 2 && host.front() == '[' && host.back() == ']') {
    auto* a6 = reinterpret_cast<sockaddr_in6*>(&ss);
    a6->sin6_family = AF_INET6;
    a6->sin6_port = htons(static_cast<uint16_t>(port));
    if (inet_pton(AF_INET6, host.substr(1, host.size() - 2).c_str(), &a6->sin6_addr) != 1)
      throw bad(spec, "not an IPv6 address");
    loopback = IN6_IS_ADDR_LOOPBACK(&a6->sin6_addr);
    len = sizeof *a6;
  } else {
    auto* a4 = reinterpret_cast<sockaddr_in*>(&ss);
    a4->sin_family = AF_INET;
    a4->sin_port = htons(static_cast<uint16_t>(port));
    if (host == "localhost") host = "127.0.0.1";
    if (inet_pton(AF_INET, host.c_str(), &a4->sin_addr) != 1) throw bad(spec, "not an IPv4 address (or [IPv6])");
    loopback = (ntohl(a4->sin_addr.s_addr) >> 24) == 127;
    len = sizeof *a4;
  }
  if (!loopback && !any)
    throw bad(spec,
              "not a loopback address: anyone who can reach it reads the run's names and targets; "
              "add --metrics-any to serve other machines");
  fd_ = socket(ss.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd_ < 0) throw bad(spec, std::string("socket: ") + std::strerror(errno));
  int one = 1;
  setsockopt(fd_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  if (bind(fd_, reinterpret_cast<sockaddr*>(&ss), len) != 0 || listen(fd_, 64) != 0) {
    int e = errno;
    ::close(fd_);
    throw bad(spec, e == EADDRINUSE ? "the port is in use" : std::strerror(e));
  }
  socklen_t got = sizeof ss;
  getsockname(fd_, reinterpret_cast<sockaddr*>(&ss), &got);
  port_ = ntohs(ss.ss_family == AF_INET6 ? reinterpret_cast<sockaddr_in6*>(&ss)->sin6_port
                                         : reinterpret_cast<sockaddr_in*>(&ss)->sin_port);
  url_ = "http://" + host + ":" + std::to_string(port_) + "/metrics";
  wake_ = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (wake_ < 0) {
    ::close(fd_);
    throw bad(spec, std::string("eventfd: ") + std::strerror(errno));
  }
  live::enable(true);
  thread_ = std::thread([this] { serve(); });
}

MetricsServer::~MetricsServer() {
  uint64_t one = 1;
  (void)!write(wake_, &one, sizeof one);
  thread_.join();
  live::enable(false);
  ::close(wake_);
  ::close(fd_);
}

void MetricsServer::serve() {
  std::vector<Conn> conns;
  int64_t next_sample = 0;
  for (;;) {
    std::vector<pollfd> p{{wake_, POLLIN, 0}, {fd_, POLLIN, 0}};
    for (auto& c : conns) p.push_back({c.fd, static_cast<short>(c.out.empty() ? POLLIN : POLLOUT), 0});
    const int64_t now = now_ns();
    if (now >= next_sample) live::sample(now), next_sample = now + 250'000'000;
    int64_t wait_ms = (next_sample - now) / 1'000'000 + 1;
    for (auto& c : conns)
      wait_ms = std::min<int64_t>(wait_ms, std::max<int64_t>(0, (c.deadline - now) / 1'000'000 + 1));
    if (poll(p.data(), p.size(), static_cast<int>(wait_ms)) < 0 && errno != EINTR) break;
    if (p[0].revents) break;  // destroyed: close everything
    const int64_t t = now_ns();
    for (size_t i = 0; i < conns.size(); ++i) {
      Conn& c = conns[i];
      const short ev = p[i + 2].revents;
      bool done = t >= c.deadline;  // a slow client
      if (!done && c.out.empty() && (ev & (POLLIN | POLLHUP | POLLERR))) {
        char b[2048];
        ssize_t k = recv(c.fd, b, sizeof b, 0);
        if (k <= 0 && !(k < 0 && (errno == EAGAIN || errno == EINTR))) {
          done = true;
        } else if (k > 0) {
          c.in.append(b, static_cast<size_t>(k));
          if (size_t e = c.in.find("\r\n\r\n"); e != std::string::npos)
            c.out = reply(c.in.substr(0, e));
          else if (c.in.size() > kMaxRequest)
            c.out = "HTTP/1.1 431 Request Header Fields Too Large\r\nContent-Length: 0\r\nConnection: close\r\n\r\n";
        }
      } else if (!done && !c.out.empty() && (ev & (POLLOUT | POLLHUP | POLLERR))) {
        ssize_t k = send(c.fd, c.out.data() + c.sent, c.out.size() - c.sent, MSG_NOSIGNAL);
        if (k > 0) c.sent += static_cast<size_t>(k);
        done = (k < 0 && errno != EAGAIN && errno != EINTR) || c.sent == c.out.size();
      }
      if (done) {
        ::close(c.fd);
        conns.erase(conns.begin() + static_cast<long>(i));
        p.erase(p.begin() + static_cast<long>(i) + 2);
        --i;
      }
    }
    if (p[1].revents & POLLIN) {
      for (;;) {
        int c = accept4(fd_, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (c < 0) break;
        if (static_cast<int>(conns.size()) >= kMaxConnections) {
          ::close(c);  // full: the client retries on its next scrape
          continue;
        }
        conns.push_back({c, now_ns() + kClientTimeoutNs, {}, {}});
      }
    }
  }
  for (auto& c : conns) ::close(c.fd);
}

}  // namespace mw
