// RabbitMQ, the backend of src/queue/queue.h's QueueAdapter. Each job declares its own durable queues
// (--queues N, named mwbench-<run>-..., deleted afterwards) of --queue-type classic or quorum.
//   produce  basic.publish to the default exchange (persistent unless --persistent false), up to
//            -P publisher confirms in flight (basic.ack/nack by delivery tag); --confirm false
//            counts a message as acknowledged once written to the socket
//   consume  basic.consume with basic.qos --prefetch, basic.ack after each message is checked
// A message the broker hands out again after a consumer went away carries the redelivered flag:
// the ledger counts it apart from a duplicate.
#include "adapters/rabbitmq/rabbitmq.h"

#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <future>
#include <memory>
#include <nlohmann/json.hpp>
#include <random>
#include <span>
#include <thread>

#include "adapters/backoff.h"
#include "adapters/conn/server.h"
#include "adapters/rabbitmq/amqp.h"
#include "adapters/rabbitmq/server.h"
#include "api/contract.h"
#include "api/options.h"
#include "api/stop.h"
#include "durability/durability.h"
#include "queue/queue.h"
#include "services/services.h"
#include "util/files.h"

namespace mw {
namespace {

using rabbitmq::Amqp;
using rabbitmq::Endpoint;
using rabbitmq::QueueType;

struct RabbitOptions {
  std::string host;  // "": start a rabbitmq-server on free ports
  int port = 5672;
  std::string user = "guest";
  std::string password_env = "RABBITMQ_PASSWORD";  // unset: "guest"
  std::string vhost = "/";
  QueueType queue_type = QueueType::Classic;
  bool confirm = true;
  bool persistent = true;
  int64_t prefetch = 100;
  int64_t queues = 1;
  std::string server_binary = "/usr/lib/rabbitmq/bin/rabbitmq-server";
  int cluster = 0;  // managed nodes of a cluster; 0: one broker
};

std::vector<OptionSpec> rabbit_options() {
  using O = RabbitOptions;
  return {
      opt(&O::host, {.name = "host",
                     .help = "an external broker instead of a managed rabbitmq-server; a cluster's nodes as "
                             "HOST[:PORT],HOST[:PORT],... (each connection starts at the next)"}),
      opt(&O::port, {.name = "port", .help = "AMQP port of --host", .min = 1, .max = 65535}),
      opt(&O::user, {.name = "user", .help = "user to log in as"}),
      opt(&O::password_env, {.name = "password-env", .help = "variable holding the password (unset: guest)"}),
      opt(&O::vhost, {.name = "vhost", .help = "virtual host"}),
      opt(&O::queue_type, {.name = "queue-type", .help = "durable queue type, side by side", .list = true},
          {{"classic", QueueType::Classic}, {"quorum", QueueType::Quorum}}),
      opt(&O::confirm, {.name = "confirm", .help = "publisher confirms (false: fire and forget)", .list = true}),
      opt(&O::persistent, {.name = "persistent", .help = "persistent messages (delivery mode 2)"}),
      opt(&O::prefetch, {.name = "prefetch",
                         .help = "unacknowledged messages a consumer may hold (basic.qos)",
                         .min = 1,
                         .max = 65535}),
      opt(&O::queues,
          {.name = "queues", .help = "queues per job; message i goes to queue i mod N", .min = 1, .max = 1000}),
      opt(&O::server_binary, {.name = "server-binary", .help = "rabbitmq-server script of the managed broker"}),
      opt(&O::cluster, {.name = "cluster",
                        .help = "start a cluster of N rabbitmq-server nodes on 127.0.0.1 instead of one, each quorum "
                                "queue on every node (needs --queue-type quorum; 0: one broker; --fault kill-node "
                                "kills one)",
                        .max = 5}),
  };
}

// The job's queues and how messages are published.
// The broker's flow control as the job's publishing connections saw it (connection.blocked and
// .unblocked): the timeline's probe reads it.
struct Flow {
  std::atomic<int64_t> blocked{0};  // connections blocked now
  std::atomic<uint64_t> blocks{0};  // connection.blocked notifications so far
};

struct Plan {
  std::vector<std::string> queues;
  bool confirm = true, persistent = true;
  uint16_t prefetch = 100;
  std::shared_ptr<Flow> flow = std::make_shared<Flow>();
};

// RabbitMQ's flow control for the timeline (api/events.h): what the job's publishers were told.
// No connection of its own is needed: the broker tells each publishing connection itself.
class RabbitEvents final : public EventProbe {
 public:
  explicit RabbitEvents(std::shared_ptr<Flow> f) : f_(std::move(f)) {}
  std::string source() const override { return "rabbitmq"; }
  std::vector<EventReading> sample(int64_t) override {
    using K = EventReading::Kind;
    return {{"connections_blocked", static_cast<double>(f_->blocked.load()), K::Level,
             "publishing connections blocked by the broker's flow control (connection.blocked: a memory or disk "
             "alarm)"},
            {"blocks", static_cast<double>(f_->blocks.load()), K::Counter,
             "connection.blocked notifications (the broker's flow control)"}};
  }

 private:
  std::shared_ptr<Flow> f_;
};

// The pipelined produce (src/queue/queue.h): basic.publish with mandatory set (a message no queue takes
// comes back as basic.return and fails), each publish's delivery tag mapped to its seq; the
// broker's basic.ack (multiple: every tag up to it) completes them Ok, basic.nack fails them.
// With --reconnect-backoff (a fault job) a lost connection is made again before the next send, each
// try after the back-off (10 ms first, doubled after each failure, up to the option): a try that
// fails fails that message. What was in flight on the lost connection failed with it (in doubt).
class Sender final : public QueueSender {
 public:
  Sender(const Endpoint& ep, const Plan& plan, double backoff_s)
      : ep_(ep), plan_(plan), backoff_max_s_(backoff_s), a_(std::make_unique<Amqp>(ep)), where_(a_->where()) {
    if (plan_.confirm) a_->confirm_select();
    props_._flags = AMQP_BASIC_DELIVERY_MODE_FLAG;
    props_.delivery_mode = plan_.persistent ? 2 : 1;
    // Without confirms nothing comes back to wake the event loop: an eventfd says "completions ready".
    if (!plan_.confirm && (ready_ = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC)) < 0)
      throw SetupError(std::string("rabbitmq: eventfd: ") + std::strerror(errno));
  }
  ~Sender() override {
    if (ready_ >= 0) close(ready_);
    if (blocked_) --plan_.flow->blocked;
  }
  int fd() const override { return a_ ? (plan_.confirm ? a_->fd() : ready_) : -1; }
  bool alive() const override { return a_ || !done_.empty() || backoff_max_s_ > 0; }

  void send(uint64_t seq, std::string_view msg) override {
    if (!a_ && backoff_max_s_ > 0) reconnect();
    if (!a_) return done_.push_back({seq, {Status::Error, 0, whys_.back()}});
    const std::string& q = plan_.queues[seq % plan_.queues.size()];
    int st = amqp_basic_publish(a_->get(), 1, amqp_empty_bytes, rabbitmq::bytes_of(q), 1, 0, &props_,
                                rabbitmq::bytes_of(msg));
    if (st != AMQP_STATUS_OK) {
      lost(std::string("basic.publish: ") + amqp_error_string2(st), Status::Error);
      return done_.push_back({seq, {Status::Error, 0, whys_.back()}});
    }
    if (plan_.confirm) return inflight_.push_back({++tag_, seq, false});
    done_.push_back({seq, {Status::Ok, 0, {}}});
    const uint64_t one = 1;
    [[maybe_unused]] ssize_t w = write(ready_, &one, sizeof one);  // fails only on a full counter
  }

  size_t reap(std::span<Completion> out) override {
    details_.clear();
    if (done_.empty() && whys_.size() > 1) whys_.erase(whys_.begin(), whys_.end() - 1);
    if (!plan_.confirm) {
      uint64_t n;
      [[maybe_unused]] ssize_t r = read(ready_, &n, sizeof n);  // EAGAIN: nothing new
      if (a_) read_frame();                                     // a closing frame, if the broker sent one
    }
    while (a_ && done_.size() < out.size() && !inflight_.empty() && read_frame()) {}
    size_t k = 0;
    for (; k < out.size() && !done_.empty(); ++k) {
      out[k] = done_.front();
      done_.pop_front();
    }
    return k;
  }

  void abort(std::string_view why) override { lost(std::string(why), Status::Timeout); }

 private:
  struct Flight {
    uint64_t tag, seq;
    bool returned;  // the broker returned it (no queue took it): its ack fails it
  };

  // One frame, if one is buffered or readable now; false when none (or the connection is gone).
  bool read_frame() {
    amqp_frame_t f;
    timeval zero{};
    int st = amqp_simple_wait_frame_noblock(a_->get(), &f, &zero);
    if (st == AMQP_STATUS_TIMEOUT) return false;
    if (st != AMQP_STATUS_OK) {
      lost(amqp_error_string2(st), Status::Error);
      return false;
    }
    if (f.frame_type != AMQP_FRAME_METHOD) return true;  // a returned message's header and body
    const amqp_method_t& m = f.payload.method;
    if (m.id == AMQP_BASIC_ACK_METHOD) {
      auto* a = static_cast<amqp_basic_ack_t*>(m.decoded);
      complete(a->delivery_tag, a->multiple, true);
      if (nacks_) nacks_ = 0, backoff_.succeeded();
    } else if (m.id == AMQP_BASIC_NACK_METHOD) {
      auto* n = static_cast<amqp_basic_nack_t*>(m.decoded);
      complete(n->delivery_tag, n->multiple, false);
      // A fault job: a channel whose quorum queue lost its leader may go on refusing every
      // publish after another node took over; the publisher drops it for a new connection, each
      // time after the back-off while the refusals go on.
      if (backoff_max_s_ > 0) {
        ++nacks_;
        lost("the broker refused a message (basic.nack): a new connection", Status::Error);
        backoff_.failed(backoff_max_s_);
        return false;
      }
    } else if (m.id == AMQP_BASIC_RETURN_METHOD) {
      // Confirms come after returns; no message of ours is returned unless its queue is gone.
      for (auto& fl : inflight_) fl.returned = true;
    } else if (m.id == AMQP_CONNECTION_BLOCKED_METHOD && !blocked_) {
      blocked_ = true;
      ++plan_.flow->blocked, ++plan_.flow->blocks;
    } else if (m.id == AMQP_CONNECTION_UNBLOCKED_METHOD && blocked_) {
      blocked_ = false;
      --plan_.flow->blocked;
    } else if (std::string why = rabbitmq::close_reason(m); !why.empty()) {
      lost(why, Status::Error);
      return false;
    }
    return true;
  }

  void complete(uint64_t tag, bool multiple, bool ack) {
    for (auto it = inflight_.begin(); it != inflight_.end();) {
      if (it->tag > tag || (!multiple && it->tag != tag)) {
        ++it;
        continue;
      }
      if (ack && !it->returned) {
        done_.push_back({it->seq, {Status::Ok, 0, {}}});
      } else {
        details_.push_back(ack ? "the broker returned the message: no queue took it (was the queue deleted?)"
                               : "the broker refused the message (basic.nack)");
        done_.push_back({it->seq, {Status::Error, 0, details_.back()}});
      }
      it = inflight_.erase(it);
      if (!multiple) return;
    }
  }

  // The connection is gone (or timed out): every message in flight fails with the reason. A fault
  // job keeps the broken connection's socket open until the next one is made, so the new socket
  // never takes the number of the one the driver's loop watched (its epoll set would miss it).
  void lost(const std::string& why, Status st) {
    whys_.push_back(why + " (rabbitmq " + where_ + ")");
    for (auto& fl : inflight_) done_.push_back({fl.seq, {st, 0, whys_.back()}});
    inflight_.clear();
    if (a_) a_->broken();
    if (blocked_) --plan_.flow->blocked;
    blocked_ = false;
    if (backoff_max_s_ > 0)
      old_ = std::move(a_);
    else
      a_.reset();
  }

  // A fault job: a new connection (to a live node of a cluster), after the back-off.
  void reconnect() {
    backoff_.wait();
    try {
      auto a = std::make_unique<Amqp>(ep_);
      if (plan_.confirm) a->confirm_select();
      a_ = std::move(a);
      old_.reset();
      where_ = a_->where();
      tag_ = 0;                           // a new channel's delivery tags start at 1
      if (!nacks_) backoff_.succeeded();  // while the refusals go on, each new try waits longer
    } catch (const std::exception& e) {
      whys_.push_back(std::string("reconnect failed: ") + e.what());
      backoff_.failed(backoff_max_s_);
    }
  }

  const Endpoint& ep_;
  const Plan& plan_;
  double backoff_max_s_;  // --reconnect-backoff; 0: a lost connection stays lost
  ReconnectBackoff backoff_;
  int nacks_ = 0;  // basic.nacks since the last basic.ack
  std::unique_ptr<Amqp> a_, old_;
  std::string where_;
  // Why the connection is gone, the last at the back: each completion that failed for it holds
  // its text until the driver reaped it (a reconnect's reason does not overwrite a lost one's).
  std::deque<std::string> whys_;
  amqp_basic_properties_t props_{};
  uint64_t tag_ = 0;
  int ready_ = -1;
  bool blocked_ = false;  // the broker said connection.blocked, not yet .unblocked
  std::deque<Flight> inflight_;
  std::deque<Completion> done_;
  std::deque<std::string> details_;
};

// A consumer: basic.consume on every queue of the job, basic.ack after each message.
class Consumer final : public QueueConn {
 public:
  Consumer(const Endpoint& ep, const Plan& plan) : a_(ep) {
    a_.qos(plan.prefetch);
    for (auto& q : plan.queues) a_.consume(q);
  }
  bool alive() const override { return alive_; }
  bool redelivered() const override { return redelivered_; }

  OpResult produce(std::string_view) override {
    return {Status::Unsupported, 0, "rabbitmq produces through the core's pipelined produce"};
  }

  OpResult consume(std::string& msg, double wait_s) override {
    if (!alive_) return {Status::Error, 0, why_};
    amqp_maybe_release_buffers(a_.get());
    amqp_envelope_t env;
    timeval tv{static_cast<time_t>(wait_s), static_cast<suseconds_t>((wait_s - static_cast<time_t>(wait_s)) * 1e6)};
    amqp_rpc_reply_t r = amqp_consume_message(a_.get(), &env, &tv, 0);
    if (r.reply_type == AMQP_RESPONSE_LIBRARY_EXCEPTION && r.library_error == AMQP_STATUS_TIMEOUT)
      return {Status::NotFound, 0, {}};
    if (r.reply_type == AMQP_RESPONSE_LIBRARY_EXCEPTION && r.library_error == AMQP_STATUS_UNEXPECTED_STATE)
      return other_frame();
    if (r.reply_type != AMQP_RESPONSE_NORMAL) return gone("basic.consume: " + a_.why(r));
    msg.assign(static_cast<const char*>(env.message.body.bytes), env.message.body.len);
    redelivered_ = env.redelivered;
    const uint64_t tag = env.delivery_tag;
    amqp_destroy_envelope(&env);
    if (int st = amqp_basic_ack(a_.get(), 1, tag, 0); st != AMQP_STATUS_OK)
      return gone(std::string("basic.ack: ") + amqp_error_string2(st));
    return {Status::Ok, 0, {}};
  }

 private:
  // Not a delivery: a closing frame ends this consumer, anything else is skipped.
  OpResult other_frame() {
    amqp_frame_t f;
    timeval zero{};
    int st = amqp_simple_wait_frame_noblock(a_.get(), &f, &zero);
    if (st != AMQP_STATUS_OK && st != AMQP_STATUS_TIMEOUT) return gone(amqp_error_string2(st));
    if (st == AMQP_STATUS_OK && f.frame_type == AMQP_FRAME_METHOD)
      if (std::string why = rabbitmq::close_reason(f.payload.method); !why.empty()) return gone(why);
    return {Status::NotFound, 0, {}};
  }
  OpResult gone(const std::string& why) {
    alive_ = false;
    a_.broken();
    why_ = why + " (rabbitmq " + a_.where() + ")";
    return {Status::Error, 0, why_};
  }

  Amqp a_;
  bool alive_ = true, redelivered_ = false;
  std::string why_;
};

// A fault job's consumer (the op consume's clients, the roundtrip's consumers): a Consumer made
// again after its connection is lost, the first try at once, then after 10 ms, twice as long after
// each failure, up to --reconnect-backoff; each try that fails fails its consume call.
class Reconnecting final : public QueueConn {
 public:
  Reconnecting(const Endpoint& ep, const Plan& plan, double backoff_s)
      : ep_(ep), plan_(plan), backoff_max_s_(backoff_s) {
    c_ = std::make_unique<Consumer>(ep_, plan_);
  }
  bool redelivered() const override { return c_ && c_->redelivered(); }
  OpResult produce(std::string_view m) override { return c_ ? c_->produce(m) : OpResult{Status::Unsupported, 0, {}}; }

  OpResult consume(std::string& msg, double wait_s) override {
    if (!c_) {  // the back-off waited out whole (at most --reconnect-backoff): NotFound would say "empty"
      backoff_.wait();
      try {
        c_ = std::make_unique<Consumer>(ep_, plan_);
        backoff_.succeeded();
      } catch (const SetupError& e) {
        why_ = std::string("reconnect failed: ") + e.what();
        backoff_.failed(backoff_max_s_);
        return {Status::Error, 0, why_};
      }
    }
    OpResult r = c_->consume(msg, wait_s);
    if (r.status != Status::Ok && r.status != Status::NotFound && !c_->alive()) {
      why_ = std::string(r.detail);
      c_.reset();
      r.detail = why_;
    }
    return r;
  }

 private:
  const Endpoint& ep_;
  const Plan& plan_;
  double backoff_max_s_;
  ReconnectBackoff backoff_;
  std::unique_ptr<Consumer> c_;
  std::string why_;
};

// --crash kill on a produce: the job's own broker is SIGKILLed mid-run, restarted on its node
// dir, and every queue of the job read back through a consumer. --crash power and torn: the
// node's Mnesia dir (queues, message store) is on the page-cache layer.
class RabbitCrash final : public Crashable {
 public:
  RabbitCrash(std::shared_ptr<Service> svc, const Endpoint& ep, const Plan& plan, Contract c, const SizeDist& sizes)
      : svc_(std::move(svc)), ep_(ep), plan_(plan), contract_(std::move(c)), sizes_(sizes) {}
  std::string victim() const override { return "rabbitmq-server"; }
  void kill() override { svc_->kill_now(); }
  void restart() override { svc_->restart(); }
  bool pause(bool on) override { return svc_->pause(on); }
  std::string note() const override { return contract_.detail; }

  std::vector<WriteState> check(std::span<const uint64_t> seqs) override {
    queue::ReadBack got(sizes_);
    // A queue answers only once the restarted broker recovered it: a consumer that fails
    // meanwhile is tried again, for up to a minute.
    const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    for (bool done = false; !done;) {
      try {
        Consumer c(ep_, plan_);
        read_back(c, 2 * seqs.size() + 1000, 1.0, got);
        done = true;
      } catch (const SetupError&) {
        if (std::chrono::steady_clock::now() > until) throw;
        throw_if_stopped("reading the queues back");
        std::this_thread::sleep_for(std::chrono::milliseconds(500));
      }
    }
    return got.states(seqs);
  }

 private:
  std::shared_ptr<Service> svc_;
  const Endpoint& ep_;
  const Plan& plan_;
  Contract contract_;
  const SizeDist& sizes_;  // the adapter's --message-size, which outlives its crash
};

// A queue's Raft group as the cluster's CLI sees it: its leader's node name ("" while none) and
// its members'.
struct QueueNodes {
  std::string leader;
  std::vector<std::string> members;
};

// --cluster N: N managed rabbitmq-server nodes on 127.0.0.1, each its own node name, AMQP and
// distribution ports and temp dir, all registered with one epmd of their own (a node finds the
// others through its host's epmd) and sharing one Erlang cookie. The first boots alone; the others
// boot side by side once it answers and join it by classic-config peer discovery, before their
// listeners open: a node that answers AMQP is in the cluster (no stop_app, join_cluster, start_app
// round of the CLI, whose every call is an Erlang VM of its own). No node outlives mwbench (Service).
class RabbitCluster {
 public:
  RabbitCluster(const std::string& binary, int n) : binary_(binary), stem_(unique_name("mwbench")) {
    std::random_device rd;
    for (int i = 0; i < 32; ++i) cookie_ += static_cast<char>('A' + rd() % 26);
    epmd_ = std::make_shared<Service>(rabbitmq::epmd_spec());
    nodes_.push_back(std::make_shared<Service>(spec(0)));
    std::vector<std::future<std::shared_ptr<Service>>> rest;
    for (size_t k = 1; k < static_cast<size_t>(n); ++k)
      rest.push_back(std::async(std::launch::async, [this, k] { return std::make_shared<Service>(spec(k)); }));
    for (auto& f : rest) nodes_.push_back(f.get());  // the first failure, once every boot ended
    ep_.port = nodes_[0]->port();
    for (size_t k = 1; k < nodes_.size(); ++k) ep_.others.push_back({"127.0.0.1", nodes_[k]->port()});
  }
  const Endpoint& ports() const { return ep_; }
  std::shared_ptr<Service> node(size_t k) const { return nodes_[k]; }
  size_t size() const { return nodes_.size(); }
  std::string name(size_t k) const { return rabbitmq::cluster_node(stem_, k); }
  // "node-2 (127.0.0.1:PORT)"; the name as given when it is none of ours.
  std::string describe(const std::string& name) const {
    for (size_t k = 0; k < nodes_.size(); ++k)
      if (this->name(k) == name)
        return rabbitmq::node_label(k) + " (127.0.0.1:" + std::to_string(nodes_[k]->port()) + ")";
    return name;
  }
  // The queue's leader and members, asked of the first live node's CLI; throws SetupError.
  QueueNodes queue_nodes(const std::string& queue, double timeout_s) const {
    for (size_t k = 0; k < nodes_.size(); ++k) {
      if (!nodes_[k]->running()) continue;
      const std::string out = rabbitmq::ctl(binary_, nodes_[k]->dir(), epmd_->port(), name(k),
                                            "list_queues name leader members --formatter json", timeout_s);
      const nlohmann::json j = nlohmann::json::parse(out.substr(std::min(out.find('['), out.size())), nullptr, false);
      for (const auto& q : j.is_array() ? j : nlohmann::json::array()) {
        if (!q.is_object() || q.value("name", "") != queue) continue;
        QueueNodes qn;
        if (q.contains("leader") && q["leader"].is_string()) qn.leader = q["leader"].get<std::string>();
        if (q.contains("members") && q["members"].is_array())
          for (const auto& m : q["members"])
            if (m.is_string()) qn.members.push_back(m.get<std::string>());
        return qn;
      }
      throw SetupError("rabbitmq: the cluster's node " + name(k) + " does not list queue " + queue);
    }
    throw SetupError("rabbitmq: no node of the cluster runs");
  }
  // The queue's leader and a member on every node, within `timeout_s`; throws SetupError saying
  // what was missing (a node that did not join).
  void wait_queue(const std::string& queue, double timeout_s) const {
    const int64_t deadline = now_ns() + static_cast<int64_t>(timeout_s * 1e9);
    for (std::string why;;) {
      throw_if_stopped("waiting for queue " + queue + "'s members");
      try {
        const QueueNodes q = queue_nodes(queue, 10);
        if (!q.leader.empty() && q.members.size() == nodes_.size()) return;
        why = q.leader.empty() ? "no leader" : std::to_string(q.members.size()) + " members";
      } catch (const SetupError& e) {
        why = e.what();
      }
      if (now_ns() >= deadline)
        throw SetupError("rabbitmq: quorum queue " + queue + " not on the " + std::to_string(nodes_.size()) +
                         " nodes: " + why);
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
    }
  }

 private:
  ServiceSpec spec(size_t k) const { return rabbitmq::cluster_node_spec(binary_, k, stem_, epmd_->port(), cookie_); }

  std::string binary_, stem_, cookie_;
  std::shared_ptr<Service> epmd_;  // started first, stopped last
  std::vector<std::shared_ptr<Service>> nodes_;
  Endpoint ep_;
};

// --fault kill-node on a cluster: SIGKILL to the node that leads the job's (first) quorum queue,
// the node whose loss the clients feel (every confirm and delivery of the queue comes from its
// Raft leader; a follower's loss changes nothing they see), found by asking a live node's CLI; it
// stays down. leader(): the leader after it.
class RabbitNodes final : public Cluster {
 public:
  RabbitNodes(const RabbitCluster& c, std::string queue, double timeout_s)
      : c_(c), queue_(std::move(queue)), timeout_s_(std::max(10.0, timeout_s)) {}
  std::string victim() const override { return "the rabbitmq cluster's queue leader"; }
  std::string kill_node() override {
    const std::string leader = c_.queue_nodes(queue_, timeout_s_).leader;
    for (size_t k = 0; k < c_.size(); ++k)
      if (c_.name(k) == leader) {
        c_.node(k)->kill_now();
        return c_.describe(leader) + ", the queue's leader";
      }
    throw SetupError("the queue " + queue_ + " has no leader to kill (" +
                     (leader.empty() ? std::string("none named") : leader + " is none of mwbench's nodes") + ")");
  }
  std::string leader() override {
    try {
      const std::string name = c_.queue_nodes(queue_, timeout_s_).leader;
      return name.empty() ? "" : c_.describe(name);
    } catch (const SetupError&) {
      return "";
    }
  }

 private:
  const RabbitCluster& c_;
  std::string queue_;
  double timeout_s_;
};

class RabbitAdapter final : public QueueAdapter {
 public:
  explicit RabbitAdapter(const Job& job) : QueueAdapter(job), o_(options_of<RabbitOptions>(job)) {
    ep_.port = o_.port;
    if (!o_.host.empty()) {  // one broker, or a cluster's nodes
      std::vector<conn::HostPort> at = conn::parse_addresses(o_.host, o_.port, "rabbitmq: --host");
      ep_.host = at[0].host, ep_.port = at[0].port;
      ep_.others.assign(at.begin() + 1, at.end());
    }
    ep_.user = o_.user;
    ep_.vhost = o_.vhost;
    ep_.timeout_s = job.timeout_s;
    if (const char* pw = std::getenv(o_.password_env.c_str())) ep_.password = pw;
    plan_.confirm = o_.confirm;
    plan_.persistent = o_.persistent;
    plan_.prefetch = static_cast<uint16_t>(o_.prefetch);
    const std::string stem = "mwbench-" + std::to_string(run_id()) + "-" + unique_name("q");
    for (int64_t i = 0; i < o_.queues; ++i) plan_.queues.push_back(stem + "-" + std::to_string(i));
    const CrashKind crash = durability_options_of(job).crash;
    crash_ = crash != CrashKind::None;
    if (crash_ && (op() != QueueOp::Produce || !o_.host.empty()))
      throw SetupError(std::string("rabbitmq: --crash ") + crash_name(crash) +
                       " needs op produce on the rabbitmq-server mwbench starts (no --host)");
    check_cluster(job);
    own_ = crash_ || !job.faults.empty();  // a broker a crash or fault hits is the job's own, never shared
    backoff_s_ = job.faults.empty() ? 0 : job.reconnect_backoff_s;
  }
  ~RabbitAdapter() override { QueueAdapter::teardown(); }

  std::string target() const override {
    return ep_.where() + " " + rabbitmq::queue_type_name(o_.queue_type) +
           (o_.cluster > 0 ? " on " + std::to_string(o_.cluster) + " nodes" : "");
  }
  // The managed node's directory (Mnesia and the message store; on the layer under --crash power):
  // the profile counts its device's I/O.
  std::vector<std::string> paths() const override {
    if (!svc_) return {};
    return {layer_ ? layer_->path() : svc_->dir()};
  }
  Info describe() override { return info_; }

  std::optional<Contract> contract(const Job&) const {
    if (!o_.confirm)
      return Contract{ContractKind::Memory, 0, "no publisher confirms: acknowledged once written to the socket"};
    if (o_.cluster > 0)
      return Contract{ContractKind::Replicated, 0,
                      "quorum queue on " + std::to_string(o_.cluster) + " nodes: confirmed once " +
                          std::to_string(o_.cluster / 2 + 1) + " of the " + std::to_string(o_.cluster) +
                          " have fsynced it to their Raft log (a majority: a confirmed message survives the loss of " +
                          std::to_string((o_.cluster - 1) / 2) + " node" + ((o_.cluster - 1) / 2 > 1 ? "s" : "") + ")"};
    if (o_.queue_type == QueueType::Quorum)  // one node: a majority of one
      return Contract{ContractKind::FsyncPerAck, 0, "quorum queue: confirmed once the Raft log is fsynced"};
    if (o_.persistent)
      return Contract{ContractKind::FsyncPerAck, 0,
                      "persistent message, durable classic queue: confirmed once fsynced"};
    return Contract{ContractKind::Memory, 0, "transient message: confirmed once enqueued in memory"};
  }

 protected:
  void start(const Job& job) override {
    if (o_.cluster > 0) {
      cluster_ = std::make_unique<RabbitCluster>(o_.server_binary, o_.cluster);
      ep_.port = cluster_->ports().port;
      ep_.others = cluster_->ports().others;
      info_["cluster"] = std::to_string(o_.cluster) + " nodes";
    } else if (o_.host.empty()) {  // a crash or fault job's broker is its own: it is killed
      ServiceSpec spec = rabbitmq::server_spec(o_.server_binary);
      if (crash_ && (layer_ = power_layer(job, "/tmp")))  // --crash power, torn: its Mnesia dir on the layer
        relocate(spec, "{dir}/mnesia", layer_->path() + "/mnesia");
      svc_ = own_ ? std::make_shared<Service>(spec) : shared_service("rabbitmq:" + o_.server_binary, spec);
      ep_.port = svc_->port();
    }
    Amqp a(ep_);
    for (auto& q : plan_.queues) a.declare(q, o_.queue_type, false, o_.cluster);
    declared_ = true;
    if (cluster_) {  // the load starts once each queue has its leader and a member on every node
      for (auto& q : plan_.queues) cluster_->wait_queue(q, std::max(30.0, 3 * job.timeout_s));
      nodes_ = std::make_unique<RabbitNodes>(*cluster_, plan_.queues.front(), job.timeout_s);
    }
    if (own_ && svc_) settle_declarations();
    info_["server"] = "rabbitmq-server";
    info_["version"] = a.server_version();
    info_["managed"] = o_.host.empty() ? "yes" : "no";
    info_["queue-type"] = rabbitmq::queue_type_name(o_.queue_type);
    info_["confirm"] = o_.confirm ? "yes" : "no";
    info_["key"] = plan_.queues.front();
    if (own_ && svc_) crash_impl_ = std::make_unique<RabbitCrash>(svc_, ep_, plan_, *contract(job), message_sizes());
    if (layer_) {  // the node and its declared queues are on disk before the power can go
      sync_layer(*layer_);
      crash_impl_->set_pagecache(layer_.get());
    }
  }
  Abilities backend_abilities(const Job& job) override {
    return {.crash = crash_impl_.get(),
            .cluster = nodes_.get(),
            .contract = contract(job),
            .events = [this]() -> std::unique_ptr<EventProbe> { return std::make_unique<RabbitEvents>(plan_.flow); }};
  }
  std::unique_ptr<QueueSender> sender(const Job&) override { return std::make_unique<Sender>(ep_, plan_, backoff_s_); }
  std::unique_ptr<QueueConn> connect(const Job&) override {
    if (backoff_s_ > 0) return std::make_unique<Reconnecting>(ep_, plan_, backoff_s_);
    return std::make_unique<Consumer>(ep_, plan_);
  }
  // A message handed out again after a consumer's connection was lost carries the redelivered
  // flag, but an ack in flight when the broker was killed may be lost with it and the message
  // delivered again unmarked: a fault job is held to at least once (its duplicates a figure).
  Delivery delivery(const Job& job) const override {
    return job.faults.empty() ? Delivery::ExactlyOnce : Delivery::AtLeastOnce;
  }
  uint64_t held_per_consumer(const Job&) const override { return plan_.prefetch; }
  int64_t remaining(const Job&) override {
    Amqp a(ep_);
    int64_t held = 0;
    for (auto& q : plan_.queues) held += a.declare(q, o_.queue_type, true);
    return held;
  }
  void stop_backend() override {
    if (!declared_) return;  // a broker that never answered (a stop while connecting) holds nothing of ours
    try {
      Amqp a(ep_);
      for (auto& q : plan_.queues) a.remove(q);
    } catch (const SetupError&) {  // a broker that is gone keeps nothing to remove
    }
  }

 private:
  // What a declaration writes reaches the node's files only later: a quorum queue's Raft member
  // is registered in Ra's directory (names.dets), and Mnesia's own tables are DETS files too
  // (schema.DAT), both written up to 3 s after the insert (DETS's default write cache: 3000 ms).
  // Killed or cut within that window, RabbitMQ 3.10 restarted without the queue: a quorum one
  // "leader not known", a classic durable one 404 NOT_FOUND (when Mnesia dumped its log during
  // the boot), in both cases lost with every confirmed message. A crash job's queues wait it out
  // before the run: what is measured is a queue that exists, not one being created.
  static void settle_declarations() {
    const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(kDetsWriteDelayMs + 500);
    while (std::chrono::steady_clock::now() < until) {
      throw_if_stopped("waiting for the queues' declarations to be written");
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
  }
  static constexpr int kDetsWriteDelayMs = 3000;

  // --cluster, and the faults each set-up can take: one line before any server starts. kill,
  // restart and stop hit the one managed broker; kill-node a cluster's node.
  void check_cluster(const Job& job) const {
    if (o_.cluster > 0 && o_.cluster < 3)
      throw SetupError("rabbitmq: --cluster " + std::to_string(o_.cluster) +
                       ": a cluster takes 3 to 5 nodes (a quorum queue's majority outlives one; 0: one broker)");
    if (o_.cluster > 0 && !o_.host.empty())
      throw SetupError("rabbitmq: --cluster starts its own nodes on 127.0.0.1: drop --host");
    if (o_.cluster > 0 && o_.queue_type != QueueType::Quorum)
      throw SetupError(
          "rabbitmq: --cluster replicates quorum queues (a classic queue lives on one node): add "
          "--queue-type quorum");
    if (o_.cluster > 0 && crash_)
      throw SetupError("rabbitmq: --crash needs the one rabbitmq-server mwbench starts (no --cluster)");
    for (const FaultSpec& f : job.faults) {
      if (f.kind == FaultKind::KillNode && o_.cluster == 0)
        throw SetupError("--fault " + f.text + ": kill-node needs a cluster: add --cluster 3 --queue-type quorum");
      if (f.kind != FaultKind::KillNode && o_.cluster > 0)
        throw SetupError("--fault " + f.text + ": a cluster takes kill-node (one node SIGKILLed), not " +
                         fault_kind_name(f.kind));
    }
  }

  RabbitOptions o_;
  Endpoint ep_;
  Plan plan_;
  std::unique_ptr<PageCacheMount> layer_;  // --crash power, torn; outlives the broker on it
  std::shared_ptr<Service> svc_;
  bool crash_ = false, declared_ = false, own_ = false;
  double backoff_s_ = 0;  // a fault job's --reconnect-backoff; 0: a lost client stops
  std::unique_ptr<RabbitCrash> crash_impl_;
  std::unique_ptr<RabbitCluster> cluster_;
  std::unique_ptr<RabbitNodes> nodes_;  // --fault kill-node on a cluster
  Info info_;
};

}  // namespace

AdapterSpec rabbitmq_adapter_spec() {
  return {
      .name = "rabbitmq",
      .summary =
          "RabbitMQ queues over AMQP 0-9-1: publisher confirms, manual acks; a managed rabbitmq-server "
          "unless --host",
      .ops = queue_op_specs(),
      .default_ops = "produce",
      .options = rabbit_options(),
      .unavailable = conn::unavailable_without_package<RabbitOptions>("rabbitmq-server"),
      .make = [](const Job& j, WorkloadPtr) -> std::unique_ptr<Adapter> { return std::make_unique<RabbitAdapter>(j); },
      .families = {Family::Queue},
      .target = TargetKind::External,
      .target_option = "host",
      .crash_kinds = {CrashKind::Kill, CrashKind::Power, CrashKind::Torn},
      .crash_ops = {"produce"},
      .fault_kinds = {"kill", "restart", "stop", "kill-node"},
      .connects_note =
          "keeps its clients' connections: they are a queue's producers and consumers (a subscription ends with its "
          "connection)",
      .durability_settings = {"queue-type", "confirm", "persistent"}};
}

}  // namespace mw
