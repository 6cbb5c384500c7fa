// PostgreSQL as a queue, the backend of src/queue/queue.h's QueueAdapter: a table (id bigserial, msg
// bytea), or --queues N of them (message i goes to table i mod N; a consumer takes from each in
// turn, the next one when a table is empty); produce is one INSERT (acknowledged once committed,
// under the job's synchronous_commit); consume locks the oldest row (--batch: rows) no other
// consumer holds (FOR UPDATE SKIP LOCKED) and deletes it in the same transaction: one statement
// for one row; a batch's rows are handed out one per consume and deleted, in the transaction that
// locked them, when the last one is (a connection closed mid-batch deletes those handed out, the
// others stay queued). Empty tables are looked at again every --poll-ms until the wait ends.
// --crash kill, power and torn (op produce): the job's own server is killed mid-run, restarted on
// its data directory (on the page-cache layer for power), and the rows read back.
#include <chrono>
#include <cstdlib>
#include <deque>
#include <thread>

#include "adapters/postgres/pg.h"
#include "adapters/postgres/postgres.h"
#include "api/options.h"
#include "durability/durability.h"
#include "queue/queue.h"

namespace mw::pg {
namespace {

class PgQueueConn final : public QueueConn {
 public:
  PgQueueConn(const Endpoint& ep, const std::vector<std::string>& tables, const PgOptions& o)
      : ep_(ep), conn_(ep, deadline(ep.timeout_s)), n_(tables.size()), batch_(o.batch), poll_ms_(o.poll_ms) {
    const int64_t until = deadline(ep.timeout_s);
    for (size_t k = 0; k < n_; ++k) {
      const std::string &table = tables[k], t = std::to_string(k);
      conn_.prepare("p" + t, "INSERT INTO " + table + "(msg) VALUES ($1)", 1, until);
      // One row: one statement, one transaction. A batch: the rows stay locked in an open
      // transaction while they are handed out, and are deleted when the last one is.
      conn_.prepare("c" + t,
                    "DELETE FROM " + table + " WHERE id = (SELECT id FROM " + table +
                        " ORDER BY id LIMIT 1 FOR UPDATE SKIP LOCKED) RETURNING id, msg",
                    0, until);
      conn_.prepare(
          "b" + t,
          "SELECT id, msg FROM " + table + " ORDER BY id LIMIT " + std::to_string(batch_) + " FOR UPDATE SKIP LOCKED",
          0, until);
      conn_.prepare("d" + t, "DELETE FROM " + table + " WHERE id = ANY($1::bigint[])", 1, until);
    }
  }
  // The rows of a batch handed out are deleted; the others were never taken and stay queued.
  ~PgQueueConn() override {
    if (!in_batch_) return;
    try {
      end_batch();
    } catch (const SetupError&) {  // the transaction is rolled back: the rows stay queued
    }
  }

  OpResult produce(std::string_view msg) override {
    const char* v[1] = {msg.data()};
    int len[1] = {static_cast<int>(msg.size())}, fmt[1] = {1};
    const size_t k = queue::queue_of(msg, n_);
    return run([&] {
      if (!PQsendQueryPrepared(conn_.get(), ("p" + std::to_string(k)).c_str(), 1, v, len, fmt, 1))
        throw SetupError(conn_.error());
      Result r = conn_.exec_sent("INSERT", deadline(ep_.timeout_s));
      if (std::string(PQcmdTuples(r.get())) != "1") throw SetupError("INSERT inserted no row");
    });
  }

  OpResult consume(std::string& msg, double wait_s) override {
    const auto until = std::chrono::steady_clock::now() + std::chrono::duration<double>(wait_s);
    for (;;) {
      OpResult r = run([&] { take(); });
      if (r.status != Status::Ok) return r;
      if (!rows_.empty()) break;
      if (std::chrono::steady_clock::now() >= until) return {Status::NotFound, 0, {}};
      std::this_thread::sleep_for(std::chrono::microseconds(static_cast<int64_t>(poll_ms_ * 1000)));
    }
    msg = std::move(rows_.front().second);
    handed_ += (handed_.empty() ? "{" : ",") + std::to_string(rows_.front().first);
    rows_.pop_front();
    if (in_batch_ && rows_.empty()) return run([&] { end_batch(); });  // the batch's last row: committed first
    return {Status::Ok, 0, {}};
  }

  bool alive() const override { return !dead_; }

 private:
  // Rows of the queue into rows_ (none when every table is empty): from the tables in turn,
  // starting past the one taken from last.
  void take() {
    if (!rows_.empty()) return;
    for (size_t tried = 0; tried < n_ && rows_.empty(); ++tried) take_from((next_ + tried) % n_);
  }
  void take_from(size_t k) {
    const int64_t until = deadline(ep_.timeout_s);
    const bool batch = batch_ > 1;
    if (batch) conn_.exec("BEGIN", until);
    if (!PQsendQueryPrepared(conn_.get(), ((batch ? "b" : "c") + std::to_string(k)).c_str(), 0, nullptr, nullptr,
                             nullptr, 1))
      throw SetupError(conn_.error());
    Result r = conn_.exec_sent("taking rows", until);
    for (int i = 0; i < PQntuples(r.get()); ++i)
      rows_.emplace_back(int8_of(PQgetvalue(r.get(), i, 0)),
                         std::string(PQgetvalue(r.get(), i, 1), static_cast<size_t>(PQgetlength(r.get(), i, 1))));
    in_batch_ = batch && !rows_.empty();
    if (batch && !in_batch_) conn_.exec("COMMIT", until);
    if (!batch) handed_.clear();
    if (!rows_.empty()) table_ = k, next_ = (k + 1) % n_;
  }
  void end_batch() {
    const int64_t until = deadline(ep_.timeout_s);
    in_batch_ = false;
    if (!handed_.empty()) {
      const std::string ids = handed_ + "}";
      const char* v[1] = {ids.c_str()};
      if (!PQsendQueryPrepared(conn_.get(), ("d" + std::to_string(table_)).c_str(), 1, v, nullptr, nullptr, 0))
        throw SetupError(conn_.error());
      conn_.exec_sent("DELETE", until);
    }
    conn_.exec("COMMIT", until);
    handed_.clear();
  }
  // A step's errors as an op's status: a timeout or a lost connection ends this connection.
  template <class F>
  OpResult run(F&& step) {
    try {
      step();
      return {Status::Ok, 0, {}};
    } catch (const SetupError& e) {
      detail_ = e.what();
      const bool timeout = detail_.find("within the timeout") != std::string::npos;
      if (timeout || PQstatus(conn_.get()) == CONNECTION_BAD) dead_ = true;
      // A failed batch rolls back: its rows (those handed out too) go back to the queue, so the
      // ledger may see them twice; the op that failed says so.
      rows_.clear(), handed_.clear(), in_batch_ = false;
      if (!dead_ && PQtransactionStatus(conn_.get()) != PQTRANS_IDLE) {
        try {
          conn_.exec("ROLLBACK", deadline(ep_.timeout_s));
        } catch (const SetupError&) {
          dead_ = true;
        }
      }
      return {timeout ? Status::Timeout : Status::Error, 0, detail_};
    }
  }

  const Endpoint& ep_;
  Conn conn_;
  size_t n_;                     // tables
  size_t table_ = 0, next_ = 0;  // the open batch's table; the table to look at first
  int64_t batch_;
  double poll_ms_;
  std::deque<std::pair<int64_t, std::string>> rows_;  // taken, not yet handed out
  std::string handed_, detail_;                       // ids handed out of the open batch: "{1,2"
  bool in_batch_ = false, dead_ = false;
};

class PgQueueAdapter final : public QueueAdapter {
 public:
  explicit PgQueueAdapter(const Job& job)
      : QueueAdapter(job), o_(options_of<PgOptions>(job)), crash_(durability_options_of(job).crash != CrashKind::None) {
    const std::string base = table_name(o_, "mwbench_q");
    for (int64_t k = 0; k < o_.queues; ++k) tables_.push_back(o_.queues == 1 ? base : base + "_" + std::to_string(k));
    if (crash_ && op() != QueueOp::Produce) throw SetupError(kCrashOps);
  }
  ~PgQueueAdapter() override { QueueAdapter::teardown(); }

  std::string target() const override { return s_.ep.where; }
  // The managed server's directory (its data directory on the layer under --crash power): the
  // profile counts its device's flushes (a commit per message).
  std::vector<std::string> paths() const override {
    if (!s_.managed()) return {};
    return {layer_ ? layer_->path() : s_.svc->dir()};
  }
  Info describe() override { return info_; }
  std::optional<Contract> contract(const Job&) const { return contract_of(o_, info_); }
  Abilities backend_abilities(const Job& job) override {
    return {.crash = crash_impl_.get(), .contract = contract(job)};
  }

 protected:
  void start(const Job& job) override {
    if (op() == QueueOp::Consume && o_.batch > 1 && job.clients > 1)
      throw SetupError(
          "postgres: consume with --batch > 1 runs one client (-c 1): a client whose share of -n ends "
          "mid-batch would hold rows another waits for; roundtrip takes --batch with any --consumers");
    if (crash_) layer_ = power_layer(job, "/tmp");  // --crash power, torn: its data directory on the layer
    s_ = server_of(job, crash_, layer_ ? layer_->path() + "/data" : "");  // a crash job's server is its own
    if (crash_ && !s_.managed())
      throw SetupError("postgres: --crash kills the server mwbench starts: drop --host/--conninfo");
    Conn c(s_.ep, deadline(job.timeout_s));
    for (const std::string& t : tables_)
      c.exec(std::string("CREATE ") + (o_.unlogged ? "UNLOGGED " : "") + "TABLE" +
                 (o_.table.empty() ? " " : " IF NOT EXISTS ") + t + "(id bigserial PRIMARY KEY, msg bytea NOT NULL)",
             deadline(job.timeout_s));
    created_ = o_.table.empty();
    info_ = {{"server", "postgres"},
             {"version", c.server_version()},
             {"managed", s_.managed() ? "yes" : "no"},
             {"synchronous_commit", o_.synchronous_commit},
             {"table", tables_.front()},
             {"tables", std::to_string(tables_.size())},
             {"batch", std::to_string(o_.batch)}};
    show_durability(c, info_, deadline(job.timeout_s));
    if (o_.unlogged) info_["unlogged"] = "yes";
    if (!crash_) return;
    crash_impl_ = crash_of(
        s_, [this](std::span<const uint64_t> seqs) { return read_back(seqs); }, contract(job)->detail);
    if (layer_) {  // initdb and the tables are on disk before the power can go
      sync_layer(*layer_);
      crash_impl_->set_pagecache(layer_.get());
    }
  }
  std::unique_ptr<QueueConn> connect(const Job&) override { return std::make_unique<PgQueueConn>(s_.ep, tables_, o_); }
  // The rows of every table; a count that fails throws (the probe names it, the end check fails on it).
  int64_t remaining(const Job& job) override {
    Conn c(s_.ep, deadline(job.timeout_s));
    Result r = c.exec(count_sql(), deadline(job.timeout_s));
    const char* v = PQgetvalue(r.get(), 0, 0);
    char* end = nullptr;
    const long long n = v ? std::strtoll(v, &end, 10) : -1;
    if (!v || end == v || *end || n < 0)
      throw SetupError("postgres " + s_.ep.where + ": counting the queue's rows answered '" + one_line(v ? v : "") +
                       "'");
    return n;
  }
  void stop_backend() override {
    if (!created_) return;
    created_ = false;
    std::string all;
    for (const std::string& t : tables_) all += (all.empty() ? "" : ", ") + t;
    try {
      Conn c(s_.ep, deadline(s_.ep.timeout_s));
      c.exec("DROP TABLE IF EXISTS " + all, deadline(s_.ep.timeout_s));
    } catch (const SetupError&) {}
  }

 private:
  // The rows of every table: "SELECT (SELECT count(*) FROM a) + (SELECT count(*) FROM b)".
  std::string count_sql() const {
    std::string sql = "SELECT 0";
    for (const std::string& t : tables_) sql += " + (SELECT count(*) FROM " + t + ")";
    return sql;
  }
  // After the restart: the messages the tables hold (read, not taken), each write's state as
  // queue::ReadBack tells it (Present intact, Corrupt its id there but not its bytes, Missing).
  std::vector<WriteState> read_back(std::span<const uint64_t> seqs) {
    queue::ReadBack got(message_sizes());
    Conn c(s_.ep, deadline(s_.ep.timeout_s));
    for (const std::string& t : tables_) {
      Result r = c.exec("SELECT msg FROM " + t, deadline(std::max(30.0, s_.ep.timeout_s)), {}, true);
      for (int i = 0; i < PQntuples(r.get()); ++i)
        got.add({PQgetvalue(r.get(), i, 0), static_cast<size_t>(PQgetlength(r.get(), i, 0))});
    }
    return got.states(seqs);
  }

  PgOptions o_;
  bool crash_;
  std::vector<std::string> tables_;
  std::unique_ptr<PageCacheMount> layer_;  // --crash power, torn; outlives the server on it
  Server s_;
  std::unique_ptr<Crashable> crash_impl_;
  bool created_ = false;
  Info info_;
};

}  // namespace

std::unique_ptr<Adapter> make_queue_adapter(const Job& job) { return std::make_unique<PgQueueAdapter>(job); }

}  // namespace mw::pg
