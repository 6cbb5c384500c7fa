#include "adapters/mariadb/client.h"

#include <errmsg.h>
#include <mysqld_error.h>

#include "util/clock.h"
#include "workload/workload.h"

namespace mw::mdb {

namespace {

MYSQL_BIND bind_int(int64_t* v) {
  MYSQL_BIND b{};
  b.buffer_type = MYSQL_TYPE_LONGLONG;
  b.buffer = v;
  return b;
}

MYSQL_BIND bind_blob(char* data, unsigned long cap, unsigned long* len) {
  MYSQL_BIND b{};
  b.buffer_type = MYSQL_TYPE_BLOB;
  b.buffer = data;
  b.buffer_length = cap;
  b.length = len;
  return b;
}

constexpr size_t kBuffer = 64 << 10;  // a fetched value past it is fetched again, whole

}  // namespace

// Update and insert (and a trace's upsert and add) take the value first, so one binding serves all.
Statements::Statements(const std::string& t, bool trace)
    : read("SELECT v FROM " + t + " WHERE k = ?"),
      update("UPDATE " + t + " SET v = ? WHERE k = ?"),
      insert("INSERT INTO " + t + " (v, k) VALUES (?, ?)"),
      remove("DELETE FROM " + t + " WHERE k = ?"),
      lock("SELECT v FROM " + t + " WHERE k = ? FOR UPDATE"),
      scan("SELECT k, v FROM " + t + " WHERE k >= ? ORDER BY k LIMIT ?") {
  if (!trace) return;
  // affected rows: 1 inserted, 2 updated (1 when the value was the same: CLIENT_FOUND_ROWS)
  upsert = "INSERT INTO " + t + " (v, k) VALUES (?, ?) ON DUPLICATE KEY UPDATE v = VALUES(v)";
  // 0 when the key is there: the duplicate is a warning (the table's columns take any value sent)
  add = "INSERT IGNORE INTO " + t + " (v, k) VALUES (?, ?)";
}

StoreClient::StoreClient(const Endpoint& ep, const Statements& sql, Health<Session>* health,
                         std::function<Request(uint64_t)> native)
    : ep_(ep), sql_(sql), health_(health), native_(std::move(native)), buf_(kBuffer, '\0') {
  s_ = open();
}

StoreClient::~StoreClient() = default;

std::unique_ptr<Session> StoreClient::open() {
  auto s = std::make_unique<Session>();
  s->conn = std::make_unique<Conn>(ep_);
  for (auto [st, text] : {std::pair{&s->read, &sql_.read},
                          {&s->update, &sql_.update},
                          {&s->insert, &sql_.insert},
                          {&s->remove, &sql_.remove},
                          {&s->lock, &sql_.lock},
                          {&s->scan, &sql_.scan},
                          {&s->upsert, &sql_.upsert},
                          {&s->add, &sql_.add}})
    if (!text->empty()) *st = std::make_unique<Stmt>(*s->conn, *text);
  MYSQL_BIND key = bind_int(&key_), scan_in[2] = {bind_int(&key_), bind_int(&limit_)};
  MYSQL_BIND value = bind_blob(buf_.data(), kBuffer, &len_);
  value.is_null = &null_, value.error = &err_;
  MYSQL_BIND scan_out[2] = {bind_int(&got_key_), value};
  bool ok = true;
  for (Stmt* st : {s->read.get(), s->lock.get()})
    ok = ok && !mysql_stmt_bind_param(st->get(), &key) && !mysql_stmt_bind_result(st->get(), &value);
  ok = ok && !mysql_stmt_bind_param(s->remove->get(), &key) && !mysql_stmt_bind_param(s->scan->get(), scan_in) &&
       !mysql_stmt_bind_result(s->scan->get(), scan_out);
  if (!ok) throw SetupError("mariadb " + ep_.where + ": cannot bind the statements' parameters");
  bound_ = nullptr;
  return s;
}

OpResult StoreClient::run_request(const Request& r) {
  if (!s_) return {Status::Error, 0, why_};
  t0_ = now_ns();
  why_.clear();
  uint32_t bytes = 0;
  Status st = Status::Error;
  switch (r.op) {
    case KvOp::Read: st = one_row(s_->read->get(), r, bytes); break;
    case KvOp::Update: {
      MYSQL_STMT* w = s_->update->get();
      if (r.cond == Cond::Upsert || r.cond == Cond::Absent) [[unlikely]] {  // a trace's set, add (Request::cond)
        const Stmt* t = r.cond == Cond::Upsert ? s_->upsert.get() : s_->add.get();
        if (!t) return {Status::Unsupported, 0, "a trace's set and add are prepared for a trace's replay alone"};
        w = t->get();
      }
      st = write(w, r), bytes = r.value_size;
      break;
    }
    case KvOp::Insert: st = write(s_->insert->get(), r), bytes = r.value_size; break;
    case KvOp::Delete: st = write(s_->remove->get(), r); break;
    case KvOp::Rmw: st = rmw(r, bytes); break;
    case KvOp::Scan: st = scan(r, bytes); break;
    default: return {Status::Unsupported, 0, "not an op of the mariadb store"};
  }
  if (st == Status::Ok) timed_out_ = false;
  return {st, st == Status::Ok ? bytes : 0, why_};
}

std::string_view StoreClient::value_of(MYSQL_STMT* st, unsigned col, int rc) {
  if (rc != MYSQL_DATA_TRUNCATED || len_ <= kBuffer) return {buf_.data(), len_};
  big_.resize(len_);
  unsigned long len = 0;
  MYSQL_BIND b = bind_blob(big_.data(), static_cast<unsigned long>(big_.size()), &len);
  if (mysql_stmt_fetch_column(st, &b, col, 0) != 0) return {};
  return {big_.data(), len};
}

Status StoreClient::checked(uint64_t key, std::string_view v) {
  switch (check_value(key, v.data(), v.size())) {
    case ValueCheck::Ok: return Status::Ok;
    case ValueCheck::OtherKey: why_ = "key " + std::to_string(key) + " holds another key's value"; break;
    case ValueCheck::Corrupt: why_ = "key " + std::to_string(key) + " holds a corrupt value (checksum)"; break;
  }
  return Status::Mismatch;
}

// Read (and rmw's locking read): exactly one row, its value checked.
Status StoreClient::one_row(MYSQL_STMT* st, const Request& r, uint32_t& bytes) {
  key_ = static_cast<int64_t>(r.key);
  if (mysql_stmt_execute(st) != 0) return stmt_failed(st);
  int rc = mysql_stmt_fetch(st);
  if (rc == MYSQL_NO_DATA) {
    why_ = "no such key";
    return Status::NotFound;
  }
  if (rc == 1) return stmt_failed(st);
  const std::string_view v = value_of(st, 0, rc);
  bytes = static_cast<uint32_t>(v.size());
  Status s = null_ ? (why_ = "a NULL value", Status::Mismatch) : checked(r.key, v);
  rc = mysql_stmt_fetch(st);
  if (rc == MYSQL_NO_DATA) return s;
  if (rc == 1) return stmt_failed(st);
  mysql_stmt_free_result(st);
  why_ = "more than one row for a key";
  return Status::Mismatch;
}

Status StoreClient::scan(const Request& r, uint32_t& bytes) {
  MYSQL_STMT* st = s_->scan->get();
  key_ = static_cast<int64_t>(r.key), limit_ = r.scan_len;
  if (mysql_stmt_execute(st) != 0) return stmt_failed(st);
  Status s = Status::Ok;
  int64_t prev = key_ - 1;
  uint32_t n = 0;
  for (int rc; (rc = mysql_stmt_fetch(st)) != MYSQL_NO_DATA;) {
    if (rc == 1) return stmt_failed(st);
    if (s != Status::Ok) continue;  // the rest read off the connection, unchecked
    if (++n > r.scan_len)
      why_ = "a scan answered more rows than asked", s = Status::Mismatch;
    else if (got_key_ <= prev)
      why_ = "a scan's keys are out of order or out of range", s = Status::Mismatch;
    else
      s = checked(static_cast<uint64_t>(got_key_), value_of(st, 1, rc));
    bytes += static_cast<uint32_t>(len_);
    prev = got_key_;
  }
  return s;
}

// Update, insert, delete: exactly one row matched.
Status StoreClient::write(MYSQL_STMT* st, const Request& r) {
  key_ = static_cast<int64_t>(r.key);
  if (r.op != KvOp::Delete) {
    value_.resize(r.value_size);
    write_value(r.key, r.version, value_.data(), value_.size());
    value_len_ = static_cast<unsigned long>(value_.size());
    if (bound_ != value_.data()) {  // the bytes moved: bind both statements again
      MYSQL_BIND b[2] = {bind_blob(value_.data(), value_len_, &value_len_), bind_int(&key_)};
      if (mysql_stmt_bind_param(s_->update->get(), b) || mysql_stmt_bind_param(s_->insert->get(), b) ||
          (s_->upsert && mysql_stmt_bind_param(s_->upsert->get(), b)) ||
          (s_->add && mysql_stmt_bind_param(s_->add->get(), b)))
        return stmt_failed(st);
      bound_ = value_.data();
    }
  }
  if (mysql_stmt_execute(st) != 0) return stmt_failed(st);
  const my_ulonglong n = mysql_stmt_affected_rows(st);
  if (n == 1 || (n == 2 && r.cond == Cond::Upsert)) return Status::Ok;
  why_ = n == 0 ? "no such key" : "changed " + std::to_string(n) + " rows, expected 1";
  return n == 0 ? Status::NotFound : Status::Mismatch;
}

// A transaction: the row locked and read (its value checked), then replaced.
Status StoreClient::rmw(const Request& r, uint32_t& bytes) {
  const Session* session = s_.get();
  MYSQL* c = s_->conn->get();
  if (mysql_real_query(c, "BEGIN", 5) != 0) return failed(mysql_errno(c), mysql_error(c));
  Status s = one_row(s_->lock->get(), r, bytes);
  if (s == Status::Ok) s = write(s_->update->get(), r);
  if (s_.get() != session) return s;  // the connection went with the failure
  if (s == Status::Ok ? mysql_commit(c) != 0 : mysql_rollback(c) != 0) {
    const Status f = failed(mysql_errno(c), mysql_error(c));
    return s == Status::Ok ? f : s;
  }
  bytes += s == Status::Ok ? r.value_size : 0;
  return s;
}

// A statement's error: refused (read-only server, no privilege), a lock timeout or deadlock, or
// the connection's failure (client errors 2000-2999).
Status StoreClient::failed(unsigned code, const char* msg) {
  why_ = one_line(msg) + " (" + std::to_string(code) + ")";
  if (code == ER_RECORD_FILE_FULL)  // InnoDB's word for ENOSPC too (its error log has the errno)
    why_ +=
        ": the table's file could not grow: no space left on its filesystem (disk full), or a size "
        "limit of its engine (the server's error log says which)";
  if (code >= CR_MIN_ERROR && code <= CR_MAX_ERROR) return connection_failed();
  switch (code) {
    case ER_OPTION_PREVENTS_STATEMENT:  // --read-only
    case ER_CANT_EXECUTE_IN_READ_ONLY_TRANSACTION:
    case ER_TABLEACCESS_DENIED_ERROR:
    case ER_COLUMNACCESS_DENIED_ERROR:
    case ER_SPECIFIC_ACCESS_DENIED_ERROR: return Status::Refused;
    case ER_LOCK_WAIT_TIMEOUT:
    case ER_LOCK_DEADLOCK: return Status::Timeout;
    default: return Status::Error;
  }
}

// As the postgres store's clients: after a timeout a fresh connection that answers within the
// timeout takes over, once; a second timeout with no success between, or a connection lost
// (not timed out), stops the client, so a run never takes one timeout per op.
Status StoreClient::connection_failed() {
  const bool timeout = static_cast<double>(now_ns() - t0_) >= ep_.timeout_s * 0.9e9;
  why_ += " (" + ep_.where + ")";
  s_.reset();
  if (timeout && timed_out_) {
    why_ += "; again on a fresh connection, the client stops";
  } else if (timeout) {
    std::string err;
    s_ = health_->probe(
        ep_.timeout_s, [this] { return open(); }, err);
    if (!s_) why_ += "; a fresh connection failed too, the server is considered lost: " + err;
  }
  timed_out_ = timeout;
  return timeout ? Status::Timeout : Status::Error;
}

}  // namespace mw::mdb
