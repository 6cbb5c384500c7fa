#include "util/net.h"

#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstring>

namespace mw {

namespace {

// Waits for a non-blocking connect: 1 ready, 0 timed out (or `give_up` said so), -1 error.
int wait_connected(int fd, double timeout_s, const std::function<bool()>& give_up) {
  const auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
  for (;;) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(end - std::chrono::steady_clock::now());
    if (left.count() <= 0 || (give_up && give_up())) return 0;
    pollfd p{fd, POLLOUT, 0};
    const int n = poll(&p, 1, static_cast<int>(std::min<int64_t>(left.count() + 1, give_up ? 100 : INT32_MAX)));
    if (n != 0 && !(n < 0 && errno == EINTR)) return n;
  }
}

}  // namespace

int tcp_connect(const std::string& host, int port, double timeout_s, std::string* err,
                const std::function<bool()>& give_up) {
  addrinfo hints{}, *res = nullptr;
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  int rc = getaddrinfo(host.c_str(), std::to_string(port).c_str(), &hints, &res);
  if (rc != 0) {
    *err = std::string("cannot resolve host: ") + gai_strerror(rc);
    return -1;
  }
  int fd = -1;
  for (addrinfo* ai = res; ai; ai = ai->ai_next) {
    fd = socket(ai->ai_family, ai->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, ai->ai_protocol);
    if (fd < 0) {  // EMFILE at the ulimit: say so rather than nothing
      *err = std::strerror(errno);
      continue;
    }
    if (connect(fd, ai->ai_addr, ai->ai_addrlen) == 0) break;
    if (errno == EINPROGRESS) {
      int n = wait_connected(fd, timeout_s, give_up);
      int soerr = 0;
      socklen_t len = sizeof soerr;
      if (n == 1 && getsockopt(fd, SOL_SOCKET, SO_ERROR, &soerr, &len) == 0 && soerr == 0) break;
      *err = n == 0 ? "connection timed out" : std::strerror(soerr ? soerr : errno);
    } else {
      *err = std::strerror(errno);
    }
    close(fd);
    fd = -1;
  }
  freeaddrinfo(res);
  if (fd >= 0) {
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  }
  return fd;
}

std::string tcp_probe(const std::string& host, int port, const std::string& request, const std::string& expect,
                      double timeout_s) {
  std::string err;
  int fd = tcp_connect(host, port, timeout_s, &err);
  if (fd < 0) return err;
  std::string got;
  if (write(fd, request.data(), request.size()) == static_cast<ssize_t>(request.size())) {
    pollfd p{fd, POLLIN, 0};
    char buf[256];
    ssize_t n = poll(&p, 1, static_cast<int>(timeout_s * 1000)) == 1 ? read(fd, buf, sizeof buf) : -1;
    if (n > 0) got.assign(buf, static_cast<size_t>(n));
  }
  close(fd);
  return got.rfind(expect, 0) == 0 ? "" : "no " + expect + " answer";
}

}  // namespace mw
