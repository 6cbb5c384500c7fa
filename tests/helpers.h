// What several test files need: a temp dir removed afterwards, and a job to run.
#pragma once
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <unistd.h>
#include <sys/socket.h>

#include <filesystem>
#include <string>

#include "job.h"

namespace mw::test {

struct TempDir {
  std::string path;
  explicit TempDir(const char* base = "/var/tmp") {
    std::string tmpl = std::string(base) + "/mwbench-test-XXXXXX";
    path = mkdtemp(tmpl.data());
  }
  ~TempDir() { std::filesystem::remove_all(path); }
};

// A listening socket on 127.0.0.1 at a free port, for the tests' own small servers (hostile
// ones among them): returns the fd (-1 on failure) and sets `port`.
inline int listen_loopback(int backlog, int& port) {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  int one = 1;
  setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof a;
  if (fd < 0 || bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 || listen(fd, backlog) != 0 ||
      getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) != 0) {
    if (fd >= 0) close(fd);
    return -1;
  }
  port = ntohs(a.sin_port);
  return fd;
}

inline Job make_job(const std::string& adapter, const std::string& op, uint64_t n, int clients = 1) {
  Job j;
  j.adapter = adapter;
  j.op = op;
  j.name = adapter + " " + op;
  j.n = n;
  j.clients = clients;
  return j;
}

}  // namespace mw::test
