#include "adapters/mqtt/client.h"

#include <poll.h>
#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <mutex>

#include "api/stop.h"
#include "util/status.h"

namespace mw::mqtt {
namespace {

int64_t now_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

}  // namespace

std::string error_text(int rc) {
  if (rc == MOSQ_ERR_ERRNO) return std::strerror(errno);
  return mosquitto_strerror(rc);
}

Session::Session(const Endpoint& ep, const std::string& id, bool clean) : ep_(ep) {
  static std::once_flag init;
  std::call_once(init, [] { mosquitto_lib_init(); });
  watch_libmosquitto();
  m_ = mosquitto_new(id.empty() ? nullptr : id.c_str(), id.empty() ? true : clean, this);
  if (!m_) fail(std::string("mosquitto_new: ") + std::strerror(errno));
  mosquitto_int_option(m_, MOSQ_OPT_PROTOCOL_VERSION, MQTT_PROTOCOL_V311);
  // mosquitto takes at most max_inflight_messages (default 20) QoS 2 publishes awaiting PUBREL
  // from a 3.1.1 client and drops a client that sends more: beyond 20, libmosquitto holds the
  // messages and sends each as one completes (the core's -P counts them in flight all the same).
  mosquitto_max_inflight_messages_set(m_, 20);
  mosquitto_connect_callback_set(m_, [](mosquitto*, void* o, int rc) {
    auto* c = static_cast<Session*>(o);
    c->connack_ = rc;
    c->connected_ = true;
  });
  mosquitto_subscribe_callback_set(m_, [](mosquitto*, void* o, int, int n, const int* granted) {
    auto* c = static_cast<Session*>(o);
    c->granted_ = n > 0 ? granted[0] : 128;
    c->subscribed_ = true;
  });
  mosquitto_publish_callback_set(m_, [](mosquitto*, void* o, int mid) {
    auto* c = static_cast<Session*>(o);
    if (c->on_publish) c->on_publish(mid);
  });
  mosquitto_message_callback_set(m_, [](mosquitto*, void* o, const mosquitto_message* m) {
    Session* s = static_cast<Session*>(o);
    const std::string_view payload(static_cast<const char*>(m->payload), static_cast<size_t>(m->payloadlen));
    if (s->on_message)
      s->on_message(m->topic ? std::string_view(m->topic) : std::string_view(), payload);
    else
      s->messages.emplace_back(payload);
  });
  if (!ep.user.empty())
    if (int rc = mosquitto_username_pw_set(m_, ep.user.c_str(), ep.password.c_str()); rc != MOSQ_ERR_SUCCESS) {
      mosquitto_destroy(m_);
      m_ = nullptr;
      fail("user " + ep.user + ": " + error_text(rc));
    }
  if (int rc = mosquitto_connect(m_, ep.host.c_str(), ep.port, 60); rc != MOSQ_ERR_SUCCESS) {
    mosquitto_destroy(m_);
    m_ = nullptr;
    fail("connect: " + error_text(rc));
  }
  wire_ = std::make_shared<Wire>(ep.max_frame);
  watch(fd_ = mosquitto_socket(m_), wire_);  // before the first read
  try {
    wait_for(connected_, "CONNACK");
  } catch (...) {
    mosquitto_destroy(m_);
    m_ = nullptr;
    unwatch(fd_, wire_.get());
    throw;
  }
  if (connack_ != 0) {
    const std::string why = mosquitto_connack_string(connack_);
    mosquitto_destroy(m_);
    m_ = nullptr;
    unwatch(fd_, wire_.get());
    const bool login = connack_ == 4 || connack_ == 5;  // bad user name or password, not authorised
    fail("connection refused: " + why +
         (login ? " (login as " + (ep_.user.empty() ? std::string("anonymous") : ep_.user) +
                      ": are --user and the password in --password-env right?)"
                : ""));
  }
}

Session::~Session() {
  if (!m_) return;
  end(1);
  mosquitto_destroy(m_);
  unwatch(fd_, wire_.get());
}

void Session::flush(int64_t until) {
  while (mosquitto_want_write(m_) && now_ms() < until && mosquitto_loop_write(m_, 1) == MOSQ_ERR_SUCCESS) {}
}

// QoS 2: a message whose PUBREC went out becomes the client's when the PUBREL comes; a session
// closed before that loses it (the broker sends only the PUBREL again, to a client that no longer
// knows the message). Until the socket stays quiet for 50 ms, what arrives is read through the
// library (a PUBREL completes its message into `messages`) and what that queues goes out.
void Session::settle(int64_t until) {
  for (;;) {
    const int fd = mosquitto_socket(m_);
    const int64_t wait = std::min<int64_t>(until - now_ms(), 50);
    if (fd < 0 || wait <= 0) return;
    pollfd p{fd, POLLIN, 0};
    if (poll(&p, 1, static_cast<int>(wait)) <= 0 || mosquitto_loop_read(m_, 1) != MOSQ_ERR_SUCCESS) return;
    flush(until);
  }
}

void Session::end(int qos) {
  if (ended_) return;
  ended_ = true;
  const int64_t until = now_ms() + static_cast<int64_t>(ep_.timeout_s * 1000);
  flush(until);  // the acknowledgements still queued
  if (qos == 2) settle(until);
  // Then a DISCONNECT written here, and the broker's close awaited. mosquitto_disconnect() closes
  // the socket as soon as it wrote the DISCONNECT; a socket closed with bytes unread (messages
  // the broker sent meanwhile) sends a reset, and the broker drops what it had not read yet: the
  // last acknowledgements, so it hands those messages out again (consume -n 300 at QoS 1: 258 of
  // 300 came back to the next session before). The broker reads everything before the DISCONNECT,
  // then closes. A QoS 1 or 2 message read meanwhile is dropped unacknowledged (the session keeps
  // it); a QoS 0 one is the broker's last word on it: read through the library, into `messages`.
  const int fd = mosquitto_socket(m_);
  static constexpr char kDisconnect[2] = {'\xe0', 0};  // MQTT 3.1.1 DISCONNECT, no payload
  if (fd < 0 || mosquitto_want_write(m_) || send(fd, kDisconnect, sizeof kDisconnect, MSG_NOSIGNAL) != 2) return;
  char buf[4096];
  for (int64_t left; (left = until - now_ms()) > 0;) {
    pollfd p{fd, POLLIN, 0};
    if (poll(&p, 1, static_cast<int>(left)) <= 0) break;
    if (qos == 0) {
      if (mosquitto_loop_read(m_, 1) != MOSQ_ERR_SUCCESS) break;  // the broker's close
      continue;
    }
    const ssize_t got = recv(fd, buf, sizeof buf, 0);
    if (got == 0 || (got < 0 && errno != EAGAIN && errno != EINTR)) break;
  }
}

void Session::subscribe(const std::string& filter, int qos) {
  subscribed_ = false;
  if (int rc = mosquitto_subscribe(m_, nullptr, filter.c_str(), qos); rc != MOSQ_ERR_SUCCESS)
    fail("subscribe " + filter + ": " + error_text(rc));
  wait_for(subscribed_, "SUBACK");
  if (granted_ > 2) fail("subscribe " + filter + ": refused by the broker");
}

std::string Session::loop(int timeout_ms) {
  int rc = mosquitto_loop(m_, timeout_ms, 1);
  // What the read queued (PUBACK, PUBREC, PUBCOMP) goes out now, not at the next turn: a
  // consumer that stops after its last message has acknowledged it.
  if (rc == MOSQ_ERR_SUCCESS && mosquitto_want_write(m_)) rc = mosquitto_loop_write(m_, 1);
  return rc == MOSQ_ERR_SUCCESS ? "" : error(rc);
}

std::string Session::error(int rc) const {
  std::string w = wire_ ? wire_->ended() : "";
  return w.empty() ? error_text(rc) : w;
}

void Session::wait_for(const bool& flag, const std::string& what) {
  const int64_t until = now_ms() + static_cast<int64_t>(ep_.timeout_s * 1000);
  while (!flag) {
    const int64_t left = until - now_ms();
    if (left <= 0) fail("no " + what + " within the timeout");
    throw_if_stopped_opening("mqtt " + ep_.where() + ": waiting for the " + what);
    if (std::string why = loop(static_cast<int>(std::min<int64_t>(left, 100))); !why.empty()) {
      if (flag) return;  // a refused CONNACK ends the connection: the caller reads its code
      fail("waiting for the " + what + ": " + why);
    }
  }
}

void Session::fail(const std::string& what) const { throw SetupError("mqtt " + ep_.where() + ": " + what); }

}  // namespace mw::mqtt
