// A SQLite table as a queue, the backend of src/queue/queue.h's QueueAdapter: produce is one INSERT
// (acknowledged once committed, with the job's journal_mode and synchronous), consume takes the
// oldest row with DELETE ... RETURNING inside BEGIN IMMEDIATE ... COMMIT, so that two consumers
// never take the same row. An empty table is polled every millisecond until the wait ends.
#include <sqlite3.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <thread>

#include "adapters/guard.h"
#include "adapters/sqlite/sqlite.h"
#include "api/options.h"
#include "queue/queue.h"
#include "util/files.h"

namespace mw {
namespace {

class SqliteQueueConn final : public QueueConn {
 public:
  SqliteQueueConn(const std::string& file, const SqliteOptions& o, BusyWaits& waits) {
    if (sqlite3_open_v2(file.c_str(), &db_, SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX, nullptr) != SQLITE_OK) {
      std::string msg = db_ ? sqlite3_errmsg(db_) : "out of memory";
      sqlite3_close(db_);
      db_ = nullptr;
      throw SetupError("sqlite: cannot open " + file + ": " + msg);
    }
    waits.install(db_);
    exec("PRAGMA synchronous=" + o.synchronous);
    insert_ = prepare("INSERT INTO queue(msg) VALUES (?)");
    take_ = prepare("DELETE FROM queue WHERE id = (SELECT min(id) FROM queue) RETURNING msg");
    begin_ = prepare("BEGIN IMMEDIATE");
    commit_ = prepare("COMMIT");
    rollback_ = prepare("ROLLBACK");
  }
  ~SqliteQueueConn() override {
    for (auto* s : {insert_, take_, begin_, commit_, rollback_}) sqlite3_finalize(s);
    sqlite3_close(db_);
  }

  OpResult produce(std::string_view msg) override {
    sqlite3_bind_blob(insert_, 1, msg.data(), static_cast<int>(msg.size()), SQLITE_STATIC);
    int rc = sqlite3_step(insert_);
    sqlite3_reset(insert_);
    return rc == SQLITE_DONE ? OpResult{Status::Ok, 0, {}} : fail("INSERT", rc);
  }

  OpResult consume(std::string& msg, double wait_s) override {
    const auto until = std::chrono::steady_clock::now() + std::chrono::duration<double>(wait_s);
    for (;;) {
      int rc = step(begin_);
      if (rc != SQLITE_DONE) return fail("BEGIN IMMEDIATE", rc);
      rc = sqlite3_step(take_);
      bool got = rc == SQLITE_ROW;
      if (got)
        msg.assign(static_cast<const char*>(sqlite3_column_blob(take_, 0)),
                   static_cast<size_t>(sqlite3_column_bytes(take_, 0)));
      if (got) rc = sqlite3_step(take_);  // one row at most: SQLITE_DONE
      sqlite3_reset(take_);
      if (rc != SQLITE_DONE) {
        step(rollback_);
        return fail("DELETE ... RETURNING", rc);
      }
      if (int c = step(commit_); c != SQLITE_DONE) {
        step(rollback_);
        return fail("COMMIT", c);
      }
      if (got) return {Status::Ok, 0, {}};
      if (std::chrono::steady_clock::now() >= until) return {Status::NotFound, 0, {}};
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
  }

 private:
  int step(sqlite3_stmt* s) {
    int rc = sqlite3_step(s);
    sqlite3_reset(s);
    return rc;
  }
  void exec(const std::string& sql) {
    char* err = nullptr;
    if (sqlite3_exec(db_, sql.c_str(), nullptr, nullptr, &err) != SQLITE_OK) {
      std::string m = err ? err : "error";
      sqlite3_free(err);
      throw SetupError("sqlite: " + m + " in: " + sql);
    }
  }
  sqlite3_stmt* prepare(const char* sql) {
    sqlite3_stmt* s = nullptr;
    if (sqlite3_prepare_v2(db_, sql, -1, &s, nullptr) != SQLITE_OK)
      throw SetupError(std::string("sqlite: ") + sqlite3_errmsg(db_) + " in: " + sql);
    return s;
  }
  OpResult fail(const char* what, int rc) {
    detail_ = std::string(what) + ": " + sqlite3_errstr(rc);
    return {rc == SQLITE_BUSY || rc == SQLITE_LOCKED ? Status::Timeout : Status::Error, 0, detail_};
  }

  sqlite3* db_ = nullptr;
  sqlite3_stmt *insert_ = nullptr, *take_ = nullptr, *begin_ = nullptr, *commit_ = nullptr, *rollback_ = nullptr;
  std::string detail_;
};

class SqliteQueueAdapter final : public QueueAdapter {
 public:
  explicit SqliteQueueAdapter(const Job& job)
      : QueueAdapter(job),
        o_(options_of<SqliteOptions>(job)),
        dir_(trim_dir(o_.path)),
        file_(temp_file(dir_, ".db")),
        waits_(job.timeout_s) {}
  ~SqliteQueueAdapter() override { QueueAdapter::teardown(); }

  std::string target() const override { return dir_; }
  std::vector<std::string> paths() const override { return {dir_}; }
  Info describe() override { return info_; }
  // A produce is acknowledged once its INSERT committed: what that commit promises is the store's.
  Abilities backend_abilities(const Job&) override {
    return {.contract = sqlite_contract(o_.journal_mode, o_.synchronous),
            .lock_waits = [this] { return waits_.read(); }};
  }

 protected:
  void start(const Job& job) override {
    if (std::string why = unusable_dir(dir_); !why.empty()) throw SetupError("sqlite: " + why + " (--path)");
    ensure_open_files("sqlite", job.clients + queue_options().consumers, kFilesPerConnection);
    created_ = true;
    sqlite3* db = nullptr;
    int rc = sqlite3_open_v2(file_.c_str(), &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, nullptr);
    std::string err;
    const std::string create = "CREATE TABLE queue(id INTEGER PRIMARY KEY AUTOINCREMENT, msg BLOB NOT NULL)";
    for (const std::string& sql : {"PRAGMA journal_mode=" + o_.journal_mode, create}) {
      char* e = nullptr;
      if (rc == SQLITE_OK) rc = sqlite3_exec(db, sql.c_str(), nullptr, nullptr, &e);
      if (e) err = e + (" in: " + sql);
      sqlite3_free(e);
    }
    if (rc != SQLITE_OK && err.empty()) err = db ? sqlite3_errmsg(db) : "out of memory";
    sqlite3_close(db);
    if (rc != SQLITE_OK) throw SetupError("sqlite: cannot create the queue in " + file_ + ": " + err);
    info_ = {{"sqlite", sqlite3_libversion()},
             {"journal_mode", o_.journal_mode},
             {"synchronous", o_.synchronous},
             {"file", file_}};
  }
  std::unique_ptr<QueueConn> connect(const Job&) override {
    return std::make_unique<SqliteQueueConn>(file_, o_, waits_);
  }
  // The table's rows, on a connection of its own that waits for another's lock up to the timeout;
  // a count that fails throws (the probe names it, the end check fails on it).
  int64_t remaining(const Job& job) override {
    sqlite3* db = nullptr;
    sqlite3_stmt* s = nullptr;
    int rc = sqlite3_open_v2(file_.c_str(), &db, SQLITE_OPEN_READONLY, nullptr);
    if (rc == SQLITE_OK) {
      sqlite3_busy_timeout(db, std::max(1, static_cast<int>(job.timeout_s * 1000)));
      rc = sqlite3_prepare_v2(db, "SELECT count(*) FROM queue", -1, &s, nullptr);
    }
    if (rc == SQLITE_OK) rc = sqlite3_step(s);
    const int64_t n = rc == SQLITE_ROW ? sqlite3_column_int64(s, 0) : -1;
    const std::string why = db ? sqlite3_errmsg(db) : sqlite3_errstr(rc);
    sqlite3_finalize(s);
    sqlite3_close(db);
    if (n < 0) throw SetupError("sqlite " + file_ + ": counting the queue's rows: " + why);
    return n;
  }
  void stop_backend() override {
    if (!created_ || o_.keep) return;
    remove_database(file_);
    created_ = false;
  }

 private:
  SqliteOptions o_;
  std::string dir_, file_;
  BusyWaits waits_;  // every connection's busy handler (producers and consumers)
  bool created_ = false;
  Info info_;
};

}  // namespace

std::unique_ptr<Adapter> make_sqlite_queue_adapter(const Job& job) { return std::make_unique<SqliteQueueAdapter>(job); }

}  // namespace mw
