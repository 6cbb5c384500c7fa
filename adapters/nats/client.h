// One connection to a NATS server through the NATS C client (nats.c): no reconnect (a lost
// server fails what is in flight instead of queueing it for later), every blocking call bounded
// by the job's timeout, the library's errors as one line ("nats 127.0.0.1:4222: ..."), what the
// library reads checked first (wire.h).
#pragma once
#include <nats/nats.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "adapters/conn/hostport.h"
#include "adapters/nats/wire.h"

namespace mw::nats {

// What a frame may hold besides a message of the job: its subject and headers, or a JetStream
// API reply (a stream's or consumer's JSON).
constexpr uint64_t kFrameSlack = 64 << 10;

struct Endpoint {
  std::string host = "127.0.0.1";
  int port = 4222;
  // A cluster's other nodes (--cluster, or --host's list): the connect tries each in a random
  // order until one answers (nats.c's server pool), so a dead node is passed over.
  std::vector<conn::HostPort> others;
  double timeout_s = 5;
  std::string user, password;                    // user "": no authentication
  uint64_t max_frame = (1 << 20) + kFrameSlack;  // the largest MSG taken (the server's default max_payload)
  std::string where() const;                     // "127.0.0.1:4222"; a cluster's "127.0.0.1:4222,4223,4224"
  int64_t timeout_ms() const;
};

// The library's text for a status, with its last error when it has one.
std::string why(natsStatus s, jsErrCode code = static_cast<jsErrCode>(0));

// What nats.c's callbacks reach. They run on the library's threads, possibly after a close
// returned, so the library is handed a number, never a pointer: a late callback finds nothing.
struct Hooks {
  virtual ~Hooks() = default;
  // `why`: why mwbench closed it (Wire::ended); "" when the server did.
  virtual void closed(const std::string& /*why*/) {}
  // An asynchronous publish's acknowledgement (pa) or failure (pae); `msg` is the message sent.
  virtual void acked(natsMsg* /*msg*/, jsPubAck* /*pa*/, jsPubAckErr* /*pae*/) {}
};
// nats.c's jsPubAckHandler: hands the acknowledgement to the hooks named by `closure`.
void on_ack(jsCtx*, natsMsg* msg, jsPubAck* pa, jsPubAckErr* pae, void* closure);

class Conn {
 public:
  // Connects within the timeout; throws SetupError "nats host:port: ..." naming what failed, or
  // Interrupted on a stop.
  explicit Conn(const Endpoint& ep, std::shared_ptr<Hooks> hooks = nullptr);
  Conn(const Conn&) = delete;
  Conn& operator=(const Conn&) = delete;
  ~Conn();

  natsConnection* get() const { return nc_; }
  // The connection's JetStream context (API requests wait up to the timeout); with hooks, its
  // asynchronous publishes report to them, up to `max_pending` in flight.
  jsCtx* js(int64_t max_pending = 0);
  // The number nats.c's callbacks carry (jsOptions' closures).
  void* closure() const { return reinterpret_cast<void*>(id_); }
  bool closed() const { return natsConnection_IsClosed(nc_); }
  const Endpoint& endpoint() const { return ep_; }
  // Why a call failed with `s`: why mwbench closed the connection, else the library's text.
  std::string why(natsStatus s, jsErrCode code = static_cast<jsErrCode>(0)) const;
  [[noreturn]] void fail(const std::string& what) const;

 private:
  Endpoint ep_;
  std::shared_ptr<Wire> wire_;
  uintptr_t id_ = 0;
  natsOptions* opts_ = nullptr;
  natsConnection* nc_ = nullptr;
  jsCtx* js_ = nullptr;
};

}  // namespace mw::nats
