#include "adapters/mariadb/my.h"

#include <poll.h>
#include <unistd.h>

#include <atomic>
#include <cctype>
#include <cerrno>
#include <climits>
#include <cmath>
#include <cstdlib>
#include <mutex>

#include "api/options.h"
#include "api/stop.h"
#include "api/wait.h"
#include "services/services.h"
#include "util/clock.h"
#include "util/status.h"

namespace mw::mdb {

namespace {

// libmariadb's global state, once, before any thread makes a connection.
void library_init() {
  static std::once_flag once;
  std::call_once(once, [] { mysql_library_init(0, nullptr, nullptr); });
}

unsigned whole_seconds(double s) { return static_cast<unsigned>(std::max(1.0, std::ceil(s))); }

// The managed server: its settings are arguments, so a restart (--crash kill) keeps them. As
// root, mariadbd needs --user=root; as anyone else it runs as that user.
ServiceSpec my_service(const MyOptions& o) {
  ServiceSpec s;
  s.name = "mariadbd";
  s.binary = find_binary("mariadbd");
  s.args = {"--no-defaults",
            "--datadir={dir}/data",
            "--socket={dir}/mysqld.sock",
            "--port={port}",
            "--bind-address=127.0.0.1",
            "--pid-file={dir}/mysqld.pid",
            "--skip-name-resolve",
            "--max-connections=300",
            "--innodb-buffer-pool-size=256M",
            "--innodb-flush-log-at-trx-commit=" + std::to_string(o.flush_log_at_trx_commit)};
  if (o.sync_binlog) {
    s.args.insert(s.args.end(),
                  {"--log-bin={dir}/binlog", "--server-id=1", "--sync-binlog=" + std::to_string(*o.sync_binlog)});
  } else {
    s.args.push_back("--skip-log-bin");
  }
  std::vector<std::string> install = {find_binary("mariadb-install-db"), "--no-defaults",
                                      "--auth-root-authentication-method=normal", "--datadir={dir}/data",
                                      "--skip-test-db"};
  if (geteuid() == 0) s.args.push_back("--user=root"), install.push_back("--user=root");
  s.setup = {install};
  s.start_timeout_s = 60;
  s.probe = [](int port) -> std::string {
    Endpoint ep;
    ep.host = "127.0.0.1", ep.port = port, ep.user = "root", ep.timeout_s = 1;
    try {
      Conn c(ep);
      c.exec("SELECT 1");
      return "";
    } catch (const SetupError& e) {
      return e.what();
    }
  };
  return s;
}

}  // namespace

std::string one_line(const char* msg) {
  std::string out;
  for (const char* p = msg ? msg : ""; *p && out.size() < 300; ++p) {
    const unsigned char c = static_cast<unsigned char>(*p);
    out += c >= 0x20 && c < 0x7f ? static_cast<char>(c) : ' ';
  }
  while (!out.empty() && out.back() == ' ') out.pop_back();
  return out;
}

Conn::Conn(const Endpoint& ep) : where_(ep.where) {
  library_init();
  c_ = mysql_init(nullptr);
  if (!c_) throw SetupError("mariadb " + where_ + ": out of memory");
  const unsigned t = whole_seconds(ep.timeout_s);
  mysql_optionsv(c_, MYSQL_OPT_CONNECT_TIMEOUT, &t);
  mysql_optionsv(c_, MYSQL_OPT_READ_TIMEOUT, &t);
  mysql_optionsv(c_, MYSQL_OPT_WRITE_TIMEOUT, &t);
  // Connect with the library's non-blocking calls, so that a stop ends a connection the server
  // never answers (within OpeningScope) instead of waiting out the timeout; the queries after it
  // are the blocking calls (the library allows both on one connection).
  mysql_optionsv(c_, MYSQL_OPT_NONBLOCK, 0);
  auto opt = [](const std::string& s) { return s.empty() ? nullptr : s.c_str(); };
  MYSQL* ok = nullptr;
  int st =
      mysql_real_connect_start(&ok, c_, ep.socket.empty() ? opt(ep.host) : "localhost", opt(ep.user), opt(ep.password),
                               opt(ep.database), static_cast<unsigned>(ep.port), opt(ep.socket), CLIENT_FOUND_ROWS);
  while (st != 0) st = mysql_real_connect_cont(&ok, c_, wait_for(st));
  if (!ok) {
    const std::string e = error();
    mysql_close(c_);
    throw SetupError("mariadb " + where_ + ": " + e);
  }
}

int Conn::wait_for(int st) {
  short events = 0;
  if (st & MYSQL_WAIT_READ) events |= POLLIN;
  if (st & MYSQL_WAIT_WRITE) events |= POLLOUT;
  if (st & MYSQL_WAIT_EXCEPT) events |= POLLPRI;
  const int64_t deadline =
      st & MYSQL_WAIT_TIMEOUT ? now_ns() + int64_t{mysql_get_timeout_value_ms(c_)} * 1000000 : INT64_MAX;
  const int r = poll_until(mysql_get_socket(c_), events, deadline);
  if (r < 0) return MYSQL_WAIT_EXCEPT;
  if (r == 0) {
    if (stop_ends_opening()) {
      mysql_close(c_);
      throw_if_stopped_opening("mariadb " + where_ + ": connecting");
    }
    return MYSQL_WAIT_TIMEOUT;
  }
  return (r & (POLLIN | POLLHUP | POLLERR) ? MYSQL_WAIT_READ : 0) | (r & (POLLOUT | POLLERR) ? MYSQL_WAIT_WRITE : 0) |
         (r & POLLPRI ? MYSQL_WAIT_EXCEPT : 0);
}

Conn::~Conn() { mysql_close(c_); }

std::string Conn::error() const { return one_line(mysql_error(c_)) + " (" + std::to_string(mysql_errno(c_)) + ")"; }

void Conn::exec(const std::string& sql) {
  if (mysql_real_query(c_, sql.data(), sql.size()) != 0)
    throw SetupError("mariadb " + where_ + ": " + error() + " (" + one_line(sql.substr(0, 80).c_str()) + ")");
  if (MYSQL_RES* r = mysql_store_result(c_)) mysql_free_result(r);
}

std::vector<std::vector<std::string>> Conn::rows(const std::string& sql) {
  if (mysql_real_query(c_, sql.data(), sql.size()) != 0)
    throw SetupError("mariadb " + where_ + ": " + error() + " (" + one_line(sql.substr(0, 80).c_str()) + ")");
  std::unique_ptr<MYSQL_RES, void (*)(MYSQL_RES*)> r(mysql_store_result(c_), mysql_free_result);
  if (!r) throw SetupError("mariadb " + where_ + ": " + error() + " (" + one_line(sql.substr(0, 80).c_str()) + ")");
  std::vector<std::vector<std::string>> out;
  const unsigned n = mysql_num_fields(r.get());
  while (MYSQL_ROW row = mysql_fetch_row(r.get())) {
    const unsigned long* len = mysql_fetch_lengths(r.get());
    auto& o = out.emplace_back();
    for (unsigned i = 0; i < n; ++i) o.emplace_back(row[i] ? std::string(row[i], len[i]) : std::string());
  }
  return out;
}

Stmt::Stmt(Conn& c, const std::string& sql) : s_(mysql_stmt_init(c.get())) {
  if (!s_ || mysql_stmt_prepare(s_, sql.data(), sql.size()) != 0) {
    const std::string e = s_ ? one_line(mysql_stmt_error(s_)) : c.error();
    if (s_) mysql_stmt_close(s_);
    throw SetupError("mariadb: cannot prepare " + sql.substr(0, 80) + ": " + e);
  }
}

std::vector<OptionSpec> option_specs() {
  using O = MyOptions;
  return {
      opt(&O::host, {.name = "host", .help = "an external server (default: start a mariadbd in a temp dir)"}),
      opt(&O::port, {.name = "port", .help = "port of the external server", .min = 1, .max = 65535}),
      opt(&O::socket, {.name = "socket",
                       .help = "unix socket of an external server on this machine (instead of "
                               "--host)"}),
      opt(&O::user, {.name = "user", .help = "user to connect as (managed server: root)"}),
      opt(&O::database, {.name = "database", .help = "database of the table (managed server: mwbench)"}),
      opt(&O::password_env, {.name = "password-env",
                             .help = "environment variable holding the password "
                                     "(never printed)"}),
      opt(&O::flush_log_at_trx_commit,
          {.name = "flush-log-at-trx-commit",
           .help =
               "innodb_flush_log_at_trx_commit of the managed server: 1 "
               "flush the redo log at each commit, 2 write it at commit and flush it each second, 0 both each second",
           .list = true,
           .min = 0,
           .max = 2}),
      opt(&O::sync_binlog, {.name = "sync-binlog",
                            .help = "the managed server writes a binary log, with this "
                                    "sync_binlog (1: synced at each commit; 0: by the OS); "
                                    "not given: no binary log",
                            .min = 0,
                            .max = 1}),
      opt(&O::table, {.name = "table",
                      .help = "use this table (created if missing, and loaded for select and "
                              "update; kept afterwards; columns k bigint primary key, v mediumblob) "
                              "instead of a fresh one per job"}),
  };
}

void point_at(Endpoint& ep, const Service& svc) {
  ep.host = "127.0.0.1", ep.port = svc.port(), ep.socket = svc.dir() + "/mysqld.sock";
  ep.user = "root", ep.password.clear(), ep.database = "mwbench";
  ep.where = "127.0.0.1:" + std::to_string(svc.port()) + " (managed)";
}

Server server_of(const Job& job, bool own, const std::string& root) {
  const auto o = options_of<MyOptions>(job);
  Server s;
  s.ep.timeout_s = job.timeout_s;
  if (o.host.empty() && o.socket.empty()) {
    if (!o.user.empty() || !o.database.empty() || job.has("port"))
      throw SetupError("mariadb: --user, --database and --port name an external server: give --host or --socket");
    ServiceSpec spec = my_service(o);
    if (!root.empty()) relocate(spec, "{dir}/data", root + "/data"), relocate(spec, "{dir}/binlog", root + "/binlog");
    const std::string key = "mariadb:flush=" + std::to_string(o.flush_log_at_trx_commit) +
                            ",binlog=" + (o.sync_binlog ? std::to_string(*o.sync_binlog) : "off");
    s.svc = own ? std::make_shared<Service>(spec) : shared_service(key, spec);
    point_at(s.ep, *s.svc);
    Endpoint bare = s.ep;
    bare.database.clear();
    Conn(bare).exec("CREATE DATABASE IF NOT EXISTS mwbench");
    return s;
  }
  for (const char* k : {"flush-log-at-trx-commit", "sync-binlog"})
    if (job.has(k))
      throw SetupError(std::string("mariadb: --") + k +
                       " sets the managed server's setting; an external server "
                       "keeps its own (drop --host/--socket, or --" +
                       k + ")");
  if (o.database.empty()) throw SetupError("mariadb: an external server needs --database (where the table is)");
  s.ep.host = o.host, s.ep.port = o.port, s.ep.socket = o.socket, s.ep.user = o.user, s.ep.database = o.database;
  if (const char* pw = std::getenv(o.password_env.c_str()); pw) s.ep.password = pw;
  s.ep.where = o.socket.empty() ? o.host + ":" + std::to_string(o.port) : o.socket;
  return s;
}

std::string unavailable(const Job& job) {
  const auto o = options_of<MyOptions>(job);
  if (!o.host.empty() || !o.socket.empty()) return "";
  if (find_binary("mariadbd").empty() || find_binary("mariadb-install-db").empty())
    return "MariaDB is not installed (scripts/setup installs mariadb-server), and no --host or --socket was given";
  return "";
}

std::string table_name(const MyOptions& o, const std::string& stem) {
  if (!o.table.empty()) {
    const bool plain = o.table.size() <= 64 &&
                       o.table.find_first_not_of("abcdefghijklmnopqrstuvwxyz0123456789_") == std::string::npos &&
                       !std::isdigit(static_cast<unsigned char>(o.table[0]));
    if (!plain)
      throw SetupError("mariadb: --table " + one_line(o.table.c_str()) +
                       ": a plain lower-case name (a-z, 0-9, _; not starting with a digit; up to 64)");
    return o.table;
  }
  static std::atomic<int> n{0};
  return stem + "_" + std::to_string(getpid()) + "_" + std::to_string(++n);
}

}  // namespace mw::mdb
