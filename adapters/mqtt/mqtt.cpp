// MQTT, the backend of src/queue/queue.h's QueueAdapter. Each job has topics of its own (--queues N:
// mwbench/<job>/<i>, message i on topic i mod N); consumers share one subscription
// ($share/<job>/mwbench/<job>/+), so the broker hands each message to one of them.
//   produce  PUBLISH at --qos, up to -P packet ids in flight (the core's asynchronous produce):
//            QoS 1 is acknowledged by PUBACK, QoS 2 by PUBCOMP, QoS 0 once written to the socket
//   consume  each client takes the messages of a session of its own, subscribed before the
//            untimed prefill: mosquitto hands a shared subscription's messages to its sessions in
//            turn (connected or not), so each session holds its client's share
//   roundtrip  --consumers sessions in the shared subscription take the messages as they come
//            (libmosquitto acknowledges each on receipt: PUBACK, or PUBREC ... PUBCOMP)
// With persistent sessions (--clean-session false) the broker keeps messages for a session that
// is not connected: produce's messages go to a session subscribed before the first one, which
// the end check reconnects to drain them; it reconnects each session of the job too.
// QoS 1 is at least once: the broker may hand a message out again (libmosquitto does not show
// the DUP flag), so a second consumption at QoS 1 is counted as a redelivery; at QoS 2 it is a
// duplicate.
// --fault kill, restart, stop hit a mosquitto of the job's own; its producer and consumers connect
// again (Sender, Consumer) and a kill holds the job to at most once (delivery()).
#include "adapters/mqtt/mqtt.h"

#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <map>
#include <mutex>
#include <span>
#include <vector>

#include "adapters/backoff.h"
#include "adapters/conn/server.h"
#include "adapters/events.h"
#include "adapters/mqtt/client.h"
#include "api/contract.h"
#include "api/fault.h"
#include "api/options.h"
#include "api/stop.h"
#include "durability/durability.h"
#include "durability/service_crash.h"
#include "queue/queue.h"
#include "util/files.h"

namespace mw {
namespace {

using mqtt::Endpoint;
using mqtt::Session;

struct MqttOptions {
  std::string host;  // "": start a mosquitto on a free port
  int port = 1883;
  std::string user;  // "": anonymous
  std::string password_env = "MQTT_PASSWORD";
  int64_t qos = 1;
  bool clean_session = false;
  int64_t queues = 1;
  bool persistence = false;
  std::optional<int64_t> autosave_interval;  // mosquitto's default: 1800 s
  std::string server_binary = "mosquitto";
};

std::vector<OptionSpec> mqtt_options() {
  using O = MqttOptions;
  return {
      opt(&O::host, {.name = "host", .help = "an external broker instead of a managed mosquitto"}),
      opt(&O::port, {.name = "port", .help = "MQTT port of --host", .min = 1, .max = 65535}),
      opt(&O::user, {.name = "user", .help = "user name to connect as (--host; default anonymous)"}),
      opt(&O::password_env, {.name = "password-env", .help = "variable holding the password of --user"}),
      opt(&O::qos, {.name = "qos",
                    .help = "quality of service of publish and subscription: 0, 1 or 2",
                    .list = true,
                    .min = 0,
                    .max = 2}),
      opt(&O::clean_session, {.name = "clean-session",
                              .help = "consumers start clean sessions (roundtrip only: a clean session keeps nothing "
                                      "while it is not connected)"}),
      opt(&O::queues,
          {.name = "queues", .help = "topics per job; message i goes to topic i mod N", .min = 1, .max = 1000}),
      opt(&O::persistence, {.name = "persistence",
                            .help = "the managed broker saves its state to mosquitto.db in its "
                                    "temp dir (mosquitto persistence)",
                            .list = true}),
      opt(&O::autosave_interval, {.name = "autosave-interval",
                                  .help = "seconds between the managed broker's saves (mosquitto autosave_interval, "
                                          "default 1800); needs --persistence true",
                                  .min = 1,
                                  .max = 86400}),
      opt(&O::server_binary, {.name = "server-binary", .help = "mosquitto binary of the managed broker"}),
  };
}

// The job's topics, the consumers' shared subscription and sessions.
struct Plan {
  std::vector<std::string> topics;
  std::string filter;                 // $share/<group>/mwbench/<job>/+
  std::vector<std::string> sessions;  // client ids of the consumers' persistent sessions
  int qos = 1;
  bool clean = false;
};

// The asynchronous produce (src/queue/queue.h): PUBLISH with its packet id mapped to its seq; the
// broker's PUBACK (QoS 1) or PUBCOMP (QoS 2) completes it; QoS 0 completes once written.
// With --reconnect-backoff (a fault job) a lost connection is made again before the next send, each
// try after the back-off: a try that fails fails that message. What was in flight on the lost
// connection failed with it (in doubt), and a new connection is a new client: libmosquitto never
// sends those messages again.
class Sender final : public QueueSender {
 public:
  Sender(const Endpoint& ep, const Plan& plan, double backoff_s) : ep_(ep), plan_(plan), backoff_max_s_(backoff_s) {
    where_ = ep.where();
    connect();
    mids_.resize(65536, kNone);
    if ((ready_ = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC)) < 0)
      throw SetupError(std::string("mqtt: eventfd: ") + std::strerror(errno));
  }
  ~Sender() override { close(ready_); }
  // QoS 0 has no acknowledgement to wake the event loop: an eventfd says "completions ready".
  int fd() const override { return c_ ? (plan_.qos == 0 ? ready_ : mosquitto_socket(c_->get())) : ready_; }
  bool alive() const override { return c_ || !done_.empty() || backoff_max_s_ > 0; }
  bool wants_write() const override { return c_ && mosquitto_want_write(c_->get()); }
  void flush() override {
    if (!c_) return;
    if (int rc = mosquitto_loop_write(c_->get(), 1); rc != MOSQ_ERR_SUCCESS) lost(c_->error(rc), Status::Error);
  }

  void send(uint64_t seq, std::string_view msg) override {
    if (!c_ && backoff_max_s_ > 0) reconnect();
    if (!c_) {
      done_.push_back({seq, {Status::Error, 0, whys_.back()}});
      return ready();
    }
    int mid = 0;
    const std::string& topic = plan_.topics[seq % plan_.topics.size()];
    const int rc =
        mosquitto_publish(c_->get(), &mid, topic.c_str(), static_cast<int>(msg.size()), msg.data(), plan_.qos, false);
    if (rc != MOSQ_ERR_SUCCESS && rc != MOSQ_ERR_NO_CONN) {
      lost("publish: " + c_->error(rc), Status::Error);
      return done_.push_back({seq, {Status::Error, 0, whys_.back()}});
    }
    if (plan_.qos > 0)
      mids_[static_cast<uint16_t>(mid)] = seq;
    else if (mosquitto_want_write(c_->get()))
      unwritten_.push_back(seq);  // completes once written
    else
      done_.push_back({seq, {Status::Ok, 0, {}}}), ready();
    if (rc == MOSQ_ERR_NO_CONN) lost("publish: the connection is lost", Status::Error);
  }

  size_t reap(std::span<Completion> out) override {
    // The driver is done with what the last reap handed out: only the texts of completions not
    // handed out yet, and the latest, are kept.
    if (done_.empty() && whys_.size() > 1) whys_.erase(whys_.begin(), whys_.end() - 1);
    uint64_t n;
    [[maybe_unused]] ssize_t r = read(ready_, &n, sizeof n);  // EAGAIN: nothing new
    if (c_) {
      int rc = mosquitto_loop_read(c_->get(), 1);
      if (rc == MOSQ_ERR_SUCCESS) rc = mosquitto_loop_misc(c_->get());
      if (rc != MOSQ_ERR_SUCCESS) lost(c_->error(rc), Status::Error);
      if (c_ && plan_.qos == 0 && !mosquitto_want_write(c_->get())) {  // everything queued went out
        for (uint64_t s : unwritten_) done_.push_back({s, {Status::Ok, 0, {}}});
        unwritten_.clear();
      }
    }
    size_t k = 0;
    for (; k < out.size() && !done_.empty(); ++k) {
      out[k] = done_.front();
      done_.pop_front();
    }
    return k;
  }

  void abort(std::string_view why) override { lost(std::string(why), Status::Timeout); }

 private:
  static constexpr uint64_t kNone = ~uint64_t{0};

  void connect() {
    auto c = std::make_unique<Session>(ep_, "", true);
    c->on_publish = [this](int mid) { acked(mid); };
    c_ = std::move(c);
  }
  // A fault job: a new connection, after the back-off; the lost one's socket closed only now.
  void reconnect() {
    backoff_.wait();
    try {
      connect();
      old_.reset();
      backoff_.succeeded();
    } catch (const std::exception& e) {
      whys_.push_back(std::string("reconnect failed: ") + e.what());
      backoff_.failed(backoff_max_s_);
    }
  }
  void ready() {
    const uint64_t one = 1;
    [[maybe_unused]] ssize_t w = write(ready_, &one, sizeof one);  // fails only on a full counter
  }
  void acked(int mid) {
    if (plan_.qos == 0) return;  // QoS 0: written to the socket (send() and reap() complete those)
    uint64_t& seq = mids_[static_cast<uint16_t>(mid)];
    if (seq == kNone) return;  // not ours (cannot happen: one client, one publisher)
    done_.push_back({seq, {Status::Ok, 0, {}}});
    seq = kNone;
  }
  // The connection is gone (or timed out): every message in flight fails with the reason. A fault
  // job keeps the lost connection's socket open until the next one is made, so the new socket never
  // takes the number of the one the driver's loop watched (its epoll set would miss it).
  void lost(const std::string& why, Status st) {
    whys_.push_back(why + " (mqtt " + where_ + ")");
    const std::string_view w = whys_.back();
    for (uint64_t& seq : mids_)
      if (seq != kNone) done_.push_back({seq, {st, 0, w}}), seq = kNone;
    for (uint64_t s : unwritten_) done_.push_back({s, {st, 0, w}});
    unwritten_.clear();
    if (backoff_max_s_ > 0 && c_) {
      c_->on_publish = nullptr;  // a late callback of the lost client completes nothing
      c_->abandon();
      old_ = std::move(c_);
    }
    c_.reset();
    ready();
  }

  const Endpoint& ep_;
  const Plan& plan_;
  double backoff_max_s_;  // --reconnect-backoff; 0: a lost connection stays lost
  ReconnectBackoff backoff_;
  std::unique_ptr<Session> c_, old_;
  std::string where_;
  // Why the connection is gone, the last at the back: each completion that failed for it holds
  // its text until the driver reaped it (a reconnect's reason does not overwrite a lost one's,
  // which a completion being recorded still reads).
  std::deque<std::string> whys_{""};
  std::vector<uint64_t> mids_;       // packet id -> seq of the message in flight
  std::vector<uint64_t> unwritten_;  // QoS 0: published, not yet written to the socket
  int ready_ = -1;
  std::deque<Completion> done_;
};

// Messages a session's client library received (and acknowledged to the broker) that no consumer
// took before the session closed: the next consumer of that session takes them first (the end
// check's drain), so a consumer that stops after its share loses none of what it had read ahead.
class Stash {
 public:
  void keep(const std::string& id, std::deque<std::string>& msgs) {
    if (msgs.empty()) return;
    std::lock_guard lk(mu_);
    auto& held = held_[id];
    for (auto& m : msgs) held.push_back(std::move(m));
    msgs.clear();
  }
  void give(const std::string& id, std::deque<std::string>& msgs) {
    std::lock_guard lk(mu_);
    auto it = held_.find(id);
    if (it == held_.end()) return;
    msgs.insert(msgs.begin(), std::make_move_iterator(it->second.begin()), std::make_move_iterator(it->second.end()));
    held_.erase(it);
  }

 private:
  std::mutex mu_;
  std::map<std::string, std::deque<std::string>> held_;
};

// A consumer: one or more sessions in turn (the end check's drain visits every session of the
// job); each in the job's shared subscription at --qos. A fault job's consumer (backoff_s above 0)
// connects its session again when its connection is lost, the first try at once, then after 10
// ms, twice as long after each failure, up to --reconnect-backoff; each try that fails fails its
// consume call. The messages its client read and no one took go to the session's next client.
class Consumer final : public QueueConn {
 public:
  // `subscribe`: the sessions are new (roundtrip's consumers), and subscribe again at each
  // reconnect (a broker restarted without persistence knows no session); else they were
  // subscribed before.
  Consumer(const Endpoint& ep, const Plan& plan, Stash& stash, std::vector<std::string> ids, bool subscribe,
           double backoff_s = 0)
      : ep_(ep), plan_(plan), stash_(stash), ids_(std::move(ids)), subscribe_(subscribe), backoff_max_s_(backoff_s) {
    open();
  }
  ~Consumer() override { close(); }
  bool alive() const override { return c_ != nullptr || backoff_max_s_ > 0; }
  // QoS 1 is at least once: a message handed out again is the broker's right (MQTT 3.1.1, 4.3.2).
  bool redelivered() const override { return plan_.qos == 1; }

  OpResult produce(std::string_view) override {
    return {Status::Unsupported, 0, "mqtt produces through the core's asynchronous produce"};
  }

  OpResult consume(std::string& msg, double wait_s) override {
    if (!c_ && backoff_max_s_ > 0) {  // the back-off waited out whole: NotFound would say "empty"
      backoff_.wait();
      try {
        open();
        backoff_.succeeded();
      } catch (const SetupError& e) {
        why_ = std::string("reconnect failed: ") + e.what();
        backoff_.failed(backoff_max_s_);
        return {Status::Error, 0, why_};
      }
    }
    if (!c_) return {Status::Error, 0, why_};
    for (size_t tried = 1;; ++tried) {  // each session at most once per call, from the one in use
      OpResult r = take(msg, wait_s);
      if (r.status != Status::NotFound || tried >= ids_.size()) return r;
      at_ = (at_ + 1) % ids_.size();  // the next session's messages
      try {
        open();
      } catch (const SetupError& e) {
        return gone(e.what());
      }
    }
  }

 private:
  void open() {
    close();
    auto c = std::make_unique<Session>(ep_, ids_[at_], plan_.clean);
    if (subscribe_) c->subscribe(plan_.filter, plan_.qos);
    c_ = std::move(c);
    stash_.give(ids_[at_], c_->messages);
  }
  // `lost`: the connection is gone; no orderly end is tried on it.
  void close(bool lost = false) {
    if (!c_) return;
    if (lost)
      c_->abandon();
    else
      c_->end(plan_.qos);
    stash_.keep(ids_[at_], c_->messages);
    c_.reset();
  }
  OpResult take(std::string& msg, double wait_s) {
    const auto until = std::chrono::steady_clock::now() + std::chrono::duration<double>(wait_s);
    while (c_->messages.empty()) {
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(until - std::chrono::steady_clock::now());
      if (left.count() <= 0) return {Status::NotFound, 0, {}};
      if (std::string why = c_->loop(static_cast<int>(std::min<int64_t>(left.count() + 1, 100))); !why.empty())
        return gone(why);
    }
    msg = std::move(c_->messages.front());
    c_->messages.pop_front();
    return {Status::Ok, 0, {}};
  }
  OpResult gone(const std::string& why) {
    why_ = why + " (mqtt " + ep_.where() + ")";
    close(backoff_max_s_ > 0);
    return {Status::Error, 0, why_};
  }

  const Endpoint& ep_;
  const Plan& plan_;
  Stash& stash_;
  std::vector<std::string> ids_;
  bool subscribe_;
  double backoff_max_s_;  // a fault job's; 0: a lost session stays lost
  ReconnectBackoff backoff_;
  size_t at_ = 0;  // the session in use
  std::unique_ptr<Session> c_;
  std::string why_;
};

// mosquitto's own events for the timeline (api/events.h): its $SYS topics (every second on the
// broker mwbench starts: sys_interval 1; every sys_interval elsewhere), as a session of the probe's
// own subscribed to $SYS/broker/# keeps their last values.
class MqttEvents final : public EventProbe {
 public:
  explicit MqttEvents(const Endpoint& ep) : ep_(ep) { ep_.timeout_s = std::min(ep_.timeout_s, 1.0); }
  std::string source() const override { return "mosquitto"; }
  std::vector<EventReading> sample(int64_t) override {
    try {
      if (!s_) {
        s_ = std::make_unique<Session>(ep_, "", true);
        s_->on_message = [this](std::string_view topic, std::string_view payload) {
          for (auto& t : topics_)
            if (topic == t.topic) t.value = stat_number(payload);
        };
        s_->subscribe("$SYS/broker/#", 0);
      }
      for (int turn = 0; turn < 8; ++turn)  // what has arrived, without waiting
        if (std::string why = s_->loop(0); !why.empty()) throw SetupError("mqtt " + ep_.where() + ": " + why);
    } catch (...) {
      s_.reset();
      throw;
    }
    std::vector<EventReading> out;
    for (auto& t : topics_)
      if (std::isfinite(t.value)) out.push_back({t.name, t.value, t.kind, t.what});
    return out;
  }

 private:
  struct Topic {
    const char *topic, *name;
    EventReading::Kind kind;
    const char* what;
    double value = NAN;
  };
  Endpoint ep_;
  std::unique_ptr<Session> s_;
  std::vector<Topic> topics_ = {
      {"$SYS/broker/publish/messages/dropped", "messages_dropped", EventReading::Kind::Counter,
       "messages dropped (a client's queue full, or offline)"},
      {"$SYS/broker/store/messages/count", "messages_stored", EventReading::Kind::Level,
       "messages held in the broker's store"},
      {"$SYS/broker/clients/connected", "clients_connected", EventReading::Kind::Level, "clients connected"},
      {"$SYS/broker/heap/current", "heap_bytes", EventReading::Kind::Level, "the broker's heap"},
  };
};

class MqttAdapter final : public QueueAdapter {
 public:
  explicit MqttAdapter(const Job& job) : QueueAdapter(job), o_(options_of<MqttOptions>(job)) {
    const bool managed = o_.host.empty();
    if (o_.autosave_interval && !o_.persistence) throw SetupError("mqtt: --autosave-interval needs --persistence true");
    if (!managed && (job.has("persistence") || o_.autosave_interval))
      throw SetupError("mqtt: --persistence and --autosave-interval set up the managed broker: not with --host");
    if (o_.clean_session && op() != QueueOp::Roundtrip)
      throw SetupError("mqtt: --clean-session true keeps nothing for a consumer that is not connected: " + job.op +
                       " needs --clean-session false (roundtrip takes either)");
    const CrashKind crash = durability_options_of(job).crash;
    crash_ = crash != CrashKind::None;
    if (crash_ && (op() != QueueOp::Produce || !managed))
      throw SetupError(std::string("mqtt: --crash ") + crash_name(crash) +
                       " needs op produce and the mosquitto mwbench starts (no --host)");
    if (managed && !o_.user.empty())
      throw SetupError("mqtt: --user needs --host (the mosquitto mwbench starts takes anonymous clients)");
    own_ = crash_ || !job.faults.empty();  // a broker a crash or fault hits is the job's own, never shared
    backoff_s_ = job.faults.empty() ? 0 : job.reconnect_backoff_s;
    for (const FaultSpec& f : job.faults) kills_ = kills_ || f.kind == FaultKind::Kill || f.kind == FaultKind::Restart;
    ep_.host = managed ? "127.0.0.1" : o_.host;
    ep_.port = o_.port;
    ep_.user = o_.user;
    if (const char* pw = std::getenv(o_.password_env.c_str()); pw && !o_.user.empty()) ep_.password = pw;
    ep_.timeout_s = job.timeout_s;
    ep_.max_frame = message_sizes().max() + mqtt::kFrameSlack;  // a larger packet is a protocol error
    broker_.persistence = o_.persistence;
    broker_.autosave_s = o_.autosave_interval.value_or(1800);
    broker_.binary = o_.server_binary;
    const std::string stem = "mwbench-" + std::to_string(run_id()) + "-" + unique_name("m");
    for (int64_t i = 0; i < o_.queues; ++i) plan_.topics.push_back("mwbench/" + stem + "/" + std::to_string(i));
    plan_.filter = "$share/" + stem + "/mwbench/" + stem + "/+";
    plan_.qos = static_cast<int>(o_.qos);
    plan_.clean = o_.clean_session;
    // Consumers' sessions: one per --consumers of roundtrip, one per client of consume, one that
    // takes produce's messages.
    const int n = op() == QueueOp::Roundtrip ? queue_options().consumers : op() == QueueOp::Consume ? job.clients : 1;
    for (int i = 0; i < n; ++i) plan_.sessions.push_back(stem + "-c" + std::to_string(i));
  }
  ~MqttAdapter() override { QueueAdapter::teardown(); }

  std::string target() const override { return ep_.where() + " qos " + std::to_string(o_.qos); }
  // mosquitto.db's directory with --persistence (on the layer under --crash power): the profile
  // counts its device's I/O.
  std::vector<std::string> paths() const override {
    if (!svc_ || !o_.persistence) return {};
    return {layer_ ? layer_->path() : svc_->dir()};
  }
  // --crash kill (produce on a managed broker): SIGKILL mosquitto mid-run, restart it on its temp
  // dir (mosquitto.db with --persistence true) and take what the produce session still holds.
  // --crash power and torn: mosquitto.db is on the page-cache layer.
  Info describe() override { return info_; }

  std::optional<Contract> contract(const Job&) const {
    if (plan_.qos == 0) return Contract{ContractKind::Memory, 0, "QoS 0: published once written to the socket"};
    if (!o_.host.empty()) return std::nullopt;  // an external broker's persistence is its own
    if (!broker_.persistence) return Contract{ContractKind::Memory, 0, "no persistence: acknowledged in memory"};
    return Contract{ContractKind::PeriodicFsync, static_cast<double>(broker_.autosave_s),
                    "persistence: the in-memory state is saved every " + std::to_string(broker_.autosave_s) +
                        " s (autosave_interval)"};
  }

 protected:
  void start(const Job& job) override {
    if (o_.host.empty()) {  // a crash or fault job's broker is its own: it is killed
      ServiceSpec spec = mqtt::broker_spec(broker_);
      if (crash_ && (layer_ = power_layer(job, "/tmp")))  // --crash power, torn: its mosquitto.db on the layer
        relocate(spec, "persistence_location {dir}/", "persistence_location " + layer_->path() + "/");
      svc_ = own_ ? std::make_shared<Service>(spec) : shared_service(broker_.key(), spec);
      ep_.port = svc_->port();
    }
    // The sessions that take produce's and consume's messages exist before the first one.
    if (op() != QueueOp::Roundtrip)
      for (auto& id : plan_.sessions) Session(ep_, id, false).subscribe(plan_.filter, plan_.qos);
    info_["server"] = "mosquitto";
    info_["managed"] = o_.host.empty() ? "yes" : "no";
    info_["qos"] = std::to_string(o_.qos);
    info_["clean-session"] = o_.clean_session ? "yes" : "no";
    if (o_.host.empty()) info_["persistence"] = o_.persistence ? "yes" : "no";
    info_["key"] = plan_.topics.front();
    info_["libmosquitto"] = version();
    if (own_ && svc_)  // a fault's kill also tells the end check that the ledger's backlog may be gone
      crash_impl_ = std::make_unique<ServiceCrash>(
          svc_, [this](int port) { ep_.port = port; }, [this](std::span<const uint64_t> seqs) { return kept(seqs); },
          contract(job)->detail, [this](pid_t) { killed_ = !crash_; });
    if (crash_impl_ && layer_) crash_impl_->set_pagecache(layer_.get());  // nothing is saved there yet
  }
  // After the restart: the messages the produce session still holds (it is gone too when the
  // broker kept no state); a seq is Present when a message of ours with its id came out.
  std::vector<WriteState> kept(std::span<const uint64_t> seqs) {
    queue::ReadBack got(message_sizes());
    Consumer c(ep_, plan_, stash_, plan_.sessions, false);
    read_back(c, 2 * seqs.size() + 1000, 0.5, got);
    return got.states(seqs);
  }
  // consume: mosquitto hands the prefill to the sessions in turn, so a session holds its client's
  // share of -n and of the warm-up within one message; one more each keeps every share whole.
  uint64_t held_per_consumer(const Job&) const override { return op() == QueueOp::Consume ? 1 : 0; }
  // QoS 0 is at most once (a message the broker cannot hand out is dropped); QoS 1's second
  // deliveries are counted as redeliveries, so 1 and 2 are judged exactly once.
  // A fault that kills the broker: what it held comes back from its last save at best (every
  // session and message without --persistence, those acknowledged since the save with it), so
  // the job is held to at most once, its losses a figure.
  Delivery delivery(const Job&) const override {
    return plan_.qos == 0 || kills_ ? Delivery::AtMostOnce : Delivery::ExactlyOnce;
  }
  std::unique_ptr<QueueSender> sender(const Job&) override { return std::make_unique<Sender>(ep_, plan_, backoff_s_); }
  // MQTT does not say how many messages a session holds: what the ledger has not seen come out.
  // Once a fault killed the broker that is unknown (-1: the drain ends when nothing more comes).
  int64_t remaining(const Job&) override {
    if (killed_) return -1;
    const uint64_t p = ledger().produced_count(), c = ledger().consumed_count();
    return p > c ? static_cast<int64_t>(p - c) : 0;
  }
  Abilities backend_abilities(const Job& job) override {
    return {.crash = crash_impl_.get(), .contract = contract(job), .events = [this]() -> std::unique_ptr<EventProbe> {
              return std::make_unique<MqttEvents>(ep_);
            }};
  }
  std::unique_ptr<QueueConn> connect(const Job&) override {
    const size_t k = connects_++;
    const bool fresh = op() == QueueOp::Roundtrip;  // produce's and consume's were subscribed by start()
    if (k < plan_.sessions.size())
      return std::make_unique<Consumer>(ep_, plan_, stash_, std::vector{plan_.sessions[k]}, fresh, backoff_s_);
    return std::make_unique<Consumer>(ep_, plan_, stash_, plan_.sessions, false);  // the drain visits every session
  }

 private:
  static std::string version() {
    int major = 0, minor = 0, rev = 0;
    mosquitto_lib_version(&major, &minor, &rev);
    return std::to_string(major) + "." + std::to_string(minor) + "." + std::to_string(rev);
  }

  MqttOptions o_;
  mqtt::BrokerSettings broker_;
  Endpoint ep_;
  Plan plan_;
  std::atomic<size_t> connects_{0};
  Stash stash_;
  bool crash_ = false, own_ = false, kills_ = false;
  std::atomic<bool> killed_{false};        // a fault killed the broker: its sessions hold what its last save did
  double backoff_s_ = 0;                   // a fault job's --reconnect-backoff; 0: a lost client stops
  std::unique_ptr<PageCacheMount> layer_;  // --crash power, torn; outlives the broker on it
  std::shared_ptr<Service> svc_;
  std::unique_ptr<Crashable> crash_impl_;
  Info info_;
};

}  // namespace

namespace mqtt {

std::string BrokerSettings::key() const {
  return "mosquitto:" + binary + ":" + (persistence ? "persistence:" + std::to_string(autosave_s) : "memory");
}

ServiceSpec broker_spec(const BrokerSettings& s) {
  // `user root`: started as root, mosquitto would become the user mosquitto, who cannot write the
  // temp dir: every save of --persistence failed ("unable to remove mosquitto.db.new"). (No effect
  // when mwbench is not root.)
  std::string conf =
      "listener {port} 127.0.0.1\\nallow_anonymous true\\nmax_queued_messages 0\\n"
      "queue_qos0_messages true\\nlog_dest stderr\\nuser root\\nsys_interval 1\\n";
  if (s.persistence)
    conf +=
        "persistence true\\npersistence_location {dir}/\\nautosave_interval " + std::to_string(s.autosave_s) + "\\n";
  // The port is known once the broker starts: the shell writes the config, then becomes mosquitto.
  const std::string bin = find_binary(s.binary);
  ServiceSpec spec;
  spec.name = "mosquitto";
  spec.binary = "/bin/sh";
  spec.args = {"-c", "printf '" + conf + "' > {dir}/mosquitto.conf && exec '" + (bin.empty() ? s.binary : bin) +
                         "' -c {dir}/mosquitto.conf"};
  spec.probe = [](int port) -> std::string {
    try {
      Endpoint ep;
      ep.port = port;
      ep.timeout_s = 1;
      Session c(ep, "", true);
      return "";
    } catch (const SetupError& e) {
      return e.what();
    }
  };
  return spec;
}

}  // namespace mqtt

AdapterSpec mqtt_adapter_spec() {
  return {
      .name = "mqtt",
      .summary =
          "MQTT topics through libmosquitto: QoS 0/1/2, a shared subscription, persistent sessions; a "
          "managed mosquitto unless --host",
      .ops = queue_op_specs(),
      .default_ops = "roundtrip",
      .options = mqtt_options(),
      .unavailable = conn::unavailable_without_package<MqttOptions>("mosquitto"),
      .make = [](const Job& j, WorkloadPtr) -> std::unique_ptr<Adapter> { return std::make_unique<MqttAdapter>(j); },
      .families = {Family::Queue},
      .target = TargetKind::External,
      .target_option = "host",
      .libraries = {"libmosquitto"},
      .crash_kinds = {CrashKind::Kill, CrashKind::Power, CrashKind::Torn},
      .fault_kinds = {"kill", "restart", "stop"},
      .connects_note =
          "keeps its clients' connections: they are a queue's producers and consumers (a subscription ends with its "
          "connection)",
      .durability_settings = {"qos", "persistence", "autosave-interval"}};
}

}  // namespace mw
