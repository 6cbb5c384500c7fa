// SQLite: a products table preloaded with R rows, read whole, read by id, or written one row
// (or B rows) per transaction. `--path A,B` runs the same job with the database in each
// directory: the HDD / SSD / RAM-disk comparison.
#include "adapters/sqlite/sqlite.h"

#include <fcntl.h>
#include <sqlite3.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <random>
#include <unordered_map>

#include "adapters/embedded_kv.h"
#include "adapters/guard.h"
#include "api/options.h"
#include "api/stop.h"
#include "config/workload_spec.h"
#include "durability/durability.h"
#include "durability/writer_child.h"
#include "queue/queue.h"
#include "util/files.h"
#include "util/keys.h"

namespace mw {
namespace {

enum class Op { ReadAll, SelectById, Insert, InsertBatch };

struct Row {
  int64_t code;
  std::string name;
  int shown;
  std::string description;
};

Row make_row(uint64_t key, size_t desc_size) {
  uint64_t h = mix64(key);
  Row r{static_cast<int64_t>(h % 1000000), "product-" + std::to_string(key), static_cast<int>(h >> 63), {}};
  r.description.resize(desc_size);
  for (size_t i = 0; i < desc_size; ++i) r.description[i] = static_cast<char>('a' + (mix64(h + i) % 26));
  return r;
}

class Db {
 public:
  // `creating`: the connection that builds the database sets journal_mode; client connections
  // only set the per-connection modes (delete is the default, wal is stored in the file), so
  // opening a client never needs a write lock. `waits`: the clients' busy handler, counted.
  Db(const std::string& file, const SqliteOptions& o, double timeout_s, bool creating = false,
     BusyWaits* waits = nullptr) {
    if (sqlite3_open_v2(file.c_str(), &db_, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX,
                        nullptr) != SQLITE_OK) {
      std::string msg = db_ ? sqlite3_errmsg(db_) : "out of memory";
      sqlite3_close(db_);
      throw SetupError("sqlite: cannot open " + file + ": " + msg);
    }
    if (waits)
      waits->install(db_);
    else
      sqlite3_busy_timeout(db_, static_cast<int>(timeout_s * 1000));
    const std::string& mode = o.journal_mode;
    if (creating || (mode != "delete" && mode != "wal")) exec_or_throw("PRAGMA journal_mode=" + mode);
    exec_or_throw("PRAGMA synchronous=" + o.synchronous);
  }
  ~Db() {
    for (auto* s : stmts_) sqlite3_finalize(s);
    sqlite3_close(db_);
  }
  Db(const Db&) = delete;
  Db& operator=(const Db&) = delete;

  sqlite3* get() { return db_; }
  sqlite3_stmt* prepare(const char* sql) {
    sqlite3_stmt* s = nullptr;
    if (sqlite3_prepare_v2(db_, sql, -1, &s, nullptr) != SQLITE_OK)
      throw SetupError(std::string("sqlite: ") + sqlite3_errmsg(db_) + " in: " + sql);
    stmts_.push_back(s);
    return s;
  }
  void exec_or_throw(const std::string& sql) {
    char* err = nullptr;
    if (sqlite3_exec(db_, sql.c_str(), nullptr, nullptr, &err) != SQLITE_OK) {
      std::string msg = err ? err : sqlite3_errmsg(db_);
      sqlite3_free(err);
      throw SetupError("sqlite: " + msg + " (" + sql + ")");
    }
  }
  int64_t count() {
    sqlite3_stmt* s = nullptr;
    sqlite3_prepare_v2(db_, "SELECT count(*) FROM products", -1, &s, nullptr);
    int64_t n = -1;
    if (s && sqlite3_step(s) == SQLITE_ROW) n = sqlite3_column_int64(s, 0);
    sqlite3_finalize(s);
    return n;
  }

 private:
  sqlite3* db_ = nullptr;
  std::vector<sqlite3_stmt*> stmts_;
};

const char* kInsert = "INSERT INTO products(code, name, shown, description) VALUES (?, ?, ?, ?)";

void bind_row(sqlite3_stmt* s, const Row& r) {
  sqlite3_bind_int64(s, 1, r.code);
  sqlite3_bind_text(s, 2, r.name.data(), static_cast<int>(r.name.size()), SQLITE_STATIC);
  sqlite3_bind_int(s, 3, r.shown);
  sqlite3_bind_text(s, 4, r.description.data(), static_cast<int>(r.description.size()), SQLITE_STATIC);
}

class SqliteClient final : public Client {
 public:
  SqliteClient(const std::string& file, const SqliteOptions& o, double timeout_s, Op op, BusyWaits* waits = nullptr)
      : db_(file, o, timeout_s, false, waits), op_(op), rows_(o.rows), batch_(o.batch), desc_size_(o.description_size) {
    read_all_ = db_.prepare("SELECT id, code, name, shown, description FROM products");
    by_id_ = db_.prepare("SELECT code, name, shown, description FROM products WHERE id = ?");
    insert_ = db_.prepare(kInsert);
    begin_ = db_.prepare("BEGIN");
    commit_ = db_.prepare("COMMIT");
    rollback_ = db_.prepare("ROLLBACK");
  }

  OpResult run(uint64_t seq) override {
    switch (op_) {
      case Op::ReadAll: return read_all();
      case Op::SelectById: return select_by_id(seq);
      case Op::Insert: return insert_one(seq);
      case Op::InsertBatch: return insert_batch(seq);
    }
    return {Status::Unsupported, 0, "not an op of sqlite"};
  }

 private:
  OpResult fail(int rc) {
    detail_ = sqlite3_errmsg(db_.get());
    Status st = (rc == SQLITE_BUSY || rc == SQLITE_LOCKED) ? Status::Timeout : Status::Error;
    return {st, 0, detail_};
  }
  static int step_done(sqlite3_stmt* s) {
    int rc = sqlite3_step(s);
    sqlite3_reset(s);
    return rc == SQLITE_DONE ? SQLITE_OK : rc;
  }

  OpResult read_all() {
    int64_t n = 0;
    uint64_t bytes = 0;
    int rc;
    while ((rc = sqlite3_step(read_all_)) == SQLITE_ROW) {
      ++n;
      bytes += 8 + 8 + 4 + static_cast<uint64_t>(sqlite3_column_bytes(read_all_, 2)) +
               static_cast<uint64_t>(sqlite3_column_bytes(read_all_, 4));
    }
    sqlite3_reset(read_all_);
    if (rc != SQLITE_DONE) return fail(rc);
    if (n != rows_) {
      detail_ = "read " + std::to_string(n) + " rows, expected " + std::to_string(rows_);
      return {Status::Mismatch, 0, detail_};
    }
    return {Status::Ok, static_cast<uint32_t>(bytes), {}};
  }

  OpResult select_by_id(uint64_t seq) {
    int64_t id = static_cast<int64_t>(mix64(seq) % static_cast<uint64_t>(rows_)) + 1;
    Row want = make_row(static_cast<uint64_t>(id), desc_size_);
    sqlite3_bind_int64(by_id_, 1, id);
    int rc = sqlite3_step(by_id_);
    OpResult r;
    if (rc == SQLITE_ROW) {
      auto text = [&](int col) {
        return std::string_view(reinterpret_cast<const char*>(sqlite3_column_text(by_id_, col)),
                                static_cast<size_t>(sqlite3_column_bytes(by_id_, col)));
      };
      if (sqlite3_column_int64(by_id_, 0) != want.code || text(1) != want.name ||
          sqlite3_column_int(by_id_, 2) != want.shown || text(3) != want.description) {
        detail_ = "row " + std::to_string(id) + " does not hold what was loaded";
        r = {Status::Mismatch, 0, detail_};
      } else {
        r.bytes = static_cast<uint32_t>(20 + want.name.size() + want.description.size());
      }
    } else if (rc == SQLITE_DONE) {
      detail_ = "row " + std::to_string(id) + " not found";
      r = {Status::NotFound, 0, detail_};
    } else {
      r = fail(rc);
    }
    sqlite3_reset(by_id_);
    return r;
  }

  int insert_row(uint64_t key) {
    Row row = make_row(key, desc_size_);
    bind_row(insert_, row);
    int rc = step_done(insert_);
    if (rc == SQLITE_OK && sqlite3_changes(db_.get()) != 1) return SQLITE_MISMATCH;
    return rc;
  }

  OpResult insert_one(uint64_t seq) {
    int rc = insert_row(seq + static_cast<uint64_t>(rows_) + 1);
    if (rc == SQLITE_MISMATCH) return {Status::Mismatch, 0, "insert changed no row"};
    if (rc != SQLITE_OK) return fail(rc);
    return {Status::Ok, static_cast<uint32_t>(desc_size_ + 40), {}};
  }

  OpResult insert_batch(uint64_t seq) {
    int rc = step_done(begin_);
    if (rc != SQLITE_OK) return fail(rc);
    for (int64_t i = 0; i < batch_; ++i) {
      rc =
          insert_row(seq * static_cast<uint64_t>(batch_) + static_cast<uint64_t>(i) + static_cast<uint64_t>(rows_) + 1);
      if (rc != SQLITE_OK) break;
    }
    if (rc == SQLITE_OK) rc = step_done(commit_);
    if (rc != SQLITE_OK) {
      OpResult r = rc == SQLITE_MISMATCH ? OpResult{Status::Mismatch, 0, "insert changed no row"} : fail(rc);
      step_done(rollback_);
      return r;
    }
    return {Status::Ok, static_cast<uint32_t>(batch_ * static_cast<int64_t>(desc_size_ + 40)), {}};
  }

  Db db_;
  Op op_;
  int64_t rows_, batch_;
  size_t desc_size_;
  std::string detail_;
  sqlite3_stmt *read_all_, *by_id_, *insert_, *begin_, *commit_, *rollback_;
};

// The shared workload (--mix) on a key-value table kv(k INTEGER PRIMARY KEY, v BLOB): reads,
// updates, inserts, deletes, read-modify-writes in one transaction, and range scans.
class SqliteKvClient final : public Client {
 public:
  SqliteKvClient(const std::string& file, const SqliteOptions& o, double timeout_s, BusyWaits* waits)
      : db_(file, o, timeout_s, false, waits) {
    get_ = db_.prepare("SELECT v FROM kv WHERE k = ?");
    update_ = db_.prepare("UPDATE kv SET v = ? WHERE k = ?");
    insert_ = db_.prepare("INSERT INTO kv(k, v) VALUES (?, ?)");
    // a trace's set (an upsert) and add (only a key not there); its replace is the update
    upsert_ = db_.prepare("INSERT INTO kv(k, v) VALUES (?, ?) ON CONFLICT(k) DO UPDATE SET v = excluded.v");
    add_ = db_.prepare("INSERT INTO kv(k, v) VALUES (?, ?) ON CONFLICT(k) DO NOTHING");
    delete_ = db_.prepare("DELETE FROM kv WHERE k = ?");
    scan_ = db_.prepare("SELECT k, v FROM kv WHERE k >= ? ORDER BY k LIMIT ?");
    begin_ = db_.prepare("BEGIN IMMEDIATE");
    commit_ = db_.prepare("COMMIT");
    rollback_ = db_.prepare("ROLLBACK");
  }
  OpResult run(uint64_t) override { return {Status::Unsupported, 0, "the mix runs through run_request"}; }
  OpResult run_request(const Request& r) override {
    const auto key = static_cast<int64_t>(r.key);
    switch (r.op) {
      case KvOp::Read: return read(key);
      case KvOp::Update:
        if (r.cond == Cond::Upsert || r.cond == Cond::Absent) [[unlikely]]  // Request::cond
          return write(r.cond == Cond::Upsert ? upsert_ : add_, r, 2, 1);
        return write(update_, r, 1, 2);
      case KvOp::Insert: return write(insert_, r, 2, 1);
      case KvOp::Delete: {
        sqlite3_bind_int64(delete_, 1, key);
        if (int rc = step_done(delete_); rc != SQLITE_OK) return fail(rc);
        return sqlite3_changes(db_.get()) ? OpResult{} : OpResult{Status::NotFound, 0, "no such key"};
      }
      case KvOp::Rmw: {
        if (int rc = step_done(begin_); rc != SQLITE_OK) return fail(rc);
        OpResult res = read(key);
        if (res.status == Status::Ok) res = write(update_, r, 1, 2);
        int rc = step_done(res.status == Status::Ok ? commit_ : rollback_);
        if (rc != SQLITE_OK && res.status == Status::Ok) res = fail(rc), step_done(rollback_);
        return res;
      }
      case KvOp::Scan: return scan(key, r.scan_len);
      default: return {Status::Unsupported, 0, "not an op of sqlite"};
    }
  }

 private:
  static int step_done(sqlite3_stmt* s) {
    int rc = sqlite3_step(s);
    sqlite3_reset(s);
    return rc == SQLITE_DONE ? SQLITE_OK : rc;
  }
  OpResult fail(int rc) {
    detail_ = sqlite3_errmsg(db_.get());
    Status st = (rc == SQLITE_BUSY || rc == SQLITE_LOCKED) ? Status::Timeout : Status::Error;
    return {st, 0, detail_};
  }
  OpResult check(uint64_t k, const void* p, int n) {
    switch (check_value(k, static_cast<const char*>(p), static_cast<size_t>(n))) {
      case ValueCheck::Ok: return {Status::Ok, static_cast<uint32_t>(n), {}};
      case ValueCheck::OtherKey: detail_ = "key " + std::to_string(k) + " holds another key's value"; break;
      case ValueCheck::Corrupt: detail_ = "key " + std::to_string(k) + " holds a corrupt value (checksum)"; break;
    }
    return {Status::Mismatch, 0, detail_};
  }
  OpResult read(int64_t key) {
    sqlite3_bind_int64(get_, 1, key);
    int rc = sqlite3_step(get_);
    OpResult r;
    if (rc == SQLITE_ROW)
      r = check(static_cast<uint64_t>(key), sqlite3_column_blob(get_, 0), sqlite3_column_bytes(get_, 0));
    else if (rc == SQLITE_DONE)
      r = {Status::NotFound, 0, "no such key"};
    else
      r = fail(rc);
    sqlite3_reset(get_);
    return r;
  }
  // UPDATE binds (v, k), INSERT (k, v): the parameter numbers of the value and the key.
  OpResult write(sqlite3_stmt* s, const Request& r, int v_at, int k_at) {
    value_.resize(r.value_size);
    write_value(r.key, r.version, value_.data(), value_.size());
    sqlite3_bind_blob(s, v_at, value_.data(), static_cast<int>(value_.size()), SQLITE_STATIC);
    sqlite3_bind_int64(s, k_at, static_cast<int64_t>(r.key));
    if (int rc = step_done(s); rc != SQLITE_OK) return fail(rc);
    if (sqlite3_changes(db_.get()) != 1) return {Status::NotFound, 0, "no such key"};
    return {Status::Ok, r.value_size, {}};
  }
  OpResult scan(int64_t from, uint32_t n) {
    sqlite3_bind_int64(scan_, 1, from);
    sqlite3_bind_int64(scan_, 2, n);
    int rc;
    OpResult r;
    uint32_t bytes = 0;
    while ((rc = sqlite3_step(scan_)) == SQLITE_ROW) {
      r = check(static_cast<uint64_t>(sqlite3_column_int64(scan_, 0)), sqlite3_column_blob(scan_, 1),
                sqlite3_column_bytes(scan_, 1));
      if (r.status != Status::Ok) break;
      bytes += r.bytes;
    }
    sqlite3_reset(scan_);
    if (r.status != Status::Ok) return r;
    if (rc != SQLITE_DONE) return fail(rc);
    return {Status::Ok, bytes, {}};
  }

  Db db_;
  std::string value_, detail_;
  sqlite3_stmt *get_, *update_, *insert_, *upsert_, *add_, *delete_, *scan_, *begin_, *commit_, *rollback_;
};

class SqliteAdapter final : public Adapter {
 public:
  SqliteAdapter(const Job& job, WorkloadPtr mix)
      : o_(options_of<SqliteOptions>(job)), dir_(o_.path), mix_(std::move(mix)), waits_(job.timeout_s) {
    dir_ = trim_dir(dir_);
    file_ = temp_file(dir_, ".db");
    if (!mix_) op_ = op_of<Op>(job);
  }
  ~SqliteAdapter() override { teardown(); }

  void prepare(const Job& job) override {
    if (std::string why = unusable_dir(dir_); !why.empty()) throw SetupError("sqlite: " + why + " (--path)");
    ensure_open_files("sqlite", job.clients, kFilesPerConnection);
    if ((layer_ = power_layer(job, dir_)))  // --crash power: the database on the page-cache layer in --path
      file_ = layer_->path() + "/" + std::filesystem::path(file_).filename().string();
    created_ = true;
    create(job);
    const bool crash = durability_options_of(job).crash != CrashKind::None;
    if (crash && !mix_ && op_ == Op::Insert)  // the inserts run in child processes
      crash_ = std::make_unique<EmbeddedCrash>(
          writers_, "sqlite", [this, t = job.timeout_s] { Db(file_, o_, t).count(); },
          [this, t = job.timeout_s](std::span<const uint64_t> seqs) { return check_inserts(seqs, t); }, fsync_note());
    if (crash && mix_)  // the workload's ops too; its keys are read back, each value naming its write
      crash_ = std::make_unique<EmbeddedCrash>(
          writers_, "sqlite", [this, t = job.timeout_s] { Db(file_, o_, t).count(); },
          KeyedCheck{nullptr, [this, t = job.timeout_s](std::span<const uint64_t> keys) { return held_rows(keys, t); }},
          fsync_note(), distinct_by_value(mix_->sizes, 0));
    if (crash_ && layer_) {  // the preload is on disk before the power can go (its connection closed:
      sync_layer(*layer_);   // a WAL is checkpointed and removed then)
      crash_->set_pagecache(layer_.get());
    }
  }

  // The database, its table, and the preloaded rows (a workload's table is filled by the driver).
  void create(const Job& job) {
    Db db(file_, o_, job.timeout_s, true);
    info_ = {{"sqlite", sqlite3_libversion()},
             {"journal_mode", o_.journal_mode},
             {"synchronous", o_.synchronous},
             {"file", file_}};
    if (mix_) {  // the workload's table; the driver's load phase fills it
      db.exec_or_throw("CREATE TABLE kv(k INTEGER PRIMARY KEY, v BLOB)");
      return;
    }
    db.exec_or_throw("CREATE TABLE products(id INTEGER PRIMARY KEY, code INT, name TEXT, shown INT, description TEXT)");
    db.exec_or_throw("BEGIN");
    sqlite3_stmt* ins = db.prepare(kInsert);
    for (int64_t id = 1; id <= o_.rows; ++id) {
      if (id % 4096 == 0)
        throw_if_stopped("the sqlite preload (" + std::to_string(id) + " of " + std::to_string(o_.rows) + " rows)");
      Row r = make_row(static_cast<uint64_t>(id), o_.description_size);
      bind_row(ins, r);
      if (sqlite3_step(ins) != SQLITE_DONE)
        throw SetupError(std::string("sqlite: preload failed: ") + sqlite3_errmsg(db.get()));
      sqlite3_reset(ins);
    }
    db.exec_or_throw("COMMIT");
    info_["rows"] = std::to_string(o_.rows);
  }

  std::unique_ptr<Client> open(const Job& job, int) override {
    if (crash_ && mix_)
      return writers_.spawn(
          [file = file_, o = o_, t = job.timeout_s] { return std::make_unique<SqliteKvClient>(file, o, t, nullptr); },
          job.timeout_s);
    if (crash_) {
      return writers_.spawn([file = file_, o = o_, t = job.timeout_s,
                             op = op_] { return std::make_unique<SqliteClient>(file, o, t, op); },
                            job.timeout_s);
    }
    if (mix_) return std::make_unique<SqliteKvClient>(file_, o_, job.timeout_s, &waits_);
    return std::make_unique<SqliteClient>(file_, o_, job.timeout_s, op_, &waits_);
  }

  Verdict verify(const Job& job, const Counts& c) override {
    if (mix_) {
      Db db(file_, o_, job.timeout_s);
      sqlite3_stmt* count = db.prepare("SELECT count(*) FROM kv");
      sqlite3_stmt* get = db.prepare("SELECT v FROM kv WHERE k = ?");
      int64_t n = sqlite3_step(count) == SQLITE_ROW ? sqlite3_column_int64(count, 0) : -1;
      return verify_workload(*mix_, static_cast<uint64_t>(std::max<int64_t>(n, 0)), [&](uint64_t k, std::string& v) {
        sqlite3_bind_int64(get, 1, static_cast<int64_t>(k));
        bool found = sqlite3_step(get) == SQLITE_ROW;
        if (found)
          v.assign(static_cast<const char*>(sqlite3_column_blob(get, 0)),
                   static_cast<size_t>(sqlite3_column_bytes(get, 0)));
        sqlite3_reset(get);
        return found;
      });
    }
    int64_t per_op = op_ == Op::Insert ? 1 : op_ == Op::InsertBatch ? o_.batch : 0;
    int64_t want = o_.rows + per_op * static_cast<int64_t>(c.ok + c.warmup_ok);
    Db db(file_, o_, job.timeout_s);
    int64_t got = db.count();
    Verdict v{true, got == want, "row count " + std::to_string(got) + ", expected " + std::to_string(want)};
    return v;
  }

  Info describe() override { return info_; }
  std::string target() const override { return dir_; }
  std::vector<std::string> paths() const override { return {dir_}; }
  // A crash job's inserts run in child processes: their waits are not seen here.
  // A crash job's writes run in its writer children, whose waits are not counted here.
  Abilities abilities(const Job& job) override {
    Abilities a{.crash = crash_.get(), .contract = contract(job)};
    if (!crash_) a.lock_waits = [this] { return waits_.read(); };
    return a;
  }
  std::optional<Contract> contract(const Job&) const {
    if (mix_ ? !mix_->mix.writes() : op_ != Op::Insert && op_ != Op::InsertBatch) return std::nullopt;
    return sqlite_contract(o_.journal_mode, o_.synchronous);
  }

  void teardown() override {
    writers_.kill_all();
    if (!created_ || o_.keep) return;
    remove_database(file_);
    created_ = false;
  }

 private:
  SqliteOptions o_;
  std::string dir_, file_;
  Op op_ = Op::ReadAll;
  bool created_ = false;
  Info info_;
  std::shared_ptr<const Workload> mix_;
  BusyWaits waits_;                        // the clients' connections' busy handler
  std::unique_ptr<PageCacheMount> layer_;  // --crash power; outlives the writers
  WriterChildren writers_;
  std::unique_ptr<Crashable> crash_;

  // After a crash of a workload: what each key's row holds.
  std::vector<Held> held_rows(std::span<const uint64_t> keys, double timeout_s) {
    Db db(file_, o_, timeout_s);
    sqlite3_stmt* get = db.prepare("SELECT v FROM kv WHERE k = ?");
    int rc = SQLITE_OK;
    std::vector<Held> out = held_values(keys, [&](uint64_t k, std::string& v) {
      sqlite3_bind_int64(get, 1, static_cast<int64_t>(k));
      rc = sqlite3_step(get);
      const bool found = rc == SQLITE_ROW;
      if (found)
        v.assign(static_cast<const char*>(sqlite3_column_blob(get, 0)),
                 static_cast<size_t>(sqlite3_column_bytes(get, 0)));
      sqlite3_reset(get);
      if (rc != SQLITE_ROW && rc != SQLITE_DONE)
        throw SetupError("sqlite: reading the rows back after the crash: " + std::string(sqlite3_errmsg(db.get())));
      return found;
    });
    return out;
  }

  // After a crash: every inserted row (insert_one's key: seq + rows + 1) read back by name.
  std::vector<WriteState> check_inserts(std::span<const uint64_t> seqs, double timeout_s) {
    Db db(file_, o_, timeout_s);
    sqlite3_stmt* s = db.prepare("SELECT name, code, shown, description FROM products WHERE id > ?");
    sqlite3_bind_int64(s, 1, o_.rows);
    std::unordered_map<std::string, Row> found;
    auto text = [&](int col) {
      const char* p = reinterpret_cast<const char*>(sqlite3_column_text(s, col));
      return p ? std::string(p, static_cast<size_t>(sqlite3_column_bytes(s, col))) : std::string();
    };
    int rc;
    while ((rc = sqlite3_step(s)) == SQLITE_ROW)
      found[text(0)] = Row{sqlite3_column_int64(s, 1), text(0), sqlite3_column_int(s, 2), text(3)};
    if (rc != SQLITE_DONE)
      throw SetupError("sqlite: reading the rows back after the crash: " + std::string(sqlite3_errmsg(db.get())));
    std::vector<WriteState> out;
    for (uint64_t q : seqs) {
      const Row want = make_row(q + static_cast<uint64_t>(o_.rows) + 1, o_.description_size);
      auto it = found.find(want.name);
      if (it == found.end())
        out.push_back(WriteState::Missing);
      else if (it->second.code != want.code || it->second.shown != want.shown ||
               it->second.description != want.description)
        out.push_back(WriteState::Corrupt);
      else
        out.push_back(WriteState::Present);
    }
    return out;
  }
  std::string fsync_note() const {
    const std::string& j = o_.journal_mode;
    const std::string& y = o_.synchronous;
    std::string n = "journal_mode=" + j + ", synchronous=" + y + ": ";
    if (j == "off" || j == "memory") return n + "no journal on disk: a kill mid-transaction can corrupt the database";
    if (y == "off") return n + "no fsync: a kill keeps what the page cache holds, a power cut may not";
    if (j == "wal" && y == "normal")
      return n + "commits fsynced at checkpoints only: a power cut may lose the last ones";
    return n + "fsync at each commit";
  }
};

}  // namespace

Contract sqlite_contract(const std::string& journal, const std::string& sync) {
  const std::string s = "journal_mode=" + journal + ", synchronous=" + sync;
  if (journal == "off" || journal == "memory") return {ContractKind::OsBuffer, 0, s + ": no journal on disk"};
  if (sync == "off") return {ContractKind::OsBuffer, 0, s + ": no fsync, the OS writes back when it will"};
  if (journal == "wal" && sync == "normal")
    return {ContractKind::OsBuffer, 0, s + ": the WAL is synced at checkpoints, not at each commit"};
  return {ContractKind::FsyncPerAck, 0, s + ": synced at each commit"};
}

void remove_database(const std::string& file) {
  for (const char* suffix : {"", "-journal", "-wal", "-shm"}) unlink((file + suffix).c_str());
}

AdapterSpec sqlite_adapter_spec() {
  return {
      .name = "sqlite",
      .summary =
          "SQLite products table: read all rows, read by id, insert one or B rows per transaction; "
          "a table as a queue (produce, consume, roundtrip)",
      .ops = {{"read-all", Op::ReadAll},
              {"select-by-id", Op::SelectById},
              {"insert", Op::Insert},
              {"insert-batch", Op::InsertBatch},
              {"produce", QueueOp::Produce},
              {"consume", QueueOp::Consume},
              {"roundtrip", QueueOp::Roundtrip}},
      .default_ops = "read-all,insert",
      .options = {opt(&SqliteOptions::path,
                      {.name = "path", .help = "directory for the database; a list runs side by side", .list = true}),
                  opt(&SqliteOptions::rows, {.name = "rows", .help = "rows preloaded", .min = 1, .max = 1e9}),
                  opt(&SqliteOptions::batch,
                      {.name = "batch", .help = "rows per transaction for insert-batch", .min = 1, .max = 10000}),
                  opt(&SqliteOptions::journal_mode,
                      {.name = "journal-mode",
                       .help = "SQLite journal_mode",
                       .list = true,
                       .choices = {"delete", "truncate", "persist", "memory", "wal", "off"}}),
                  opt(&SqliteOptions::synchronous, {.name = "synchronous",
                                                    .help = "SQLite synchronous",
                                                    .list = true,
                                                    .choices = {"off", "normal", "full", "extra"}}),
                  opt(&SqliteOptions::description_size,
                      {.name = "description-size", .help = "bytes of the description column", .max = 65536}),
                  opt(&SqliteOptions::keep, {.name = "keep", .help = "keep the database file afterwards"})},
      .unavailable = nullptr,
      .make = [](const Job& j, WorkloadPtr w) -> std::unique_ptr<Adapter> {
        if (is_queue_op(j.op)) return make_sqlite_queue_adapter(j);
        return std::make_unique<SqliteAdapter>(j, std::move(w));
      },
      .kv_ops = {KvOp::Read, KvOp::Update, KvOp::Insert, KvOp::Delete, KvOp::Rmw, KvOp::Scan},
      .conditional_writes = true,
      .families = {Family::KeyedStore, Family::Queue},
      .libraries = {"sqlite"},
      .crash_kinds = {CrashKind::Kill, CrashKind::Power, CrashKind::Torn},
      .crash_ops = {"insert", kMixOp},
      .durability_settings = {"journal-mode", "synchronous"},
      .reset = "a new database file in --path each run"};
}

}  // namespace mw
