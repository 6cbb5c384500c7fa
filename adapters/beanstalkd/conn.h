// One connection to a beanstalkd server (conn/stream.h: a non-blocking TCP socket) with the
// blocking calls of set-up and of a consumer: a command and its reply within a deadline, and a
// reply that is waited for without blocking past a given time (a reserve that may take long).
#pragma once
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "adapters/beanstalkd/reply.h"
#include "adapters/conn/stream.h"

namespace mw::beanstalkd {

using conn::now_ns;

// Where to connect; shared by the adapter, its clients and the probes. `tube`: the tube a new
// connection uses ("" : beanstalkd's "default").
struct Endpoint : conn::Address {
  Endpoint() { port = 11300; }
  Limits limits;
  std::string tube;
};

class Conn : public conn::Stream {
 public:
  // Connects and sends "use <tube>" (or "list-tube-used"), within the deadline. Throws SetupError
  // "beanstalkd host:port: ..." naming what failed.
  Conn(const Endpoint& ep, int64_t deadline_ns);

  // A command and its reply (views valid until the next call); throws SetupError on a time-out,
  // a lost connection, a protocol error or a reply over the limit.
  Reply call(const std::string& command, int64_t deadline_ns);
  void send(const std::string& command, int64_t deadline_ns);
  // Whether a reply is there to read by `until_ns` (false: not yet; the caller waits again).
  bool ready(int64_t until_ns);
  Reply read(int64_t deadline_ns, const std::string& what);
  // "stats" or "stats-tube <tube>" as name -> value (the YAML's "key: value" lines).
  std::map<std::string, std::string> stats(const std::string& command, int64_t deadline_ns);

  const Endpoint& endpoint() const { return ep_; }

 private:
  Endpoint ep_;
};

// "beanstalkd host:port: <what>" as a SetupError.
[[noreturn]] void fail(const Endpoint& ep, const std::string& what);

}  // namespace mw::beanstalkd
