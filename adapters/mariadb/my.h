// What the mariadb store's pieces share: the options, a libmariadb connection whose every step
// has a timeout, and the one managed MariaDB (mariadb-install-db and mariadbd in a temp dir, a
// free loopback port, its unix socket in that dir; no system service touched).
#pragma once
#include <mysql.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "api/adapter.h"
#include "services/services.h"

namespace mw::mdb {

// The options of `mwbench mariadb`, typed (options.h); the member initialisers are the defaults.
struct MyOptions {
  std::string host;  // "": start a mariadbd in a temp dir
  int port = 3306;
  std::string socket;    // an external server's unix socket (instead of --host)
  std::string user;      // "": root on the managed server, the login name otherwise
  std::string database;  // "": mwbench on the managed server
  std::string password_env = "MYSQL_PWD";
  int flush_log_at_trx_commit = 1;  // the managed server's innodb_flush_log_at_trx_commit
  std::optional<int> sync_binlog;   // given: the managed server writes a binary log, synced so
  std::string table;                // "": a fresh table per job, dropped after it
};
std::vector<OptionSpec> option_specs();

// Where the job connects, and what to call it in messages.
struct Endpoint {
  std::string host, socket, user, password, database;
  int port = 3306;
  std::string where;  // "127.0.0.1:3306", "127.0.0.1:41234 (managed)"
  double timeout_s = 5;
};

// One connection: connect, read and write timeouts of the job's timeout (whole seconds, at least
// one: libmariadb's unit), CLIENT_FOUND_ROWS (an update's count is of the rows it matched).
// Errors are SetupError with the server's message (never the password).
class Conn {
 public:
  explicit Conn(const Endpoint& ep);
  ~Conn();
  Conn(const Conn&) = delete;
  Conn& operator=(const Conn&) = delete;
  MYSQL* get() const { return c_; }
  // Runs one statement; SetupError on an error.
  void exec(const std::string& sql);
  // Runs a query and returns its rows (NULL as ""); SetupError on an error.
  std::vector<std::vector<std::string>> rows(const std::string& sql);
  std::string error() const;  // the last message, one line, with its number
  std::string server_version() const { return mysql_get_server_info(c_); }

 private:
  // One wait of the non-blocking connect for what status ST asks; the status to continue with.
  // Interrupted (the connection closed) when a stop ends the opening.
  int wait_for(int st);

  MYSQL* c_ = nullptr;
  std::string where_;
};

// A prepared statement of a connection; SetupError when the server refuses it.
class Stmt {
 public:
  Stmt(Conn& c, const std::string& sql);
  ~Stmt() { mysql_stmt_close(s_); }
  Stmt(const Stmt&) = delete;
  Stmt& operator=(const Stmt&) = delete;
  MYSQL_STMT* get() const { return s_; }

 private:
  MYSQL_STMT* s_ = nullptr;
};

// The job's endpoint: the managed server (started or shared) or the external one.
struct Server {
  Endpoint ep;
  std::shared_ptr<Service> svc;  // null when external
  bool managed() const { return svc != nullptr; }
};
// Starts (or shares) the managed server unless --host or --socket; `own`: a server of the job's alone (a
// crash job's, which is killed). The managed server's database exists when it returns. `root`: the
// directory its data and binlog go in (--crash power: the page-cache layer's) instead of its temp dir.
Server server_of(const Job& job, bool own, const std::string& root = "");
// Where a managed service's socket is (again after a restart).
void point_at(Endpoint& ep, const Service& svc);
// The server's own events for the timeline (events.cpp), over a connection of the probe's own.
std::unique_ptr<EventProbe> event_probe(const Endpoint& ep);
// "" when this machine can run the job (MariaDB's binaries, or an external server).
std::string unavailable(const Job& job);
// A table name of this job: --table, or a fresh one ("mwbench_kv_<pid>_<n>").
std::string table_name(const MyOptions& o, const std::string& stem);
// One line of a message: at most 300 printable bytes.
std::string one_line(const char* msg);

}  // namespace mw::mdb
