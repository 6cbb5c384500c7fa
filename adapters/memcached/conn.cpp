#include "conn.h"

#include <poll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>

#include "net.h"
#include "status.h"

namespace mw::memcached {
namespace {

std::string fmt_seconds(double s) {
  char b[32];
  std::snprintf(b, sizeof b, "%g", s);
  return std::string(b) + "s";
}

}  // namespace

int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

void Conn::fail(const std::string& what) const { throw SetupError("memcached " + ep_.where() + ": " + what); }

Conn::Conn(const Endpoint& ep, int64_t deadline) : ep_(ep) {
  std::string err;
  double left = std::max(0.001, static_cast<double>(deadline - now_ns()) / 1e9);
  fd_ = tcp_connect(ep_.host, ep_.port, left, &err);
  if (fd_ < 0) {
    if (err == std::strerror(EMFILE) || err == std::strerror(ENFILE)) {
      rlimit rl{};
      getrlimit(RLIMIT_NOFILE, &rl);
      err += " (ulimit -n " + std::to_string(rl.rlim_cur) + "; each memcached client needs one connection)";
    }
    fail("cannot connect: " + err);
  }
  try {
    std::string v = line("version\r\n", deadline);
    if (v.rfind("VERSION ", 0) != 0) fail("'version' answered '" + printable(v, 100) + "' (is it a memcached port?)");
    version_ = printable(v.substr(8), 60);
  } catch (...) {
    close(fd_);
    throw;
  }
}

Conn::~Conn() {
  if (fd_ >= 0) close(fd_);
}

long Conn::read_some(char* buf, size_t n) {
  ssize_t r = ::read(fd_, buf, n);
  if (r > 0) return r;
  if (r == 0)
    err_ = "connection closed by the server";
  else if (errno == EAGAIN || errno == EINTR)
    return 0;
  else
    err_ = std::string("connection lost: ") + std::strerror(errno);
  return -1;
}

long Conn::write_some(const char* buf, size_t n) {
  ssize_t r = ::send(fd_, buf, n, MSG_NOSIGNAL);
  if (r >= 0) return r;
  if (errno == EAGAIN || errno == EINTR) return 0;
  err_ = std::string("connection lost while sending: ") + std::strerror(errno);
  return -1;
}

void Conn::wait(short events, int64_t deadline, const std::string& doing) {
  for (;;) {
    int64_t left = deadline - now_ns();
    if (left <= 0) fail("no answer to " + doing + " within the timeout (" + fmt_seconds(ep_.timeout_s) + ")");
    pollfd p{fd_, events, 0};
    int n = poll(&p, 1, static_cast<int>(std::min<int64_t>(left / 1000000 + 1, 1000)));
    if (n > 0) return;
    if (n < 0 && errno != EINTR) fail(std::string("poll: ") + std::strerror(errno));
  }
}

void Conn::write_all(const std::string& data, int64_t deadline, const std::string& what) {
  size_t off = 0;
  while (off < data.size()) {
    long n = write_some(data.data() + off, data.size() - off);
    if (n < 0) fail(err_);
    if (n > 0)
      off += static_cast<size_t>(n);
    else
      wait(POLLOUT, deadline, what + " (sending)");
  }
}

void Conn::consume() {
  off_ += used_;
  used_ = 0;
  if (off_ == in_.size()) {
    in_.clear();
    off_ = 0;
  } else if (off_ > 65536 && off_ > in_.size() / 2) {
    in_.erase(0, off_);
    off_ = 0;
  }
}

void Conn::fill(int64_t deadline, const std::string& what) {
  char buf[65536];
  for (;;) {
    long n = read_some(buf, sizeof buf);
    if (n < 0) fail(err_ + " (answer to " + what + ")");
    if (n > 0) {
      in_.append(buf, static_cast<size_t>(n));
      return;
    }
    wait(POLLIN, deadline, what);
  }
}

std::string_view Conn::read_line(int64_t deadline, const std::string& what) {
  consume();
  for (;;) {
    std::string_view in = std::string_view(in_).substr(off_);
    size_t nl = in.substr(0, Limits::kMaxLine + 2).find('\n');
    if (nl != std::string_view::npos) {
      if (nl == 0 || in[nl - 1] != '\r')
        fail("protocol error: a reply line not ended by CRLF (answer to " + what + ")");
      used_ = nl + 1;
      return in.substr(0, nl - 1);
    }
    if (in.size() > Limits::kMaxLine + 1)
      fail("protocol error: a reply line longer than " + std::to_string(Limits::kMaxLine) + " bytes (answer to " +
           what + ")");
    fill(deadline, what);
  }
}

Reply Conn::read_reply(int64_t deadline, const std::string& what) {
  consume();
  for (;;) {
    Reply r;
    std::string err;
    Parse p = parse_reply(std::string_view(in_).substr(off_), ep_.limits, r, used_, err);
    if (p == Parse::Done) return r;
    if (p == Parse::Error) fail(err + " (answer to " + what + ")");
    fill(deadline, what);
  }
}

Reply Conn::call(const std::string& request, int64_t deadline, const std::string& what) {
  write_all(request, deadline, what);
  return read_reply(deadline, what);
}

std::string Conn::line(const std::string& request, int64_t deadline) {
  std::string what = "'" + printable(request.substr(0, request.find('\r')), 40) + "'";
  write_all(request, deadline, what);
  return std::string(read_line(deadline, what));
}

std::map<std::string, std::string> Conn::stats(const std::string& group, int64_t deadline) {
  std::string req = group.empty() ? "stats\r\n" : "stats " + group + "\r\n";
  std::string what = "'" + req.substr(0, req.size() - 2) + "'";
  write_all(req, deadline, what);
  std::map<std::string, std::string> out;
  for (size_t i = 0;; ++i) {
    std::string_view l = read_line(deadline, what);
    if (l == "END") return out;
    if (l.rfind("STAT ", 0) != 0) fail(what + " answered '" + printable(l, 100) + "'");
    if (i >= 4096) fail(what + " answered more than 4096 lines");
    l.remove_prefix(5);
    size_t sp = l.find(' ');
    out[printable(l.substr(0, sp), 60)] = sp == std::string_view::npos ? "" : printable(l.substr(sp + 1), 200);
  }
}

void Conn::pipeline(const std::string& payload, size_t count, const std::function<void(const Reply&)>& each) {
  const auto step = static_cast<int64_t>(ep_.timeout_s * 1e9);
  // The deadline moves with progress: each chunk sent and each reply must come within the timeout.
  size_t off = 0;
  int64_t deadline = now_ns() + step;
  while (off < payload.size()) {
    long n = write_some(payload.data() + off, payload.size() - off);
    if (n < 0) fail(err_);
    if (n > 0) {
      off += static_cast<size_t>(n);
      deadline = now_ns() + step;
    } else {
      wait(POLLOUT, deadline, "a pipelined request (sending)");
    }
  }
  for (size_t i = 0; i < count; ++i) each(read_reply(now_ns() + step, "a pipelined request"));
}

}  // namespace mw::memcached
