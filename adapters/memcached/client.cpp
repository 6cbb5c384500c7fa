#include "adapters/memcached/client.h"

#include <poll.h>

namespace mw::memcached {

uint64_t Native::key_of(uint64_t seq, Op op) const {
  return op == Op::Delete ? seq : native_key(seq, keyspace, random);  // each loaded key deleted once
}

McClient::McClient(const Endpoint& ep, const Keys& keys, const Native& native, Op op, Health<Conn>* health,
                   Shared* shared)
    : PipelinedClient(ep, health, keys, ep.limits, ep.protocol),
      keys_(keys),
      native_(native),
      op_(op),
      shared_(shared) {}

McClient::~McClient() {
  std::lock_guard lk(shared_->mu);
  shared_->written.insert(shared_->written.end(), checker_.written().begin(), checker_.written().end());
  shared_->deleted.insert(shared_->deleted.end(), checker_.deleted().begin(), checker_.deleted().end());
  shared_->cas_retries += checker_.cas_retries();
}

void McClient::submit(uint64_t seq) {
  if (gone(seq)) return;
  const uint64_t k = native_.key_of(seq, op_);
  switch (op_) {
    case Op::Set: {
      const uint32_t size = native_.size_of(k);
      append_set_native(out_, ep_.protocol, keys_, k, size, seq);
      checker_.expect({.seq = seq, .key = k, .size = size, .kind = Expect::Kind::Set, .native = true});
      break;
    }
    case Op::Get:
      append_get(out_, ep_.protocol, keys_, k, seq);
      checker_.expect({.seq = seq, .key = k, .size = native_.size_of(k), .kind = Expect::Kind::Get, .native = true});
      break;
    case Op::Delete:
      append_delete(out_, ep_.protocol, keys_, k, seq);
      checker_.expect({.seq = seq, .key = k, .kind = Expect::Kind::Delete});
      break;
    case Op::Mix:  // the mix's requests come through submit_request
      fail_now(seq, Status::Unsupported, "a --mix job runs the workload's requests");
      break;
  }
}

void McClient::submit_request(const Request& r) {
  if (gone(r.seq)) return;
  Expect e{.seq = r.seq, .key = r.key, .size = r.value_size, .version = r.version, .ttl = r.ttl};
  switch (r.op) {
    case KvOp::Read:
      append_get(out_, ep_.protocol, keys_, r.key, r.seq);
      e.size = 0;  // any size the workload wrote
      e.kind = Expect::Kind::Get;
      break;
    case KvOp::Update:
    case KvOp::Insert:
      if (r.cond > Cond::Upsert) [[unlikely]]  // a trace's add or replace
        append_cond_set(out_, ep_.protocol, keys_, r.key, r.version, r.value_size, r.seq, r.cond, r.ttl);
      else
        append_set(out_, ep_.protocol, keys_, r.key, r.version, r.value_size, r.seq, 0, false, r.ttl);
      e.kind = Expect::Kind::Set;
      e.cond = r.cond;
      break;
    case KvOp::Delete:
      append_delete(out_, ep_.protocol, keys_, r.key, r.seq);
      e.kind = Expect::Kind::Delete;
      break;
    default:  // Rmw (the spec maps no scan)
      append_get(out_, ep_.protocol, keys_, r.key, r.seq, true);
      e.kind = Expect::Kind::RmwRead;
      break;
  }
  checker_.expect(e);
}

OpResult McClient::run(uint64_t seq) {
  submit(seq);
  return wait_one();
}

OpResult McClient::run_request(const Request& r) {
  submit_request(r);
  return wait_one();
}

}  // namespace mw::memcached
