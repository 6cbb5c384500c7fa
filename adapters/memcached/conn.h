// One connection to a memcached server (conn/stream.h: a non-blocking TCP socket) with the
// blocking calls of set-up: version, stats, flush_all, preload, read-back.
#pragma once
#include <cstdint>
#include <functional>
#include <map>
#include <string>

#include "adapters/conn/stream.h"
#include "adapters/memcached/reply.h"

namespace mw::memcached {

using conn::now_ns;

// Where to connect; shared by the adapter, its clients and the probes.
struct Endpoint : conn::Address {
  Endpoint() { port = 11211; }
  Limits limits;
  Protocol protocol = Protocol::Meta;
};

class Conn : public conn::Stream {
 public:
  // Connects and asks "version", within the deadline. Throws SetupError
  // "memcached host:port: ..." naming what failed.
  Conn(const Endpoint& ep, int64_t deadline_ns);

  const std::string& version() const { return version_; }

  // Blocking, bounded by the deadline. call(): one request (in the endpoint's protocol) and its reply (views valid
  // until the next call). line(): one request answered by one line (flush_all, version).
  // stats(): "stats [group]" as name -> value. All throw SetupError on time-out, lost
  // connection, protocol error or a reply over the limit.
  Reply call(const std::string& request, int64_t deadline_ns, const std::string& what);
  std::string line(const std::string& request, int64_t deadline_ns);
  std::map<std::string, std::string> stats(const std::string& group, int64_t deadline_ns);
  // Pipelined: sends `payload` (several requests in the endpoint's protocol), then reads `count` replies; `each` gets
  // every reply; each must arrive within timeout_s of the previous one.
  void pipeline(const std::string& payload, size_t count, const std::function<void(const Reply&)>& each);

  const Endpoint& endpoint() const { return ep_; }

 private:
  std::string_view read_line(int64_t deadline_ns, const std::string& what);
  Reply read_reply(int64_t deadline_ns, const std::string& what);

  Endpoint ep_;
  std::string version_;
};

}  // namespace mw::memcached
