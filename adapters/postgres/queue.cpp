// PostgreSQL as a queue, the backend of src/queue/queue.h's QueueAdapter: a table (id bigserial, msg
// bytea); produce is one INSERT (acknowledged once committed, under the job's
// synchronous_commit); consume locks the oldest row (--batch: rows) no other consumer holds
// (FOR UPDATE SKIP LOCKED) and deletes it in the same transaction: one statement for one row; a
// batch's rows are handed out one per consume and deleted, in the transaction that locked them,
// when the last one is (a connection closed mid-batch deletes those handed out, the others stay
// queued). An empty table is looked at again every --poll-ms until the wait ends.
#include <chrono>
#include <deque>
#include <thread>

#include "options.h"
#include "pg.h"
#include "postgres.h"
#include "queue.h"

namespace mw::pg {
namespace {

class PgQueueConn final : public QueueConn {
 public:
  PgQueueConn(const Endpoint& ep, const std::string& table, const PgOptions& o)
      : ep_(ep), conn_(ep, deadline(ep.timeout_s)), batch_(o.batch), poll_ms_(o.poll_ms) {
    const int64_t until = deadline(ep.timeout_s);
    conn_.prepare("p", "INSERT INTO " + table + "(msg) VALUES ($1)", 1, until);
    // One row: one statement, one transaction. A batch: the rows stay locked in an open
    // transaction while they are handed out, and are deleted when the last one is.
    conn_.prepare("c1", "DELETE FROM " + table + " WHERE id = (SELECT id FROM " + table +
                  " ORDER BY id LIMIT 1 FOR UPDATE SKIP LOCKED) RETURNING id, msg", 0, until);
    conn_.prepare("cb", "SELECT id, msg FROM " + table + " ORDER BY id LIMIT " + std::to_string(batch_) +
                  " FOR UPDATE SKIP LOCKED", 0, until);
    conn_.prepare("d", "DELETE FROM " + table + " WHERE id = ANY($1::bigint[])", 1, until);
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
    return run([&] {
      if (!PQsendQueryPrepared(conn_.get(), "p", 1, v, len, fmt, 1)) throw SetupError(conn_.error());
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
  // Rows of the queue into rows_ (none when it is empty).
  void take() {
    if (!rows_.empty()) return;
    const int64_t until = deadline(ep_.timeout_s);
    const bool batch = batch_ > 1;
    if (batch) conn_.exec("BEGIN", until);
    if (!PQsendQueryPrepared(conn_.get(), batch ? "cb" : "c1", 0, nullptr, nullptr, nullptr, 1))
      throw SetupError(conn_.error());
    Result r = conn_.exec_sent("taking rows", until);
    for (int i = 0; i < PQntuples(r.get()); ++i)
      rows_.emplace_back(int8_of(PQgetvalue(r.get(), i, 0)),
                         std::string(PQgetvalue(r.get(), i, 1), static_cast<size_t>(PQgetlength(r.get(), i, 1))));
    in_batch_ = batch && !rows_.empty();
    if (batch && !in_batch_) conn_.exec("COMMIT", until);
    if (!batch) handed_.clear();
  }
  void end_batch() {
    const int64_t until = deadline(ep_.timeout_s);
    in_batch_ = false;
    if (!handed_.empty()) {
      const std::string ids = handed_ + "}";
      const char* v[1] = {ids.c_str()};
      if (!PQsendQueryPrepared(conn_.get(), "d", 1, v, nullptr, nullptr, 0)) throw SetupError(conn_.error());
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
  int64_t batch_;
  double poll_ms_;
  std::deque<std::pair<int64_t, std::string>> rows_;  // taken, not yet handed out
  std::string handed_, detail_;                       // ids handed out of the open batch: "{1,2"
  bool in_batch_ = false, dead_ = false;
};

class PgQueueAdapter final : public QueueAdapter {
 public:
  explicit PgQueueAdapter(const Job& job)
      : QueueAdapter(job), o_(options_of<PgOptions>(job)), table_(table_name(o_, "mwbench_q")) {}
  ~PgQueueAdapter() override { QueueAdapter::teardown(); }

  std::string target() const override { return s_.ep.where; }
  // The managed server's directory: the profile counts its device's flushes (a commit per message).
  std::vector<std::string> paths() const override {
    return s_.managed() ? std::vector<std::string>{s_.svc->dir()} : std::vector<std::string>{};
  }
  Info describe() override { return info_; }
  std::optional<Contract> contract(const Job&) const override {
    if (o_.unlogged) return Contract{ContractKind::Memory, 0, "UNLOGGED table: not in the WAL, emptied by a crash"};
    if (o_.synchronous_commit == "off")
      return Contract{ContractKind::PeriodicFsync, 0.6, "synchronous_commit=off: the WAL writer flushes within 3 x "
                                                        "wal_writer_delay"};
    return Contract{ContractKind::FsyncPerAck, 0, "synchronous_commit=" + o_.synchronous_commit +
                                                      ": the WAL is flushed before each commit is acknowledged"};
  }

 protected:
  void start(const Job& job) override {
    if (op() == QueueOp::Consume && o_.batch > 1 && job.clients > 1)
      throw SetupError("postgres: consume with --batch > 1 runs one client (-c 1): a client whose share of -n ends "
                       "mid-batch would hold rows another waits for; roundtrip takes --batch with any --consumers");
    s_ = server_of(job, false);
    Conn c(s_.ep, deadline(job.timeout_s));
    c.exec(std::string("CREATE ") + (o_.unlogged ? "UNLOGGED " : "") + "TABLE" +
           (o_.table.empty() ? " " : " IF NOT EXISTS ") +
           table_ + "(id bigserial PRIMARY KEY, msg bytea NOT NULL)", deadline(job.timeout_s));
    created_ = o_.table.empty();
    info_ = {{"server", "postgres"}, {"version", c.server_version()}, {"managed", s_.managed() ? "yes" : "no"},
             {"synchronous_commit", o_.synchronous_commit}, {"table", table_}, {"batch", std::to_string(o_.batch)}};
    if (o_.unlogged) info_["unlogged"] = "yes";
  }
  std::unique_ptr<QueueConn> connect(const Job&) override { return std::make_unique<PgQueueConn>(s_.ep, table_, o_); }
  int64_t remaining(const Job& job) override {
    try {
      Conn c(s_.ep, deadline(job.timeout_s));
      return std::stoll(PQgetvalue(c.exec("SELECT count(*) FROM " + table_, deadline(job.timeout_s)).get(), 0, 0));
    } catch (const std::exception&) {
      return -1;
    }
  }
  void stop_backend() override {
    if (!created_) return;
    created_ = false;
    try {
      Conn c(s_.ep, deadline(s_.ep.timeout_s));
      c.exec("DROP TABLE IF EXISTS " + table_, deadline(s_.ep.timeout_s));
    } catch (const SetupError&) {
    }
  }

 private:
  PgOptions o_;
  std::string table_;
  Server s_;
  bool created_ = false;
  Info info_;
};

}  // namespace

std::unique_ptr<Adapter> make_queue_adapter(const Job& job) { return std::make_unique<PgQueueAdapter>(job); }

}  // namespace mw::pg
