// One connection to a Redis server (conn/stream.h: a non-blocking socket, optionally TLS) with
// the blocking calls of set-up: the handshake's AUTH and PING, INFO, preload, read-back.
#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "adapters/conn/stream.h"
#include "adapters/redis/reply.h"

namespace mw::redis {

using conn::now_ns;

// The TLS settings of a job (--tls, --cacert, --cert, --key, --sni); errors name redis.
struct TlsContext : conn::TlsContext {
  TlsContext(const std::string& ca, const std::string& cert_file, const std::string& key_file)
      : conn::TlsContext("redis", ca, cert_file, key_file) {}
};

struct Sentinels;    // sentinel.h
class PrimaryWatch;  // sentinel.h

// Where and how to connect; shared by the adapter, its clients and the probes.
struct Endpoint : conn::Address {
  Endpoint() { port = 6379; }
  std::string user, password;  // AUTH [user] password when password is set
  Limits limits;
  // A replicated set-up's (--sentinel): each connection goes to the primary they name, not to
  // host and port.
  std::shared_ptr<const Sentinels> sentinels;
  // ... and what they name primary, watched: a client drops its connection when it changes.
  std::shared_ptr<const PrimaryWatch> watch;
};

class Conn : public conn::Stream {
 public:
  // Connects (TCP, TLS handshake with certificate and host name check, AUTH, PING), all
  // within the deadline. Throws SetupError "redis host:port: ..." naming what failed.
  Conn(const Endpoint& ep, int64_t deadline_ns);

  // Blocking, bounded by the deadline: one command and its reply (argv as RESP bulks). An
  // error reply is returned as a Reply of type '-'. Throws SetupError on time-out, lost
  // connection, protocol error or a reply over the limit.
  // `raw`, when given, gets the reply's bytes (a nested reply's whole RESP), valid until the next call.
  Reply command(const std::vector<std::string>& argv, int64_t deadline_ns, std::string_view* raw = nullptr);
  // Pipelined: sends `payload` (several commands), then reads `count` replies; `each` gets
  // every reply; each reply must arrive within timeout_s of the previous one.
  void pipeline(const std::string& payload, size_t count, const std::function<void(const Reply&)>& each);

  const Endpoint& endpoint() const { return ep_; }

 private:
  Reply read_reply(int64_t deadline_ns, const std::string& what, std::string_view* raw = nullptr);
  void greet(int64_t deadline_ns);  // AUTH and PING

  struct Followed {};  // `ep` names the primary already
  Conn(const Endpoint& ep, int64_t deadline_ns, Followed);

  Endpoint ep_;
};

// `ep`, or with Sentinels the primary they name now (within the deadline).
Endpoint follow(const Endpoint& ep, int64_t deadline_ns);

// Appends one RESP command (an array of bulks).
void append_command(std::string& out, const std::vector<std::string>& argv);

}  // namespace mw::redis
