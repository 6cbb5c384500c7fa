// One libmosquitto client (a session), non-threaded: connected (CONNACK) and subscribed (SUBACK) within a
// deadline, its socket driven by the caller (the driver's event loop, or a consumer's waits).
#pragma once
#include <mosquitto.h>

#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include "adapters/mqtt/wire.h"

namespace mw::mqtt {

// What a packet may hold besides a message of the job: its topic, packet id and properties.
constexpr uint64_t kFrameSlack = 64 << 10;

struct Endpoint {
  std::string host = "127.0.0.1";
  int port = 1883;
  double timeout_s = 5;
  std::string user, password;                    // user "": anonymous
  uint64_t max_frame = (1 << 20) + kFrameSlack;  // the largest packet taken from the broker
  std::string where() const { return host + ":" + std::to_string(port); }
};

class Session {
 public:
  // Connects as `id` ("" : a random id, clean session) and waits for the CONNACK; throws
  // SetupError "mqtt host:port: ..." naming what failed.
  Session(const Endpoint& ep, const std::string& id, bool clean_session);
  ~Session();
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;

  // Subscribes and waits for the SUBACK; throws SetupError when refused or not in time.
  void subscribe(const std::string& filter, int qos);
  // Ends the connection in order: the queued acknowledgements, at QoS 2 the handshakes under way,
  // a DISCONNECT, the broker's close (within the timeout). Messages read after the DISCONNECT are
  // dropped unacknowledged (the session keeps them), except at QoS 0 (the broker will not send
  // those again): added to `messages`. The destructor ends a session not ended yet.
  void end(int qos);
  // A lost connection (a broker killed or stopped): nothing is tried on it, the destructor only
  // closes its socket.
  void abandon() { ended_ = true; }
  // One turn of the network loop: waits up to timeout_ms for the socket; "" or why it failed.
  std::string loop(int timeout_ms);
  // Why a call of the library failed with `rc`: why mwbench closed the connection (a packet
  // over max_frame), else the library's text.
  std::string error(int rc) const;
  mosquitto* get() const { return m_; }
  const Endpoint& endpoint() const { return ep_; }

  // Set by the callbacks.
  std::function<void(int mid)> on_publish;
  std::deque<std::string> messages;  // received, not yet taken
  // When set, every message received goes here (its topic and payload) instead of `messages`.
  std::function<void(std::string_view topic, std::string_view payload)> on_message;

 private:
  [[noreturn]] void fail(const std::string& what) const;
  void flush(int64_t until_ms);
  void settle(int64_t until_ms);
  void wait_for(const bool& flag, const std::string& what);

  Endpoint ep_;
  mosquitto* m_ = nullptr;
  std::shared_ptr<Wire> wire_;
  int fd_ = -1;  // the socket wire_ watches
  bool connected_ = false, subscribed_ = false, ended_ = false;
  int connack_ = -1, granted_ = -1;
};

std::string error_text(int rc);  // mosquitto_strerror, with errno for MOSQ_ERR_ERRNO

}  // namespace mw::mqtt
