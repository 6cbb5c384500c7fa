// Redis as a queue: the backend of src/queue.h's QueueAdapter. Each job has a key of its own
// (removed afterwards); --queue picks the structure:
//   list      LPUSH; BRPOP                       (at most once: a consumer that dies loses it)
//   reliable  LPUSH; BLMOVE to <key>:processing, then LREM from it as the acknowledgement
//   stream    XADD; XREADGROUP in group "mwbench", then XACK
// Producers are pollable (-P requests in flight on the driver's event loop, like the set op);
// consumers block, one request at a time, each bounded by the job's timeout.
#include "queues.h"

#include <poll.h>

#include <atomic>
#include <deque>
#include <span>

#include "queue.h"
#include "options.h"
#include "ranks.h"
#include "reply.h"
#include "sysinfo.h"

namespace mw::redis {
namespace {

enum class Kind { List, Reliable, Stream };
struct RedisQueueOptions {
  Kind kind = Kind::List;
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

// One blocking connection: a command and its whole reply, within a deadline. Throws SetupError
// (from Conn) on a lost connection, or when the reply does not come in time.
class Wire {
 public:
  explicit Wire(const Endpoint& ep) : ep_(ep), conn_(ep, now_ns() + static_cast<int64_t>(ep.timeout_s * 1e9)) {}

  // The reply's type ('-' for an error) and its flattened bulks; views valid until the next call.
  char call(const std::vector<std::string>& argv, double wait_s, std::vector<std::string_view>& flat) {
    in_.erase(0, used_);
    used_ = 0;
    out_.clear();
    append_command(out_, argv);
    const int64_t deadline = now_ns() + static_cast<int64_t>((wait_s + ep_.timeout_s) * 1e9);
    for (size_t off = 0; off < out_.size();) {
      long n = conn_.write_some(out_.data() + off, out_.size() - off);
      if (n < 0) throw SetupError("redis " + ep_.where() + ": " + conn_.error());
      if (n > 0) off += static_cast<size_t>(n);
      else wait(POLLOUT, deadline);
    }
    for (;;) {
      Reply r;
      std::string err;
      Parse p = parse_reply(in_, ep_.limits, r, used_, err);
      if (p == Parse::Error) throw SetupError("redis " + ep_.where() + ": " + err);
      if (p == Parse::Done) {
        flatten(std::string_view(in_).substr(0, used_), flat);
        return r.nil ? 'n' : r.type;
      }
      char buf[16384];
      long n = conn_.read_some(buf, sizeof buf);
      if (n < 0) throw SetupError("redis " + ep_.where() + ": " + conn_.error());
      if (n > 0) in_.append(buf, static_cast<size_t>(n));
      else wait(conn_.tls_read_wants_write() ? POLLOUT : POLLIN, deadline);
    }
  }

 private:
  void wait(short events, int64_t deadline) {
    const int64_t left = deadline - now_ns();
    if (left <= 0) throw SetupError("redis " + ep_.where() + ": no reply within the timeout");
    pollfd p{conn_.fd(), events, 0};
    poll(&p, 1, static_cast<int>(std::min<int64_t>(left / 1000000 + 1, 100)));
  }
  const Endpoint& ep_;
  Conn conn_;
  std::string in_, out_;
  size_t used_ = 0;
};

struct Names {
  std::string key, processing, group = "mwbench";
};

class RedisQueueConn final : public QueueConn {
 public:
  RedisQueueConn(const Endpoint& ep, const Names& names, Kind kind, std::string consumer)
      : wire_(ep), names_(names), kind_(kind), consumer_(std::move(consumer)) {}
  bool alive() const override { return alive_; }

  OpResult produce(std::string_view msg) override {
    return guarded([&] {
      const bool stream = kind_ == Kind::Stream;
      char t = stream ? wire_.call({"XADD", names_.key, "*", "m", std::string(msg)}, 0, flat_)
                      : wire_.call({"LPUSH", names_.key, std::string(msg)}, 0, flat_);
      if (t == (stream ? '$' : ':')) return OpResult{Status::Ok, 0, {}};
      return unexpected(stream ? "XADD" : "LPUSH", t);
    });
  }

  OpResult consume(std::string& msg, double wait_s) override {
    return guarded([&] {
      const std::string wait = std::to_string(std::max(wait_s, 0.01));
      if (kind_ == Kind::List) {
        char t = wire_.call({"BRPOP", names_.key, wait}, wait_s, flat_);
        if (t == 'n') return OpResult{Status::NotFound, 0, {}};
        if (t != '*' || flat_.size() != 2) return unexpected("BRPOP", t);
        msg.assign(flat_[1]);
        return OpResult{Status::Ok, 0, {}};
      }
      if (kind_ == Kind::Reliable) {
        char t = wire_.call({"BLMOVE", names_.key, names_.processing, "RIGHT", "LEFT", wait}, wait_s, flat_);
        if (t == 'n') return OpResult{Status::NotFound, 0, {}};
        if (t != '$' || flat_.size() != 1) return unexpected("BLMOVE", t);
        msg.assign(flat_[0]);
        t = wire_.call({"LREM", names_.processing, "1", msg}, 0, flat_);
        if (t != ':' || flat_.size() != 1 || flat_[0] != "1") return unexpected("LREM", t);
        return OpResult{Status::Ok, 0, {}};
      }
      const std::string ms = std::to_string(std::max<int64_t>(1, static_cast<int64_t>(wait_s * 1000)));
      char t = wire_.call({"XREADGROUP", "GROUP", names_.group, consumer_, "COUNT", "1", "BLOCK", ms, "STREAMS",
                           names_.key, ">"},
                          wait_s, flat_);
      if (t == 'n') return OpResult{Status::NotFound, 0, {}};
      // [key, entry id, "m", message]
      if (t != '*' || flat_.size() != 4 || flat_[2] != "m") return unexpected("XREADGROUP", t);
      msg.assign(flat_[3]);
      const std::string id(flat_[1]);
      t = wire_.call({"XACK", names_.key, names_.group, id}, 0, flat_);
      if (t != ':' || flat_.size() != 1 || flat_[0] != "1") return unexpected("XACK", t);
      return OpResult{Status::Ok, 0, {}};
    });
  }

 private:
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
  bool alive_ = true;
};

// A producer on the driver's event loop: -P LPUSH (or XADD) in flight, each message stamped
// when it is submitted, each reply checked (LPUSH: the list's length; XADD: an entry id) and
// the message entered in the ledger once acknowledged.
class RedisProducer final : public Client {
 public:
  RedisProducer(const Endpoint& ep, const Names& names, Kind kind, queue::Ledger& ledger, size_t size)
      : ep_(ep), names_(names), stream_(kind == Kind::Stream), ledger_(ledger), size_(size),
        conn_(std::make_unique<Conn>(ep, now_ns() + static_cast<int64_t>(ep.timeout_s * 1e9))) {}

  int fd() const override { return conn_ ? conn_->fd() : -1; }
  bool alive() const override { return conn_ != nullptr; }
  bool wants_write() const override { return conn_ && (off_ < out_.size() || conn_->tls_read_wants_write()); }

  void submit(uint64_t seq) override {
    if (!conn_) {
      failed_.push_back(seq);
      return;
    }
    msg_ = queue::encode(seq, queue::now_ns(), size_);
    if (stream_) append_command(out_, {"XADD", names_.key, "*", "m", msg_});
    else append_command(out_, {"LPUSH", names_.key, msg_});
    pending_.push_back(seq);
  }

  void flush() override {
    while (conn_ && off_ < out_.size()) {
      long n = conn_->write_some(out_.data() + off_, out_.size() - off_);
      if (n < 0) return lost(conn_->error());
      if (n == 0) return;
      off_ += static_cast<size_t>(n);
    }
    out_.clear();
    off_ = 0;
  }

  size_t reap(std::span<Completion> out) override {
    details_.clear();
    size_t k = take(out, 0);
    while (conn_ && k < out.size() && !pending_.empty() && read_more()) k = take(out, k);
    while (k < out.size() && !failed_.empty()) {
      out[k++] = {failed_.front(), {fail_status_, 0, why_}};
      failed_.pop_front();
    }
    return k;
  }

  void abort(std::string_view why) override {
    fail_status_ = Status::Timeout;
    lost(std::string(why));
  }

  OpResult run(uint64_t seq) override {  // blocking use: one request, wait for its reply
    submit(seq);
    flush();
    Completion c[1];
    const int64_t deadline = now_ns() + static_cast<int64_t>(ep_.timeout_s * 1e9);
    for (;;) {
      if (reap(c) == 1) return c[0].result;
      if (!conn_) return {Status::Error, 0, why_};
      if (now_ns() >= deadline) abort("no reply within the timeout");
      pollfd p{conn_ ? conn_->fd() : -1, static_cast<short>(POLLIN | (wants_write() ? POLLOUT : 0)), 0};
      if (conn_ && poll(&p, 1, 100) > 0 && (p.revents & POLLOUT)) flush();
    }
  }

 private:
  // Completions of the replies buffered so far, from out[k]; returns the new k.
  size_t take(std::span<Completion> out, size_t k) {
    while (k < out.size() && !pending_.empty() && conn_) {
      Reply r;
      size_t used = 0;
      std::string err;
      Parse p = parse_reply(std::string_view(in_).substr(at_), ep_.limits, r, used, err);
      if (p == Parse::Incomplete) break;
      if (p == Parse::Error) {
        lost(err);
        break;
      }
      at_ += used;
      const uint64_t seq = pending_.front();
      pending_.pop_front();
      if (r.type == (stream_ ? '$' : ':') && !r.nil) {
        ledger_.produced(seq);
        out[k++] = {seq, {Status::Ok, static_cast<uint32_t>(size_), {}}};
      } else {
        details_.push_back(std::string(stream_ ? "XADD" : "LPUSH") + " answered " + std::string(1, r.type) +
                           printable(r.str, 100));
        out[k++] = {seq, {Status::Mismatch, 0, details_.back()}};
      }
    }
    if (at_ > 0 && at_ == in_.size()) in_.clear(), at_ = 0;
    return k;
  }
  bool read_more() {
    if (at_ > 65536) in_.erase(0, at_), at_ = 0;
    char buf[65536];
    long n = conn_->read_some(buf, sizeof buf);
    if (n < 0) lost(conn_->error());
    if (n <= 0) return false;
    in_.append(buf, static_cast<size_t>(n));
    return true;
  }
  // The connection is gone: every message in flight fails with the reason (it may or may not
  // have been queued: the ledger counts one that comes out anyway as never acknowledged).
  void lost(const std::string& why) {
    why_ = why + " (" + ep_.where() + ")";
    for (uint64_t s : pending_) failed_.push_back(s);
    pending_.clear();
    conn_.reset();
    out_.clear();
    off_ = 0;
    in_.clear();
    at_ = 0;
  }

  const Endpoint& ep_;
  const Names& names_;
  bool stream_;
  queue::Ledger& ledger_;
  size_t size_;
  std::unique_ptr<Conn> conn_;
  std::string out_, in_, msg_, why_;
  size_t off_ = 0, at_ = 0;
  std::deque<uint64_t> pending_, failed_;
  Status fail_status_ = Status::Error;
  std::deque<std::string> details_;  // of this reap's failures
};

class RedisQueueAdapter final : public QueueAdapter {
 public:
  explicit RedisQueueAdapter(const Job& job) : QueueAdapter(job), ep_(endpoint_of(job)), managed_(!job.has("host")) {
    RedisQueueOptions o;
    detail::fill_options(job, redis_queue_options(), typeid(RedisQueueOptions), &o);
    kind_ = o.kind;
    names_.key = job.str("key-prefix", "mwbench:") + "q:" + std::to_string(run_id()) + unique_name("", ':');
    names_.processing = names_.key + ":processing";
  }
  ~RedisQueueAdapter() override { QueueAdapter::teardown(); }

  std::string target() const override { return ep_.where() + " " + kind_name(kind_); }
  std::unique_ptr<Client> open(const Job& job, int client) override {
    if (op() == QueueOp::Consume) return QueueAdapter::open(job, client);
    return std::make_unique<RedisProducer>(ep_, names_, kind_, ledger(), queue_options().message_size);
  }
  Info describe() override { return info_; }

 protected:
  void start(const Job& job) override {
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
    info_["key"] = names_.key;
    if (kind_ == Kind::Stream &&
        w.call({"XGROUP", "CREATE", names_.key, names_.group, "$", "MKSTREAM"}, 0, flat) != '+')
      throw SetupError("redis " + ep_.where() + ": XGROUP CREATE answered " + printable(flat.empty() ? "" : flat[0]));
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
    if (kind_ == Kind::Stream) {  // entries delivered and never acknowledged, and entries never read
      if (w.call({"XINFO", "GROUPS", names_.key}, 0, flat) != '*')
        throw SetupError("redis " + ep_.where() + ": XINFO GROUPS did not answer an array");
      int64_t held = 0;
      for (size_t i = 0; i + 1 < flat.size(); ++i)
        if (flat[i] == "pending" || flat[i] == "lag") held += std::atoll(std::string(flat[i + 1]).c_str());
      return held;
    }
    return count({"LLEN", names_.key}) + count({"LLEN", names_.processing});
  }

  void stop_backend() override {
    try {
      Wire w(ep_);
      std::vector<std::string_view> flat;
      w.call({"DEL", names_.key, names_.processing}, 0, flat);
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
  Info info_;
};

}  // namespace

namespace {
std::vector<OptionSpec> redis_queue_options() {
  return {
      opt(&RedisQueueOptions::kind,
          {.name = "queue", .help = "produce/consume/roundtrip: list (LPUSH+BRPOP), reliable (BLMOVE+LREM) or "
                                    "stream (XADD+XREADGROUP+XACK)", .list = true},
          {{"list", Kind::List}, {"reliable", Kind::Reliable}, {"stream", Kind::Stream}})};
}
}  // namespace

std::vector<OptionSpec> with_queue_options(std::vector<OptionSpec> own) {
  for (auto& q : redis_queue_options()) own.push_back(q);
  return own;
}

std::unique_ptr<Adapter> make_queue_adapter(const Job& job) { return std::make_unique<RedisQueueAdapter>(job); }

}  // namespace mw::redis
