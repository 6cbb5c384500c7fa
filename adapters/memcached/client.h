// One memcached client on the driver's pollable path: meta requests encoded straight into the
// send buffer, -P in flight, every reply checked by the ReplyChecker (reply.h).
#pragma once
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "adapter.h"
#include "conn.h"
#include "health.h"
#include "reply.h"

namespace mw::memcached {

enum class Op { Set, Get, Delete, Mix };

// What the native ops write and read: key seq % keyspace (or a hash of seq with --keys random),
// delete key seq; the value of key k has a size drawn from k alone, version 0.
struct Native {
  uint64_t keyspace = 100000;
  bool random = false;
  SizeDist sizes = SizeDist::parse("100");
  uint64_t key_of(uint64_t seq, Op op) const;
  uint32_t size_of(uint64_t k) const;
};

// What the clients of a job share: the keys their sets and deletes were acknowledged for.
struct Shared {
  std::mutex mu;
  std::vector<uint64_t> written, deleted;
  uint64_t cas_retries = 0;
};

class McClient final : public Client {
 public:
  McClient(const Endpoint& ep, const Keys& keys, const Native& native, Op op, Health<Conn>* health, Shared* shared);
  ~McClient() override;

  int fd() const override { return conn_ ? conn_->fd() : -1; }
  // A client that lost its connection with nothing in flight stays "alive" for one more op,
  // which fails with the reason: every loss is a counted failure, never silent "not run".
  bool alive() const override { return conn_ || orphan_; }
  bool wants_write() const override { return conn_ && out_off_ < out_.size(); }
  void submit(uint64_t seq) override;
  void submit_request(const Request& r) override;
  void flush() override;
  size_t reap(std::span<Completion> out) override;
  void abort(std::string_view why) override;
  OpResult run(uint64_t seq) override;
  OpResult run_request(const Request& r) override;

 private:
  struct Failed {
    uint64_t seq;
    Status status;
    std::string why;
  };
  bool gone(uint64_t seq);  // no connection: the request fails with the reason
  OpResult wait_one();
  size_t take(std::span<Completion> out, size_t k);
  void lost(const std::string& why);
  size_t drain_failed(std::span<Completion> out, size_t k);

  const Endpoint& ep_;
  const Keys& keys_;
  const Native& native_;
  Op op_;
  ReplyChecker checker_;
  Health<Conn>* health_;
  Shared* shared_;
  std::unique_ptr<Conn> conn_;
  std::string out_;
  size_t out_off_ = 0;
  std::deque<Failed> failed_;
  std::deque<std::string> details_;  // details of drained failures, valid until the next reap
  std::string lost_why_;
  bool orphan_ = false;
  bool timed_out_ = false;  // the last request timed out, and no reply came since
};

}  // namespace mw::memcached
