// A pollable client of the postgres store: one connection in libpq's pipeline mode, each request
// a prepared statement followed by a sync point (so each is its own transaction, acknowledged
// once its sync answers: the commit), up to -P in flight; every reply checked (row counts, the
// values' key and checksum).
#pragma once
#include <deque>
#include <memory>
#include <string>

#include "adapters/backoff.h"
#include "adapters/health.h"
#include "adapters/postgres/pg.h"
#include "api/adapter.h"

namespace mw::pg {

// The statements of the store, prepared on every connection: "r" read, "u" update, "i" insert,
// "d" delete, "m" read-modify-write (one statement: the old value locked, returned, replaced),
// "s" scan (a key range with LIMIT).
struct Statements {
  std::string read, update, insert, remove, rmw, scan;
  // A trace's replay (`trace`): its set an upsert, its add an insert of a key not there (its
  // replace is the update); "" (not prepared) otherwise.
  std::string upsert, add;
  Statements(const std::string& table, bool trace);
};

class StoreClient final : public Client {
 public:
  // `native`: maps a native op's seq to its request. Connects now (a set-up error if it cannot).
  StoreClient(const Endpoint& ep, const Statements& sql, Health<Conn>* health, std::function<Request(uint64_t)> native);
  ~StoreClient() override;

  int fd() const override { return conn_ ? conn_->fd() : -1; }
  // One that reconnects (--reconnect-backoff) is always alive: its next op tries again.
  bool alive() const override { return conn_ || orphan_ || ep_.reconnect_max_s > 0; }
  bool wants_write() const override { return conn_ && want_write_; }
  OpResult run(uint64_t seq) override { return run_request(native_(seq)); }
  void submit(uint64_t seq) override { submit_request(native_(seq)); }
  OpResult run_request(const Request& r) override;
  void submit_request(const Request& r) override;
  void flush() override;
  size_t reap(std::span<Completion> out) override;
  void abort(std::string_view why) override;

 private:
  struct Pending {
    Request req;
    bool got = false;  // its result came; its sync (the commit) not yet
    Status status = Status::Error;
    uint32_t bytes = 0;
    std::string why;
  };
  std::unique_ptr<Conn> open() const;
  bool reconnect();
  void check(Pending& p, const PGresult* res);
  Status check_value_at(uint64_t key, const char* v, int len, std::string& why) const;
  void lost(const std::string& why);
  void fail_pending(Status st, const std::string& why);
  size_t drain_failed(std::span<Completion> out, size_t k);

  const Endpoint& ep_;
  const Statements& sql_;
  Health<Conn>* health_;
  std::function<Request(uint64_t)> native_;
  std::unique_ptr<Conn> conn_;
  std::deque<Pending> pending_, failed_;
  std::deque<std::string> details_;  // of what the last reap returned
  std::string value_, key_param_, limit_param_, lost_why_;
  bool want_write_ = false, orphan_ = false, timed_out_ = false;
  ReconnectBackoff backoff_;  // --reconnect-backoff
};

}  // namespace mw::pg
