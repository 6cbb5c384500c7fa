#include "client.h"

#include <poll.h>

namespace mw::memcached {

uint64_t Native::key_of(uint64_t seq, Op op) const {
  if (op == Op::Delete) return seq;  // each loaded key deleted once
  return random ? mix64(seq) % keyspace : seq % keyspace;
}

uint32_t Native::size_of(uint64_t k) const {
  Rng r(k);
  return sizes.next(r);
}

McClient::McClient(const Endpoint& ep, const Keys& keys, const Native& native, Op op, Health<Conn>* health,
                   Shared* shared)
    : ep_(ep), keys_(keys), native_(native), op_(op), checker_(keys, ep.limits), health_(health), shared_(shared) {
  conn_ = std::make_unique<Conn>(ep_, now_ns() + static_cast<int64_t>(ep_.timeout_s * 1e9));  // set-up errors
}

McClient::~McClient() {
  std::lock_guard lk(shared_->mu);
  shared_->written.insert(shared_->written.end(), checker_.written().begin(), checker_.written().end());
  shared_->deleted.insert(shared_->deleted.end(), checker_.deleted().begin(), checker_.deleted().end());
  shared_->cas_retries += checker_.cas_retries();
}

bool McClient::gone(uint64_t seq) {
  if (conn_) return false;
  failed_.push_back({seq, Status::Error, lost_why_});
  orphan_ = false;
  return true;
}

void McClient::submit(uint64_t seq) {
  if (gone(seq)) return;
  const uint64_t k = native_.key_of(seq, op_);
  switch (op_) {
    case Op::Set: {
      const uint32_t size = native_.size_of(k);
      append_set_native(out_, keys_, k, size, seq);
      checker_.expect({.seq = seq, .key = k, .size = size, .kind = Expect::Kind::Set, .native = true});
      break;
    }
    case Op::Get:
      append_get(out_, keys_, k, seq);
      checker_.expect({.seq = seq, .key = k, .size = native_.size_of(k), .kind = Expect::Kind::Get, .native = true});
      break;
    case Op::Delete:
      append_delete(out_, keys_, k, seq);
      checker_.expect({.seq = seq, .key = k, .kind = Expect::Kind::Delete});
      break;
    case Op::Mix:  // the mix's requests come through submit_request
      failed_.push_back({seq, Status::Unsupported, "a --mix job runs the workload's requests"});
      break;
  }
}

void McClient::submit_request(const Request& r) {
  if (gone(r.seq)) return;
  Expect e{.seq = r.seq, .key = r.key, .size = r.value_size, .version = r.version};
  switch (r.op) {
    case KvOp::Read:
      append_get(out_, keys_, r.key, r.seq);
      e.size = 0;  // any size the workload wrote
      e.kind = Expect::Kind::Get;
      break;
    case KvOp::Update:
    case KvOp::Insert:
      append_set(out_, keys_, r.key, r.version, r.value_size, r.seq);
      e.kind = Expect::Kind::Set;
      break;
    case KvOp::Delete:
      append_delete(out_, keys_, r.key, r.seq);
      e.kind = Expect::Kind::Delete;
      break;
    default:  // Rmw (the spec maps no scan)
      append_get(out_, keys_, r.key, r.seq, true);
      e.kind = Expect::Kind::RmwRead;
      break;
  }
  checker_.expect(e);
}

void McClient::flush() {
  while (conn_ && out_off_ < out_.size()) {
    long n = conn_->write_some(out_.data() + out_off_, out_.size() - out_off_);
    if (n < 0) return lost(conn_->error());
    if (n == 0) return;
    out_off_ += static_cast<size_t>(n);
  }
  out_.clear();
  out_off_ = 0;
}

// Completed requests from what is buffered; an rmw's next step goes out behind what is queued.
size_t McClient::take(std::span<Completion> out, size_t k) {
  k = checker_.take(out, k);
  if (!checker_.followups().empty()) {
    out_ += checker_.followups();
    checker_.followups().clear();
  }
  return k;
}

size_t McClient::reap(std::span<Completion> out) {
  checker_.clear_details();
  details_.clear();
  size_t k = drain_failed(out, 0);
  if (!conn_) return k;
  const size_t k0 = k;
  k = take(out, k);
  char buf[65536];
  while (conn_ && checker_.fatal().empty() && k < out.size()) {
    long n = conn_->read_some(buf, sizeof buf);
    if (n < 0) {
      lost(conn_->error());
      break;
    }
    if (n == 0) break;
    checker_.feed(buf, static_cast<size_t>(n));
    k = take(out, k);
    if (static_cast<size_t>(n) < sizeof buf) break;  // a short read drained the socket
  }
  if (k > k0) timed_out_ = false;  // the server answers this connection
  if (conn_ && !checker_.fatal().empty()) lost(checker_.fatal());
  if (conn_ && out_off_ < out_.size()) flush();  // rmw follow-ups
  return drain_failed(out, k);
}

void McClient::abort(std::string_view why) {
  // A timeout alone does not say the server is gone: a fresh connection that answers "version"
  // within the timeout takes over; otherwise the client is lost and its remaining ops are not
  // run. A second timeout with no reply in between: the client is lost too, so a run cannot
  // take one timeout per op.
  std::string probe_err;
  std::unique_ptr<Conn> fresh;
  std::string reason = std::string(why) + " (" + ep_.where() + ")";
  if (timed_out_) {
    reason += "; again on a fresh connection, the client stops";
  } else {
    fresh = health_->probe(
        ep_.timeout_s,
        [&] { return std::make_unique<Conn>(ep_, now_ns() + static_cast<int64_t>(ep_.timeout_s * 1e9)); }, probe_err);
    if (!fresh) reason += "; a fresh connection failed too, the server is considered lost: " + probe_err;
  }
  timed_out_ = true;
  for (const Expect& e : checker_.pending()) failed_.push_back({e.seq, Status::Timeout, reason});
  checker_.pending().clear();
  checker_.reset_stream();
  out_.clear();
  out_off_ = 0;
  conn_ = std::move(fresh);
  if (!conn_) lost_why_ = reason;
}

OpResult McClient::wait_one() {  // blocking use: one request, wait for its reply
  flush();
  Completion c[1];
  int64_t deadline = now_ns() + static_cast<int64_t>(ep_.timeout_s * 1e9);
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

OpResult McClient::run(uint64_t seq) {
  submit(seq);
  return wait_one();
}

OpResult McClient::run_request(const Request& r) {
  submit_request(r);
  return wait_one();
}

void McClient::lost(const std::string& why) {
  // The connection is gone: every request in flight fails with the reason, and the client stops.
  lost_why_ = why + " (" + ep_.where() + ")";
  auto& pending = checker_.pending();
  orphan_ = pending.empty();
  for (const Expect& e : pending) failed_.push_back({e.seq, Status::Error, lost_why_});
  pending.clear();
  checker_.reset_stream();
  out_.clear();
  out_off_ = 0;
  conn_.reset();
}

size_t McClient::drain_failed(std::span<Completion> out, size_t k) {
  while (k < out.size() && !failed_.empty()) {
    Failed& f = failed_.front();
    details_.push_back(std::move(f.why));
    out[k++] = {f.seq, {f.status, 0, details_.back()}};
    failed_.pop_front();
  }
  return k;
}

}  // namespace mw::memcached
