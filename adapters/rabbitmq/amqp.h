// One AMQP 0-9-1 connection to RabbitMQ (rabbitmq-c) with channel 1 open: the login, the queue
// declarations, and the broker's errors as one line ("rabbitmq 127.0.0.1:5672: ACCESS_REFUSED
// ..."). Every blocking call is bounded by the job's timeout (rabbitmq-c's handshake and RPC
// timeouts); a publish is a write of a few frames.
#pragma once
#include <amqp.h>

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "adapters/conn/hostport.h"

namespace mw::rabbitmq {

enum class QueueType { Classic, Quorum };
const char* queue_type_name(QueueType t);

struct Endpoint {
  std::string host = "127.0.0.1";
  int port = 5672;
  // A cluster's other nodes (--cluster, or --host's list): a connect that fails tries the next,
  // each connection starting at another node, so a dead node is passed over.
  std::vector<conn::HostPort> others;
  std::string user = "guest", password = "guest", vhost = "/";
  double timeout_s = 5;
  std::string where() const;  // "127.0.0.1:5672"; a cluster's "127.0.0.1:5672,5673,5674"
  conn::HostPort first() const { return {host, port}; }
};

class Amqp {
 public:
  // Connects and logs in within the timeout; throws SetupError "rabbitmq host:port: ..." naming
  // what failed (connection refused, ACCESS_REFUSED, no answer within the timeout).
  explicit Amqp(const Endpoint& ep);
  Amqp(const Amqp&) = delete;
  Amqp& operator=(const Amqp&) = delete;
  ~Amqp();

 private:
  void open();  // to at_: socket, login, channel; throws SetupError
  void drop();  // the connection of a failed open() destroyed

 public:
  amqp_connection_state_t get() const { return c_; }
  int fd() const;
  const Endpoint& endpoint() const { return ep_; }
  int port() const { return at_.port; }  // the node it is connected to
  std::string where() const { return at_.host + ":" + std::to_string(at_.port); }
  // A durable queue of the type (declare), or an existing one (passive): its ready messages.
  // group_size: a quorum queue's x-quorum-initial-group-size (its replicas); 0: the broker's.
  uint32_t declare(const std::string& name, QueueType type, bool passive, int group_size = 0);
  void remove(const std::string& name);
  void confirm_select();
  void qos(uint16_t prefetch);
  void consume(const std::string& queue);
  // Throws SetupError naming `what` when the last RPC failed.
  void check(const char* what);
  // The server's or the library's reason for a failed RPC, on one line.
  std::string why(const amqp_rpc_reply_t& r) const;
  [[noreturn]] void fail(const std::string& what) const;
  // The connection is broken (lost, timed out): the destructor closes the socket without the
  // close handshake, which would wait for a server that does not answer.
  void broken() { broken_ = true; }
  std::string server_version() const;

 private:
  Endpoint ep_;
  amqp_connection_state_t c_ = nullptr;
  conn::HostPort at_;
  bool broken_ = false;
};

// The reason of a closing frame (connection.close, channel.close) or "" for another method.
std::string close_reason(const amqp_method_t& m);
inline amqp_bytes_t bytes_of(std::string_view s) { return {s.size(), const_cast<char*>(s.data())}; }

}  // namespace mw::rabbitmq
