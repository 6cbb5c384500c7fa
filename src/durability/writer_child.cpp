#include "writer_child.h"

#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <string>

#include "status.h"

namespace mw {
namespace {

bool write_all(int fd, const void* p, size_t n) {
  const char* c = static_cast<const char*>(p);
  while (n) {
    ssize_t k = ::send(fd, c, n, MSG_NOSIGNAL);
    if (k < 0 && errno == EINTR) continue;
    if (k <= 0) return false;
    c += k, n -= static_cast<size_t>(k);
  }
  return true;
}

// Reads n bytes, each wait bounded by timeout_ms (-1: none). False on end of stream, error or time-out.
bool read_all(int fd, void* p, size_t n, int timeout_ms) {
  char* c = static_cast<char*>(p);
  while (n) {
    pollfd q{fd, POLLIN, 0};
    int r = poll(&q, 1, timeout_ms);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return false;
    ssize_t k = ::read(fd, c, n);
    if (k < 0 && errno == EINTR) continue;
    if (k <= 0) return false;
    c += k, n -= static_cast<size_t>(k);
  }
  return true;
}

// An answer: status, bytes, and the detail (at most 200 bytes).
struct Answer {
  uint8_t status;
  uint32_t bytes;
  uint16_t detail_len;
};

[[noreturn]] void serve(int fd, const std::function<std::unique_ptr<Client>()>& make) {
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  for (int sig : {SIGINT, SIGTERM, SIGHUP, SIGPIPE}) signal(sig, SIG_IGN);  // the parent decides
  std::unique_ptr<Client> c;
  std::string why;
  try {
    c = make();
  } catch (const std::exception& e) {
    why = e.what();
  }
  for (;;) {
    uint64_t seq = 0;
    if (!read_all(fd, &seq, sizeof seq, -1)) _exit(0);
    OpResult r{Status::Error, 0, why};
    if (c) {
      try {
        r = c->run(seq);
      } catch (const std::exception& e) {
        why = e.what();
        r = {Status::Error, 0, why};
      }
    }
    std::string d(r.detail.substr(0, 200));
    Answer a{static_cast<uint8_t>(r.status), r.bytes, static_cast<uint16_t>(d.size())};
    if (!write_all(fd, &a, sizeof a) || !write_all(fd, d.data(), d.size())) _exit(0);
  }
}

class ChildClient final : public Client {
 public:
  ChildClient(int fd, pid_t pid, double timeout_s)
      : fd_(fd), pid_(pid), timeout_ms_(static_cast<int>(std::max(1.0, timeout_s * 1000))) {}
  ~ChildClient() override { close(fd_); }  // the child reads end-of-file and exits; kill_all reaps it
  bool alive() const override { return alive_; }
  OpResult run(uint64_t seq) override {
    Answer a{};
    if (!alive_ || !write_all(fd_, &seq, sizeof seq) || !read_all(fd_, &a, sizeof a, timeout_ms_)) return gone();
    detail_.resize(std::min<uint16_t>(a.detail_len, 200));
    if (!read_all(fd_, detail_.data(), detail_.size(), timeout_ms_)) return gone();
    Status st = a.status < kStatusCount ? static_cast<Status>(a.status) : Status::Error;
    return {st, a.bytes, detail_};
  }

 private:
  OpResult gone() {
    alive_ = false;
    detail_ = "the writer process (pid " + std::to_string(pid_) + ") is gone or did not answer";
    return {Status::Error, 0, detail_};
  }
  int fd_;
  pid_t pid_;
  int timeout_ms_;
  bool alive_ = true;
  std::string detail_;
};

}  // namespace

std::unique_ptr<Client> WriterChildren::spawn(std::function<std::unique_ptr<Client>()> make, double timeout_s) {
  int sv[2];
  if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0)
    throw SetupError(std::string("writer process: socketpair: ") + std::strerror(errno));
  pid_t pid = fork();
  if (pid < 0) {
    close(sv[0]), close(sv[1]);
    throw SetupError(std::string("writer process: fork: ") + std::strerror(errno));
  }
  if (pid == 0) {
    close(sv[0]);
    serve(sv[1], make);
  }
  close(sv[1]);
  {
    std::lock_guard lk(mu_);
    pids_.push_back(pid);
  }
  return std::make_unique<ChildClient>(sv[0], pid, timeout_s);
}

void WriterChildren::kill_all() {
  std::lock_guard lk(mu_);
  for (pid_t p : pids_) kill(p, SIGKILL);
  for (pid_t p : pids_)
    while (waitpid(p, nullptr, 0) < 0 && errno == EINTR) {
    }
  pids_.clear();
}

}  // namespace mw
