// Redis SET / GET / PING over our own non-blocking socket (plain or TLS), with a bounded RESP
// parser (reply.h). Commands are pre-encoded RESP; each client keeps -P requests in flight;
// every reply is checked: SET answers OK, GET returns exactly the value SET stored, PING
// answers PONG. Every reply is capped (--max-reply) and every set-up read has a deadline.
#include "adapters/redis/redis.h"

#include <poll.h>

#include <algorithm>
#include <charconv>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <mutex>

#include "adapters/conn/client.h"
#include "adapters/conn/server.h"
#include "adapters/health.h"
#include "adapters/redis/conn.h"
#include "adapters/redis/crash.h"
#include "adapters/redis/events.h"
#include "adapters/redis/queues.h"
#include "adapters/redis/reply.h"
#include "adapters/redis/sentinel.h"
#include "api/options.h"
#include "api/stop.h"
#include "config/workload_spec.h"
#include "durability/durability.h"
#include "queue/queue.h"
#include "services/services.h"
#include "util/keys.h"

namespace mw {
namespace {

using redis::Conn;
using redis::Endpoint;
using redis::KeySpace;
using redis::now_ns;
using redis::Op;
using redis::Reply;

// The options of `mwbench redis`, typed (options.h); the member initialisers are the defaults.
struct RedisOptions {
  std::string host;  // "": start a redis-server on a free port
  int port = 6379;
  std::string password_env = "REDISCLI_AUTH";
  std::string user;
  bool tls = false, tls_resume = false;
  std::string cacert, cert, key, sni;
  int64_t max_reply = int64_t{512} << 20;
  std::string key_prefix = "mwbench:";
  std::string persistence = "none";  // none, rdb, aof (= aof-everysec), aof-no, aof-everysec, aof-always
  std::string server_binary = "redis-server";
  int replicas = 0;  // a replicated set-up (sentinel.h): replicas of the managed server
  bool sentinel = false;
  std::string sentinels;                 // an external set-up: its Sentinels, HOST:PORT,...
  std::string master_name = "mymaster";  // ... and the name they watch it by
  int wait_replicas = 0;                 // WAIT for this many after each native SET
  // The workload's names, with the native ops' defaults (redis-benchmark's).
  uint64_t keyspace = 10000;
  std::string keys = "sequential";
  std::string value_size = "3";
};

int64_t timeout_ns(const Endpoint& ep) { return static_cast<int64_t>(ep.timeout_s * 1e9); }

// After a timeout, a fresh connection that answers PING (the handshake) takes over; one verdict
// per timeout is shared by the job's clients (adapters/health.h).
using Health = mw::Health<Conn>;

// The workload's commands (--mix): read GET, update and insert SET, delete DEL, and rmw one
// EVALSHA of kRmwScript: it reads the key and, when it exists, writes the new value in the same
// atomic step (as SQLite's rmw is one transaction), answering the value it read, which is checked
// as a read's. One round trip keeps replies in request order on a pipelined connection. A write
// with a TTL (--ttl) is SET ... EX; the script takes it as ARGV[2].
constexpr const char* kRmwScript =
    "local v = redis.call('GET', KEYS[1]) if v then if ARGV[2] then redis.call('SET', KEYS[1], ARGV[1], 'EX', "
    "ARGV[2]) else redis.call('SET', KEYS[1], ARGV[1]) end end return v";

class RedisClient final : public conn::PipelinedClient<Conn, Endpoint, redis::ReplyChecker> {
 public:
  // Connects now: handshake errors are set-up errors.
  RedisClient(const Endpoint& ep, const KeySpace& keys, Op op, Health* health, std::vector<uint64_t>* written,
              std::mutex* written_mu, const std::string& rmw_sha, int wait_replicas = 0)
      : PipelinedClient(ep, health, keys, op, ep.limits),
        keys_(keys),
        op_(op),
        written_(written),
        written_mu_(written_mu),
        rmw_sha_(rmw_sha) {
    if (ep.sentinels) checker_.follow_primary();
    if (wait_replicas > 0 && op_ == Op::Set) {  // WAIT N, for at most half the op's --timeout
      const std::string n = std::to_string(wait_replicas),
                        ms = std::to_string(std::max<int64_t>(1, static_cast<int64_t>(ep.timeout_s * 500)));
      wait_cmd_ = "*3\r\n$4\r\nWAIT\r\n$" + std::to_string(n.size()) + "\r\n" + n + "\r\n$" +
                  std::to_string(ms.size()) + "\r\n" + ms + "\r\n";
      checker_.wait_after_set(wait_replicas);
    }
    // The RESP command of this op, encoded once; submit copies it and writes key and value in.
    std::string key(keys_.key_len(), 'k');
    if (op_ == Op::Mix) {
      key_buf_.resize(keys_.prefix.size() + 20);  // each request is encoded in submit_request
    } else if (op_ == Op::Ping) {
      cmd_ = "*1\r\n$4\r\nPING\r\n";
    } else {
      cmd_ = op_ == Op::Get ? "*2\r\n$3\r\nGET\r\n" : "*3\r\n$3\r\nSET\r\n";
      cmd_ += "$" + std::to_string(key.size()) + "\r\n";
      key_at_ = cmd_.size();
      cmd_ += key + "\r\n";
      if (op_ == Op::Set) {
        cmd_ += "$" + std::to_string(keys_.value_size) + "\r\n";
        value_at_ = cmd_.size();
        cmd_ += keys_.value(0) + "\r\n";
      }
    }
  }
  ~RedisClient() override { record_written(); }

  // The Sentinels named another primary since this connection was made: it is dropped (what is in
  // flight on it fails, in doubt), and the next op connects to the one they name.
  void follow_switch() {
    const uint64_t g = ep_.watch->generation();
    if (g == generation_) return;
    generation_ = g;
    drop("the Sentinels named another primary");
  }

  void submit(uint64_t seq) override {
    if (ep_.watch) [[unlikely]]
      follow_switch();
    if (gone(seq)) return;
    checker_.expect(seq);
    size_t at = out_.size();
    out_.append(cmd_);
    if (op_ == Op::Ping) return;
    uint64_t k = keys_.key_of(seq);
    keys_.write_key(k, out_.data() + at + key_at_);
    if (op_ != Op::Set) return;
    if (keys_.stamped) [[unlikely]]
      keys_.write_stamped(k, seq, out_.data() + at + value_at_);
    else
      keys_.write_value(k, out_.data() + at + value_at_);
    out_.append(wait_cmd_);
  }

  // A workload request, encoded in place at the end of the output buffer (no allocation once
  // the buffer has grown to its working size).
  void submit_request(const Request& r) override {
    if (ep_.watch) [[unlikely]]
      follow_switch();
    if (gone(r.seq)) return;
    redis::Kind kind = redis::Kind::Read;
    switch (r.op) {
      case KvOp::Read: append("*2\r\n$3\r\nGET\r\n"); break;
      case KvOp::Update:
      case KvOp::Insert:
        kind = redis::Kind::Write;
        if (r.cond > Cond::Upsert) [[unlikely]]  // a trace's add, replace: SET ... NX, XX
          append(r.ttl ? "*6\r\n$3\r\nSET\r\n" : "*4\r\n$3\r\nSET\r\n");
        else
          append(r.ttl ? "*5\r\n$3\r\nSET\r\n" : "*3\r\n$3\r\nSET\r\n");
        break;
      case KvOp::Delete:
        kind = redis::Kind::Delete;
        append("*2\r\n$3\r\nDEL\r\n");
        break;
      case KvOp::Rmw:
        kind = redis::Kind::Rmw;
        append(r.ttl ? "*6\r\n$7\r\nEVALSHA\r\n" : "*5\r\n$7\r\nEVALSHA\r\n");
        append_bulk(rmw_sha_.data(), rmw_sha_.size());
        append("$1\r\n1\r\n");
        break;
      default: {  // not in the spec's kv_ops, so workload_of refused it before the run
        fail_now(r.seq, Status::Unsupported, "redis maps no " + std::string(kv_op_name(r.op)));
        return;
      }
    }
    append_bulk(key_buf_.data(), redis::write_workload_key(keys_, r.key, key_buf_.data()));
    if (kind == redis::Kind::Write || kind == redis::Kind::Rmw) {
      append_len(r.value_size);
      size_t at = out_.size();
      out_.resize(at + r.value_size + 2);
      write_value(r.key, r.version, out_.data() + at, r.value_size);
      out_[at + r.value_size] = '\r';
      out_[at + r.value_size + 1] = '\n';
      if (r.ttl) {
        if (kind == redis::Kind::Write) append("$2\r\nEX\r\n");
        char b[12];
        const char* e = std::to_chars(b, b + sizeof b, r.ttl).ptr;
        append_bulk(b, static_cast<size_t>(e - b));
      }
      if (r.cond > Cond::Upsert) [[unlikely]]  // a write's only (Request::cond is None on the others)
        append(r.cond == Cond::Absent ? "$2\r\nNX\r\n" : "$2\r\nXX\r\n");
    }
    checker_.expect(
        {.seq = r.seq, .key = r.key, .size = r.value_size, .kind = kind, .must_exist = r.must_exist, .cond = r.cond});
  }
  OpResult run_request(const Request& r) override {
    submit_request(r);
    return wait_one();
  }

  OpResult run(uint64_t seq) override {  // blocking use: one request, wait for its reply
    submit(seq);
    return wait_one();
  }

 private:
  void append(std::string_view s) { out_.append(s); }
  void append_len(size_t n) {  // "$<n>\r\n"
    char b[24];
    b[0] = '$';
    char* e = std::to_chars(b + 1, b + sizeof b - 2, n).ptr;
    *e++ = '\r';
    *e++ = '\n';
    out_.append(b, static_cast<size_t>(e - b));
  }
  void append_bulk(const char* data, size_t n) {
    append_len(n);
    out_.append(data, n);
    out_.append("\r\n", 2);
  }

  void record_written() {
    if (!written_ || checker_.written().empty()) return;
    std::lock_guard lk(*written_mu_);
    written_->insert(written_->end(), checker_.written().begin(), checker_.written().end());
  }

  const KeySpace& keys_;
  Op op_;
  std::string cmd_, key_buf_, wait_cmd_;
  uint64_t generation_ = 0;  // of the primary watch (Endpoint::watch) when this client last followed it
  size_t key_at_ = 0, value_at_ = 0;
  std::vector<uint64_t>* written_;
  std::mutex* written_mu_;
  const std::string& rmw_sha_;
};

ServiceSpec redis_service(const RedisOptions& o) {
  ServiceSpec s;
  s.name = "redis-server";
  s.binary = o.server_binary;
  s.args = {"--port",          "{port}",      "--bind", "127.0.0.1",        "--dir", "{dir}", "--logfile",
            "{dir}/redis.log", "--daemonize", "no",     "--protected-mode", "no"};
  for (auto& a : redis::persistence_args(o.persistence)) s.args.push_back(a);
  s.probe = conn::handshake_probe<Conn, Endpoint>();
  return s;
}

// The native ops' keys (--keys sequential|random, --keyspace, one --value-size), or, for a mix,
// the workload's key names over its key space (its values are the workload's own).
KeySpace key_space(const RedisOptions& o, const Workload* w) {
  if (w) return KeySpace(o.key_prefix, w->keys.spec().keyspace, false, 0);
  if (o.keys != "sequential" && o.keys != "random" && o.keys != "uniform")
    throw SetupError("redis: --keys " + o.keys +
                     " needs --mix; set, get and ping take sequential, or random (uniform)");
  // The size was checked against the option's range (workload_of): one whole number.
  return KeySpace(o.key_prefix, o.keyspace, o.keys != "sequential",
                  static_cast<size_t>(parse_size(o.value_size, "value-size")));
}

// A crash job's native SETs without --keyspace, and a fault job's: a key of its own for each write
// (every write of a key SET again names itself by the version in its value; values too short for
// one, under kVersionedValue bytes, could not tell them apart otherwise; and a write in doubt
// that lands over an acknowledged one of its key hides whether that one survived). Random keys
// over a space no run fills (splitmix64 is one to one).
RedisOptions crash_keys(RedisOptions o, const Job& job) {
  const bool reads_back =
      durability_options_of(job).crash != CrashKind::None || (!job.faults.empty() && job.op == "set");
  if (!reads_back || is_mix(job) || job.has("keyspace")) return o;
  const bool unbounded = o.keys != "sequential" || job.duration_s > 0 || job.warmup_s > 0;
  o.keyspace = unbounded ? UINT64_MAX : std::max<uint64_t>(1, job.n + job.warmup_ops);
  return o;
}

class RedisAdapter final : public Adapter {
 public:
  RedisAdapter(const Job& job, WorkloadPtr mix)
      : o_(crash_keys(options_of<RedisOptions>(job), job)), mix_(std::move(mix)), keys_(key_space(o_, mix_.get())) {
    op_ = mix_ ? Op::Mix : op_of<Op>(job);
    managed_ = o_.host.empty() && o_.sentinels.empty();
    ep_ = redis::endpoint_of(job);
  }

  void prepare(const Job& job) override {
    const uint64_t max_value = mix_ ? mix_->sizes.max() : keys_.value_size;
    if (std::string why = conn::budget_short(max_value, job.clients, ep_.limits.max_reply); !why.empty())
      throw SetupError("redis: " + why);
    const bool faults = !job.faults.empty();
    const bool crash = durability_options_of(job).crash != CrashKind::None;
    if (crash && (!managed_ || (op_ != Op::Set && op_ != Op::Mix)))
      throw SetupError("redis: --crash needs op set or a --mix on the redis-server mwbench starts (no --host)");
    keys_.stamped = crash || faults;  // each SET's value names its write
    if (crash && op_ == Op::Set && job.has("keyspace") && keys_.value_size < kVersionedValue &&
        (keys_.random || job.duration_s > 0 || job.warmup_s > 0 || job.n + job.warmup_ops > keys_.size))
      throw SetupError("redis: --crash reads each write back by its key: set writes the --keyspace " +
                       std::to_string(keys_.size) + " keys again, and values of " + std::to_string(keys_.value_size) +
                       " bytes are too short to carry the version that names their write (" +
                       std::to_string(kVersionedValue) +
                       " bytes or more do), so an older write that survived would "
                       "hide a lost newer one: give --value-size " +
                       std::to_string(kVersionedValue) +
                       " or more, or no --keyspace (a crash job then gives each write a key of its own)");
    if (managed_) {  // a crash, fault or replicated job's server is its own: it starts empty and is killed
      ServiceSpec spec = redis_service(o_);
      layer_ = power_layer(job, "/tmp");  // --crash power: its --dir on the page-cache layer
      if (layer_) std::replace(spec.args.begin(), spec.args.end(), std::string("{dir}"), layer_->path());
      const bool own = crash || faults || o_.replicas > 0;
      svc_ = own ? std::make_shared<Service>(spec)
                 : shared_service("redis:" + o_.persistence + ":" + o_.server_binary, spec);
      ep_.port = svc_->port();
      if (o_.replicas > 0) {  // every connection then goes to the primary the Sentinels name
        set_ = std::make_shared<redis::ReplicaSet>(svc_, spec, o_.replicas, o_.sentinel, job.timeout_s);
        ep_.sentinels = set_->sentinels();
        if (ep_.sentinels) ep_.watch = std::make_shared<const redis::PrimaryWatch>(ep_.sentinels);
      }
      if (crash || faults)
        crash_ = redis::make_crashable(svc_, ep_, keys_, o_.persistence, mix_.get(),
                                       mix_ ? distinct_by_value(mix_->sizes, 0) : UINT64_MAX, set_);
      if (crash_) crash_->set_pagecache(layer_.get());
    } else if (ep_.sentinels) {  // an external set-up, its primary watched
      ep_.watch = std::make_shared<const redis::PrimaryWatch>(ep_.sentinels);
    }
    if (!managed_ && faults && ep_.sentinels) {  // switchover asks its Sentinels
      crash_ = redis::make_crashable(nullptr, ep_, keys_, o_.persistence, mix_.get(),
                                     mix_ ? distinct_by_value(mix_->sizes, 0) : UINT64_MAX);
    }
    Conn c(ep_, now_ns() + timeout_ns(ep_));
    auto run = [&](std::vector<std::string> argv) { return c.command(argv, now_ns() + timeout_ns(ep_)); };
    Reply r = run({"INFO", "server"});
    std::string info = r.type == '$' ? std::string(r.str) : "";
    auto field = [&](const std::string& k) {
      auto at = info.find(k + ":");
      if (at == std::string::npos) return std::string();
      auto end = info.find('\r', at);
      return redis::printable(info.substr(at + k.size() + 1, end - at - k.size() - 1), 100);
    };
    info_["server"] = "redis-server";
    info_["version"] = field("redis_version");
    info_["managed"] = managed_ ? "yes" : "no";
    if (set_) info_["replication"] = set_->describe();
    if (!set_ && ep_.sentinels) info_["replication"] = ep_.sentinels->describe();
    if (ep_.tls) info_["tls"] = c.tls_version();
    if (!ep_.user.empty()) info_["user"] = ep_.user;
    for (const char* k : {"save", "appendonly"}) {  // CONFIG may be renamed away or not allowed
      Reply v = run({"CONFIG", "GET", k});
      if (v.type == '*' && v.items.size() == 2) info_[k] = redis::printable(v.items[1], 100);
    }
    info_["value_size"] = mix_ ? mix_->sizes.text() : std::to_string(keys_.value_size);
    info_["keyspace"] = keys_.size == UINT64_MAX ? "one key per write" : std::to_string(keys_.size);
    if (op_ == Op::Get) preload(c);
    if (mix_ && mix_->mix.has(KvOp::Rmw)) {  // the script rmw runs, loaded once (scripts are server-wide)
      Reply sha = run({"SCRIPT", "LOAD", kRmwScript});
      if (sha.type != '$' || sha.nil || sha.str.size() != 40)
        throw SetupError("redis " + target() + ": rmw runs a Lua script, but SCRIPT LOAD answered '" +
                         std::string(1, sha.type) + redis::printable(sha.str, 100) + "'");
      rmw_sha_ = std::string(sha.str);
    }
  }

  std::unique_ptr<Client> open(const Job&, int) override {
    return std::make_unique<RedisClient>(ep_, keys_, op_, &health_, &written_, &written_mu_, rmw_sha_,
                                         o_.wait_replicas);
  }

  Verdict verify(const Job&, const Counts&) override {
    if (mix_) return verify_mix();
    if (op_ != Op::Set) return {};
    // Read back keys that SET acknowledged: each must hold exactly the value sent.
    // A server given up during the run is not waited for once more.
    if (std::string why = health_.lost(); !why.empty())
      return {true, false, "keys were not read back: the server stopped answering during the run (" + why + ")"};
    std::string want;
    size_t bad = 0;
    try {
      Conn c(ep_, now_ns() + timeout_ns(ep_));
      for (uint64_t k : written_) {
        want = keys_.value(k);
        Reply r = c.command({"GET", keys_.key(k)}, now_ns() + timeout_ns(ep_));
        if (r.type != '$' || r.nil || r.str != want) ++bad;
      }
    } catch (const SetupError& e) {
      return {true, false, std::string("keys could not be read back: ") + e.what()};
    }
    return {true, bad == 0,
            std::to_string(written_.size() - bad) + " of " + std::to_string(written_.size()) +
                " keys read back hold the value that was set"};
  }

  Info describe() override { return info_; }
  std::string target() const override { return ep_.where(); }
  Abilities abilities(const Job& job) override {
    return {
        .crash = crash_.get(), .contract = contract(job), .events = [this] { return redis::make_event_probe(ep_); }};
  }
  // The managed server's --persistence (an external server's settings are its own: none said).
  std::optional<Contract> contract(const Job&) const {
    if (!managed_ || (op_ != Op::Set && !(mix_ && mix_->mix.writes()))) return std::nullopt;
    if (o_.wait_replicas > 0)
      return Contract{ContractKind::Replicated, 0,
                      "WAIT " + std::to_string(o_.wait_replicas) + " after each SET (" + std::to_string(o_.replicas) +
                          (o_.replicas == 1 ? " replica" : " replicas") + ")"};
    return redis::contract_of(o_.persistence);
  }

 private:
  // A sample of the key space read back: each key found holds a value of its own; when the
  // workload guarantees the key space (loaded, never deleted) none may be missing and DBSIZE must
  // cover it (DBSIZE counts the database's other keys too).
  Verdict verify_mix() {
    if (std::string why = health_.lost(); !why.empty())
      return {true, false, "keys were not read back: the server stopped answering during the run (" + why + ")"};
    try {
      Conn c(ep_, now_ns() + timeout_ns(ep_));
      Reply n = c.command({"DBSIZE"}, now_ns() + timeout_ns(ep_));
      auto answer = [](const Reply& r) { return "'" + std::string(1, r.type) + redis::printable(r.str, 100) + "'"; };
      if (n.type != ':') return {true, false, "DBSIZE answered " + answer(n)};
      std::string fail;
      const auto count = static_cast<uint64_t>(std::max<int64_t>(0, n.integer));
      Verdict v = verify_workload(*mix_, count, [&](uint64_t k, std::string& out) {
        std::string key = redis::workload_key(keys_, k);
        Reply r = c.command({"GET", key}, now_ns() + timeout_ns(ep_));
        if (r.type != '$') {
          if (fail.empty()) fail = "GET " + redis::printable(key, 100) + " answered " + answer(r);
          return false;
        }
        out.assign(r.str);
        return !r.nil;
      });
      if (!fail.empty()) v.ok = false, v.detail += "; " + fail;
      return v;
    } catch (const SetupError& e) {
      return {true, false, std::string("keys could not be read back: ") + e.what()};
    }
  }

  void preload(Conn& c) {
    // GET alone must find every key: SET the whole key space first, pipelined, and check.
    std::string v, batch;
    for (uint64_t base = 0; base < keys_.size; base += 1000) {
      throw_if_stopped("the redis preload");
      uint64_t end = std::min(keys_.size, base + 1000);
      batch.clear();
      for (uint64_t k = base; k < end; ++k) {
        v = keys_.value(k);
        redis::append_command(batch, {"SET", keys_.key(k), v});
      }
      c.pipeline(batch, end - base, [&](const Reply& r) {
        if (!(r.type == '+' && r.str == "OK"))
          throw SetupError("redis " + target() + ": preload SET answered '" + std::string(1, r.type) +
                           redis::printable(r.str, 100) + "'");
      });
    }
  }

  RedisOptions o_;
  std::shared_ptr<const Workload> mix_;  // null: a native op
  KeySpace keys_;
  Op op_;
  std::string rmw_sha_;
  bool managed_;
  Endpoint ep_;
  Health health_;
  std::unique_ptr<PageCacheMount> layer_;  // outlives the server on it
  std::shared_ptr<Service> svc_;
  std::shared_ptr<redis::ReplicaSet> set_;  // --replicas: the replicas and Sentinels beside svc_
  std::unique_ptr<Crashable> crash_;
  Info info_;
  std::vector<uint64_t> written_;
  std::mutex written_mu_;
};

// --replicas and --sentinel start a replicated set-up of set, get, ping and --mix on this machine;
// kill-primary and switchover need both, and are the faults such a set-up takes. --sentinels
// names an external one, which takes switchover alone (it cannot be signalled).
void check_replicated(const Job& job) {
  const auto o = options_of<RedisOptions>(job);
  const bool external = !o.sentinels.empty(), replicated = o.replicas > 0 || o.sentinel;
  for (const FaultSpec& f : job.faults) {
    const std::string fault = "redis: --fault " + redis::printable(f.text);
    if (external && f.kind != FaultKind::Switchover)
      throw SetupError(fault +
                       ": an external set-up (--sentinels) cannot be signalled; it takes switchover (its "
                       "Sentinels asked to fail over)");
    if ((f.kind == FaultKind::KillPrimary || f.kind == FaultKind::Switchover) && !external &&
        (o.replicas == 0 || !o.sentinel))
      throw SetupError(fault + " needs --replicas N and --sentinel (a replica the Sentinels promote), or --sentinels");
    if (f.kind != FaultKind::KillPrimary && f.kind != FaultKind::Switchover && replicated)
      throw SetupError(fault + ": a replicated set-up takes kill-primary and switchover");
  }
  if (external && (replicated || !o.host.empty()))
    throw SetupError("redis: --sentinels names an external set-up: drop --host, --replicas and --sentinel");
  if (external && o.wait_replicas > 0)
    throw SetupError("redis: --wait-replicas counts the replicas mwbench starts: drop it with --sentinels");
  if (o.wait_replicas > o.replicas)
    throw SetupError("redis: --wait-replicas " + std::to_string(o.wait_replicas) + " needs --replicas " +
                     std::to_string(o.wait_replicas) + " or more");
  if (o.wait_replicas > 0 && is_mix(job))
    throw SetupError("redis: --wait-replicas waits after the native SETs: give --ops set, not --mix");
  if ((external || replicated) && durability_options_of(job).crash != CrashKind::None)
    throw SetupError("redis: --crash restarts one server: a replicated set-up takes --fault kill-primary");
  if (!replicated) return;
  if (o.sentinel && o.replicas == 0)
    throw SetupError("redis: --sentinel needs --replicas N (the replicas it promotes)");
  if (!o.host.empty())
    throw SetupError("redis: --replicas and --sentinel start a replicated set-up on this machine: drop --host");
  if (is_queue_op(job.op))
    throw SetupError("redis: --replicas runs set, get, ping and --mix, not the queue op " + job.op);
}

}  // namespace

namespace redis {

// Where and how the job connects (--host, --port, --tls..., the password from --password-env).
Endpoint endpoint_of(const Job& job) {
  const auto o = options_of<RedisOptions>(job);
  const bool managed = o.host.empty() && o.sentinels.empty();
  Endpoint ep;
  ep.host = managed ? "127.0.0.1" : o.host;
  ep.port = o.port;
  ep.timeout_s = job.timeout_s;
  ep.reconnect_max_s = job.reconnect_backoff_s;
  ep.limits.max_reply = static_cast<size_t>(o.max_reply);
  ep.limits.budget = std::make_shared<conn::ReplyBudget>(ep.limits.max_reply);
  for (auto [name, value] : {std::pair{"cacert", &o.cacert}, {"cert", &o.cert}, {"key", &o.key}, {"sni", &o.sni}})
    if (!value->empty() && !o.tls) throw SetupError(std::string("redis: --") + name + " needs --tls");
  if (o.tls_resume && !o.tls) throw SetupError("redis: --tls-resume needs --tls");
  if (o.tls && managed)
    throw SetupError("redis: --tls needs --host (the redis-server mwbench starts listens without TLS)");
  ep.user = o.user;
  if (!o.sentinels.empty())  // the primary they name: each connection asks them first
    ep.sentinels =
        std::make_shared<const redis::Sentinels>(redis::Sentinels::parse(o.sentinels, o.master_name, job.timeout_s));
  if (!managed) {
    const char* pw = std::getenv(o.password_env.c_str());
    if (pw) ep.password = pw;
  } else if (!ep.user.empty()) {
    throw SetupError("redis: --user needs --host (the redis-server mwbench starts has no ACL users)");
  }
  if (o.tls) {
    ep.tls = std::make_shared<redis::TlsContext>(o.cacert, o.cert, o.key);
    if (o.tls_resume) ep.tls->resume_sessions();
    ep.sni = o.sni;
  }
  return ep;
}

// The managed redis-server of a job (--persistence, --server-binary).
ServiceSpec service_of(const Job& job) { return redis_service(options_of<RedisOptions>(job)); }

}  // namespace redis

AdapterSpec redis_adapter_spec() {
  using O = RedisOptions;
  return {
      .name = "redis",
      .summary =
          "Redis SET / GET / PING, the --mix workload, and lists and streams as queues "
          "(produce, consume, roundtrip), every reply checked; "
          "starts its own redis-server unless --host",
      .ops = {{"set", redis::Op::Set},
              {"get", redis::Op::Get},
              {"ping", redis::Op::Ping},
              {"produce", QueueOp::Produce},
              {"consume", QueueOp::Consume},
              {"roundtrip", QueueOp::Roundtrip}},
      .default_ops = "set,get,ping",
      .options = redis::with_queue_options(
          {conn::host_option<O>("redis-server"), conn::port_option<O>(),
           opt(&O::password_env,
               {.name = "password-env", .help = "environment variable holding the password (never printed)"}),
           opt(&O::user, {.name = "user", .help = "ACL user: AUTH user password (the password from --password-env)"}),
           opt(&O::tls, {.name = "tls", .help = "connect with TLS (needs --host)"}),
           opt(&O::cacert, {.name = "cacert",
                            .help = "CA certificate file (PEM) the server's certificate must "
                                    "chain to (default: the system CAs)"}),
           opt(&O::cert, {.name = "cert", .help = "client certificate file (PEM), for servers that require one"}),
           opt(&O::key, {.name = "key", .help = "private key file (PEM) of --cert"}),
           opt(&O::sni, {.name = "sni", .help = "server name sent and verified (default: --host)"}),
           opt(&O::tls_resume, {.name = "tls-resume",
                                .help = "a new connection offers the TLS session of the job's last one, so the "
                                        "server may resume it (default: a full handshake each time)"}),
           opt(&O::max_reply, {.name = "max-reply",
                               .help = "largest reply accepted, and the budget of all clients' replies in progress "
                                       "together (1 MiB each aside); past either the op fails and the "
                                       "connection drops",
                               .min = 1,
                               .max = 4294967296.0}),
           conn::key_prefix_option<O>(),
           opt(&O::persistence, {.name = "persistence",
                                 .help = "persistence of the managed server (aof-no, aof-everysec, aof-always: "
                                         "appendfsync no, everysec, always; aof: aof-everysec)",
                                 .list = true,
                                 .choices = {"none", "rdb", "aof", "aof-no", "aof-everysec", "aof-always"}}),
           conn::server_binary_option<O>("redis-server"),
           opt(&O::replicas, {.name = "replicas",
                              .help = "replicas of the managed server (replicaof it, asynchronous), for --sentinel",
                              .min = 0,
                              .max = 5}),
           opt(&O::wait_replicas,
               {.name = "wait-replicas",
                .help = "after each SET, WAIT for this many replicas (half --timeout at most): a write is "
                        "acknowledged once they have it, and a failover that loses one fails the job",
                .min = 0,
                .max = 5}),
           opt(&O::sentinel, {.name = "sentinel",
                              .help = "3 Sentinels watch the primary (quorum 2, down after 1 s); clients follow the "
                                      "one they name, and --fault kill-primary fails it over (needs --replicas)"}),
           opt(&O::sentinels, {.name = "sentinels",
                               .help = "an external replicated set-up: its Sentinels (HOST:PORT,...); every "
                                       "connection goes to the primary they name, and --fault switchover asks them "
                                       "to fail it over"}),
           opt(&O::master_name, {.name = "master-name", .help = "the name --sentinels watch the primary by"}),
           // The workload's names, with the native ops' defaults (redis-benchmark's): set, get
           // and ping take one size and sequential or random keys; --mix takes them all.
           opt(&O::keyspace, {.name = "keyspace",
                              .help = "number of distinct keys (--mix: 100000 unless given)",
                              .list = true,
                              .min = 1,
                              .max = 1000000000}),
           opt(&O::keys, {.name = "keys",
                          .help = "keys of set/get: sequential or random (= uniform); --mix: any (default uniform)",
                          .list = true,
                          .choices = {"sequential", "random", "uniform", "zipfian", "latest", "hotspot"}}),
           opt(&O::value_size, {.name = "value-size",
                                .help = "bytes per value (redis-benchmark -d; 0 to 512M); --mix: 100 unless given, "
                                        "100-1000 (uniform) or 32:50,1024:40 (size:weight)",
                                .min = 0,
                                .max = 512 << 20})}),
      .unavailable = conn::unavailable_without<O>("redis-server"),
      .make = [](const Job& j, WorkloadPtr w) -> std::unique_ptr<Adapter> {
        check_replicated(j);
        if (is_queue_op(j.op)) return redis::make_queue_adapter(j);
        return std::make_unique<RedisAdapter>(j, std::move(w));
      },
      .kv_ops = {KvOp::Read, KvOp::Update, KvOp::Insert, KvOp::Delete, KvOp::Rmw},
      .expiry = true,
      .conditional_writes = true,
      .families = {Family::KeyedStore, Family::Queue},
      .target = TargetKind::External,
      .target_option = "host",
      .crash_kinds = {CrashKind::Kill, CrashKind::Power, CrashKind::Torn},
      .crash_ops = {"set", kMixOp},
      .fault_kinds = {"kill", "restart", "stop", "slow", "cut", "kill-primary", "switchover"},
      .connects = true,
      .durability_settings = {"persistence"},
      .reset = "none: keys are written over; the redis-server it starts serves every job of the run"};
}

}  // namespace mw
