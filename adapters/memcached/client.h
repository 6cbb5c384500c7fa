// One memcached client on the driver's pollable path: requests (text or meta) encoded straight into the
// send buffer, -P in flight, every reply checked by the ReplyChecker (reply.h).
#pragma once
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "adapters/conn/client.h"
#include "adapters/health.h"
#include "adapters/memcached/conn.h"
#include "adapters/memcached/reply.h"
#include "api/adapter.h"

namespace mw::memcached {

enum class Op { Set, Get, Delete, Mix };

// What the native ops write and read: key seq % keyspace (or a hash of seq with --keys random),
// delete key seq; the value of key k has a size drawn from k alone, version 0.
struct Native {
  uint64_t keyspace = 100000;
  bool random = false;
  SizeDist sizes = SizeDist::parse("100");
  uint64_t key_of(uint64_t seq, Op op) const;
  uint32_t size_of(uint64_t k) const { return size_of_key(sizes, k); }
};

// What the clients of a job share: the keys their sets and deletes were acknowledged for.
struct Shared {
  std::mutex mu;
  std::vector<uint64_t> written, deleted;
  uint64_t cas_retries = 0;
};

class McClient final : public conn::PipelinedClient<Conn, Endpoint, ReplyChecker> {
 public:
  // Connects now: errors are set-up errors.
  McClient(const Endpoint& ep, const Keys& keys, const Native& native, Op op, Health<Conn>* health, Shared* shared);
  ~McClient() override;

  void submit(uint64_t seq) override;
  void submit_request(const Request& r) override;
  OpResult run(uint64_t seq) override;
  OpResult run_request(const Request& r) override;

 private:
  const Keys& keys_;
  const Native& native_;
  Op op_;
  Shared* shared_;
};

}  // namespace mw::memcached
