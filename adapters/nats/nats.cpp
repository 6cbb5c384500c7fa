// NATS, the backend of src/queue/queue.h's QueueAdapter, through the NATS C client (nats.c).
//   core NATS (default)  at most once, nothing stored: roundtrip only. The consumers are one
//            queue group on the job's subjects (each message goes to one of them); a publish
//            counts as done once the library took it (fire and forget).
//   --jetstream          a work-queue stream of the job's subjects (--storage file|memory) and
//            one durable pull consumer with explicit acks. produce: asynchronous publishes, up
//            to -P acknowledgements (PubAcks) in flight; consume: fetches of --fetch messages,
//            each acknowledged after it is checked; a message fetched again after a consumer
//            went away carries a delivery count above 1: the ledger counts it as redelivered.
// Message i goes to subject <prefix>.<i mod --queues>. The stream is deleted afterwards.
#include "adapters/nats/nats_spec.h"

#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <mutex>
#include <thread>
#include <unordered_map>
#include <unordered_set>

#include "adapters/conn/server.h"
#include "adapters/events.h"
#include "adapters/nats/client.h"
#include "adapters/nats/server.h"
#include "api/contract.h"
#include "api/options.h"
#include "api/stop.h"
#include "durability/durability.h"
#include "queue/queue.h"
#include "services/services.h"
#include "util/files.h"

namespace mw {
namespace {

using nats::Conn;
using nats::Endpoint;

enum class Storage { File, Memory };

struct NatsOptions {
  std::string host;  // "": start a nats-server on a free port
  int port = 4222;
  std::string user;  // "": no authentication
  std::string password_env = "NATS_PASSWORD";
  bool jetstream = false;
  Storage storage = Storage::File;
  int64_t fetch = 64;
  int64_t queues = 1;
  std::string server_binary = "nats-server";
  int monitor_port = 0;  // --host's monitoring port (nats-server -m); 0: none read
  int cluster = 0;       // managed nodes of a JetStream cluster; 0: one server
  int replicas = 1;      // the stream's num_replicas
};

// nats-server's own events for the timeline (api/events.h), from its monitoring port: slow
// consumers (/varz) and, with JetStream, its API's errors (/jsz). An HTTP GET each reading.
class NatsEvents final : public EventProbe {
 public:
  NatsEvents(std::string host, int port, bool jetstream) : host_(std::move(host)), port_(port), js_(jetstream) {}
  std::string source() const override { return "nats-server"; }
  std::vector<EventReading> sample(int64_t deadline) override {
    const std::string varz = http_get(host_, port_, "/varz", deadline);
    return nats::monitor_events(varz, js_ ? http_get(host_, port_, "/jsz", deadline) : std::string());
  }

 private:
  std::string host_;
  int port_;
  bool js_;
};

std::vector<OptionSpec> nats_options() {
  using O = NatsOptions;
  return {
      opt(&O::host, {.name = "host",
                     .help = "an external nats-server instead of a managed one; a cluster's nodes as "
                             "HOST[:PORT],HOST[:PORT],... (a connection takes the first that answers)"}),
      opt(&O::port, {.name = "port", .help = "client port of --host", .min = 1, .max = 65535}),
      opt(&O::monitor_port, {.name = "monitor-port",
                             .help = "monitoring port of --host (nats-server -m), read for its events per interval "
                                     "(default: none read; the managed server's is its own)",
                             .max = 65535}),
      opt(&O::user, {.name = "user", .help = "user to connect as (--host; default none)"}),
      opt(&O::password_env, {.name = "password-env", .help = "variable holding the password of --user"}),
      opt(&O::jetstream, {.name = "jetstream",
                          .help = "JetStream: a stream, acknowledged publishes, a durable "
                                  "consumer with explicit acks (false: core NATS, roundtrip only)"}),
      opt(&O::storage, {.name = "storage", .help = "JetStream: the stream's storage, side by side", .list = true},
          {{"file", Storage::File}, {"memory", Storage::Memory}}),
      opt(&O::fetch,
          {.name = "fetch", .help = "JetStream: messages per pull request of a consumer", .min = 1, .max = 10000}),
      opt(&O::queues,
          {.name = "queues", .help = "subjects per job; message i goes to subject i mod N", .min = 1, .max = 1000}),
      opt(&O::server_binary, {.name = "server-binary", .help = "nats-server binary of the managed server"}),
      opt(&O::cluster, {.name = "cluster",
                        .help = "JetStream: start a cluster of N nats-servers on 127.0.0.1 instead of one "
                                "(0: one server; --fault kill-node kills one)",
                        .max = 5}),
      opt(&O::replicas, {.name = "replicas",
                         .help = "JetStream: the stream's replicas (num_replicas), up to --cluster; a PubAck "
                                 "once a majority of them has the message",
                         .min = 1,
                         .max = 5}),
  };
}

// The job's subjects, stream and consumer.
struct Plan {
  bool jetstream = false;
  std::vector<std::string> subjects;
  std::string wildcard, stream, durable = "mwbench";
  int fetch = 64;
};

// A completion made on a library thread; its detail is owned until the driver reaps it.
struct Done {
  uint64_t seq;
  Status status;
  std::string detail;
};

// What the library's threads and the driver's loop share: the messages in flight, the
// completions, an eventfd that wakes the loop.
struct Flights final : nats::Hooks {
  std::mutex mu;
  std::unordered_set<uint64_t> inflight;
  std::deque<Done> done;
  bool dead = false, signalled = false;
  int refusals = 0;  // PubAcks in a row that said no stream takes the subject (none leads it)
  std::string why;
  int efd = -1;

  Flights() {
    if ((efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC)) < 0)
      throw SetupError(std::string("nats: eventfd: ") + std::strerror(errno));
  }
  ~Flights() override { close(efd); }
  // Under mu: wakes the driver's loop once per batch of completions (reap() rearms it), not
  // once per message: a write(2) per PubAck cost more than the rest of the produce.
  void signal() {
    if (signalled) return;
    signalled = true;
    const uint64_t one = 1;
    [[maybe_unused]] ssize_t w = write(efd, &one, sizeof one);  // fails only on a full counter
  }
  // Under mu: every message in flight fails with `w`, and so does every later send.
  void lost(const std::string& w, Status st) {
    if (!dead) why = w;
    dead = true;
    for (uint64_t s : inflight) done.push_back({s, st, why});
    inflight.clear();
    signal();
  }
  void closed(const std::string& reason) override {
    std::lock_guard lk(mu);
    lost(reason.empty() ? "the server closed the connection" : reason, Status::Error);
  }
  void acked(natsMsg* m, jsPubAck* pa, jsPubAckErr* pae) override {
    const queue::Decoded d = queue::decode({natsMsg_GetData(m), static_cast<size_t>(natsMsg_GetDataLength(m))});
    if (!d.ok) return;
    std::lock_guard lk(mu);
    if (!inflight.erase(d.id)) return;  // failed already (a timeout, the connection lost)
    if (pa) {
      refusals = 0;
      done.push_back({d.id, Status::Ok, {}});
    } else if (pae && pae->Err == NATS_TIMEOUT) {  // as the driver's abort: this connection gives up
      inflight.insert(d.id);
      return lost("no PubAck within the timeout", Status::Timeout);
    } else {
      if (pae && pae->Err == NATS_NO_RESPONDERS) ++refusals;
      std::string w =
          pae && pae->Err == NATS_NO_RESPONDERS
              ? "no stream takes the subject (was the stream deleted?)"
              : "JetStream refused the message: " +
                    (pae ? nats::why(pae->Err, pae->ErrCode) + (pae->ErrText ? std::string(" ") + pae->ErrText : "")
                         : std::string("no PubAck"));
      done.push_back({d.id, Status::Error, std::move(w)});
    }
    signal();
  }
};

// The pipelined produce (src/queue/queue.h). JetStream: js_PublishAsync, the PubAck (or its failure)
// completes the message, found by the id in its bytes; core NATS: done once the library took it.
// With --reconnect-backoff (a fault job) a lost connection is made again before the next send, each
// try after the back-off (10 ms first, doubled after each failure, up to the option): a try that
// fails fails that message. The eventfd stays the driver's; the old connection's callbacks are
// gone with it (client.h), so a late PubAck of it completes nothing.
class Sender final : public QueueSender {
 public:
  Sender(const Endpoint& ep, const Plan& plan, int max_pending, double backoff_s)
      : ep_(ep),
        plan_(plan),
        max_pending_(max_pending),
        backoff_max_ns_(static_cast<int64_t>(backoff_s * 1e9)),
        f_(std::make_shared<Flights>()),
        c_(std::make_unique<Conn>(ep, f_)) {
    if (plan_.jetstream) {
      c_->js(max_pending);
      jsPubOptions_Init(&po_);
      po_.MaxWait = ep.timeout_ms();
    }
  }
  int fd() const override { return f_->efd; }
  bool alive() const override {
    if (backoff_max_ns_ > 0) return true;  // its next send connects again
    std::lock_guard lk(f_->mu);
    return !f_->dead || !f_->done.empty();
  }

  void send(uint64_t seq, std::string_view msg) override {
    const std::string& subject = plan_.subjects[seq % plan_.subjects.size()];
    if (backoff_max_ns_ > 0 && dead()) reconnect();
    if (backoff_max_ns_ > 0) wait_refused();
    {
      std::lock_guard lk(f_->mu);
      if (f_->dead) {
        f_->done.push_back({seq, Status::Error, f_->why});
        return f_->signal();
      }
      if (plan_.jetstream) f_->inflight.insert(seq);  // before the PubAck can come
    }
    natsStatus s = plan_.jetstream
                       ? js_PublishAsync(c_->js(), subject.c_str(), msg.data(), static_cast<int>(msg.size()), &po_)
                       : natsConnection_Publish(c_->get(), subject.c_str(), msg.data(), static_cast<int>(msg.size()));
    std::lock_guard lk(f_->mu);
    if (s != NATS_OK) {
      if (plan_.jetstream && !f_->inflight.erase(seq)) return;  // already failed by a close
      f_->done.push_back({seq, s == NATS_TIMEOUT ? Status::Timeout : Status::Error,
                          "publish: " + c_->why(s) + " (nats " + ep_.where() + ")"});
      if (s == NATS_CONNECTION_CLOSED) f_->lost("the server closed the connection", Status::Error);
    } else if (!plan_.jetstream) {
      f_->done.push_back({seq, Status::Ok, {}});
    } else {
      return;  // the PubAck's handler completes it
    }
    f_->signal();
  }

  size_t reap(std::span<Completion> out) override {
    uint64_t n;
    [[maybe_unused]] ssize_t r = read(f_->efd, &n, sizeof n);  // EAGAIN: nothing new
    details_.clear();
    std::lock_guard lk(f_->mu);
    f_->signalled = false;
    size_t k = 0;
    for (; k < out.size() && !f_->done.empty(); ++k) {
      Done& d = f_->done.front();
      if (d.detail.empty()) {
        out[k] = {d.seq, {d.status, 0, {}}};
      } else {
        details_.push_back(std::move(d.detail));
        out[k] = {d.seq, {d.status, 0, details_.back()}};
      }
      f_->done.pop_front();
    }
    if (!f_->done.empty()) f_->signal();  // more than `out` holds: the loop comes back
    return k;
  }

  void abort(std::string_view why) override {
    std::lock_guard lk(f_->mu);
    f_->lost(std::string(why) + " (nats " + ep_.where() + ")", Status::Timeout);
  }

 private:
  bool dead() const {
    std::lock_guard lk(f_->mu);
    return f_->dead;
  }
  // A fault job: while no node leads the stream (an election) every publish is refused at once;
  // the next waits 10 ms after the first refusal, twice as long after each, up to the back-off.
  void wait_refused() {
    int n;
    {
      std::lock_guard lk(f_->mu);
      n = f_->refusals;
    }
    if (n == 0) return;
    const int64_t wait = std::min(backoff_max_ns_, int64_t{10'000'000} << std::min(n - 1, 20));
    const int64_t until = now_ns() + wait;
    while (now_ns() < until && !stop_requested().load(std::memory_order_relaxed))
      std::this_thread::sleep_for(
          std::chrono::milliseconds(std::clamp<int64_t>((until - now_ns()) / 1'000'000, 1, 50)));
  }
  void reconnect() {
    while (now_ns() < next_try_ && !stop_requested().load(std::memory_order_relaxed))
      std::this_thread::sleep_for(
          std::chrono::milliseconds(std::clamp<int64_t>((next_try_ - now_ns()) / 1'000'000, 1, 50)));
    c_.reset();  // its callbacks end with it: nothing more of it comes in
    {
      std::lock_guard lk(f_->mu);
      f_->dead = false;
      f_->why.clear();
    }
    try {
      c_ = std::make_unique<Conn>(ep_, f_);
      if (plan_.jetstream) c_->js(max_pending_);
      backoff_ns_ = 0;
    } catch (const std::exception& e) {
      c_.reset();
      std::lock_guard lk(f_->mu);
      f_->dead = true;
      f_->why = std::string("reconnect failed: ") + e.what();
      backoff_ns_ = std::min(backoff_max_ns_, backoff_ns_ > 0 ? backoff_ns_ * 2 : int64_t{10'000'000});
      next_try_ = now_ns() + backoff_ns_;
    }
  }

  const Endpoint& ep_;
  const Plan& plan_;
  int max_pending_;
  int64_t backoff_max_ns_;  // --reconnect-backoff; 0: a lost connection stays lost
  int64_t backoff_ns_ = 0, next_try_ = 0;
  std::shared_ptr<Flights> f_;
  std::unique_ptr<Conn> c_;
  jsPubOptions po_{};
  std::deque<std::string> details_;
};

// A JetStream consumer: the job's durable pull consumer, --fetch messages per request, each
// acknowledged once handed out; the ones fetched and never handed out are given back (nak).
class JsConsumer final : public QueueConn {
 public:
  JsConsumer(const Endpoint& ep, const Plan& plan) : c_(ep), fetch_(plan.fetch) {
    jsSubOptions so;
    jsSubOptions_Init(&so);
    so.Stream = plan.stream.c_str();
    so.Consumer = plan.durable.c_str();
    jsErrCode e = static_cast<jsErrCode>(0);
    if (natsStatus s = js_PullSubscribe(&sub_, c_.js(), plan.wildcard.c_str(), plan.durable.c_str(), nullptr, &so, &e);
        s != NATS_OK)
      c_.fail("pull subscription to " + plan.stream + ": " + c_.why(s, e));
  }
  ~JsConsumer() override {
    for (int i = next_; i < list_.Count; ++i) natsMsg_Nak(list_.Msgs[i], nullptr);
    natsMsgList_Destroy(&list_);
    natsSubscription_Destroy(sub_);  // the durable consumer stays: it was bound, not created
  }
  bool alive() const override { return alive_; }
  bool redelivered() const override { return redelivered_; }
  OpResult produce(std::string_view) override {
    return {Status::Unsupported, 0, "nats produces through the core's pipelined produce"};
  }

  OpResult consume(std::string& msg, double wait_s) override {
    if (!alive_) return {Status::Error, 0, why_};
    if (next_ >= list_.Count) {
      natsMsgList_Destroy(&list_);
      next_ = 0;
      jsErrCode e = static_cast<jsErrCode>(0);
      const auto ms = std::max<int64_t>(1, static_cast<int64_t>(wait_s * 1000));
      natsStatus s = natsSubscription_Fetch(&list_, sub_, fetch_, ms, &e);
      if (s == NATS_TIMEOUT) return {Status::NotFound, 0, {}};
      if (s != NATS_OK) return gone("fetch: " + c_.why(s, e));
      if (list_.Count == 0) return {Status::NotFound, 0, {}};
    }
    natsMsg* m = list_.Msgs[next_++];
    msg.assign(natsMsg_GetData(m), static_cast<size_t>(natsMsg_GetDataLength(m)));
    jsMsgMetaData* meta = nullptr;
    redelivered_ = natsMsg_GetMetaData(&meta, m) == NATS_OK && meta->NumDelivered > 1;
    jsMsgMetaData_Destroy(meta);
    if (natsStatus s = natsMsg_Ack(m, nullptr); s != NATS_OK) return gone("ack: " + c_.why(s));
    return {Status::Ok, 0, {}};
  }

 private:
  OpResult gone(const std::string& why) {
    alive_ = !c_.closed();
    why_ = why + " (nats " + c_.endpoint().where() + ")";
    return {Status::Error, 0, why_};
  }
  Conn c_;
  natsSubscription* sub_ = nullptr;
  natsMsgList list_{};
  int next_ = 0, fetch_;
  bool alive_ = true, redelivered_ = false;
  std::string why_;
};

// A core NATS consumer: a member of the job's queue group on its subjects, subscribed (and the
// server told, by a flush) before it is handed out, so no message published after is missed.
class CoreConsumer final : public QueueConn {
 public:
  CoreConsumer(const Endpoint& ep, const Plan& plan) : c_(ep) {
    natsStatus s = natsConnection_QueueSubscribeSync(&sub_, c_.get(), plan.wildcard.c_str(), "mwbench");
    if (s == NATS_OK) s = natsSubscription_SetPendingLimits(sub_, 1 << 20, 1 << 30);
    if (s == NATS_OK) s = natsConnection_FlushTimeout(c_.get(), ep.timeout_ms());
    if (s != NATS_OK) {
      if (sub_) natsSubscription_Destroy(sub_);
      c_.fail("subscribing to " + plan.wildcard + ": " + c_.why(s));
    }
  }
  ~CoreConsumer() override { natsSubscription_Destroy(sub_); }
  bool alive() const override { return !c_.closed(); }
  uint64_t dropped() const override {
    int64_t n = 0;
    return natsSubscription_GetDropped(sub_, &n) == NATS_OK && n > 0 ? static_cast<uint64_t>(n) : 0;
  }
  OpResult produce(std::string_view) override {
    return {Status::Unsupported, 0, "nats produces through the core's pipelined produce"};
  }
  OpResult consume(std::string& msg, double wait_s) override {
    natsMsg* m = nullptr;
    natsStatus s = natsSubscription_NextMsg(&m, sub_, std::max<int64_t>(1, static_cast<int64_t>(wait_s * 1000)));
    if (s == NATS_TIMEOUT) return {Status::NotFound, 0, {}};
    if (s != NATS_OK) {
      why_ = "next message: " + c_.why(s) + " (nats " + c_.endpoint().where() + ")";
      return {Status::Error, 0, why_};
    }
    msg.assign(natsMsg_GetData(m), static_cast<size_t>(natsMsg_GetDataLength(m)));
    natsMsg_Destroy(m);
    return {Status::Ok, 0, {}};
  }

 private:
  Conn c_;
  natsSubscription* sub_ = nullptr;
  std::string why_;
};

std::string server_version(const std::string& binary) {
  const std::string out = capture_output({binary, "--version"});  // "nats-server: v2.9.10"
  const size_t at = out.find(" v");
  return at == std::string::npos ? "" : out.substr(at + 2, out.find_first_of(" \n", at + 2) - at - 2);
}

// --crash kill on a JetStream produce: the job's own nats-server is killed mid-run, restarted on
// its store, and the stream read back through the durable consumer. --crash power and torn: its
// store directory (-sd) is on the page-cache layer, and what the server had not fsynced is gone.
class NatsCrash final : public Crashable {
 public:
  NatsCrash(std::shared_ptr<Service> svc, const Endpoint& ep, const Plan& plan, Contract c, const SizeDist& sizes)
      : svc_(std::move(svc)), ep_(ep), plan_(plan), contract_(std::move(c)), sizes_(sizes) {}
  std::string victim() const override { return "nats-server"; }
  void kill() override { svc_->kill_now(); }
  void restart() override { svc_->restart(); }
  bool pause(bool on) override { return svc_->pause(on); }
  std::string note() const override { return contract_.detail; }

  std::vector<WriteState> check(std::span<const uint64_t> seqs) override {
    queue::ReadBack got(sizes_);
    if (stream_exists()) {
      JsConsumer c(ep_, plan_);
      read_back(c, 2 * seqs.size() + 1000, 0.5, got);
    }
    return got.states(seqs);
  }

 private:
  // A memory stream is gone with the server that held it.
  bool stream_exists() {
    Conn c(ep_);
    jsStreamInfo* si = nullptr;
    jsErrCode e = static_cast<jsErrCode>(0);
    natsStatus s = js_GetStreamInfo(&si, c.js(), plan_.stream.c_str(), nullptr, &e);
    if (si) jsStreamInfo_Destroy(si);
    if (s == NATS_NOT_FOUND || e == JSStreamNotFoundErr) return false;
    if (s != NATS_OK) c.fail("stream info of " + plan_.stream + " after the restart: " + c.why(s, e));
    return true;
  }

  std::shared_ptr<Service> svc_;
  const Endpoint& ep_;
  const Plan& plan_;
  Contract contract_;
  const SizeDist& sizes_;  // the adapter's --message-size, which outlives its crash
};

// The stream's cluster facts: its leader's name ("" while none) and whether every replica is
// current. Throws SetupError when no node answers.
struct StreamState {
  std::string leader;
  bool current = false;
};
StreamState stream_state(const Endpoint& ep, const std::string& stream) {
  Conn c(ep);
  jsStreamInfo* si = nullptr;
  jsErrCode e = static_cast<jsErrCode>(0);
  if (natsStatus s = js_GetStreamInfo(&si, c.js(), stream.c_str(), nullptr, &e); s != NATS_OK || !si)
    c.fail("stream info of " + stream + ": " + c.why(s, e));
  StreamState st;
  if (si->Cluster && si->Cluster->Leader) st.leader = si->Cluster->Leader;
  st.current = !st.leader.empty();
  for (int i = 0; si->Cluster && i < si->Cluster->ReplicasLen; ++i)
    st.current = st.current && si->Cluster->Replicas[i]->Current && !si->Cluster->Replicas[i]->Offline;
  jsStreamInfo_Destroy(si);
  return st;
}

// --cluster N: N managed nats-servers on 127.0.0.1, each on a free client port and route port with
// its own temp dir (its JetStream store), routed to each other as cluster "mwbench". Ready once
// the JetStream meta group has a leader (an account info answers). No node outlives mwbench
// (Service).
class NatsCluster {
 public:
  NatsCluster(const std::string& binary, int n, double timeout_s) {
    std::vector<int> routes;
    for (int k = 0; k < n; ++k) routes.push_back(free_port());
    for (size_t k = 0; k < routes.size(); ++k)
      nodes_.push_back(std::make_shared<Service>(nats::cluster_node_spec(binary, k, routes)));
    ep_.timeout_s = timeout_s;
    ep_.port = nodes_[0]->port();
    for (size_t k = 1; k < nodes_.size(); ++k) ep_.others.push_back({"127.0.0.1", nodes_[k]->port()});
    // The meta leader: the first nodes wait for the others' routes, then elect one.
    const int64_t deadline = now_ns() + static_cast<int64_t>(std::max(15.0, 3 * timeout_s) * 1e9);
    for (std::string why;;) {
      throw_if_stopped("waiting for the nats cluster's JetStream meta leader");
      try {
        Conn c(ep_);
        jsAccountInfo* ai = nullptr;
        jsErrCode e = static_cast<jsErrCode>(0);
        natsStatus s = js_GetAccountInfo(&ai, c.js(), nullptr, &e);
        if (ai) jsAccountInfo_Destroy(ai);
        if (s == NATS_OK) break;
        why = c.why(s, e);
      } catch (const SetupError& x) {
        why = x.what();
      }
      if (now_ns() >= deadline)
        throw SetupError("nats cluster of " + std::to_string(n) + ": no JetStream meta leader: " + why);
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
  }
  const Endpoint& endpoint() const { return ep_; }
  std::shared_ptr<Service> node(size_t k) const { return nodes_[k]; }
  size_t size() const { return nodes_.size(); }
  // "node-2 (127.0.0.1:PORT)"; the name as given when it is none of ours.
  std::string describe(const std::string& name) const {
    for (size_t k = 0; k < nodes_.size(); ++k)
      if (nats::node_name(k) == name) return name + " (127.0.0.1:" + std::to_string(nodes_[k]->port()) + ")";
    return name;
  }
  // The stream's leader and every replica current, within `timeout_s`; throws SetupError saying
  // what was missing.
  void wait_stream(const std::string& stream, double timeout_s) const {
    const int64_t deadline = now_ns() + static_cast<int64_t>(timeout_s * 1e9);
    for (std::string why;;) {
      throw_if_stopped("waiting for stream " + stream + "'s replicas");
      try {
        const StreamState st = stream_state(ep_, stream);
        if (st.current) return;
        why = st.leader.empty() ? "no leader" : "a replica not current";
      } catch (const SetupError& e) {
        why = e.what();
      }
      if (now_ns() >= deadline) throw SetupError("nats: stream " + stream + " not ready: " + why);
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
  }

 private:
  std::vector<std::shared_ptr<Service>> nodes_;
  Endpoint ep_;
};

// --fault kill-node on a cluster: SIGKILL to the stream's leader, the node whose loss the clients
// feel (its PubAcks and the consumer's deliveries come from it; a follower's loss changes
// nothing they see), found by asking a node; it stays down. leader(): the leader now.
class NatsNodes final : public Cluster {
 public:
  NatsNodes(const NatsCluster& c, std::string stream) : c_(c), stream_(std::move(stream)) {}
  std::string victim() const override { return "the nats cluster's stream leader"; }
  std::string kill_node() override {
    const std::string leader = stream_state(c_.endpoint(), stream_).leader;
    for (size_t k = 0; k < c_.size(); ++k)
      if (nats::node_name(k) == leader) {
        c_.node(k)->kill_now();
        return c_.describe(leader) + ", the stream's leader";
      }
    throw SetupError("the stream " + stream_ + " has no leader to kill (" +
                     (leader.empty() ? std::string("none named") : leader + " is none of mwbench's nodes") + ")");
  }
  std::string leader() override {
    try {
      const std::string name = stream_state(c_.endpoint(), stream_).leader;
      return name.empty() ? "" : c_.describe(name);
    } catch (const SetupError&) {
      return "";
    }
  }

 private:
  const NatsCluster& c_;
  std::string stream_;
};

class NatsAdapter final : public QueueAdapter {
 public:
  explicit NatsAdapter(const Job& job) : QueueAdapter(job), o_(options_of<NatsOptions>(job)) {
    if (!o_.jetstream)
      for (const char* js_only : {"storage", "fetch"})
        if (job.has(js_only))
          throw SetupError(std::string("nats: --") + js_only + " is a JetStream option: add --jetstream");
    if (!o_.jetstream && op() != QueueOp::Roundtrip)
      throw SetupError("nats: core NATS stores nothing (at most once, to the subscribers of the moment): " + job.op +
                       " needs --jetstream; roundtrip runs on core NATS");
    crash_ = durability_options_of(job).crash != CrashKind::None;
    if (crash_ && (!o_.jetstream || op() != QueueOp::Produce || !o_.host.empty() || o_.cluster > 0))
      throw SetupError(
          "nats: --crash needs --jetstream, op produce and the one nats-server mwbench starts (no --host, no "
          "--cluster)");
    check_cluster(job);
    if (o_.host.empty() && !o_.user.empty())
      throw SetupError("nats: --user needs --host (the nats-server mwbench starts has no users)");
    own_ = crash_ || !job.faults.empty();  // a server a fault hits is the job's own, never shared
    ep_.port = o_.port;
    if (!o_.host.empty()) {  // one server, or a cluster's nodes
      std::vector<conn::HostPort> at = conn::parse_addresses(o_.host, o_.port, "nats: --host");
      ep_.host = at[0].host, ep_.port = at[0].port;
      ep_.others.assign(at.begin() + 1, at.end());
    }
    ep_.user = o_.user;
    if (const char* pw = std::getenv(o_.password_env.c_str()); pw && !o_.user.empty()) ep_.password = pw;
    ep_.timeout_s = job.timeout_s;
    ep_.max_frame = message_sizes().max() + nats::kFrameSlack;  // a larger MSG is a protocol error
    plan_.jetstream = o_.jetstream;
    plan_.fetch = static_cast<int>(o_.fetch);
    const std::string stem = "mwbench-" + std::to_string(run_id()) + "-" + unique_name("s");
    plan_.stream = stem;
    plan_.wildcard = "mwbench." + std::to_string(run_id()) + "." + unique_name("s") + ".*";
    for (int64_t i = 0; i < o_.queues; ++i)
      plan_.subjects.push_back(plan_.wildcard.substr(0, plan_.wildcard.size() - 1) + std::to_string(i));
    pending_ = std::max(64, job.pipeline) * 2;
  }
  ~NatsAdapter() override { QueueAdapter::teardown(); }

  std::string target() const override {
    return ep_.where() +
           (o_.jetstream ? o_.storage == Storage::File ? " jetstream file" : " jetstream memory" : " core") +
           (o_.cluster > 0 ? " R" + std::to_string(o_.replicas) : "");
  }
  Info describe() override { return info_; }
  // A file stream's store directory (on the layer under --crash power): the profile counts its
  // device's I/O.
  std::vector<std::string> paths() const override {
    if (!svc_ || !o_.jetstream || o_.storage != Storage::File) return {};
    return {layer_ ? layer_->path() : svc_->dir()};
  }

  std::optional<Contract> contract(const Job&) const {
    if (o_.jetstream && o_.replicas > 1)
      return Contract{ContractKind::Replicated, 0,
                      "JetStream R" + std::to_string(o_.replicas) + " " +
                          (o_.storage == Storage::File ? "file" : "memory") + " storage: the PubAck once " +
                          std::to_string(o_.replicas / 2 + 1) + " of the " + std::to_string(o_.replicas) +
                          " replicas have the message (a majority: an acknowledged message survives the loss of " +
                          std::to_string((o_.replicas - 1) / 2) + " node" + (o_.replicas > 3 ? "s" : "") + ")"};
    if (!o_.jetstream)
      return Contract{ContractKind::Memory, 0,
                      "core NATS: at most once, nothing stored; done once the client library "
                      "took the message"};
    if (o_.storage == Storage::Memory)
      return Contract{ContractKind::Memory, 0, "JetStream memory storage: acknowledged once in the server's memory"};
    return Contract{ContractKind::PeriodicFsync, 120,
                    "JetStream file storage: written before the PubAck, fsynced every "
                    "sync_interval (nats-server's default 2 min)"};
  }
  Abilities backend_abilities(const Job& job) override {
    return {.crash = crash_impl_.get(),
            .cluster = nodes_.get(),
            .contract = contract(job),
            .events = [this]() -> std::unique_ptr<EventProbe> {
              const std::shared_ptr<Service> first = cluster_ ? cluster_->node(0) : svc_;
              const int port = first ? nats::monitor_port(first->dir() + "/nats-server.log") : o_.monitor_port;
              return port > 0 ? std::make_unique<NatsEvents>(ep_.host, port, o_.jetstream) : nullptr;
            }};
  }

 protected:
  void start(const Job& job) override {
    if (o_.cluster > 0) {
      cluster_ = std::make_unique<NatsCluster>(o_.server_binary, o_.cluster, job.timeout_s);
      ep_.port = cluster_->endpoint().port;
      ep_.others = cluster_->endpoint().others;
      info_["version"] = server_version(find_binary(o_.server_binary));
      info_["cluster"] = std::to_string(o_.cluster) + " nodes, stream R" + std::to_string(o_.replicas);
    } else if (o_.host.empty()) {  // a crash or fault job's server is its own: it is killed
      ServiceSpec spec = nats::server_spec(o_.server_binary);
      if (crash_ && (layer_ = power_layer(job, "/tmp")))  // --crash power, torn: its store on the layer
        relocate(spec, "{dir}/jetstream", layer_->path() + "/jetstream");
      svc_ = own_ ? std::make_shared<Service>(spec) : shared_service("nats:" + o_.server_binary, spec);
      ep_.port = svc_->port();
      info_["version"] = server_version(find_binary(o_.server_binary));
    }
    info_["server"] = "nats-server";
    info_["managed"] = o_.host.empty() ? "yes" : "no";
    info_["libnats"] = nats_GetVersion();
    info_["mode"] = o_.jetstream ? "jetstream" : "core";
    check_payload();
    info_["key"] = o_.jetstream ? plan_.stream : plan_.wildcard;
    if (o_.jetstream) {
      info_["storage"] = o_.storage == Storage::File ? "file" : "memory";
      create_stream(job);
    }
    if (cluster_) {  // the load starts once the stream has its leader and current replicas
      cluster_->wait_stream(plan_.stream, std::max(15.0, 3 * job.timeout_s));
      nodes_ = std::make_unique<NatsNodes>(*cluster_, plan_.stream);
    } else if (own_ && svc_) {
      crash_impl_ = std::make_unique<NatsCrash>(svc_, ep_, plan_, *contract(job), message_sizes());
    }
    if (layer_) {  // the stream and its consumer are on disk before the power can go
      sync_layer(*layer_);
      crash_impl_->set_pagecache(layer_.get());
    }
  }
  std::unique_ptr<QueueSender> sender(const Job& job) override {
    return std::make_unique<Sender>(ep_, plan_, pending_, job.reconnect_backoff_s);
  }
  std::unique_ptr<QueueConn> connect(const Job&) override {
    if (o_.jetstream) return std::make_unique<JsConsumer>(ep_, plan_);
    return std::make_unique<CoreConsumer>(ep_, plan_);
  }
  uint64_t held_per_consumer(const Job&) const override { return o_.jetstream ? static_cast<uint64_t>(o_.fetch) : 0; }
  // Core NATS delivers to the subscribers of the moment, at most once: a subscriber too slow for
  // the server's buffer for it (a slow consumer) misses messages. JetStream marks a redelivery
  // (its delivery count), except across a fault that kills a node: what the consumer's leader had
  // not written down (or handed to its followers) of its deliveries and acks is delivered again
  // as a first delivery, so a fault job is held to at least once (its duplicates a figure).
  Delivery delivery(const Job& job) const override {
    if (!o_.jetstream) return Delivery::AtMostOnce;
    return job.faults.empty() ? Delivery::ExactlyOnce : Delivery::AtLeastOnce;
  }
  // What the job's consumer still hands out: not delivered yet (NumPending) and delivered but not
  // acknowledged (NumAckPending, redelivered after AckWait). A count that fails throws (the probe
  // names it, the end check fails on it). Core NATS stores nothing: it cannot say.
  int64_t remaining(const Job&) override {
    if (!o_.jetstream) return -1;
    return held().for_consumer;
  }
  // A work-queue stream removes a message once it is acknowledged. After nats-server was killed,
  // the stream can keep messages whose acknowledgement its consumer's state kept and whose removal
  // it lost: the consumer has passed them and never hands them out again.
  int64_t stranded(const Job&) override {
    if (!o_.jetstream) return 0;
    const Held h = held();
    return std::max<int64_t>(0, h.in_stream - h.for_consumer);
  }
  void stop_backend() override {
    if (!created_) return;
    created_ = false;
    try {
      Conn c(ep_);
      js_DeleteStream(c.js(), plan_.stream.c_str(), nullptr, nullptr);
    } catch (const SetupError&) {  // a server that is gone keeps nothing to delete
    }
  }

 private:
  // Every message within the server's max_payload (nats-server's default 1 MB): a larger publish
  // would fail every time it came.
  void check_payload() {
    Conn c(ep_);
    const int64_t max = natsConnection_GetMaxPayload(c.get());
    if (max > 0 && message_sizes().max() > static_cast<uint64_t>(max))
      throw SetupError("nats " + ep_.where() + ": --message-size: the largest message, " +
                       std::to_string(message_sizes().max()) + " bytes, is over the server's max_payload " +
                       std::to_string(max));
  }
  struct Held {
    int64_t in_stream = 0, for_consumer = 0;
  };
  Held held() {
    Conn c(ep_);
    jsErrCode e = static_cast<jsErrCode>(0);
    jsStreamInfo* si = nullptr;
    if (natsStatus s = js_GetStreamInfo(&si, c.js(), plan_.stream.c_str(), nullptr, &e); s != NATS_OK || !si)
      c.fail("counting the messages of stream " + plan_.stream + ": " + c.why(s, e));
    Held h;
    h.in_stream = static_cast<int64_t>(si->State.Msgs);
    jsStreamInfo_Destroy(si);
    jsConsumerInfo* ci = nullptr;
    if (natsStatus s = js_GetConsumerInfo(&ci, c.js(), plan_.stream.c_str(), plan_.durable.c_str(), nullptr, &e);
        s != NATS_OK || !ci)
      c.fail("counting the messages of consumer " + plan_.durable + ": " + c.why(s, e));
    h.for_consumer = static_cast<int64_t>(ci->NumPending) + ci->NumAckPending;
    jsConsumerInfo_Destroy(ci);
    return h;
  }
  void create_stream(const Job& job) {
    Conn c(ep_);
    jsStreamConfig sc;
    jsStreamConfig_Init(&sc);
    sc.Name = plan_.stream.c_str();
    const char* subjects[] = {plan_.wildcard.c_str()};
    sc.Subjects = subjects;
    sc.SubjectsLen = 1;
    sc.Retention = js_WorkQueuePolicy;
    sc.Storage = o_.storage == Storage::File ? js_FileStorage : js_MemoryStorage;
    sc.Replicas = o_.replicas;
    jsErrCode e = static_cast<jsErrCode>(0);
    if (natsStatus s = js_AddStream(nullptr, c.js(), &sc, nullptr, &e); s != NATS_OK)
      c.fail("creating stream " + plan_.stream + ": " + c.why(s, e));
    created_ = true;
    jsConsumerConfig cc;
    jsConsumerConfig_Init(&cc);
    cc.Durable = plan_.durable.c_str();
    cc.AckPolicy = js_AckExplicit;
    cc.MaxAckPending = -1;  // the consumers' fetches bound what is held
    // A fault job: what a consumer lost with its connection had fetched comes back (a
    // redelivery) within half the timeout, not nats-server's default 30 s, so the end check's
    // drain gets it.
    if (!job.faults.empty()) cc.AckWait = static_cast<int64_t>(std::max(0.5, job.timeout_s / 2) * 1e9);
    if (natsStatus s = js_AddConsumer(nullptr, c.js(), plan_.stream.c_str(), &cc, nullptr, &e); s != NATS_OK)
      c.fail("creating consumer " + plan_.durable + ": " + c.why(s, e));
  }

  // --cluster and --replicas, and the faults each set-up can take: one line before any server
  // starts. kill, restart and stop hit the one managed server; kill-node a cluster's node.
  void check_cluster(const Job& job) const {
    if (o_.cluster > 0 && o_.cluster < 3)
      throw SetupError("nats: --cluster " + std::to_string(o_.cluster) +
                       ": a JetStream cluster takes 3 to 5 nodes (0: one server)");
    if (o_.cluster > 0 && !o_.host.empty())
      throw SetupError("nats: --cluster starts its own nodes on 127.0.0.1: drop --host");
    if (o_.cluster > 0 && !o_.jetstream) throw SetupError("nats: --cluster is a JetStream option: add --jetstream");
    if (job.has("replicas") && o_.cluster == 0)
      throw SetupError("nats: --replicas " + std::to_string(o_.replicas) +
                       " needs --cluster (one server holds one copy)");
    if (o_.replicas > o_.cluster && o_.cluster > 0)
      throw SetupError("nats: --replicas " + std::to_string(o_.replicas) + " is above --cluster " +
                       std::to_string(o_.cluster) + " (a replica per node at most)");
    for (const FaultSpec& f : job.faults) {
      if (f.kind == FaultKind::KillNode && o_.cluster == 0)
        throw SetupError("--fault " + f.text + ": kill-node needs a cluster: add --jetstream --cluster 3");
      if (f.kind != FaultKind::KillNode && o_.cluster > 0)
        throw SetupError("--fault " + f.text + ": a cluster takes kill-node (one node SIGKILLed), not " +
                         fault_kind_name(f.kind));
    }
  }

  NatsOptions o_;
  Endpoint ep_;
  Plan plan_;
  int pending_ = 128;
  bool crash_ = false, created_ = false, own_ = false;
  std::unique_ptr<NatsCluster> cluster_;
  std::unique_ptr<NatsNodes> nodes_;       // --fault kill-node on a cluster
  std::unique_ptr<PageCacheMount> layer_;  // --crash power, torn; outlives the server on it
  std::shared_ptr<Service> svc_;
  std::unique_ptr<NatsCrash> crash_impl_;
  Info info_;
};

}  // namespace

AdapterSpec nats_adapter_spec() {
  return {
      .name = "nats",
      .summary =
          "NATS: core publish/subscribe, or JetStream (--jetstream) with acknowledged publishes and a "
          "durable consumer; a managed nats-server unless --host",
      .ops = queue_op_specs(),
      .default_ops = "roundtrip",
      .options = nats_options(),
      .unavailable = conn::unavailable_without_package<NatsOptions>("nats-server"),
      .make = [](const Job& j, WorkloadPtr) -> std::unique_ptr<Adapter> { return std::make_unique<NatsAdapter>(j); },
      .machine =
          [] {
            const std::string b = find_binary("nats-server");
            return b.empty() ? std::string("nats-server not found") : "nats-server " + server_version(b) + " at " + b;
          },
      .families = {Family::Queue},
      .target = TargetKind::External,
      .target_option = "host",
      .libraries = {"libnats"},
      .crash_kinds = {CrashKind::Kill, CrashKind::Power, CrashKind::Torn},
      .crash_ops = {"produce"},
      .fault_kinds = {"kill", "restart", "stop", "kill-node"},
      .connects_note =
          "keeps its clients' connections: they are a queue's producers and consumers (a subscription ends with its "
          "connection)",
      .durability_settings = {"jetstream", "storage"}};
}

}  // namespace mw
