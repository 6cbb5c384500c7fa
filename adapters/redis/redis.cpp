// Redis SET / GET / PING over our own non-blocking socket (plain or TLS), with a bounded RESP
// parser (reply.h). Commands are pre-encoded RESP; each client keeps -P requests in flight;
// every reply is checked: SET answers OK, GET returns exactly the value SET stored, PING
// answers PONG. Every reply is capped (--max-reply) and every set-up read has a deadline.
#include "redis.h"

#include <poll.h>

#include <charconv>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <mutex>

#include "conn.h"
#include "crash.h"
#include "driver.h"
#include "queue.h"
#include "queues.h"
#include "durability.h"
#include "keys.h"
#include "reply.h"
#include "services.h"
#include "workload_spec.h"

namespace mw {
namespace {

using redis::Conn;
using redis::Endpoint;
using redis::KeySpace;
using redis::Op;
using redis::Reply;
using redis::now_ns;

int64_t timeout_ns(const Endpoint& ep) { return static_cast<int64_t>(ep.timeout_s * 1e9); }

// After a request times out, is the server still there? A fresh connection that answers PING
// within the timeout says yes (and takes over); otherwise the client is lost. One verdict is
// shared by the clients of a job for one timeout, so a stopped server costs one probe, not one
// per client.
class Health {
 public:
  std::unique_ptr<Conn> probe(const Endpoint& ep, std::string& why) {
    std::lock_guard lk(mu_);
    if (failed_ && now_ns() - failed_at_ < timeout_ns(ep)) {
      why = why_;
      return nullptr;
    }
    try {
      auto c = std::make_unique<Conn>(ep, now_ns() + timeout_ns(ep));
      failed_ = false;
      return c;
    } catch (const SetupError& e) {
      failed_ = true;
      failed_at_ = now_ns();
      why_ = e.what();
      why = why_;
      return nullptr;
    }
  }
  // Why the server was given up during the run ("" when it was not).
  std::string lost() {
    std::lock_guard lk(mu_);
    return failed_ ? why_ : "";
  }

 private:
  std::mutex mu_;
  bool failed_ = false;
  int64_t failed_at_ = 0;
  std::string why_;
};

// The workload's commands (--mix): read GET, update and insert SET, delete DEL, and rmw one
// EVALSHA of kRmwScript: it reads the key and, when it exists, writes the new value in the same
// atomic step (as SQLite's rmw is one transaction), answering the value it read, which is checked
// as a read's. One round trip keeps replies in request order on a pipelined connection.
constexpr const char* kRmwScript =
    "local v = redis.call('GET', KEYS[1]) if v then redis.call('SET', KEYS[1], ARGV[1]) end return v";

class RedisClient final : public Client {
 public:
  RedisClient(const Endpoint& ep, const KeySpace& keys, Op op, Health* health, std::vector<uint64_t>* written,
              std::mutex* written_mu, const std::string& rmw_sha)
      : ep_(ep), keys_(keys), op_(op), checker_(keys, op, ep.limits), health_(health), written_(written),
        written_mu_(written_mu), rmw_sha_(rmw_sha) {
    conn_ = std::make_unique<Conn>(ep_, now_ns() + timeout_ns(ep_));  // handshake errors are set-up errors
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
        cmd_ += "$" + std::to_string(keys_.block.size()) + "\r\n";
        value_at_ = cmd_.size();
        cmd_ += keys_.block + "\r\n";
      }
    }
  }
  ~RedisClient() override { record_written(); }

  int fd() const override { return conn_ ? conn_->fd() : -1; }
  // A client that lost its connection with nothing in flight stays "alive" for one more op,
  // which fails with the reason: every loss is a counted failure, never silent "not run".
  bool alive() const override { return conn_ || orphan_; }
  bool wants_write() const override {
    return conn_ && (out_off_ < out_.size() || conn_->tls_read_wants_write());
  }

  void submit(uint64_t seq) override {
    if (!conn_) {
      failed_.push_back({seq, lost_status_, lost_why_});
      orphan_ = false;
      return;
    }
    checker_.expect(seq);
    size_t at = out_.size();
    out_.append(cmd_);
    if (op_ == Op::Ping) return;
    uint64_t k = keys_.key_of(seq);
    keys_.write_key(k, out_.data() + at + key_at_);
    if (op_ == Op::Set) keys_.write_value(k, out_.data() + at + value_at_);
  }

  // A workload request, encoded in place at the end of the output buffer (no allocation once
  // the buffer has grown to its working size).
  void submit_request(const Request& r) override {
    if (!conn_) {
      failed_.push_back({r.seq, lost_status_, lost_why_});
      orphan_ = false;
      return;
    }
    redis::Kind kind = redis::Kind::Read;
    switch (r.op) {
      case KvOp::Read: append("*2\r\n$3\r\nGET\r\n"); break;
      case KvOp::Update:
      case KvOp::Insert:
        kind = redis::Kind::Write;
        append("*3\r\n$3\r\nSET\r\n");
        break;
      case KvOp::Delete:
        kind = redis::Kind::Delete;
        append("*2\r\n$3\r\nDEL\r\n");
        break;
      case KvOp::Rmw:
        kind = redis::Kind::Rmw;
        append("*5\r\n$7\r\nEVALSHA\r\n");
        append_bulk(rmw_sha_.data(), rmw_sha_.size());
        append("$1\r\n1\r\n");
        break;
      default: {  // not in the spec's kv_ops, so workload_of refused it before the run
        failed_.push_back({r.seq, Status::Unsupported, "redis maps no " + std::string(kv_op_name(r.op))});
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
    }
    checker_.expect({.seq = r.seq, .key = r.key, .size = r.value_size, .kind = kind, .must_exist = r.must_exist});
  }
  OpResult run_request(const Request& r) override {
    submit_request(r);
    return wait_one();
  }

  void flush() override {
    while (conn_ && out_off_ < out_.size()) {
      long n = conn_->write_some(out_.data() + out_off_, out_.size() - out_off_);
      if (n < 0) return lost(conn_->error());
      if (n == 0) return;
      out_off_ += static_cast<size_t>(n);
    }
    out_.clear();
    out_off_ = 0;
  }

  size_t reap(std::span<Completion> out) override {
    checker_.clear_details();
    details_.clear();
    size_t k = drain_failed(out, 0);
    if (!conn_) return k;
    size_t k0 = k;
    k = checker_.take(out, k);
    char buf[65536];
    while (conn_ && checker_.fatal().empty() && k < out.size()) {
      long n = conn_->read_some(buf, sizeof buf);
      if (n < 0) {
        lost(conn_->error());
        break;
      }
      if (n == 0) break;
      checker_.feed(buf, static_cast<size_t>(n));
      k = checker_.take(out, k);
      // A short plain read drained the socket; TLS reads return one record at a time and
      // must go on until OpenSSL has nothing buffered.
      if (!ep_.tls && static_cast<size_t>(n) < sizeof buf) break;
    }
    if (k > k0) timed_out_ = false;  // the server answers this connection
    if (conn_ && !checker_.fatal().empty()) lost(checker_.fatal());
    if (conn_ && conn_->tls_write_wants_read()) flush();
    return drain_failed(out, k);
  }

  void abort(std::string_view why) override {
    // A timeout alone does not say the server is gone: a fresh connection that answers PING
    // within the timeout takes over; otherwise the client is lost and its remaining ops are
    // not run. The fresh connection opens before the old one closes (a distinct fd).
    // A second timeout with no reply in between means the server answers PING but not this
    // op (paused writes, a stuck command): the client is lost too, so a run cannot take one
    // timeout per op.
    std::string probe_err;
    std::unique_ptr<Conn> fresh;
    std::string reason = std::string(why) + " (" + ep_.where() + ")";
    if (timed_out_) {
      reason += "; again on a fresh connection, the client stops";
    } else {
      fresh = health_->probe(ep_, probe_err);
      if (!fresh) reason += "; a fresh connection failed too, the server is considered lost: " + probe_err;
    }
    timed_out_ = true;
    auto& pending = checker_.pending();
    for (size_t i = 0; i < pending.size(); ++i) failed_.push_back({pending[i].seq, Status::Timeout, reason});
    checker_.pending().clear();
    checker_.reset_stream();
    out_.clear();
    out_off_ = 0;
    conn_ = std::move(fresh);
    if (!conn_) lost_why_ = reason, lost_status_ = Status::Error;
  }

  OpResult run(uint64_t seq) override {  // blocking use: one request, wait for its reply
    submit(seq);
    return wait_one();
  }

 private:
  struct Failed {
    uint64_t seq;
    Status status;
    std::string why;
  };

  OpResult wait_one() {
    flush();
    Completion c[1];
    int64_t deadline = now_ns() + timeout_ns(ep_);
    while (conn_ || !failed_.empty()) {
      if (reap(c) == 1) return c[0].result;
      if (!conn_) continue;
      if (now_ns() >= deadline) {
        abort("no reply within the timeout");
        continue;
      }
      pollfd p{conn_->fd(), static_cast<short>(POLLIN | (wants_write() ? POLLOUT : 0)), 0};
      if (poll(&p, 1, 100) > 0 && (p.revents & POLLOUT)) flush();
    }
    return {Status::Error, 0, "connection lost"};
  }

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

  // The connection is gone: every request in flight fails with the reason, and the client stops.
  void lost(const std::string& why) {
    lost_why_ = why + " (" + ep_.where() + ")";
    lost_status_ = Status::Error;
    auto& pending = checker_.pending();
    orphan_ = pending.empty();
    for (size_t i = 0; i < pending.size(); ++i) failed_.push_back({pending[i].seq, Status::Error, lost_why_});
    pending.clear();
    checker_.reset_stream();
    out_.clear();
    out_off_ = 0;
    conn_.reset();
  }
  size_t drain_failed(std::span<Completion> out, size_t k) {
    while (k < out.size() && !failed_.empty()) {
      Failed& f = failed_.front();
      details_.push_back(std::move(f.why));
      out[k++] = {f.seq, {f.status, 0, details_.back()}};
      failed_.pop_front();
    }
    return k;
  }
  void record_written() {
    if (!written_ || checker_.written().empty()) return;
    std::lock_guard lk(*written_mu_);
    written_->insert(written_->end(), checker_.written().begin(), checker_.written().end());
  }

  const Endpoint& ep_;
  const KeySpace& keys_;
  Op op_;
  redis::ReplyChecker checker_;
  Health* health_;
  std::unique_ptr<Conn> conn_;
  std::string out_;
  size_t out_off_ = 0;
  std::string cmd_, key_buf_;
  size_t key_at_ = 0, value_at_ = 0;
  std::deque<Failed> failed_;
  std::deque<std::string> details_;  // details of drained failures, valid until the next reap
  std::string lost_why_;
  Status lost_status_ = Status::Error;
  bool orphan_ = false;
  bool timed_out_ = false;  // the last request timed out, and no reply came since
  std::vector<uint64_t>* written_;
  std::mutex* written_mu_;
  const std::string& rmw_sha_;
};

ServiceSpec redis_service(const Job& job) {
  ServiceSpec s;
  s.name = "redis-server";
  s.binary = job.str("server-binary", "redis-server");
  s.args = {"--port", "{port}", "--bind", "127.0.0.1", "--dir", "{dir}", "--logfile", "redis.log",
            "--daemonize", "no", "--protected-mode", "no"};
  for (auto& a : redis::persistence_args(job.str("persistence", "none"))) s.args.push_back(a);
  s.probe = [](int port) -> std::string {
    try {
      Endpoint ep;
      ep.host = "127.0.0.1";
      ep.port = port;
      ep.timeout_s = 1.0;
      Conn c(ep, now_ns() + timeout_ns(ep));
      return "";
    } catch (const SetupError& e) {
      return e.what();
    }
  };
  return s;
}

// The native ops' keys (--keys sequential|random, --keyspace, one --value-size), or, for a mix,
// the workload's key names over its key space (its values are the workload's own).
KeySpace key_space(const Job& job, const Workload* w) {
  std::string prefix = job.str("key-prefix", "mwbench:");
  if (w) return KeySpace(prefix, w->keys.spec().keyspace, false, 0);
  std::string order = job.str("keys", "sequential");
  if (order != "sequential" && order != "random" && order != "uniform")
    throw SetupError("redis: --keys " + order + " needs --mix; set, get and ping take sequential, or random (uniform)");
  return KeySpace(job);
}

class RedisAdapter final : public Adapter {
 public:
  explicit RedisAdapter(const Job& job)
      : mix_(workload_of(job, redis_adapter_spec())), keys_(key_space(job, mix_.get())) {
    op_ = mix_ ? Op::Mix : job.op == "set" ? Op::Set : job.op == "get" ? Op::Get : Op::Ping;
    managed_ = !job.has("host");
    ep_ = redis::endpoint_of(job);
  }

  void prepare(const Job& job) override {
    const bool crash = durability_options_of(job).crash != "none";
    if (crash && (!managed_ || op_ != Op::Set))
      throw SetupError("redis: --crash needs op set on the redis-server mwbench starts (no --host)");
    if (managed_) {  // a crash job's server is its own: it starts empty and is killed
      svc_ = crash ? std::make_shared<Service>(redis_service(job))
                   : shared_service("redis:" + job.str("persistence", "none") + ":" + job.str("server-binary", ""),
                                    redis_service(job));
      ep_.port = svc_->port();
      if (crash) crash_ = redis::make_crashable(svc_, ep_, keys_, job.str("persistence", "none"));
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
    if (ep_.tls) info_["tls"] = c.tls_version();
    if (!ep_.user.empty()) info_["user"] = ep_.user;
    for (const char* k : {"save", "appendonly"}) {  // CONFIG may be renamed away or not allowed
      Reply v = run({"CONFIG", "GET", k});
      if (v.type == '*' && v.items.size() == 2) info_[k] = redis::printable(v.items[1], 100);
    }
    info_["value_size"] = mix_ ? mix_->sizes.text() : std::to_string(keys_.block.size());
    info_["keyspace"] = std::to_string(keys_.size);
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
    return std::make_unique<RedisClient>(ep_, keys_, op_, &health_, &written_, &written_mu_, rmw_sha_);
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
        keys_.value(k, want);
        Reply r = c.command({"GET", keys_.key(k)}, now_ns() + timeout_ns(ep_));
        if (r.type != '$' || r.nil || r.str != want) ++bad;
      }
    } catch (const SetupError& e) {
      return {true, false, std::string("keys could not be read back: ") + e.what()};
    }
    return {true, bad == 0, std::to_string(written_.size() - bad) + " of " + std::to_string(written_.size()) +
                                " keys read back hold the value that was set"};
  }

  Info describe() override { return info_; }
  std::string target() const override { return ep_.where(); }
  Crashable* crashable(const Job&) override { return crash_.get(); }

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
        keys_.value(k, v);
        redis::append_command(batch, {"SET", keys_.key(k), v});
      }
      c.pipeline(batch, end - base, [&](const Reply& r) {
        if (!(r.type == '+' && r.str == "OK"))
          throw SetupError("redis " + target() + ": preload SET answered '" + std::string(1, r.type) +
                           redis::printable(r.str, 100) + "'");
      });
    }
  }

  std::shared_ptr<const Workload> mix_;  // null: a native op
  KeySpace keys_;
  Op op_;
  std::string rmw_sha_;
  bool managed_;
  Endpoint ep_;
  Health health_;
  std::shared_ptr<Service> svc_;
  std::unique_ptr<Crashable> crash_;
  Info info_;
  std::vector<uint64_t> written_;
  std::mutex written_mu_;
};

}  // namespace

namespace redis {

// Where and how the job connects (--host, --port, --tls..., the password from --password-env).
Endpoint endpoint_of(const Job& job) {
  Endpoint ep;
  const bool managed = !job.has("host");
  ep.host = job.str("host", "127.0.0.1");
  ep.port = static_cast<int>(job.integer("port", 6379));
  ep.timeout_s = job.timeout_s;
  int64_t cap = job.integer("max-reply", int64_t{512} << 20);
  if (cap < 1) throw SetupError("redis: --max-reply expects a size of at least 1 byte (k, M, G allowed), got 0");
  ep.limits.max_reply = static_cast<size_t>(cap);
  bool tls = job.flag("tls", false);
  for (const char* o : {"cacert", "cert", "key", "sni"})
    if (job.has(o) && !tls) throw SetupError(std::string("redis: --") + o + " needs --tls");
  if (tls && managed)
    throw SetupError("redis: --tls needs --host (the redis-server mwbench starts listens without TLS)");
  ep.user = job.str("user", "");
  if (!managed) {
    const char* pw = std::getenv(job.str("password-env", "REDISCLI_AUTH").c_str());
    if (pw) ep.password = pw;
  } else if (!ep.user.empty()) {
    throw SetupError("redis: --user needs --host (the redis-server mwbench starts has no ACL users)");
  }
  if (tls) {
    ep.tls = std::make_shared<redis::TlsContext>(job.str("cacert", ""), job.str("cert", ""), job.str("key", ""));
    ep.sni = job.str("sni", "");
  }
  return ep;
}

// The managed redis-server of a job (--persistence, --server-binary).
ServiceSpec service_of(const Job& job) { return redis_service(job); }

}  // namespace redis

AdapterSpec redis_adapter_spec() {
  using K = OptionSpec::Kind;
  return {.name = "redis",
          .summary = "Redis SET / GET / PING, the --mix workload, and lists and streams as queues "
                     "(produce, consume, roundtrip), every reply checked; "
                     "starts its own redis-server unless --host",
          .ops = {{"set", redis::Op::Set}, {"get", redis::Op::Get}, {"ping", redis::Op::Ping},
                  {"produce", QueueOp::Produce}, {"consume", QueueOp::Consume}, {"roundtrip", QueueOp::Roundtrip}},
          .default_ops = "set,get,ping",
          .options = with_durability_options(redis::with_queue_options(with_workload_options(
                     {{"host", "an external server (default: start a redis-server on a free port)", "", false},
                      {"port", "port of the external server", "6379", false, K::Int, {}, false, 1, 65535},
                      {"password-env", "environment variable holding the password (never printed)", "REDISCLI_AUTH", false},
                      {"user", "ACL user: AUTH user password (the password from --password-env)", "", false},
                      {"tls", "connect with TLS (needs --host)", "false", false, K::Bool},
                      {"cacert", "CA certificate file (PEM) the server's certificate must chain to (default: the system CAs)", "", false},
                      {"cert", "client certificate file (PEM), for servers that require one", "", false},
                      {"key", "private key file (PEM) of --cert", "", false},
                      {"sni", "server name sent and verified (default: --host)", "", false},
                      {"max-reply", "largest reply accepted; a larger one fails the op and drops the connection", "512M", false, K::Int, {}, false, 1, 4294967296.0},
                      {"key-prefix", "prefix of every key", "mwbench:", false},
                      {"persistence", "persistence of the managed server (aof: aof-everysec)", "none", true, K::Str,
                       {"none", "rdb", "aof", "aof-everysec", "aof-always"}},
                      {"server-binary", "redis-server binary for the managed server", "redis-server", false},
                      // The workload's names, with the native ops' defaults (redis-benchmark's): set,
                      // get and ping take one size and sequential or random keys; --mix takes them all.
                      {"keyspace", "number of distinct keys (--mix: 100000 unless given)", "10000", true, K::Int,
                       {}, false, 1, 1000000000},
                      {"keys", "keys of set/get: sequential or random (= uniform); --mix: any (default uniform)",
                       "sequential", true, K::Str,
                       {"sequential", "random", "uniform", "zipfian", "latest", "hotspot"}},
                      {"value-size", "bytes per value (redis-benchmark -d; 0 to 512M); --mix: 100 unless given, "
                       "100-1000 (uniform) or 32:50,1024:40 (size:weight)", "3", false, K::Str, {}, false, 0,
                       512 << 20}}))),
          .unavailable = [](const Job& j) -> std::string {
            if (j.has("host") || !find_binary(j.str("server-binary", "redis-server")).empty()) return "";
            return "redis-server is not installed (scripts/setup installs it), and no --host was given";
          },
          .make = [](const Job& j) -> std::unique_ptr<Adapter> {
            if (is_queue_op(j.op)) return redis::make_queue_adapter(j);
            return std::make_unique<RedisAdapter>(j);
          },
          .kv_ops = {KvOp::Read, KvOp::Update, KvOp::Insert, KvOp::Delete, KvOp::Rmw}};
}

}  // namespace mw
