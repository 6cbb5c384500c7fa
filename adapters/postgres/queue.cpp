// PostgreSQL as a queue, the backend of src/queue.h's QueueAdapter: a table (id bigserial, msg
// bytea); produce is one INSERT (acknowledged once committed, under the job's
// synchronous_commit); consume is one statement, so one transaction, that locks the oldest
// --batch rows no other consumer holds (FOR UPDATE SKIP LOCKED), deletes them and returns them;
// the rows taken are handed out one per consume. An empty table is looked at again every
// --poll-ms until the wait ends.
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
      : ep_(ep), conn_(ep, deadline(ep.timeout_s)), batch_(std::to_string(o.batch)), poll_ms_(o.poll_ms) {
    conn_.prepare("p", "INSERT INTO " + table + "(msg) VALUES ($1)", 1, deadline(ep.timeout_s));
    conn_.prepare("c", "DELETE FROM " + table + " WHERE id IN (SELECT id FROM " + table +
                  " ORDER BY id LIMIT $1 FOR UPDATE SKIP LOCKED) RETURNING msg", 1, deadline(ep.timeout_s));
  }

  OpResult produce(std::string_view msg) override {
    const char* v[1] = {msg.data()};
    int len[1] = {static_cast<int>(msg.size())}, fmt[1] = {1};
    if (!PQsendQueryPrepared(conn_.get(), "p", 1, v, len, fmt, 1)) return fail(conn_.error());
    Result r = result();
    if (!r) return last_;
    if (PQresultStatus(r.get()) != PGRES_COMMAND_OK || std::string(PQcmdTuples(r.get())) != "1")
      return fail(std::string("INSERT answered ") + PQresStatus(PQresultStatus(r.get())));
    return {Status::Ok, 0, {}};
  }

  OpResult consume(std::string& msg, double wait_s) override {
    const auto until = std::chrono::steady_clock::now() + std::chrono::duration<double>(wait_s);
    while (taken_.empty()) {
      const char* v[1] = {batch_.c_str()};
      if (!PQsendQueryPrepared(conn_.get(), "c", 1, v, nullptr, nullptr, 1)) return fail(conn_.error());
      Result r = result();
      if (!r) return last_;
      if (PQresultStatus(r.get()) != PGRES_TUPLES_OK)
        return fail(std::string("DELETE ... RETURNING answered ") + PQresStatus(PQresultStatus(r.get())));
      for (int i = 0; i < PQntuples(r.get()); ++i)
        taken_.emplace_back(PQgetvalue(r.get(), i, 0), static_cast<size_t>(PQgetlength(r.get(), i, 0)));
      if (!taken_.empty()) break;
      if (std::chrono::steady_clock::now() >= until) return {Status::NotFound, 0, {}};
      std::this_thread::sleep_for(std::chrono::microseconds(static_cast<int64_t>(poll_ms_ * 1000)));
    }
    msg = std::move(taken_.front());
    taken_.pop_front();
    return {Status::Ok, 0, {}};
  }

  bool alive() const override { return !dead_; }

 private:
  // The statement's one result within the timeout; null (and last_ set) when it failed.
  Result result() {
    try {
      Result r(nullptr, PQclear);
      r = collect();
      return r;
    } catch (const SetupError& e) {
      detail_ = e.what();
      last_ = {detail_.find("within the timeout") != std::string::npos ? Status::Timeout : Status::Error, 0, detail_};
      if (PQstatus(conn_.get()) == CONNECTION_BAD || last_.status == Status::Timeout) dead_ = true;
      return Result(nullptr, PQclear);
    }
  }
  Result collect() { return conn_.exec_sent("queue statement", deadline(ep_.timeout_s)); }
  OpResult fail(const std::string& why) {
    detail_ = why;
    if (PQstatus(conn_.get()) == CONNECTION_BAD) dead_ = true;
    return {Status::Error, 0, detail_};
  }

  const Endpoint& ep_;
  Conn conn_;
  std::string batch_, detail_;
  double poll_ms_;
  std::deque<std::string> taken_;
  OpResult last_;
  bool dead_ = false;
};

class PgQueueAdapter final : public QueueAdapter {
 public:
  explicit PgQueueAdapter(const Job& job)
      : QueueAdapter(job), o_(options_of<PgOptions>(job)), table_(table_name(o_, "mwbench_q")) {}
  ~PgQueueAdapter() override { QueueAdapter::teardown(); }

  std::string target() const override { return s_.ep.where; }
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
    s_ = server_of(job, false);
    Conn c(s_.ep, deadline(job.timeout_s));
    c.exec(std::string("CREATE ") + (o_.unlogged ? "UNLOGGED " : "") + "TABLE" + (o_.table.empty() ? " " : " IF NOT EXISTS ") +
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
