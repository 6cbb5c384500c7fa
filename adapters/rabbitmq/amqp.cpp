#include "adapters/rabbitmq/amqp.h"

#include <amqp_tcp_socket.h>

#include <algorithm>
#include <atomic>
#include <cmath>

#include "adapters/conn/bytes.h"
#include "api/stop.h"
#include "util/status.h"

namespace mw::rabbitmq {
namespace {

timeval tv_of(double s) {
  timeval tv{};
  tv.tv_sec = static_cast<time_t>(s);
  tv.tv_usec = static_cast<suseconds_t>((s - std::floor(s)) * 1e6);
  return tv;
}

std::string text(amqp_bytes_t b, size_t max = 200) {
  return conn::printable(std::string_view(static_cast<const char*>(b.bytes), b.len), max);
}

}  // namespace

const char* queue_type_name(QueueType t) { return t == QueueType::Quorum ? "quorum" : "classic"; }

std::string close_reason(const amqp_method_t& m) {
  if (m.id == AMQP_CONNECTION_CLOSE_METHOD) {
    auto* c = static_cast<amqp_connection_close_t*>(m.decoded);
    return "the broker closed the connection: " + std::to_string(c->reply_code) + " " + text(c->reply_text);
  }
  if (m.id == AMQP_CHANNEL_CLOSE_METHOD) {
    auto* c = static_cast<amqp_channel_close_t*>(m.decoded);
    return "the broker closed the channel: " + std::to_string(c->reply_code) + " " + text(c->reply_text);
  }
  return "";
}

std::string Endpoint::where() const { return conn::describe_addresses(first(), others); }

void Amqp::drop() {
  amqp_destroy_connection(c_);
  c_ = nullptr;
}

Amqp::Amqp(const Endpoint& ep) : ep_(ep), at_(ep.first()) {
  // A cluster: each connection starts at the next node, so the clients spread over them, and a
  // node that refuses (a dead one) is passed over for the next.
  std::vector<conn::HostPort> nodes{ep.first()};
  nodes.insert(nodes.end(), ep.others.begin(), ep.others.end());
  static std::atomic<size_t> turn{0};
  const size_t first = nodes.size() > 1 ? turn++ % nodes.size() : 0;
  for (size_t i = 0; i < nodes.size(); ++i) {
    if (!(c_ = amqp_new_connection())) throw SetupError("rabbitmq: out of memory");
    at_ = nodes[(first + i) % nodes.size()];
    broken_ = false;
    try {
      open();
      return;
    } catch (const SetupError&) {  // a refusal: the next node, unless it was the last or a stop came
      drop();
      if (i + 1 == nodes.size() || stop_requested()) throw;
    } catch (...) {  // a stop (Interrupted): the destructor does not run for a constructor that throws
      drop();
      throw;
    }
  }
}

void Amqp::open() {
  amqp_socket_t* s = amqp_tcp_socket_new(c_);
  if (!s) fail("cannot make a socket");
  // After a stop (a clean-up of what the run made), half a second at most, as conn's waits.
  timeval tv = tv_of(stop_requested() ? std::min(ep_.timeout_s, 0.5) : ep_.timeout_s);
  amqp_set_handshake_timeout(c_, &tv);
  amqp_set_rpc_timeout(c_, &tv);
  if (int st = amqp_socket_open_noblock(s, at_.host.c_str(), at_.port, &tv); st != AMQP_STATUS_OK)
    fail(std::string("cannot connect: ") + amqp_error_string2(st));
  StopShutsDown stop_ends_login(amqp_get_sockfd(c_));
  // connection.blocked: the broker says when its flow control (a memory or disk alarm) blocks the
  // connection's publishes, and when it lets them go (the timeline's events)
  amqp_table_entry_t capability{amqp_cstring_bytes("connection.blocked"), {AMQP_FIELD_KIND_BOOLEAN, {.boolean = 1}}};
  amqp_table_t capabilities{1, &capability};
  amqp_table_entry_t property{amqp_cstring_bytes("capabilities"), {AMQP_FIELD_KIND_TABLE, {.table = capabilities}}};
  amqp_table_t properties{1, &property};
  amqp_rpc_reply_t r = amqp_login_with_properties(c_, ep_.vhost.c_str(), 0, 131072, 0, &properties,
                                                  AMQP_SASL_METHOD_PLAIN, ep_.user.c_str(), ep_.password.c_str());
  if (r.reply_type != AMQP_RESPONSE_NORMAL) {
    broken_ = true;
    throw_if_stopped_opening("rabbitmq " + where() + ": login");
    std::string w = why(r);
    if (r.reply_type == AMQP_RESPONSE_LIBRARY_EXCEPTION && r.library_error == AMQP_STATUS_CONNECTION_CLOSED)
      w += " (ACCESS_REFUSED: are --user and the password in --password-env right?)";
    broken_ = true;
    fail("login as " + ep_.user + ": " + w);
  }
  amqp_channel_open(c_, 1);
  check("channel.open");
}

Amqp::~Amqp() {
  if (!broken_) {
    timeval tv = tv_of(std::min(ep_.timeout_s, 1.0));
    amqp_set_rpc_timeout(c_, &tv);
    amqp_channel_close(c_, 1, AMQP_REPLY_SUCCESS);
    amqp_connection_close(c_, AMQP_REPLY_SUCCESS);
  }
  amqp_destroy_connection(c_);
}

int Amqp::fd() const { return amqp_get_sockfd(c_); }

void Amqp::fail(const std::string& what) const { throw SetupError("rabbitmq " + where() + ": " + what); }

std::string Amqp::why(const amqp_rpc_reply_t& r) const {
  switch (r.reply_type) {
    case AMQP_RESPONSE_NORMAL: return "ok";
    case AMQP_RESPONSE_NONE: return "no reply (missing RPC reply type)";
    case AMQP_RESPONSE_LIBRARY_EXCEPTION:
      return r.library_error == AMQP_STATUS_TIMEOUT ? std::string("no answer within the timeout")
                                                    : amqp_error_string2(r.library_error);
    case AMQP_RESPONSE_SERVER_EXCEPTION: {
      std::string s = close_reason(r.reply);
      return s.empty() ? "an unexpected method from the broker" : s;
    }
  }
  return "?";
}

void Amqp::check(const char* what) {
  amqp_rpc_reply_t r = amqp_get_rpc_reply(c_);
  if (r.reply_type == AMQP_RESPONSE_NORMAL) return;
  broken_ = true;  // a channel the broker closed, or a connection that did not answer
  throw_if_stopped_opening("rabbitmq " + where() + ": " + what);
  fail(std::string(what) + ": " + why(r));
}

uint32_t Amqp::declare(const std::string& name, QueueType type, bool passive, int group_size) {
  amqp_table_entry_t e[2]{};
  e[0].key = amqp_cstring_bytes("x-queue-type");
  e[0].value.kind = AMQP_FIELD_KIND_UTF8;
  e[0].value.value.bytes = amqp_cstring_bytes(queue_type_name(type));
  e[1].key = amqp_cstring_bytes("x-quorum-initial-group-size");
  e[1].value.kind = AMQP_FIELD_KIND_I32;
  e[1].value.value.i32 = group_size;
  amqp_table_t args{passive ? 0 : group_size > 0 ? 2 : 1, e};
  amqp_queue_declare_ok_t* ok = amqp_queue_declare(c_, 1, bytes_of(name), passive, 1, 0, 0, args);
  check(passive ? "queue.declare (passive)" : "queue.declare");
  return ok ? ok->message_count : 0;
}

void Amqp::remove(const std::string& name) {
  amqp_queue_delete(c_, 1, bytes_of(name), 0, 0);
  check("queue.delete");
}

void Amqp::confirm_select() {
  amqp_confirm_select(c_, 1);
  check("confirm.select");
}

void Amqp::qos(uint16_t prefetch) {
  amqp_basic_qos(c_, 1, 0, prefetch, 0);
  check("basic.qos");
}

void Amqp::consume(const std::string& queue) {
  amqp_basic_consume(c_, 1, bytes_of(queue), amqp_empty_bytes, 0, 0, 0, amqp_empty_table);
  check("basic.consume");
}

std::string Amqp::server_version() const {
  const amqp_table_t* p = amqp_get_server_properties(c_);
  for (int i = 0; p && i < p->num_entries; ++i)
    if (text(p->entries[i].key) == "version" && p->entries[i].value.kind == AMQP_FIELD_KIND_UTF8)
      return text(p->entries[i].value.value.bytes, 40);
  return "";
}

}  // namespace mw::rabbitmq
