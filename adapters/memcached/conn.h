// One connection to a memcached server: a non-blocking TCP socket, with non-blocking reads and
// writes for the event loop and blocking calls bounded by a deadline for set-up (connect,
// version, stats, flush_all, preload, read-back).
#pragma once
#include <cstdint>
#include <functional>
#include <map>
#include <string>

#include "reply.h"

namespace mw::memcached {

// Where to connect; shared by the adapter, its clients and the probes.
struct Endpoint {
  std::string host;
  int port = 11211;
  double timeout_s = 5;
  Limits limits;
  std::string where() const { return host + ":" + std::to_string(port); }
};

int64_t now_ns();

class Conn {
 public:
  // Connects and asks "version", within the deadline. Throws SetupError
  // "memcached host:port: ..." naming what failed.
  Conn(const Endpoint& ep, int64_t deadline_ns);
  Conn(const Conn&) = delete;
  Conn& operator=(const Conn&) = delete;
  ~Conn();

  int fd() const { return fd_; }
  // Non-blocking: bytes moved (> 0), 0 when the call would block, -1 on end of stream or error
  // (error() says which).
  long read_some(char* buf, size_t n);
  long write_some(const char* buf, size_t n);
  const std::string& error() const { return err_; }
  const std::string& version() const { return version_; }

  // Blocking, bounded by the deadline. call(): one meta request and its reply (views valid
  // until the next call). line(): one request answered by one line (flush_all, version).
  // stats(): "stats [group]" as name -> value. All throw SetupError on time-out, lost
  // connection, protocol error or a reply over the limit.
  Reply call(const std::string& request, int64_t deadline_ns, const std::string& what);
  std::string line(const std::string& request, int64_t deadline_ns);
  std::map<std::string, std::string> stats(const std::string& group, int64_t deadline_ns);
  // Pipelined: sends `payload` (several meta requests), then reads `count` replies; `each` gets
  // every reply; each must arrive within timeout_s of the previous one.
  void pipeline(const std::string& payload, size_t count, const std::function<void(const Reply&)>& each);

  const Endpoint& endpoint() const { return ep_; }

 private:
  [[noreturn]] void fail(const std::string& what) const;
  void wait(short events, int64_t deadline_ns, const std::string& doing);
  void write_all(const std::string& data, int64_t deadline_ns, const std::string& what);
  void fill(int64_t deadline_ns, const std::string& what);  // reads more into in_
  std::string_view read_line(int64_t deadline_ns, const std::string& what);
  Reply read_reply(int64_t deadline_ns, const std::string& what);
  void consume();  // drops the bytes of the last reply or line

  Endpoint ep_;
  int fd_ = -1;
  std::string err_, version_;
  std::string in_;
  size_t off_ = 0, used_ = 0;
};

}  // namespace mw::memcached
