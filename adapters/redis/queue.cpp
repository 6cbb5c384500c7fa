// Redis as a queue: the backend of src/queue/queue.h's QueueAdapter. Each job has a key of its own
// (removed afterwards), or --queues N of them (message i goes to key i mod N; a consumer takes from
// any: BRPOP names them all, BLMOVE and XREADGROUP look at each in turn and block on one at a time
// for at most 10 ms); --queue picks the structure:
//   list      LPUSH; BRPOP                       (at most once: a consumer that dies loses it)
//   reliable  LPUSH; BLMOVE to <key>:processing, then LREM from it as the acknowledgement
//   stream    XADD; XREADGROUP in group "mwbench", then XACK
// Producers are the core's asynchronous produce over RedisSender (-P requests in flight on the
// driver's event loop, like the set op); consumers block, one request at a time, each bounded by
// the job's timeout.
#include "adapters/redis/queues.h"

#include <algorithm>
#include <atomic>
#include <charconv>
#include <deque>
#include <span>

#include "adapters/conn/client.h"
#include "adapters/health.h"
#include "adapters/redis/crash.h"
#include "adapters/redis/reply.h"
#include "api/options.h"
#include "api/stop.h"
#include "queue/queue.h"
#include "util/files.h"

namespace mw::redis {
namespace {

enum class Kind { List, Reliable, Stream };
struct RedisQueueOptions {
  Kind kind = Kind::List;
  int64_t queues = 1;
};

std::vector<OptionSpec> redis_queue_options();

const char* kind_name(Kind k) { return k == Kind::List ? "list" : k == Kind::Reliable ? "reliable" : "stream"; }

// Every bulk and line of a reply, in order (RESP is written in pre-order, so a nested reply
// such as XREADGROUP's is flattened by reading it front to back). `raw` was parsed whole first.
void flatten(std::string_view raw, std::vector<std::string_view>& out) {
  out.clear();
  size_t at = 0;
  while (at < raw.size()) {
    const size_t eol = raw.find("\r\n", at);
    if (eol == std::string_view::npos) return;
    const char type = raw[at];
    std::string_view line = raw.substr(at + 1, eol - at - 1);
    at = eol + 2;
    if (type == '$') {
      long n = std::atol(std::string(line).c_str());
      if (n < 0) continue;
      out.push_back(raw.substr(at, static_cast<size_t>(n)));
      at += static_cast<size_t>(n) + 2;
    } else if (type != '*') {
      out.push_back(line);
    }
  }
}

// One blocking connection: a command and its whole reply, within a deadline (redis::Conn on
// conn::Stream). Throws SetupError on a lost connection, or when the reply does not come in time.
class Wire {
 public:
  explicit Wire(const Endpoint& ep) : ep_(ep), conn_(ep, now_ns() + static_cast<int64_t>(ep.timeout_s * 1e9)) {}

  // The reply's type ('-' for an error, 'n' for nil) and its flattened bulks; views valid until the next call.
  char call(const std::vector<std::string>& argv, double wait_s, std::vector<std::string_view>& flat) {
    std::string_view raw;
    Reply r = conn_.command(argv, now_ns() + static_cast<int64_t>((wait_s + ep_.timeout_s) * 1e9), &raw);
    flatten(raw, flat);
    return r.nil ? 'n' : r.type;
  }

 private:
  const Endpoint& ep_;
  Conn conn_;
};

// The job's keys: keys[k] and its processing list processing[k] (reliable lists).
struct Names {
  std::vector<std::string> keys, processing;
  std::string group = "mwbench";
};

class RedisQueueConn final : public QueueConn {
 public:
  RedisQueueConn(const Endpoint& ep, const Names& names, Kind kind, std::string consumer)
      : wire_(ep), names_(names), kind_(kind), consumer_(std::move(consumer)) {}
  bool alive() const override { return alive_; }

  OpResult produce(std::string_view msg) override {
    const std::string& key = names_.keys[queue::queue_of(msg, names_.keys.size())];
    return guarded([&] {
      const bool stream = kind_ == Kind::Stream;
      char t = stream ? wire_.call({"XADD", key, "*", "m", std::string(msg)}, 0, flat_)
                      : wire_.call({"LPUSH", key, std::string(msg)}, 0, flat_);
      if (t == (stream ? '$' : ':')) return OpResult{Status::Ok, 0, {}};
      return unexpected(stream ? "XADD" : "LPUSH", t);
    });
  }

  OpResult consume(std::string& msg, double wait_s) override {
    return guarded([&] {
      const size_t n = names_.keys.size();
      if (kind_ == Kind::List) {  // BRPOP names every key
        std::vector<std::string> argv{"BRPOP"};
        argv.insert(argv.end(), names_.keys.begin(), names_.keys.end());
        argv.push_back(std::to_string(std::max(wait_s, 0.01)));
        char t = wire_.call(argv, wait_s, flat_);
        if (t == 'n') return OpResult{Status::NotFound, 0, {}};
        if (t != '*' || flat_.size() != 2) return unexpected("BRPOP", t);
        msg.assign(flat_[1]);
        return OpResult{Status::Ok, 0, {}};
      }
      // One key: a block for the whole wait. N keys: each looked at without blocking, from the one
      // after the key taken from last, then a block on one of them for at most 10 ms, in turn.
      const int64_t until = now_ns() + static_cast<int64_t>(wait_s * 1e9);
      for (;;) {
        for (size_t i = 0; n > 1 && i < n; ++i) {
          const size_t k = (next_ + i) % n;
          if (OpResult r = take(k, -1, msg); r.status != Status::NotFound) return r;
        }
        const double left = static_cast<double>(until - now_ns()) / 1e9;
        if (OpResult r = take(next_, n == 1 ? wait_s : std::clamp(left, 0.0, 0.01), msg); r.status != Status::NotFound)
          return r;
        if (n == 1 || now_ns() >= until) return OpResult{Status::NotFound, 0, {}};
        next_ = (next_ + 1) % n;
      }
    });
  }

 private:
  // One message of key k, acknowledged: blocking for up to `wait_s`, or not at all (-1).
  OpResult take(size_t k, double wait_s, std::string& msg) {
    const std::string &key = names_.keys[k], &processing = names_.processing[k];
    const bool block = wait_s >= 0;
    if (kind_ == Kind::Reliable) {
      const std::string wait = std::to_string(std::max(wait_s, 0.01));
      char t = block ? wire_.call({"BLMOVE", key, processing, "RIGHT", "LEFT", wait}, wait_s, flat_)
                     : wire_.call({"LMOVE", key, processing, "RIGHT", "LEFT"}, 0, flat_);
      if (t == 'n') return OpResult{Status::NotFound, 0, {}};
      if (t != '$' || flat_.size() != 1) return unexpected(block ? "BLMOVE" : "LMOVE", t);
      msg.assign(flat_[0]);
      t = wire_.call({"LREM", processing, "1", msg}, 0, flat_);
      if (t != ':' || flat_.size() != 1 || flat_[0] != "1") return unexpected("LREM", t);
      next_ = (k + 1) % names_.keys.size();
      return OpResult{Status::Ok, 0, {}};
    }
    std::vector<std::string> argv{"XREADGROUP", "GROUP", names_.group, consumer_, "COUNT", "1"};
    if (block) {
      argv.push_back("BLOCK");
      argv.push_back(std::to_string(std::max<int64_t>(1, static_cast<int64_t>(wait_s * 1000))));
    }
    argv.insert(argv.end(), {"STREAMS", key, ">"});
    char t = wire_.call(argv, std::max(wait_s, 0.0), flat_);
    if (t == 'n') return OpResult{Status::NotFound, 0, {}};
    // [key, entry id, "m", message]
    if (t != '*' || flat_.size() != 4 || flat_[2] != "m") return unexpected("XREADGROUP", t);
    msg.assign(flat_[3]);
    const std::string id(flat_[1]);
    t = wire_.call({"XACK", key, names_.group, id}, 0, flat_);
    if (t != ':' || flat_.size() != 1 || flat_[0] != "1") return unexpected("XACK", t);
    next_ = (k + 1) % names_.keys.size();
    return OpResult{Status::Ok, 0, {}};
  }

  template <class F>
  OpResult guarded(F&& f) {
    if (!alive_) return {Status::Error, 0, detail_};
    try {
      return f();
    } catch (const SetupError& e) {  // the connection is gone (or timed out): this client stops
      alive_ = false;
      detail_ = e.what();
      return {Status::Error, 0, detail_};
    }
  }
  OpResult unexpected(const char* cmd, char type) {
    detail_ = std::string(cmd) + " answered ";
    detail_ += type == 'n' ? std::string("nil") : std::string(1, type) + printable(flat_.empty() ? "" : flat_[0], 100);
    return {Status::Mismatch, 0, detail_};
  }

  Wire wire_;
  const Names& names_;
  Kind kind_;
  std::string consumer_;
  std::vector<std::string_view> flat_;
  std::string detail_;
  size_t next_ = 0;  // the key to look at first
  bool alive_ = true;
};

// The acknowledgements of a producer's pipelined LPUSH (or XADD), in request order: LPUSH answers
// the list's length, XADD an entry id. A protocol error, a reply over the limit or a reply no
// request asked for is fatal (conn::PipelinedClient drops the connection and fails what is in flight).
class AckChecker {
 public:
  struct Pending {
    uint64_t seq;
  };
  AckChecker(bool stream, Limits lim) : stream_(stream), lim_(lim) {}
  void expect(uint64_t seq) { pending_.push_back({seq}); }
  void feed(const char* data, size_t n) { in_.append(data, n); }
  size_t take(std::span<Completion> out, size_t k) {
    while (k < out.size() && fatal_.empty()) {
      Reply r;
      size_t used = 0;
      Parse p = parse_reply(in_.view(), lim_, r, used, fatal_);
      if (p == Parse::Incomplete) break;
      if (p == Parse::Error) break;  // fatal_ says why
      in_.consume(used);
      if (pending_.empty()) {
        fatal_ = "a reply with no request waiting: " + std::string(1, r.type) + printable(r.str, 100);
        break;
      }
      const uint64_t seq = pending_.front().seq;
      pending_.pop_front();
      if (r.type == (stream_ ? '$' : ':') && !r.nil) {
        out[k++] = {seq, {Status::Ok, 0, {}}};
      } else {
        details_.push_back(std::string(stream_ ? "XADD" : "LPUSH") + " answered " + std::string(1, r.type) +
                           printable(r.str, 100));
        out[k++] = {seq, {Status::Mismatch, 0, details_.back()}};
      }
    }
    in_.compact();
    return k;
  }
  const std::string& fatal() const { return fatal_; }
  void clear_details() { details_.clear(); }
  conn::Ring<Pending>& pending() { return pending_; }
  void reset_stream() {
    in_.clear();
    fatal_.clear();
  }

 private:
  bool stream_;
  Limits lim_;
  conn::InBuffer in_;
  conn::Ring<Pending> pending_;
  std::deque<std::string> details_;
  std::string fatal_;
};

// The queue's pipelined produce (src/queue/queue.h's QueueSender): LPUSH <key> <msg> (or XADD <key> *
// m <msg>) with everything but the message encoded once per key (message i: key i mod N); the
// core stamps, counts and enters each message in the ledger.
class RedisSender final : public conn::PipelinedClient<Conn, Endpoint, AckChecker, QueueSender> {
 public:
  RedisSender(const Endpoint& ep, Health<Conn>* health, const Names& names, bool stream)
      : PipelinedClient(ep, health, stream, ep.limits) {
    for (const std::string& k : names.keys) {
      std::string key = "$" + std::to_string(k.size()) + "\r\n" + k + "\r\n";
      heads_.push_back(stream ? "*5\r\n$4\r\nXADD\r\n" + key + "$1\r\n*\r\n$1\r\nm\r\n"
                              : "*3\r\n$5\r\nLPUSH\r\n" + key);
    }
  }
  void send(uint64_t seq, std::string_view msg) override {
    if (gone(seq)) return;
    checker_.expect(seq);
    char len[24];
    len[0] = '$';
    char* e = std::to_chars(len + 1, len + sizeof len - 2, msg.size()).ptr;
    *e++ = '\r';
    *e++ = '\n';
    out_.append(heads_[seq % heads_.size()]).append(len, static_cast<size_t>(e - len)).append(msg).append("\r\n", 2);
  }

 private:
  std::vector<std::string> heads_;
};

class RedisQueueAdapter final : public QueueAdapter {
 public:
  explicit RedisQueueAdapter(const Job& job) : QueueAdapter(job), ep_(endpoint_of(job)), managed_(!job.has("host")) {
    RedisQueueOptions o;
    detail::fill_options(job, redis_queue_options(), typeid(RedisQueueOptions), &o);
    kind_ = o.kind;
    const std::string key = job.str("key-prefix", "mwbench:") + "q:" + std::to_string(run_id()) + unique_name("", ':');
    for (int64_t k = 0; k < o.queues; ++k) {
      names_.keys.push_back(o.queues == 1 ? key : key + ":" + std::to_string(k));
      names_.processing.push_back(names_.keys.back() + ":processing");
    }
  }
  ~RedisQueueAdapter() override { QueueAdapter::teardown(); }

  std::string target() const override { return ep_.where() + " " + kind_name(kind_); }
  Info describe() override { return info_; }
  Abilities backend_abilities(const Job& job) override {
    if (!managed_) return {};
    return {.contract = contract_of(job.str("persistence", "none"))};
  }

 protected:
  void start(const Job& job) override {
    if (message_sizes().max() > ep_.limits.max_reply)  // each consume would fail on its reply
      throw SetupError("redis: --message-size: the largest message, " + std::to_string(message_sizes().max()) +
                       " bytes, is over --max-reply (" + std::to_string(ep_.limits.max_reply) + ")");
    if (managed_) {
      svc_ = shared_service("redis:" + job.str("persistence", "none") + ":" + job.str("server-binary", ""),
                            service_of(job));
      ep_.port = svc_->port();
    }
    Wire w(ep_);
    std::vector<std::string_view> flat;
    if (w.call({"INFO", "server"}, 0, flat) == '$' && !flat.empty()) {
      std::string_view info = flat[0];
      if (auto at = info.find("redis_version:"); at != std::string_view::npos)
        info_["version"] = printable(info.substr(at + 14, info.find('\r', at) - at - 14), 40);
    }
    info_["server"] = "redis-server";
    info_["managed"] = managed_ ? "yes" : "no";
    info_["queue"] = kind_name(kind_);
    info_["key"] = names_.keys.front();
    info_["keys"] = std::to_string(names_.keys.size());
    for (const std::string& key : names_.keys)
      if (kind_ == Kind::Stream && w.call({"XGROUP", "CREATE", key, names_.group, "$", "MKSTREAM"}, 0, flat) != '+')
        throw SetupError("redis " + ep_.where() + ": XGROUP CREATE answered " + printable(flat.empty() ? "" : flat[0]));
  }

  std::unique_ptr<QueueSender> sender(const Job&) override {
    return std::make_unique<RedisSender>(ep_, &health_, names_, kind_ == Kind::Stream);
  }

  std::unique_ptr<QueueConn> connect(const Job&) override {
    return std::make_unique<RedisQueueConn>(ep_, names_, kind_, "c" + std::to_string(consumers_++));
  }

  int64_t remaining(const Job&) override {
    Wire w(ep_);
    std::vector<std::string_view> flat;
    auto count = [&](std::vector<std::string> argv) {
      char t = w.call(argv, 0, flat);
      if (t != ':' || flat.empty())
        throw SetupError("redis " + ep_.where() + ": " + argv[0] + " did not answer a count");
      return std::atoll(std::string(flat[0]).c_str());
    };
    int64_t held = 0;
    for (size_t k = 0; k < names_.keys.size(); ++k) {
      if (kind_ != Kind::Stream) {
        held += count({"LLEN", names_.keys[k]}) + count({"LLEN", names_.processing[k]});
        continue;
      }
      // entries delivered and never acknowledged, and entries never read
      if (w.call({"XINFO", "GROUPS", names_.keys[k]}, 0, flat) != '*')
        throw SetupError("redis " + ep_.where() + ": XINFO GROUPS did not answer an array");
      for (size_t i = 0; i + 1 < flat.size(); ++i)
        if (flat[i] == "pending" || flat[i] == "lag") held += std::atoll(std::string(flat[i + 1]).c_str());
    }
    return held;
  }

  void stop_backend() override {
    try {
      Wire w(ep_);
      std::vector<std::string_view> flat;
      std::vector<std::string> argv{"DEL"};
      argv.insert(argv.end(), names_.keys.begin(), names_.keys.end());
      argv.insert(argv.end(), names_.processing.begin(), names_.processing.end());
      w.call(argv, 0, flat);
    } catch (const SetupError&) {  // a server that is gone keeps nothing to remove
    }
  }

 private:
  Endpoint ep_;
  bool managed_;
  Kind kind_ = Kind::List;
  Names names_;
  std::atomic<int> consumers_{0};
  std::shared_ptr<Service> svc_;
  Health<Conn> health_;
  Info info_;
};

}  // namespace

namespace {
std::vector<OptionSpec> redis_queue_options() {
  return {opt(&RedisQueueOptions::kind,
              {.name = "queue",
               .help = "produce/consume/roundtrip: list (LPUSH+BRPOP), reliable (BLMOVE+LREM) or "
                       "stream (XADD+XREADGROUP+XACK)",
               .list = true,
               .used_by = {"produce", "consume", "roundtrip"}},
              {{"list", Kind::List}, {"reliable", Kind::Reliable}, {"stream", Kind::Stream}}),
          opt(&RedisQueueOptions::queues, {.name = "queues",
                                           .help = "keys per job; message i goes to key i mod N",
                                           .min = 1,
                                           .max = 1000,
                                           .used_by = {"produce", "consume", "roundtrip"}})};
}
}  // namespace

std::vector<OptionSpec> with_queue_options(std::vector<OptionSpec> own) {
  for (auto& q : redis_queue_options()) own.push_back(q);
  return own;
}

std::unique_ptr<Adapter> make_queue_adapter(const Job& job) { return std::make_unique<RedisQueueAdapter>(job); }

}  // namespace mw::redis
