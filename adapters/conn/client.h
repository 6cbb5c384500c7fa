// The pollable client of a pipelined protocol (redis, memcached): one connection, the output
// buffer, the replies checked in request order by a Checker, the requests that failed without a
// reply, and what a timeout or a lost connection does. The protocol's client derives from it:
// it encodes submit() / submit_request() into out_, tells checker_ what each request expects,
// and calls gone(seq) first (no connection: the request fails with the reason).
//
// Checker: expect(...), feed(data, n), take(out, k) -> k, fatal(), clear_details(), pending()
// (a Ring of requests with .seq), reset_stream(); optionally followups(): requests the checker
// wants sent next (memcached's rmw write), moved to out_ as replies are taken.
// Base: the Client interface it implements (a queue's QueueSender is a Client too).
#pragma once
#include <poll.h>

#include <algorithm>
#include <deque>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <utility>

#include "adapters/backoff.h"
#include "adapters/conn/stream.h"
#include "adapters/health.h"
#include "api/adapter.h"
#include "api/stop.h"

namespace mw::conn {

template <class Conn, class Endpoint, class Checker, class Base = Client>
class PipelinedClient : public Base {
 public:
  int fd() const override { return conn_ ? conn_->fd() : -1; }
  Handshake handshake() const override {
    if (!conn_ || conn_->tls_version().empty()) return Handshake::None;
    return conn_->tls_resumed() ? Handshake::Resumed : Handshake::Full;
  }
  // A client that lost its connection with nothing in flight stays "alive" for one more op,
  // which fails with the reason: every loss is a counted failure, never silent "not run".
  // One that reconnects (--reconnect-backoff) is always alive: its next op tries again.
  bool alive() const override { return conn_ || orphan_ || ep_.reconnect_max_s > 0; }
  bool wants_write() const override { return conn_ && (out_off_ < out_.size() || conn_->tls_read_wants_write()); }

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
    followed_ = false;
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
      // A short plain read drained the socket; TLS reads return one record at a time and
      // must go on until OpenSSL has nothing buffered.
      if (!ep_.tls && static_cast<size_t>(n) < sizeof buf) break;
    }
    if (k > k0) timed_out_ = false;  // the server answers this connection
    if (conn_ && !checker_.fatal().empty()) lost(checker_.fatal());
    if (conn_ && (followed_ || conn_->tls_write_wants_read())) flush();  // a checker's follow-ups; TLS
    return drain_failed(out, k);
  }

  void abort(std::string_view why) override {
    // A timeout alone does not say the server is gone: a fresh connection that answers (the
    // protocol's handshake) within the timeout takes over; otherwise the client is lost and its
    // remaining ops are not run. The fresh connection opens before the old one closes (a
    // distinct fd). A second timeout with no reply in between means the server answers the
    // handshake but not this op (paused writes, a stuck command): the client is lost too, so
    // a run cannot take one timeout per op.
    std::string probe_err;
    std::unique_ptr<Conn> fresh;
    std::string reason = std::string(why) + " (" + ep_.where() + ")";
    if (ep_.reconnect_max_s > 0) {  // a client that reconnects: its next op opens a fresh connection
      fail_pending(Status::Timeout, reason);
      old_ = std::move(conn_);
      lost_why_ = reason;
      return;
    }
    if (timed_out_) {
      reason += "; again on a fresh connection, the client stops";
    } else {
      fresh = health_->probe(
          ep_.timeout_s, [&] { return open(); }, probe_err);
      if (!fresh) reason += "; a fresh connection failed too, the server is considered lost: " + probe_err;
    }
    timed_out_ = true;
    fail_pending(Status::Timeout, reason);
    conn_ = std::move(fresh);
    if (!conn_) lost_why_ = reason;
  }

 protected:
  // Connects now: a failure here is a set-up error (the handshake's message).
  template <class... CheckerArgs>
  PipelinedClient(const Endpoint& ep, Health<Conn>* health, CheckerArgs&&... args)
      : ep_(ep), checker_(std::forward<CheckerArgs>(args)...), health_(health), conn_(open()) {}

  std::unique_ptr<Conn> open() const {
    return std::make_unique<Conn>(ep_, now_ns() + static_cast<int64_t>(ep_.timeout_s * 1e9));
  }
  bool gone(uint64_t seq) {  // no connection: the request fails with the reason
    if (conn_) return false;
    if (ep_.reconnect_max_s > 0 && reconnect()) return false;
    failed_.push_back({seq, Status::Error, lost_why_});
    orphan_ = false;
    return true;
  }
  void fail_now(uint64_t seq, Status st, std::string why) { failed_.push_back({seq, st, std::move(why)}); }
  // The connection given up on purpose (the server it reaches is no longer the one wanted): what
  // is in flight fails with `why`, and the next op connects again (when the client reconnects).
  void drop(const std::string& why) {
    if (conn_) lost(why);
  }

  OpResult wait_one() {  // blocking use: one request, wait for its reply
    flush();
    Completion c[1];
    const int64_t deadline = now_ns() + static_cast<int64_t>(ep_.timeout_s * 1e9);
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

  const Endpoint& ep_;
  Checker checker_;
  std::string out_;
  size_t out_off_ = 0;

 private:
  struct Failed {
    uint64_t seq;
    Status status;
    std::string why;
  };

  // Completed requests from what is buffered; a checker's follow-ups go out behind what is queued.
  size_t take(std::span<Completion> out, size_t k) {
    k = checker_.take(out, k);
    if constexpr (requires { checker_.followups(); }) {
      if (!checker_.followups().empty()) {
        out_ += checker_.followups();
        checker_.followups().clear();
        followed_ = true;
      }
    }
    return k;
  }
  // --reconnect-backoff: waits out the back-off (a stop ends the wait), then one try within the
  // timeout. A failed try doubles the back-off (10 ms first, up to reconnect_max_s); a success
  // resets it. False: still no connection (lost_why_ says why).
  bool reconnect() {
    backoff_.wait();
    try {
      conn_ = open();
      old_.reset();
      backoff_.succeeded();
      return true;
    } catch (const SetupError& e) {
      lost_why_ = std::string("reconnect failed: ") + e.what();
      backoff_.failed(ep_.reconnect_max_s);
      return false;
    }
  }

  // Every request in flight fails with `why`; the connection's bytes are dropped.
  void fail_pending(Status st, const std::string& why) {
    auto& pending = checker_.pending();
    for (size_t i = 0; i < pending.size(); ++i) failed_.push_back({pending[i].seq, st, why});
    pending.clear();
    checker_.reset_stream();
    out_.clear();
    out_off_ = 0;
  }
  // The connection is gone: every request in flight fails with the reason, and the client stops.
  // One that reconnects keeps the lost socket open until the next is made: the new one never
  // takes the number the driver's epoll set watched (closing it left the set; a new socket of
  // that number would be taken for the one watched, and never watched).
  void lost(const std::string& why) {
    lost_why_ = why + " (" + ep_.where() + ")";
    orphan_ = checker_.pending().empty();
    fail_pending(Status::Error, lost_why_);
    if (ep_.reconnect_max_s > 0)
      old_ = std::move(conn_);
    else
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

  Health<Conn>* health_;
  std::unique_ptr<Conn> conn_;
  std::unique_ptr<Conn> old_;  // a reconnecting client's lost connection, open until the next is made
  std::deque<Failed> failed_;
  std::deque<std::string> details_;  // details of drained failures, valid until the next reap
  std::string lost_why_;
  bool orphan_ = false;
  bool timed_out_ = false;    // the last request timed out, and no reply came since
  bool followed_ = false;     // this reap queued follow-ups: they are sent before it returns
  ReconnectBackoff backoff_;  // --reconnect-backoff
};

}  // namespace mw::conn
