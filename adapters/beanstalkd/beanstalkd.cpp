// beanstalkd, the backend of src/queue/queue.h's QueueAdapter. Each job has tubes of its own (--queues
// N, named mwbench-<run>-..., message i in tube i mod N):
//   produce  put, up to -P replies in flight (the core's asynchronous produce); a "use" goes
//            before a put whose tube is not the one in use. INSERTED acknowledges the message.
//   consume  reserve-with-timeout on every tube of the job, then delete once the message is
//            checked. A reserve that has not answered when the consumer's wait ends stays
//            outstanding: the next consume waits for its reply instead of asking again.
// A job reserved and not deleted within --ttr seconds goes back to the ready queue (at least
// once); the ledger counts a second delivery as a duplicate, as beanstalkd marks none.
// --fault kill, restart, stop (the managed server, the job's own): with --reconnect-backoff the
// producer (conn/client.h) and the roundtrip's consumers (the core's) connect again; a put in
// flight at the fault fails (in doubt), and a job reserved whose delete got no answer is handed
// out all the same (its delete in doubt: a second delivery is a duplicate, at least once).
#include "adapters/beanstalkd/beanstalkd.h"
#include "adapters/events.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <span>

#include "adapters/beanstalkd/conn.h"
#include "adapters/conn/client.h"
#include "adapters/conn/server.h"
#include "adapters/health.h"
#include "api/contract.h"
#include "api/options.h"
#include "api/stop.h"
#include "durability/durability.h"
#include "durability/service_crash.h"
#include "queue/queue.h"
#include "util/files.h"
#include "util/text.h"

namespace mw {
namespace {

using beanstalkd::Conn;
using beanstalkd::Endpoint;
using beanstalkd::Reply;
using conn::now_ns;

struct BeanOptions {
  std::string host;  // "": start a beanstalkd on a free port
  int port = 11300;
  int64_t queues = 1;
  bool binlog = false;
  std::optional<int64_t> fsync_ms;  // default: beanstalkd's 50
  bool fsync = true;
  int64_t ttr = 60;
  int64_t max_reply = int64_t{16} << 20;
  std::string server_binary = "beanstalkd";
};

std::vector<OptionSpec> bean_options() {
  using O = BeanOptions;
  return {conn::host_option<O>("beanstalkd"),
          conn::port_option<O>(),
          opt(&O::queues,
              {.name = "queues", .help = "tubes per job; message i goes to tube i mod N", .min = 1, .max = 1000}),
          opt(&O::binlog, {.name = "binlog",
                           .help = "the managed server keeps a binlog in its temp dir (beanstalkd -b)",
                           .list = true}),
          opt(&O::fsync_ms, {.name = "fsync-ms",
                             .help = "binlog fsync at most once every MS ms, 0 on every write (beanstalkd -f; "
                                     "default 50); needs --binlog true",
                             .list = true,
                             .min = 0,
                             .max = 3600000}),
          opt(&O::fsync, {.name = "fsync",
                          .help = "false: the binlog is never fsynced (beanstalkd -F); needs --binlog "
                                  "true"}),
          opt(&O::ttr, {.name = "ttr",
                        .help = "seconds a reserved job may stay undeleted before it is handed out "
                                "again (put's ttr)",
                        .min = 1,
                        .max = 86400}),
          opt(&O::max_reply, {.name = "max-reply",
                              .help = "largest job accepted in a reply; a larger one drops the "
                                      "connection",
                              .min = 64,
                              .max = 1 << 30}),
          conn::server_binary_option<O>("beanstalkd")};
}

int64_t deadline(double s) { return now_ns() + static_cast<int64_t>(s * 1e9); }

constexpr double kCleanUpS = 3;  // the clean-up of the job's tubes takes at most this, or --timeout

// The job's tubes and how messages are put.
struct Plan {
  std::vector<std::string> tubes;
  int64_t ttr = 60;
};

// The pipelined produce (src/queue/queue.h): "put <pri> 0 <ttr> <bytes>" and the message, preceded by
// "use <tube>" when the message's tube is not the one in use; PutChecker matches the replies.
class Sender final : public conn::PipelinedClient<Conn, Endpoint, beanstalkd::PutChecker, QueueSender> {
 public:
  Sender(const Endpoint& ep, Health<Conn>* health, const Plan& plan)
      : PipelinedClient(ep, health, ep.limits), plan_(plan), head_("put 1024 0 " + std::to_string(plan.ttr) + " ") {
    checker_.set_tubes(&plan_.tubes);
  }
  void send(uint64_t seq, std::string_view msg) override {
    if (gone(seq)) return;
    const int t = static_cast<int>(seq % plan_.tubes.size());
    if (t != checker_.tube()) {
      out_.append("use ").append(plan_.tubes[static_cast<size_t>(t)]).append("\r\n");
      checker_.expect_use(t);
      checker_.using_tube(t);
    }
    checker_.expect_put(seq);
    out_.append(head_).append(std::to_string(msg.size())).append("\r\n").append(msg).append("\r\n");
  }

 private:
  const Plan& plan_;
  std::string head_;
};

// A consumer: watches every tube of the job (and not "default"), reserves, deletes.
class Consumer final : public QueueConn {
 public:
  Consumer(const Endpoint& ep, const std::vector<std::string>& tubes) : ep_(ep), c_(ep, deadline(ep.timeout_s)) {
    for (auto& t : tubes)
      expect(c_.call("watch " + t + "\r\n", deadline(ep_.timeout_s)), Reply::Code::Watching, "watch");
    expect(c_.call("ignore default\r\n", deadline(ep_.timeout_s)), Reply::Code::Watching, "ignore default");
  }
  bool alive() const override { return alive_; }
  bool damaged() const override { return damaged_; }

  OpResult produce(std::string_view) override {
    return {Status::Unsupported, 0, "beanstalkd produces through the core's pipelined produce"};
  }

  OpResult consume(std::string& msg, double wait_s) override {
    if (!alive_) return {Status::Error, 0, why_};
    try {
      return take(msg, wait_s);
    } catch (const SetupError& e) {  // the connection is gone, or did not answer in time
      alive_ = false;
      why_ = e.what();
      const bool timeout = why_.find("within the timeout") != std::string::npos;
      return {timeout ? Status::Timeout : Status::Error, 0, why_};
    }
  }

 private:
  OpResult take(std::string& msg, double wait_s) {
    const int64_t until = deadline(wait_s);
    for (;;) {
      if (!outstanding_) {
        const auto s = static_cast<int64_t>(std::ceil(std::max(wait_s, 0.0)));
        c_.send("reserve-with-timeout " + std::to_string(s) + "\r\n", deadline(ep_.timeout_s));
        outstanding_ = true;
        answer_by_ = deadline(static_cast<double>(s) + ep_.timeout_s);
      }
      if (!c_.ready(std::min(until, answer_by_))) {
        if (now_ns() < answer_by_) return {Status::NotFound, 0, {}};
        beanstalkd::fail(ep_, "no answer to reserve-with-timeout within the timeout");
      }
      Reply r = c_.read(deadline(ep_.timeout_s), "reserve-with-timeout");
      outstanding_ = false;
      if (r.code == Reply::Code::TimedOut) {
        if (now_ns() < until) continue;
        return {Status::NotFound, 0, {}};
      }
      if (r.code != Reply::Code::Reserved) return unexpected("reserve-with-timeout", r);
      msg.assign(r.data);
      damaged_ = r.damaged;  // taken and deleted all the same: the ledger counts it corrupt
      const uint64_t id = r.id;
      Reply d;
      try {
        d = c_.call("delete " + std::to_string(id) + "\r\n", deadline(ep_.timeout_s));
      } catch (const SetupError& e) {
        // The job came out: it is handed out, and the connection is gone (the next call says
        // so). Whether the server took the delete is in doubt: it may hand the job out again.
        alive_ = false;
        why_ = e.what();
        return {Status::Ok, 0, {}};
      }
      if (d.code != Reply::Code::Deleted) return unexpected("delete " + std::to_string(id), d);
      return {Status::Ok, 0, {}};
    }
  }
  void expect(const Reply& r, Reply::Code code, const char* what) {
    if (r.code != code)
      beanstalkd::fail(ep_, std::string("'") + what + "' answered '" + beanstalkd::printable(r.line, 100) + "'");
  }
  OpResult unexpected(const std::string& what, const Reply& r) {
    why_ = "'" + what + "' answered '" + beanstalkd::printable(r.line, 100) + "' (beanstalkd " + ep_.where() + ")";
    return {Status::Mismatch, 0, why_};
  }

  const Endpoint& ep_;
  Conn c_;
  bool alive_ = true, outstanding_ = false, damaged_ = false;
  int64_t answer_by_ = 0;
  std::string why_;
};

// beanstalkd's own events for the timeline (api/events.h): "stats" over a connection of the probe's.
class BeanEvents final : public ConnProbe<Conn> {
 public:
  explicit BeanEvents(const Endpoint& ep) : ep_(ep) {}
  std::string source() const override { return "beanstalkd"; }

 private:
  std::unique_ptr<Conn> connect(int64_t deadline) override { return std::make_unique<Conn>(ep_, deadline); }
  std::vector<EventReading> read(Conn& c, int64_t deadline) override {
    using K = EventReading::Kind;
    static const std::vector<StatEvent> table = {
        {"job-timeouts", K::Counter, "reserved jobs whose time to run ran out (released again)", "job_timeouts"},
        {"current-jobs-buried", K::Level, "jobs buried", "jobs_buried"},
        {"binlog-records-migrated", K::Counter, "binlog records rewritten (the binlog's compaction)",
         "binlog_migrated"},
        {"current-connections", K::Level, "open connections", "connections"},
    };
    return stat_events(c.stats("stats", deadline), table);
  }
  Endpoint ep_;
};

class BeanAdapter final : public QueueAdapter {
 public:
  explicit BeanAdapter(const Job& job) : QueueAdapter(job), o_(options_of<BeanOptions>(job)) {
    const bool managed = o_.host.empty();
    if (!o_.binlog && (o_.fsync_ms || job.has("fsync")))
      throw SetupError(std::string("beanstalkd: --") + (o_.fsync_ms ? "fsync-ms" : "fsync") + " needs --binlog true");
    if (o_.fsync_ms && !o_.fsync) throw SetupError("beanstalkd: --fsync-ms and --fsync false contradict each other");
    if (!managed && job.has("binlog"))
      throw SetupError("beanstalkd: --binlog sets up the managed server: it cannot be given with --host");
    ep_.host = managed ? "127.0.0.1" : o_.host;
    ep_.port = o_.port;
    ep_.timeout_s = job.timeout_s;
    // --reconnect-backoff (a fault job's, or given): the producers connect again after a lost
    // connection (conn/client.h); the roundtrip's consumers do in the core.
    ep_.reconnect_max_s = job.reconnect_backoff_s;
    ep_.limits.max_reply = static_cast<size_t>(o_.max_reply);
    const size_t size = message_sizes().max();
    if (size > ep_.limits.max_reply)
      throw SetupError("beanstalkd: --message-size: the largest message, " + std::to_string(size) +
                       " bytes, is over --max-reply (" + std::to_string(ep_.limits.max_reply) + ")");
    server_.binlog = o_.binlog;
    server_.fsync_ms = o_.fsync ? o_.fsync_ms.value_or(50) : -1;
    server_.max_job = std::max<size_t>(65535, size);
    server_.binary = o_.server_binary;
    plan_.ttr = o_.ttr;
    const std::string stem = "mwbench-" + std::to_string(run_id()) + "-" + unique_name("t");
    for (int64_t i = 0; i < o_.queues; ++i) plan_.tubes.push_back(stem + "-" + std::to_string(i));
    ep_.tube = plan_.tubes.front();
  }
  ~BeanAdapter() override {
    try {
      QueueAdapter::teardown();  // done once already when the runner tore it down (and said what was left)
    } catch (const std::exception&) {}
  }

  // --crash kill (produce on a managed server of the job's own): SIGKILL beanstalkd mid-run, restart
  // it on the same binlog dir, and take every job of the job's tubes to see which acknowledged
  // messages survived. --crash power and torn: the binlog dir is on the page-cache layer.
  // --fault kill, restart, stop: the same server of the job's own, signalled during the run.

  // A fault that kills a server without a binlog takes the jobs it held with it (at most once);
  // with a binlog, or a stop, each acknowledged job comes out, perhaps twice (a delete whose answer
  // was lost with the connection): at least once.
  Delivery delivery(const Job& job) const override {
    if (job.faults.empty()) return Delivery::ExactlyOnce;
    const bool kills = std::any_of(job.faults.begin(), job.faults.end(), [](const FaultSpec& f) {
      return f.kind == FaultKind::Kill || f.kind == FaultKind::Restart;
    });
    return kills && !server_.binlog ? Delivery::AtMostOnce : Delivery::AtLeastOnce;
  }

  std::string target() const override {
    return ep_.where() + (o_.host.empty() ? (o_.binlog ? " binlog" : " no binlog") : "");
  }
  Info describe() override { return info_; }
  // The binlog's directory (on the layer under --crash power): the profile counts its device's I/O.
  std::vector<std::string> paths() const override {
    if (!svc_ || !o_.binlog) return {};
    return {layer_ ? layer_->path() : svc_->dir()};
  }

  std::optional<Contract> contract(const Job&) const {
    if (!o_.host.empty()) return std::nullopt;  // an external server's settings are its own
    if (!server_.binlog) return Contract{ContractKind::Memory, 0, "no binlog: jobs live in the server's memory"};
    if (server_.fsync_ms < 0) return Contract{ContractKind::OsBuffer, 0, "binlog, never fsynced (beanstalkd -F)"};
    if (server_.fsync_ms == 0)
      return Contract{ContractKind::FsyncPerAck, 0, "binlog fsynced on every write (beanstalkd -f 0)"};
    return Contract{ContractKind::PeriodicFsync, static_cast<double>(server_.fsync_ms) / 1000,
                    "binlog fsynced at most once every " + std::to_string(server_.fsync_ms) + " ms (beanstalkd -f)"};
  }

 protected:
  void start(const Job& job) override {
    const bool crash = op() == QueueOp::Produce && durability_options_of(job).crash != CrashKind::None;
    const bool own = crash || !job.faults.empty();
    if (o_.host.empty()) {  // a crash or fault job's server is its own: it is killed
      ServiceSpec spec = beanstalkd::server_spec(server_);
      if (crash && (layer_ = power_layer(job, "/tmp")))  // --crash power, torn: its binlog on the layer
        relocate(spec, "{dir}/binlog", layer_->path() + "/binlog");
      svc_ = own ? std::make_shared<Service>(spec) : shared_service(server_.key(), spec);
      ep_.port = svc_->port();
    }
    Conn c(ep_, deadline(ep_.timeout_s));
    auto st = c.stats("stats", deadline(ep_.timeout_s));
    answered_ = true;
    // An external server's jobs are at most its -z bytes: a larger put would fail every time it came.
    const long long max_job = st.count("max-job-size") ? std::atoll(st["max-job-size"].c_str()) : 0;
    if (max_job > 0 && message_sizes().max() > static_cast<uint64_t>(max_job))
      throw SetupError("beanstalkd " + ep_.where() + ": --message-size: the largest message, " +
                       std::to_string(message_sizes().max()) + " bytes, is over the server's max-job-size " +
                       std::to_string(max_job) + " (beanstalkd -z)");
    info_["server"] = "beanstalkd";
    info_["version"] = st.count("version") ? st["version"] : "";
    info_["managed"] = o_.host.empty() ? "yes" : "no";
    info_["binlog"] = o_.host.empty() ? (o_.binlog ? "yes" : "no") : "";
    if (o_.host.empty() && o_.binlog)
      info_["fsync"] = server_.fsync_ms < 0 ? "never" : std::to_string(server_.fsync_ms) + " ms";
    info_["key"] = plan_.tubes.front();
    info_["tubes"] = std::to_string(plan_.tubes.size());
    if (svc_ && own)
      crash_ = std::make_unique<ServiceCrash>(
          svc_, [this](int port) { ep_.port = port; },
          [this](std::span<const uint64_t> seqs) {
            return beanstalkd::read_back(ep_, plan_.tubes, message_sizes(), seqs);
          },
          contract(job)->detail);
    if (crash_ && layer_) {  // the binlog as the server opened it is on disk before the power can go
      sync_layer(*layer_);
      crash_->set_pagecache(layer_.get());
    }
  }

  std::unique_ptr<QueueSender> sender(const Job&) override { return std::make_unique<Sender>(ep_, &health_, plan_); }
  std::unique_ptr<QueueConn> connect(const Job&) override { return std::make_unique<Consumer>(ep_, plan_.tubes); }
  Abilities backend_abilities(const Job& job) override {
    return {.crash = crash_.get(), .contract = contract(job), .events = [this]() -> std::unique_ptr<EventProbe> {
              return std::make_unique<BeanEvents>(ep_);
            }};
  }
  int64_t remaining(const Job&) override {
    Conn c(ep_, deadline(ep_.timeout_s));
    int64_t held = 0;
    for (auto& t : plan_.tubes) {
      Reply r = c.call("stats-tube " + t + "\r\n", deadline(ep_.timeout_s));
      if (r.code == Reply::Code::NotFound) continue;  // a tube with no job and no watcher is gone
      if (r.code != Reply::Code::Ok)
        beanstalkd::fail(ep_, "'stats-tube' answered '" + beanstalkd::printable(r.line, 100) + "'");
      for (const char* k :
           {"current-jobs-ready: ", "current-jobs-reserved: ", "current-jobs-delayed: ", "current-jobs-buried: "})
        if (auto at = r.data.find(k); at != std::string_view::npos)
          held += std::atoll(std::string(r.data.substr(at + std::strlen(k), 20)).c_str());
    }
    return held;
  }
  // Jobs left in the job's tubes (a failed run) are deleted, within bounds: max(--timeout, 3 s) in
  // all, and only while each delete deletes (a server whose delete does not, or whose peek hands
  // back a job it said it deleted, would keep the rounds going). Once: a throw says what was left.
  void stop_backend() override {
    // A server that never answered the first 'stats' holds nothing of this job: asking it again
    // would only wait out more timeouts after a stop.
    if (!answered_) return;
    answered_ = false;
    const int64_t until = deadline(std::max(ep_.timeout_s, kCleanUpS));
    size_t t = 0;
    std::string why;
    try {
      Conn c(ep_, std::min(until, deadline(ep_.timeout_s)));
      for (; t < plan_.tubes.size(); ++t)
        if (why = empty_tube(c, plan_.tubes[t], until); !why.empty()) break;
    } catch (const SetupError&) {  // a server that is gone keeps nothing to remove; one out of time may
      if (now_ns() < until) return;
      why = out_of_time();
    }
    if (why.empty()) return;
    throw SetupError("beanstalkd " + ep_.where() + ": clean-up stopped (" + why +
                     "): " + std::to_string(plan_.tubes.size() - t) + " of the job's " +
                     std::to_string(plan_.tubes.size()) + " tubes may still hold jobs, from " + plan_.tubes[t] + " on");
  }

  std::string out_of_time() const { return "out of time after " + fmt(std::max(ep_.timeout_s, kCleanUpS), 0) + " s"; }

  // Deletes the tube's jobs (ready, delayed, buried) by `until`: "" when it is empty, else why not.
  std::string empty_tube(Conn& c, const std::string& tube, int64_t until) {
    auto by = [&] { return std::min(until, deadline(ep_.timeout_s)); };
    c.call("use " + tube + "\r\n", by());
    for (const char* peek : {"peek-ready", "peek-delayed", "peek-buried"}) {
      for (uint64_t last = 0;;) {
        if (now_ns() >= until) return out_of_time();
        Reply r = c.call(std::string(peek) + "\r\n", by());
        if (r.code != Reply::Code::Found) break;
        const std::string id = std::to_string(r.id);
        if (r.id == last) return std::string("'") + peek + "' handed back job " + id + " after its delete";
        last = r.id;
        Reply d = c.call("delete " + id + "\r\n", by());
        if (d.code != Reply::Code::Deleted)
          return "'delete " + id + "' answered '" + beanstalkd::printable(d.line, 100) + "'";
      }
    }
    return "";
  }

 private:
  BeanOptions o_;
  beanstalkd::ServerSettings server_;
  Endpoint ep_;
  Plan plan_;
  std::unique_ptr<PageCacheMount> layer_;  // --crash power, torn; outlives the server on it
  std::shared_ptr<Service> svc_;
  bool answered_ = false;  // the server answered start()'s 'stats': it may hold the job's tubes
  std::unique_ptr<Crashable> crash_;
  Health<Conn> health_;
  Info info_;
};

}  // namespace

namespace beanstalkd {

std::vector<WriteState> read_back(const Endpoint& ep, const std::vector<std::string>& tubes, const SizeDist& sizes,
                                  std::span<const uint64_t> seqs) {
  Consumer c(ep, tubes);
  queue::ReadBack got(sizes);
  std::string m;
  for (size_t i = 0; i < 2 * seqs.size() + 1000; ++i) {
    OpResult r = c.consume(m, 1);  // jobs ready come at once; the last wait ends the read
    if (r.status == Status::NotFound) break;
    if (r.status != Status::Ok) throw SetupError("beanstalkd: reading the jobs back: " + std::string(r.detail));
    got.add(m, c.damaged());
  }
  return got.states(seqs);
}

std::string ServerSettings::key() const {
  return "beanstalkd:" + binary + ":" + (binlog ? "binlog:" + std::to_string(fsync_ms) : "memory") + ":" +
         std::to_string(max_job);
}

ServiceSpec server_spec(const ServerSettings& s) {
  ServiceSpec spec;
  spec.name = "beanstalkd";
  spec.binary = s.binary;
  spec.args = {"-l", "127.0.0.1", "-p", "{port}", "-z", std::to_string(s.max_job)};
  if (s.binlog) {
    spec.args.insert(spec.args.end(), {"-b", "{dir}/binlog"});
    if (s.fsync_ms < 0)
      spec.args.push_back("-F");
    else
      spec.args.insert(spec.args.end(), {"-f", std::to_string(s.fsync_ms)});
    spec.setup = {{"mkdir", "{dir}/binlog"}};
  }
  spec.probe = conn::handshake_probe<Conn, Endpoint>();
  return spec;
}

}  // namespace beanstalkd

AdapterSpec beanstalkd_adapter_spec() {
  return {
      .name = "beanstalkd",
      .summary =
          "beanstalkd tubes over its text protocol: pipelined put, reserve-with-timeout and delete; a "
          "managed beanstalkd (binlog optional) unless --host",
      .ops = queue_op_specs(),
      .default_ops = "produce",
      .options = bean_options(),
      .unavailable = conn::unavailable_without<BeanOptions>("beanstalkd"),
      .make = [](const Job& j, WorkloadPtr) -> std::unique_ptr<Adapter> { return std::make_unique<BeanAdapter>(j); },
      .families = {Family::Queue},
      .target = TargetKind::External,
      .target_option = "host",
      .crash_kinds = {CrashKind::Kill, CrashKind::Power, CrashKind::Torn},
      .crash_ops = {"produce"},
      .fault_kinds = {"kill", "restart", "stop"},
      .connects_note =
          "keeps its clients' connections: they are a queue's producers and consumers (a subscription ends with its "
          "connection)",
      .durability_settings = {"binlog", "fsync-ms", "fsync"}};
}

}  // namespace mw
