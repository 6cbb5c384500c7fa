// A client of the mariadb store: one connection, blocking (libmariadb answers one statement at a
// time), six prepared statements; every reply checked (rows matched, the values' key and checksum).
#pragma once
#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include "adapters/health.h"
#include "adapters/mariadb/my.h"
#include "api/adapter.h"

namespace mw::mdb {

// The statements of the store on table `t`.
struct Statements {
  std::string read, update, insert, remove, lock, scan;
  // A trace's replay (`trace`): its set an upsert, its add an insert of a key not there (its
  // replace is the update); "" (not prepared) otherwise.
  std::string upsert, add;
  Statements(const std::string& t, bool trace);
};

// A connection and its prepared statements (upsert and add: null unless a trace's).
struct Session {
  std::unique_ptr<Conn> conn;
  std::unique_ptr<Stmt> read, update, insert, remove, lock, scan, upsert, add;
};

class StoreClient final : public Client {
 public:
  // `native`: maps a native op's seq to its request. Connects now (a set-up error if it cannot).
  StoreClient(const Endpoint& ep, const Statements& sql, Health<Session>* health,
              std::function<Request(uint64_t)> native);
  ~StoreClient() override;
  OpResult run(uint64_t seq) override { return run_request(native_(seq)); }
  OpResult run_request(const Request& r) override;
  bool alive() const override { return s_ != nullptr; }

 private:
  std::unique_ptr<Session> open();
  Status one_row(MYSQL_STMT* st, const Request& r, uint32_t& bytes);
  Status scan(const Request& r, uint32_t& bytes);
  Status write(MYSQL_STMT* st, const Request& r);
  Status rmw(const Request& r, uint32_t& bytes);
  // The value of column `col` of the row just fetched (past the buffer: fetched again whole).
  std::string_view value_of(MYSQL_STMT* st, unsigned col, int rc);
  Status checked(uint64_t key, std::string_view v);
  Status stmt_failed(MYSQL_STMT* st) { return failed(mysql_stmt_errno(st), mysql_stmt_error(st)); }
  Status failed(unsigned code, const char* msg);
  Status connection_failed();

  const Endpoint& ep_;
  const Statements& sql_;
  Health<Session>* health_;
  std::function<Request(uint64_t)> native_;
  std::unique_ptr<Session> s_;
  std::string value_, buf_, big_, why_;
  const char* bound_ = nullptr;  // value_'s bytes as the write statements know them
  int64_t key_ = 0, limit_ = 0, got_key_ = 0, t0_ = 0;
  unsigned long len_ = 0, value_len_ = 0;
  my_bool null_ = 0, err_ = 0;
  bool timed_out_ = false;
};

}  // namespace mw::mdb
