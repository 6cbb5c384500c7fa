#include "adapters/postgres/client.h"

#include <poll.h>

#include "util/clock.h"
#include "workload/workload.h"

namespace mw::pg {

Statements::Statements(const std::string& t, bool trace)
    : read("SELECT v FROM " + t + " WHERE k = $1"),
      update("UPDATE " + t + " SET v = $2 WHERE k = $1"),
      insert("INSERT INTO " + t + "(k, v) VALUES ($1, $2)"),
      remove("DELETE FROM " + t + " WHERE k = $1"),
      rmw("UPDATE " + t + " SET v = $2 FROM (SELECT k, v FROM " + t + " WHERE k = $1 FOR UPDATE) o WHERE " + t +
          ".k = o.k RETURNING o.v"),
      scan("SELECT k, v FROM " + t + " WHERE k >= $1 ORDER BY k LIMIT $2") {
  if (!trace) return;
  upsert = "INSERT INTO " + t + "(k, v) VALUES ($1, $2) ON CONFLICT (k) DO UPDATE SET v = EXCLUDED.v";
  add = "INSERT INTO " + t + "(k, v) VALUES ($1, $2) ON CONFLICT (k) DO NOTHING";
}

StoreClient::StoreClient(const Endpoint& ep, const Statements& sql, Health<Conn>* health,
                         std::function<Request(uint64_t)> native)
    : ep_(ep), sql_(sql), health_(health), native_(std::move(native)), conn_(open()) {}

StoreClient::~StoreClient() = default;

std::unique_ptr<Conn> StoreClient::open() const {
  const int64_t until = deadline(ep_.timeout_s);
  auto c = std::make_unique<Conn>(ep_, until);
  for (auto [name, text, n] : {std::tuple{"r", &sql_.read, 1},
                               {"u", &sql_.update, 2},
                               {"i", &sql_.insert, 2},
                               {"d", &sql_.remove, 1},
                               {"m", &sql_.rmw, 2},
                               {"s", &sql_.scan, 2},
                               {"p", &sql_.upsert, 2},
                               {"a", &sql_.add, 2}})
    if (!text->empty()) c->prepare(name, *text, n, until);
  if (!PQenterPipelineMode(c->get()) || PQsetnonblocking(c->get(), 1) != 0)
    throw SetupError("postgres " + ep_.where + ": cannot enter pipeline mode: " + c->error());
  return c;
}

// --reconnect-backoff: one try within the timeout once the back-off is waited out (backoff.h).
// False: still no connection (lost_why_ says why).
bool StoreClient::reconnect() {
  backoff_.wait();
  try {
    conn_ = open();
    backoff_.succeeded();
    timed_out_ = false;
    return true;
  } catch (const SetupError& e) {
    lost_why_ = std::string("reconnect failed: ") + e.what();
    backoff_.failed(ep_.reconnect_max_s);
    return false;
  }
}

void StoreClient::submit_request(const Request& r) {
  Pending p;
  p.req = r;
  if (!conn_ && ep_.reconnect_max_s > 0) reconnect();
  if (!conn_) {
    p.why = lost_why_;
    failed_.push_back(std::move(p));
    orphan_ = false;
    return;
  }
  key_param_ = int8_param(static_cast<int64_t>(r.key));
  const char* vals[2] = {key_param_.data(), nullptr};
  int lens[2] = {8, 0}, fmts[2] = {1, 1};
  const char* name = "r";
  switch (r.op) {
    case KvOp::Read: break;
    case KvOp::Delete: name = "d"; break;
    case KvOp::Scan:
      name = "s";
      limit_param_ = int8_param(r.scan_len);
      vals[1] = limit_param_.data(), lens[1] = 8;
      break;
    case KvOp::Update:
    case KvOp::Insert:
    case KvOp::Rmw:
      name = r.op == KvOp::Update ? "u" : r.op == KvOp::Insert ? "i" : "m";
      if (r.cond == Cond::Upsert || r.cond == Cond::Absent) [[unlikely]]  // a trace's set, add (Request::cond)
        name = r.cond == Cond::Upsert ? "p" : "a";
      value_.resize(r.value_size);
      write_value(r.key, r.version, value_.data(), value_.size());
      vals[1] = value_.data(), lens[1] = static_cast<int>(value_.size());
      break;
    default:
      p.status = Status::Unsupported, p.why = "not an op of the postgres store";
      failed_.push_back(std::move(p));
      return;
  }
  const int n = vals[1] ? 2 : 1;
  if (!PQsendQueryPrepared(conn_->get(), name, n, vals, lens, fmts, 1) || !PQpipelineSync(conn_->get())) {
    p.why = conn_->error();
    failed_.push_back(std::move(p));
    lost(conn_->error());
    return;
  }
  pending_.push_back(std::move(p));
  want_write_ = true;
}

void StoreClient::flush() {
  if (!conn_) return;
  const int r = PQflush(conn_->get());
  if (r < 0) return lost(conn_->error());
  want_write_ = r == 1;
}

Status StoreClient::check_value_at(uint64_t key, const char* v, int len, std::string& why) const {
  switch (check_value(key, v, static_cast<size_t>(len))) {
    case ValueCheck::Ok: return Status::Ok;
    case ValueCheck::OtherKey: why = "key " + std::to_string(key) + " holds another key's value"; break;
    case ValueCheck::Corrupt: why = "key " + std::to_string(key) + " holds a corrupt value (checksum)"; break;
  }
  return Status::Mismatch;
}

// A statement's result: the rows (and each value) or the row count it must have.
void StoreClient::check(Pending& p, const PGresult* res) {
  p.got = true;
  const ExecStatusType st = PQresultStatus(res);
  const KvOp op = p.req.op;
  if (st == PGRES_FATAL_ERROR || st == PGRES_PIPELINE_ABORTED) {
    const char* code = PQresultErrorField(res, PG_DIAG_SQLSTATE);
    const std::string c = code ? code : "";
    p.status = c == "57014" || c == "55P03" || c == "40P01" ? Status::Timeout
               : c == "25006" || c.rfind("42", 0) == 0      ? Status::Refused
                                                            : Status::Error;
    p.why = st == PGRES_PIPELINE_ABORTED ? "aborted in the pipeline" : one_line(PQresultErrorMessage(res));
    return;
  }
  const bool rows = op == KvOp::Read || op == KvOp::Rmw || op == KvOp::Scan;
  if (st != (rows ? PGRES_TUPLES_OK : PGRES_COMMAND_OK)) {
    p.status = Status::Error, p.why = std::string("unexpected answer ") + PQresStatus(st);
    return;
  }
  if (!rows) {  // update, insert, delete: exactly one row changed
    const std::string n = PQcmdTuples(const_cast<PGresult*>(res));
    p.status = n == "1" ? Status::Ok : n == "0" ? Status::NotFound : Status::Mismatch;
    if (p.status == Status::NotFound) p.why = "no such key";
    if (p.status == Status::Mismatch) p.why = "changed " + n + " rows, expected 1";
    p.bytes = op == KvOp::Delete || p.status != Status::Ok ? 0 : p.req.value_size;  // a write not stored: none
    return;
  }
  const int n = PQntuples(res);
  if (op != KvOp::Scan) {
    if (n == 0)
      p.status = Status::NotFound, p.why = "no such key";
    else if (n != 1 || PQnfields(res) != 1)
      p.status = Status::Mismatch, p.why = "more than one row for a key";
    else
      p.status = check_value_at(p.req.key, PQgetvalue(res, 0, 0), PQgetlength(res, 0, 0), p.why);
    if (p.status == Status::Ok) p.bytes = static_cast<uint32_t>(PQgetlength(res, 0, 0));
    return;
  }
  p.status = Status::Ok;
  if (n > static_cast<int>(p.req.scan_len) || (n > 0 && (PQnfields(res) != 2 || PQgetlength(res, 0, 0) != 8))) {
    p.status = Status::Mismatch, p.why = "a scan answered more rows or other columns than asked";
    return;
  }
  int64_t prev = static_cast<int64_t>(p.req.key) - 1;
  for (int i = 0; i < n && p.status == Status::Ok; ++i) {
    const int64_t k = int8_of(PQgetvalue(res, i, 0));
    if (k <= prev)
      p.status = Status::Mismatch, p.why = "a scan's keys are out of order or out of range";
    else
      p.status = check_value_at(static_cast<uint64_t>(k), PQgetvalue(res, i, 1), PQgetlength(res, i, 1), p.why);
    p.bytes += static_cast<uint32_t>(PQgetlength(res, i, 1));
    prev = k;
  }
}

size_t StoreClient::reap(std::span<Completion> out) {
  details_.clear();
  size_t k = drain_failed(out, 0);
  if (!conn_) return k;
  PGconn* c = conn_->get();
  if (!PQconsumeInput(c)) {
    lost(conn_->error());
    return drain_failed(out, k);
  }
  for (int nulls = 0; conn_ && k < out.size() && !pending_.empty() && !PQisBusy(c) && nulls < 2;) {
    PGresult* res = PQgetResult(c);
    if (!res && ++nulls) continue;  // the end of one statement's results
    nulls = 0;
    Pending& p = pending_.front();
    if (PQresultStatus(res) != PGRES_PIPELINE_SYNC) {
      if (!p.got) check(p, res);
      PQclear(res);
      continue;
    }
    PQclear(res);  // the sync: the statement's transaction is over (committed when it succeeded)
    if (!p.got) p.status = Status::Error, p.why = "no result before the sync";
    details_.push_back(std::move(p.why));
    out[k++] = {p.req.seq, {p.status, p.bytes, details_.back()}};
    pending_.pop_front();
    timed_out_ = false;
  }
  if (conn_ && PQstatus(c) == CONNECTION_BAD) lost(conn_->error());
  return drain_failed(out, k);
}

void StoreClient::abort(std::string_view why) {
  // As the pipelined clients of redis and memcached (conn/client.h): a fresh connection that
  // answers within the timeout takes over, once; a second timeout with no reply between stops
  // the client, so a run never takes one timeout per op.
  std::string reason = std::string(why) + " (" + ep_.where + ")", probe_err;
  std::unique_ptr<Conn> fresh;
  if (ep_.reconnect_max_s > 0) {  // a client that reconnects: its next op opens a fresh connection
    fail_pending(Status::Timeout, reason);
    conn_.reset();
    want_write_ = false;
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
  want_write_ = false;
  if (!conn_) lost_why_ = reason;
}

OpResult StoreClient::run_request(const Request& r) {
  submit_request(r);
  flush();
  Completion c[1];
  const int64_t until = deadline(ep_.timeout_s);
  while (conn_ || !failed_.empty()) {
    if (reap(c) == 1) return c[0].result;
    if (!conn_) continue;
    if (now_ns() >= until) {
      abort("no reply within the timeout");
      continue;
    }
    pollfd p{conn_->fd(), static_cast<short>(POLLIN | (want_write_ ? POLLOUT : 0)), 0};
    if (poll(&p, 1, 100) > 0 && (p.revents & POLLOUT)) flush();
  }
  return {Status::Error, 0, "connection lost"};
}

void StoreClient::lost(const std::string& why) {
  lost_why_ = why + " (" + ep_.where + ")";
  orphan_ = pending_.empty();
  fail_pending(Status::Error, lost_why_);
  conn_.reset();
  want_write_ = false;
}

void StoreClient::fail_pending(Status st, const std::string& why) {
  for (auto& p : pending_) {
    p.status = st, p.why = why;
    failed_.push_back(std::move(p));
  }
  pending_.clear();
}

size_t StoreClient::drain_failed(std::span<Completion> out, size_t k) {
  while (k < out.size() && !failed_.empty()) {
    Pending& f = failed_.front();
    details_.push_back(std::move(f.why));
    out[k++] = {f.req.seq, {f.status == Status::Ok ? Status::Error : f.status, 0, details_.back()}};
    failed_.pop_front();
  }
  return k;
}

}  // namespace mw::pg
