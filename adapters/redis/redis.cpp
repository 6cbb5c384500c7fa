// Redis SET / GET / PING over our own non-blocking socket, with hiredis's reply reader.
// Commands are pre-encoded RESP; each client keeps -P requests in flight; every reply is
// checked: SET answers OK, GET returns exactly the value SET stored, PING answers PONG.
#include "redis.h"

#include <errno.h>
#include <hiredis/hiredis.h>
#include <poll.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <deque>
#include <mutex>

#include "keys.h"
#include "net.h"
#include "services.h"

namespace mw {
namespace {

// Keys and values of a job: key k is "<prefix><k, zero-padded>"; its value is a fixed random
// block whose first bytes spell a hash of k in hex, so a value read back under the wrong key
// differs. Everything is written in place, with no allocation per op.
struct KeySpace {
  std::string prefix = "mwbench:";
  uint64_t size = 10000;
  bool random = false;
  std::string block;  // value_size bytes
  size_t digits = 1;

  explicit KeySpace(const Job& j) {
    prefix = j.str("key-prefix", "mwbench:");
    size = static_cast<uint64_t>(std::max<int64_t>(1, j.integer("keyspace", 10000)));
    random = j.str("keys", "sequential") == "random";
    block.resize(static_cast<size_t>(j.integer("value-size", 3)));
    for (size_t i = 0; i < block.size(); ++i) block[i] = static_cast<char>('a' + mix64(i + 7) % 26);
    for (uint64_t v = size - 1; v >= 10; v /= 10) ++digits;
  }
  uint64_t key_of(uint64_t seq) const { return random ? mix64(seq) % size : seq % size; }
  size_t key_len() const { return prefix.size() + digits; }
  void write_key(uint64_t k, char* out) const {  // key_len() bytes
    std::memcpy(out, prefix.data(), prefix.size());
    for (size_t i = digits; i-- > 0; k /= 10) out[prefix.size() + i] = static_cast<char>('0' + k % 10);
  }
  std::string key(uint64_t k) const {
    std::string s(key_len(), ' ');
    write_key(k, s.data());
    return s;
  }
  size_t head() const { return std::min<size_t>(16, block.size()); }
  static void write_hex(uint64_t v, char* out, size_t n) {  // the first n of 16 hex digits
    static const char* hex = "0123456789abcdef";
    for (size_t i = 0; i < n; ++i) out[i] = hex[(v >> (60 - 4 * i)) & 15];
  }
  void write_value(uint64_t k, char* out) const {  // block.size() bytes
    std::memcpy(out, block.data(), block.size());
    write_hex(mix64(k), out, head());
  }
  void value(uint64_t k, std::string& out) const {
    out.resize(block.size());
    write_value(k, out.data());
  }
  bool matches(uint64_t k, const char* data, size_t len) const {
    if (len != block.size()) return false;
    char h[16];
    write_hex(mix64(k), h, head());
    return std::memcmp(data, h, head()) == 0 && std::memcmp(data + head(), block.data() + head(), len - head()) == 0;
  }
};

enum class Op { Set, Get, Ping };

void append_bulk(std::string& out, const char* s, size_t n) {
  out += '$';
  out += std::to_string(n);
  out += "\r\n";
  out.append(s, n);
  out += "\r\n";
}

// One blocking round trip on a fresh hiredis context: prepare, verify and the readiness probe.
struct Control {
  redisContext* c = nullptr;
  std::string where;
  Control(const std::string& host, int port, double timeout_s, const std::string& password) {
    where = host + ":" + std::to_string(port);
    timeval tv{static_cast<time_t>(timeout_s), static_cast<suseconds_t>((timeout_s - static_cast<int>(timeout_s)) * 1e6)};
    c = redisConnectWithTimeout(host.c_str(), port, tv);
    if (!c || c->err) {
      std::string e = c ? c->errstr : "out of memory";
      redisFree(c);
      c = nullptr;
      throw SetupError("redis " + where + ": cannot connect: " + e);
    }
    redisSetTimeout(c, tv);
    if (!password.empty()) {
      std::string r = command({"AUTH", password});
      if (r != "OK") throw SetupError("redis " + where + ": AUTH failed: " + r);
    }
    std::string pong = command({"PING"});
    if (pong.rfind("NOAUTH", 0) == 0)
      throw SetupError("redis " + where + ": the server wants a password: put it in the variable named by --password-env");
    if (pong != "PONG") throw SetupError("redis " + where + ": PING answered '" + pong + "'");
  }
  ~Control() { redisFree(c); }
  std::string command(const std::vector<std::string>& argv) {
    std::vector<const char*> a;
    std::vector<size_t> l;
    for (auto& s : argv) a.push_back(s.data()), l.push_back(s.size());
    auto* r = static_cast<redisReply*>(redisCommandArgv(c, static_cast<int>(a.size()), a.data(), l.data()));
    if (!r) throw SetupError("redis " + where + ": " + (c->errstr[0] ? c->errstr : "no reply"));
    std::string s = r->str ? std::string(r->str, r->len) : r->type == REDIS_REPLY_INTEGER ? std::to_string(r->integer) : "";
    if (r->type == REDIS_REPLY_ARRAY && r->elements == 2 && r->element[1]->str) s = r->element[1]->str;
    freeReplyObject(r);
    return s;
  }
};

class RedisClient final : public Client {
 public:
  RedisClient(const std::string& host, int port, const std::string& password, const KeySpace& keys, Op op,
              const Job& job, std::vector<uint64_t>* written, std::mutex* written_mu)
      : keys_(keys), op_(op), where_(host + ":" + std::to_string(port)), written_(written), written_mu_(written_mu) {
    { Control check(host, port, job.timeout_s, password); }  // handshake errors are set-up errors
    std::string err;
    fd_ = tcp_connect(host, port, job.timeout_s, &err);
    if (fd_ < 0) throw SetupError("redis " + where_ + ": cannot connect: " + err);
    reader_ = redisReaderCreate();
    if (!password.empty()) {  // AUTH on this connection too, answered before the first op
      std::string cmd = "*2\r\n$4\r\nAUTH\r\n";
      append_bulk(cmd, password.data(), password.size());
      out_ = cmd;
      auth_pending_ = true;
    }
    // The RESP command of this op, encoded once; submit copies it and writes key and value in.
    std::string key(keys_.key_len(), 'k');
    if (op_ == Op::Ping) {
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
  ~RedisClient() override {
    record_written();
    if (fd_ >= 0) close(fd_);
    if (reader_) redisReaderFree(reader_);
  }

  int fd() const override { return fd_; }
  bool alive() const override { return fd_ >= 0; }
  bool wants_write() const override { return out_off_ < out_.size(); }

  void submit(uint64_t seq) override {
    pending_.push_back(seq);
    size_t at = out_.size();
    out_.append(cmd_);
    if (op_ == Op::Ping) return;
    uint64_t k = keys_.key_of(seq);
    keys_.write_key(k, out_.data() + at + key_at_);
    if (op_ == Op::Set) keys_.write_value(k, out_.data() + at + value_at_);
  }

  void flush() override {
    while (fd_ >= 0 && out_off_ < out_.size()) {
      ssize_t n = ::write(fd_, out_.data() + out_off_, out_.size() - out_off_);
      if (n > 0) {
        out_off_ += static_cast<size_t>(n);
      } else if (n < 0 && errno == EAGAIN) {
        return;
      } else if (n < 0 && errno == EINTR) {
        continue;
      } else {
        lost(std::string("connection lost while sending: ") + std::strerror(errno));
        return;
      }
    }
    out_.clear();
    out_off_ = 0;
  }

  size_t reap(std::span<Completion> out) override {
    details_.clear();
    size_t k = drain_backlog(out, 0);
    if (fd_ < 0) return k;
    char buf[65536];
    for (;;) {
      ssize_t n = ::read(fd_, buf, sizeof buf);
      if (n > 0) {
        redisReaderFeed(reader_, buf, static_cast<size_t>(n));
        if (static_cast<size_t>(n) < sizeof buf) break;
      } else if (n == 0) {
        lost("connection closed by the server");
        break;
      } else if (errno == EAGAIN) {
        break;
      } else if (errno != EINTR) {
        lost(std::string("connection lost: ") + std::strerror(errno));
        break;
      }
    }
    while (k < out.size() && reader_) {
      void* r = nullptr;
      if (redisReaderGetReply(reader_, &r) != REDIS_OK) {
        lost(std::string("protocol error: ") + reader_->errstr);
        break;
      }
      if (!r) break;
      auto* reply = static_cast<redisReply*>(r);
      if (auth_pending_) {
        auth_pending_ = false;
        freeReplyObject(reply);
        continue;
      }
      if (pending_.empty()) {
        freeReplyObject(reply);
        lost("a reply that no request asked for");
        break;
      }
      uint64_t seq = pending_.front();
      pending_.pop_front();
      out[k++] = {seq, check(seq, reply)};
      freeReplyObject(reply);
    }
    return drain_backlog(out, k);
  }

  void abort(std::string_view why) override { lost(std::string(why), Status::Timeout); }

  OpResult run(uint64_t seq) override {  // blocking use: one request, wait for its reply
    submit(seq);
    flush();
    Completion c[1];
    while (fd_ >= 0 || !backlog_.empty()) {
      if (reap(c) == 1) return c[0].result;
      pollfd p{fd_, static_cast<short>(POLLIN | (wants_write() ? POLLOUT : 0)), 0};
      if (poll(&p, 1, 5000) == 0) abort("no reply within the timeout");
      else if (p.revents & POLLOUT) flush();
    }
    return {Status::Error, 0, "connection lost"};
  }

 private:
  OpResult check(uint64_t seq, redisReply* r) {
    if (r->type == REDIS_REPLY_ERROR) return {Status::Error, 0, keep(std::string(r->str, r->len))};
    switch (op_) {
      case Op::Ping:
        if (r->type == REDIS_REPLY_STATUS && r->len == 4 && std::memcmp(r->str, "PONG", 4) == 0) return {Status::Ok, 4, {}};
        break;
      case Op::Set:
        if (r->type == REDIS_REPLY_STATUS && r->len == 2 && std::memcmp(r->str, "OK", 2) == 0) {
          if (written_local_.size() < 64) written_local_.push_back(keys_.key_of(seq));
          return {Status::Ok, static_cast<uint32_t>(keys_.block.size()), {}};
        }
        break;
      case Op::Get: {
        uint64_t ki = keys_.key_of(seq);
        if (r->type == REDIS_REPLY_NIL) return {Status::NotFound, 0, keep("GET " + keys_.key(ki) + ": no such key")};
        if (r->type == REDIS_REPLY_STRING) {
          if (keys_.matches(ki, r->str, r->len)) return {Status::Ok, static_cast<uint32_t>(r->len), {}};
          return {Status::Mismatch, 0, keep("GET " + keys_.key(ki) + " returned a value that was not set (" +
                                            std::to_string(r->len) + " bytes)")};
        }
        break;
      }
    }
    return {Status::Mismatch, 0, keep("unexpected reply" + (r->str ? ": " + std::string(r->str, r->len) : ""))};
  }

  std::string_view keep(std::string s) {
    details_.push_back(std::move(s));
    return details_.back();
  }

  // The connection is gone: every request in flight fails, and the client stops.
  void lost(const std::string& why, Status st = Status::Error) {
    if (fd_ >= 0) close(fd_);
    fd_ = -1;
    lost_why_ = why + " (" + where_ + ")";
    for (uint64_t seq : pending_) backlog_.push_back(seq);
    pending_.clear();
    lost_status_ = st;
  }
  size_t drain_backlog(std::span<Completion> out, size_t k) {
    while (k < out.size() && !backlog_.empty()) {
      out[k++] = {backlog_.front(), {lost_status_, 0, lost_why_}};
      backlog_.pop_front();
    }
    return k;
  }
  void record_written() {
    if (!written_ || written_local_.empty()) return;
    std::lock_guard lk(*written_mu_);
    written_->insert(written_->end(), written_local_.begin(), written_local_.end());
  }

  const KeySpace& keys_;
  Op op_;
  std::string where_;
  int fd_ = -1;
  redisReader* reader_ = nullptr;
  std::string out_;
  size_t out_off_ = 0;
  std::string cmd_;
  size_t key_at_ = 0, value_at_ = 0;
  std::deque<uint64_t> pending_, backlog_;
  std::deque<std::string> details_;
  std::string lost_why_;
  Status lost_status_ = Status::Error;
  bool auth_pending_ = false;
  std::vector<uint64_t> written_local_;
  std::vector<uint64_t>* written_;
  std::mutex* written_mu_;
};

ServiceSpec redis_service(const Job& job) {
  ServiceSpec s;
  s.name = "redis-server";
  s.binary = job.str("server-binary", "redis-server");
  s.args = {"--port", "{port}", "--bind", "127.0.0.1", "--dir", "{dir}", "--logfile", "redis.log",
            "--daemonize", "no", "--protected-mode", "no"};
  std::string p = job.str("persistence", "none");
  if (p == "none") s.args.insert(s.args.end(), {"--save", "", "--appendonly", "no"});
  else if (p == "rdb") s.args.insert(s.args.end(), {"--save", "3600 1 300 100 60 10000", "--appendonly", "no"});
  else s.args.insert(s.args.end(), {"--save", "", "--appendonly", "yes", "--appendfsync", "everysec"});
  s.probe = [](int port) -> std::string {
    try {
      Control c("127.0.0.1", port, 1.0, "");
      return "";
    } catch (const SetupError& e) {
      return e.what();
    }
  };
  return s;
}

class RedisAdapter final : public Adapter {
 public:
  explicit RedisAdapter(const Job& job) : keys_(job) {
    op_ = job.op == "set" ? Op::Set : job.op == "get" ? Op::Get : Op::Ping;
    managed_ = !job.has("host");
    host_ = job.str("host", "127.0.0.1");
    port_ = static_cast<int>(job.integer("port", 6379));
    if (!managed_) {
      const char* pw = std::getenv(job.str("password-env", "REDISCLI_AUTH").c_str());
      if (pw) password_ = pw;
    }
  }

  void prepare(const Job& job) override {
    if (managed_) {
      svc_ = shared_service("redis:" + job.str("persistence", "none") + ":" + job.str("server-binary", ""),
                            redis_service(job));
      port_ = svc_->port();
    }
    Control c(host_, port_, job.timeout_s, password_);
    std::string info = c.command({"INFO", "server"});
    auto field = [&](const std::string& k) {
      auto at = info.find(k + ":");
      if (at == std::string::npos) return std::string();
      auto end = info.find('\r', at);
      return info.substr(at + k.size() + 1, end - at - k.size() - 1);
    };
    info_["server"] = "redis-server";
    info_["version"] = field("redis_version");
    info_["managed"] = managed_ ? "yes" : "no";
    info_["hiredis"] = std::to_string(HIREDIS_MAJOR) + "." + std::to_string(HIREDIS_MINOR) + "." + std::to_string(HIREDIS_PATCH);
    try {
      info_["save"] = c.command({"CONFIG", "GET", "save"});
      info_["appendonly"] = c.command({"CONFIG", "GET", "appendonly"});
    } catch (const SetupError&) {  // CONFIG may be renamed away on a managed service
    }
    info_["value_size"] = std::to_string(keys_.block.size());
    info_["keyspace"] = std::to_string(keys_.size);
    if (op_ == Op::Get) preload(c);
  }

  std::unique_ptr<Client> open(const Job& job, int) override {
    return std::make_unique<RedisClient>(host_, port_, password_, keys_, op_, job, &written_, &written_mu_);
  }

  Verdict verify(const Job& job, const Counts&) override {
    if (op_ != Op::Set) return {};
    // Read back keys that SET acknowledged: each must hold exactly the value sent.
    Control c(host_, port_, job.timeout_s, password_);
    std::string want;
    size_t bad = 0;
    for (uint64_t k : written_) {
      keys_.value(k, want);
      std::string key = keys_.key(k);
      auto* r = static_cast<redisReply*>(redisCommand(c.c, "GET %b", key.data(), key.size()));
      if (!r || r->type != REDIS_REPLY_STRING || std::string(r->str, r->len) != want) ++bad;
      if (r) freeReplyObject(r);
    }
    return {true, bad == 0, std::to_string(written_.size() - bad) + " of " + std::to_string(written_.size()) +
                                " keys read back hold the value that was set"};
  }

  Info describe() override { return info_; }
  std::string target() const override { return host_ + ":" + std::to_string(port_); }

 private:
  void preload(Control& c) {
    // GET alone must find every key: SET the whole key space first, pipelined, and check.
    std::string v;
    for (uint64_t base = 0; base < keys_.size; base += 1000) {
      uint64_t end = std::min(keys_.size, base + 1000);
      for (uint64_t k = base; k < end; ++k) {
        keys_.value(k, v);
        std::string key = keys_.key(k);
        redisAppendCommand(c.c, "SET %b %b", key.data(), key.size(), v.data(), v.size());
      }
      for (uint64_t k = base; k < end; ++k) {
        void* r = nullptr;
        if (redisGetReply(c.c, &r) != REDIS_OK) throw SetupError("redis " + target() + ": preload failed: " + c.c->errstr);
        auto* reply = static_cast<redisReply*>(r);
        bool ok = reply->type == REDIS_REPLY_STATUS && std::string(reply->str) == "OK";
        std::string what = reply->str ? reply->str : "";
        freeReplyObject(reply);
        if (!ok) throw SetupError("redis " + target() + ": preload SET answered '" + what + "'");
      }
    }
  }

  KeySpace keys_;
  Op op_;
  bool managed_;
  std::string host_, password_;
  int port_;
  std::shared_ptr<Service> svc_;
  Info info_;
  std::vector<uint64_t> written_;
  std::mutex written_mu_;
};

}  // namespace

AdapterSpec redis_adapter_spec() {
  using K = OptionSpec::Kind;
  return {.name = "redis",
          .summary = "Redis SET / GET / PING, every reply checked; starts its own redis-server unless --host",
          .ops = {"set", "get", "ping"},
          .default_ops = "set,get,ping",
          .options = {{"host", "an external server (default: start a redis-server on a free port)", "", false},
                      {"port", "port of the external server", "6379", false, K::Int, {}, false, 1, 65535},
                      {"password-env", "environment variable holding the password (never printed)", "REDISCLI_AUTH", false},
                      {"keyspace", "number of distinct keys", "10000", false, K::Int, {}, false, 1, 1000000000},
                      {"keys", "key order", "sequential", false, K::Str, {"sequential", "random"}},
                      {"value-size", "bytes per value (redis-benchmark -d)", "3", false, K::Int, {}, false, 0, 512 << 20},
                      {"key-prefix", "prefix of every key", "mwbench:", false},
                      {"persistence", "persistence of the managed server", "none", true, K::Str, {"none", "rdb", "aof"}},
                      {"server-binary", "redis-server binary for the managed server", "redis-server", false}},
          .unavailable = [](const Job& j) -> std::string {
            if (j.has("host") || !find_binary(j.str("server-binary", "redis-server")).empty()) return "";
            return "redis-server is not installed (scripts/setup installs it), and no --host was given";
          },
          .make = [](const Job& j) { return std::make_unique<RedisAdapter>(j); }};
}

}  // namespace mw
