#include "adapters/postgres/pg.h"

#include <arpa/inet.h>
#include <poll.h>
#include <pwd.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cctype>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "adapters/postgres/replicas.h"
#include "api/fault.h"
#include "api/options.h"
#include "api/stop.h"
#include "api/wait.h"
#include "durability/durability.h"
#include "durability/service_crash.h"
#include "services/resources.h"
#include "services/services.h"
#include "util/clock.h"
#include "util/status.h"

namespace mw::pg {

std::string binary(const std::string& tool) {
  for (int v = 20; v >= 10; --v) {
    std::string p = "/usr/lib/postgresql/" + std::to_string(v) + "/bin/" + tool;
    if (access(p.c_str(), X_OK) == 0) return p;
  }
  return find_binary(tool);
}

namespace {

// PostgreSQL refuses to run as root: as root, the server runs as the packaged "postgres" user,
// or "nobody" when there is none; as anyone else, as that user.
std::string server_user() {
  if (geteuid() != 0) return "";
  return getpwnam("postgres") ? "postgres" : "nobody";
}

// Unix-socket connections and TCP ones of the superuser need no password; TCP ones of other
// roles do (scram-sha-256), so that wrong credentials can be shown on a server of our own. The
// superuser's replication connections (a replica's, --replicas) need none either.
constexpr const char* kHba =
    "local all all trust\nhost all postgres 127.0.0.1/32 trust\nhost all all 127.0.0.1/32 scram-sha-256\n"
    "local replication postgres trust\nhost replication postgres 127.0.0.1/32 trust\n";

ServiceSpec pg_service(bool fsync) {
  ServiceSpec s;
  s.name = "postgres";
  s.binary = binary("postgres");
  s.user = server_user();
  s.args = {"-D", "{dir}/data",
            "-p", "{port}",
            "-k", "{dir}",
            "-c", "listen_addresses=127.0.0.1",
            "-c", std::string("fsync=") + (fsync ? "on" : "off"),
            "-c", "max_connections=200",
            "-c", "log_min_messages=warning"};
  s.setup = {{binary("initdb"), "-D", "{dir}/data", "-U", "postgres", "--auth=trust", "--no-sync", "-E", "UTF8"},
             {"/bin/sh", "-c", std::string("printf '") + kHba + "' > {dir}/data/pg_hba.conf"}};
  s.start_timeout_s = 30;
  s.probe = [](int port) -> std::string {
    Endpoint ep;
    ep.params = {{"host", "127.0.0.1"}, {"port", std::to_string(port)}, {"user", "postgres"}, {"dbname", "postgres"}};
    ep.timeout_s = 1;
    try {
      Conn c(ep, deadline(1));
      return "";
    } catch (const SetupError& e) {
      return e.what();
    }
  };
  return s;
}

}  // namespace

int64_t deadline(double timeout_s) { return now_ns() + static_cast<int64_t>(timeout_s * 1e9); }

std::string one_line(const char* msg) {
  std::string s = msg ? msg : "";
  for (char& c : s)
    if (c == '\n' || c == '\r' || c == '\t') c = ' ';
  while (!s.empty() && s.back() == ' ') s.pop_back();
  std::string out;
  for (unsigned char c : s.substr(0, 300)) out += c >= 0x20 && c < 0x7f ? static_cast<char>(c) : '?';
  return out;
}

std::string int8_param(int64_t v) {
  uint64_t u = static_cast<uint64_t>(v);
  char b[8];
  for (int i = 7; i >= 0; --i, u >>= 8) b[i] = static_cast<char>(u & 0xff);
  return std::string(b, 8);
}

int64_t int8_of(const char* p) {
  uint64_t u = 0;
  for (int i = 0; i < 8; ++i) u = (u << 8) | static_cast<unsigned char>(p[i]);
  return static_cast<int64_t>(u);
}

Conn::Conn(const Endpoint& ep, int64_t deadline_ns) : where_(ep.where) {
  std::vector<const char*> keys, values;
  for (auto& [k, v] : ep.params) keys.push_back(k.c_str()), values.push_back(v.c_str());
  keys.push_back("application_name"), values.push_back("mwbench");
  keys.push_back(nullptr), values.push_back(nullptr);
  c_ = PQconnectStartParams(keys.data(), values.data(), 1);
  if (!c_) throw SetupError("postgres " + where_ + ": out of memory");
  if (PQstatus(c_) == CONNECTION_BAD) {
    std::string e = error();
    PQfinish(c_);
    throw SetupError("postgres " + where_ + ": " + e);
  }
  for (PostgresPollingStatusType st = PGRES_POLLING_WRITING;;) {
    if (st == PGRES_POLLING_OK) break;
    if (st == PGRES_POLLING_FAILED || !wait(st == PGRES_POLLING_READING ? POLLIN : POLLOUT, deadline_ns)) {
      std::string e = st == PGRES_POLLING_FAILED ? error() : "no answer to the connection within the timeout";
      PQfinish(c_);
      throw_if_stopped_opening("postgres " + where_ + ": connecting");
      throw SetupError("postgres " + where_ + ": " + e);
    }
    st = PQconnectPoll(c_);
  }
  try {
    exec("SET synchronous_commit = " + ep.synchronous_commit, deadline_ns);
  } catch (...) {
    PQfinish(c_);
    throw;
  }
}

Conn::~Conn() { PQfinish(c_); }

std::string Conn::error() const { return one_line(PQerrorMessage(c_)); }

std::string Conn::server_version() const {
  int v = PQserverVersion(c_);
  return std::to_string(v / 10000) + "." + std::to_string(v % 10000);
}

bool Conn::wait(short events, int64_t deadline_ns) { return poll_until(PQsocket(c_), events, deadline_ns) > 0; }

Result Conn::exec(const std::string& sql, int64_t deadline_ns, const std::vector<std::string>& params, bool binary) {
  std::vector<const char*> vals;
  for (auto& p : params) vals.push_back(p.c_str());
  const int sent = params.empty() && !binary
                       ? PQsendQuery(c_, sql.c_str())
                       : PQsendQueryParams(c_, sql.c_str(), static_cast<int>(vals.size()), nullptr, vals.data(),
                                           nullptr, nullptr, binary ? 1 : 0);
  if (!sent) throw SetupError("postgres " + where_ + ": " + error() + " (" + sql.substr(0, 80) + ")");
  return collect(sql, deadline_ns);
}

void Conn::prepare(const std::string& name, const std::string& sql, int nparams, int64_t deadline_ns) {
  if (!PQsendPrepare(c_, name.c_str(), sql.c_str(), nparams, nullptr))
    throw SetupError("postgres " + where_ + ": " + error() + " (" + sql.substr(0, 80) + ")");
  collect(sql, deadline_ns);
}

void Conn::copy_in(const std::string& sql, const std::string& data, int64_t deadline_ns) {
  if (!PQsendQuery(c_, sql.c_str())) throw SetupError("postgres " + where_ + ": " + error());
  while (PQflush(c_) == 1)
    if (!wait(POLLOUT, deadline_ns)) throw SetupError("postgres " + where_ + ": could not send within the timeout");
  while (PQisBusy(c_)) {
    if (!wait(POLLIN, deadline_ns)) throw SetupError("postgres " + where_ + ": no answer within the timeout (COPY)");
    if (!PQconsumeInput(c_)) throw SetupError("postgres " + where_ + ": " + error());
  }
  Result r(PQgetResult(c_), PQclear);
  if (!r || PQresultStatus(r.get()) != PGRES_COPY_IN)
    throw SetupError("postgres " + where_ + ": " + (r ? one_line(PQresultErrorMessage(r.get())) : error()) + " (COPY)");
  if (PQputCopyData(c_, data.data(), static_cast<int>(data.size())) != 1 || PQputCopyEnd(c_, nullptr) != 1)
    throw SetupError("postgres " + where_ + ": " + error() + " (COPY)");
  collect(sql, deadline_ns);
}

// The results of what was sent, to the end; the last one is returned, the first error thrown.
Result Conn::collect(const std::string& what, int64_t deadline_ns) {
  Result last(nullptr, PQclear);
  std::string failed;
  for (;;) {
    while (PQflush(c_) == 1)
      if (!wait(POLLOUT, deadline_ns)) throw SetupError("postgres " + where_ + ": could not send within the timeout");
    while (PQisBusy(c_)) {
      if (!wait(POLLIN, deadline_ns))
        throw SetupError("postgres " + where_ + ": no answer within the timeout (" + what.substr(0, 80) + ")");
      if (!PQconsumeInput(c_)) throw SetupError("postgres " + where_ + ": " + error());
    }
    PGresult* r = PQgetResult(c_);
    if (!r) break;
    ExecStatusType st = PQresultStatus(r);
    if (st == PGRES_FATAL_ERROR && failed.empty()) failed = one_line(PQresultErrorMessage(r));
    last.reset(r);
    if (st == PGRES_COPY_IN || st == PGRES_COPY_OUT || st == PGRES_COPY_BOTH)
      throw SetupError("postgres " + where_ + ": an unexpected COPY (" + what.substr(0, 80) + ")");
  }
  if (!failed.empty()) throw SetupError("postgres " + where_ + ": " + failed + " (" + what.substr(0, 80) + ")");
  return last;
}

std::vector<OptionSpec> option_specs() {
  using O = PgOptions;
  return {
      opt(&O::host, {.name = "host", .help = "an external server (default: start a PostgreSQL in a temp dir)"}),
      opt(&O::port, {.name = "port", .help = "port of the external server", .min = 1, .max = 65535}),
      opt(&O::user, {.name = "user", .help = "role to connect as (managed server: postgres)"}),
      opt(&O::database, {.name = "database", .help = "database to connect to (managed server: postgres)"}),
      opt(&O::password_env, {.name = "password-env",
                             .help = "environment variable holding the password "
                                     "(never printed)"}),
      opt(&O::conninfo, {.name = "conninfo",
                         .help = "libpq conninfo string or postgresql:// URI of an external "
                                 "server (or env:VAR, file:PATH holding it); --host, --port, "
                                 "--user, --database override it",
                         .secret = true}),
      opt(&O::synchronous_commit, {.name = "synchronous-commit",
                                   .help = "synchronous_commit of every connection",
                                   .list = true,
                                   .choices = {"on", "off", "local", "remote_write", "remote_apply"}}),
      opt(&O::unlogged, {.name = "unlogged", .help = "an UNLOGGED table (no WAL; emptied by a crash)"}),
      opt(&O::fsync, {.name = "fsync", .help = "fsync of the managed server (off: nothing is synced to disk)"}),
      opt(&O::table, {.name = "table",
                      .help = "use this table (created if missing, and loaded for select and "
                              "update; kept afterwards; columns "
                              "k bigint primary key, v bytea) instead of a fresh one per job"}),
      opt(&O::batch, {.name = "batch",
                      .help = "queue consume: rows taken and deleted per transaction",
                      .list = true,
                      .min = 1,
                      .max = 10000,
                      .used_by = {"consume"}}),
      opt(&O::poll_ms, {.name = "poll-ms",
                        .help = "queue consume: pause between looks at an empty table (ms)",
                        .min = 0,
                        .max = 1000}),
      opt(&O::queues, {.name = "queues",
                       .help = "queue: tables per job; message i goes to table i mod N",
                       .min = 1,
                       .max = 1000,
                       .used_by = {"produce", "consume", "roundtrip"}}),
      opt(&O::replicas, {.name = "replicas",
                         .help = "streaming replicas of the managed server (pg_basebackup, hot standby); mwbench "
                                 "promotes one when the primary stops answering (--fault kill-primary)",
                         .min = 0,
                         .max = 8,
                         .used_by = {"select", "update", "insert"}}),
      opt(&O::sync_replicas, {.name = "sync-replicas",
                              .help = "of the --replicas, how many a commit waits for (synchronous_standby_names "
                                      "'ANY K (*)'; default 1 with --synchronous-commit remote_write or "
                                      "remote_apply, else 0: asynchronous)",
                              .min = 0,
                              .max = 8}),
  };
}

void signal_server(pid_t postmaster, int sig) {
  if (postmaster <= 0) return;
  const std::vector<pid_t> children = children_of(postmaster);
  if (sig == SIGKILL || sig == SIGSTOP) ::kill(postmaster, sig);  // first: it starts no more children
  for (pid_t c : children) ::kill(c, sig);
  if (sig != SIGKILL && sig != SIGSTOP) ::kill(postmaster, sig);
}

std::string where_of(const Endpoint& ep) { return ep.where; }

void point_at(Endpoint& ep, const Service& svc) {
  // Its unix socket, or over TCP when mwbench's proxy relays it (--fault slow, cut).
  const bool relayed = svc.port() != svc.server_port();
  ep.params = {{"host", relayed ? std::string("127.0.0.1") : svc.dir()},
               {"port", std::to_string(svc.port())},
               {"user", "postgres"},
               {"dbname", "postgres"}};
  ep.where = "127.0.0.1:" + std::to_string(svc.port()) + " (managed)";
}

PgCrash::PgCrash(Server& s, std::function<std::vector<WriteState>(std::span<const uint64_t>)> check, std::string note)
    : ServiceCrash(
          s.svc, [&s](int) { point_at(s.ep, *s.svc); }, std::move(check), std::move(note),
          [](pid_t postmaster) { signal_server(postmaster, SIGKILL); }),  // the backends run outside its group
      s_(s) {
  if (s_.set) replicates(this);
}

bool PgCrash::pause(bool on) {
  if (s_.svc->pid() <= 0) return false;
  signal_server(s_.svc->pid(), on ? SIGSTOP : SIGCONT);
  return true;
}

void PgCrash::kill_primary() { s_.set->kill_primary(); }

void PgCrash::switchover() { s_.set->switch_over(std::max(30.0, s_.ep.timeout_s)); }

std::string PgCrash::primary() { return s_.set ? s_.set->primary() : ""; }

std::unique_ptr<PgCrash> crash_of(Server& s, std::function<std::vector<WriteState>(std::span<const uint64_t>)> check,
                                  std::string note) {
  return std::make_unique<PgCrash>(s, std::move(check), std::move(note));
}

std::unique_ptr<Conn> connect_settled(const Server& s) {
  const int64_t until = deadline(s.ep.timeout_s);
  for (;;) {
    try {
      return std::make_unique<Conn>(s.ep, until);
    } catch (const SetupError& e) {
      if (!s.set || now_ns() + 100'000'000 >= until) {
        const std::string why = s.set ? s.set->failover_error() : "";
        throw SetupError(std::string(e.what()) + (why.empty() ? "" : " (" + why + ")"));
      }
    }
    throw_if_stopped("waiting for the promoted replica");
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
}

void show_durability(Conn& c, Info& info, int64_t deadline_ns) {
  for (const char* k : {"fsync", "wal_writer_delay", "full_page_writes", "synchronous_standby_names"}) {
    std::string v = one_line(PQgetvalue(c.exec(std::string("SHOW ") + k, deadline_ns).get(), 0, 0));
    if (!v.empty()) info[k] = std::move(v);  // no synchronous standbys: said by its absence
  }
}

int sync_replicas_of(const PgOptions& o) {
  if (o.replicas > 0 && o.sync_replicas == 0 && o.synchronous_commit.rfind("remote_", 0) == 0) return 1;
  return o.sync_replicas;
}

void check_replicated(const Job& job) {
  const auto o = options_of<PgOptions>(job);
  const bool replicated = o.replicas > 0;
  for (const FaultSpec& f : job.faults) {
    const bool to_replica = f.kind == FaultKind::KillPrimary || f.kind == FaultKind::Switchover;
    if (to_replica && !replicated)
      throw SetupError("postgres: --fault " + one_line(f.text.c_str()) +
                       " needs --replicas N (a replica mwbench promotes)");
    if (!to_replica && replicated)
      throw SetupError("postgres: --fault " + one_line(f.text.c_str()) +
                       ": a replicated set-up takes kill-primary and switchover");
  }
  if (!job.faults.empty() && (job.op == "produce" || job.op == "consume" || job.op == "roundtrip"))
    throw SetupError("postgres: --fault runs on the store's ops (insert, select, update, --mix), not the queue op " +
                     job.op);
  if (o.sync_replicas > o.replicas)
    throw SetupError("postgres: --sync-replicas " + std::to_string(o.sync_replicas) + " needs --replicas " +
                     std::to_string(o.sync_replicas) + " or more");
  if (!replicated) return;
  if (!o.host.empty() || !o.conninfo.empty())
    throw SetupError("postgres: --replicas starts a replicated set-up on this machine: drop --host/--conninfo");
  if (durability_options_of(job).crash != CrashKind::None)
    throw SetupError("postgres: --crash restarts one server: a replicated set-up takes --fault kill-primary");
  if (!o.fsync)
    throw SetupError(
        "postgres: --replicas with --fsync off: a replica copies a primary that syncs nothing; drop "
        "--fsync off");
  if (o.unlogged) throw SetupError("postgres: --replicas with --unlogged: an UNLOGGED table is not replicated");
}

Contract contract_of(const PgOptions& o, const Info& info) {
  const std::string sc = "synchronous_commit=" + o.synchronous_commit;
  if (o.unlogged) return Contract{ContractKind::Memory, 0, "UNLOGGED table: not in the WAL, emptied by a crash"};
  // A commit waits for the synchronous standbys (on, remote_write, remote_apply) when the server
  // names some: the managed set-up's --sync-replicas, or an external server's own setting.
  auto names = info.find("synchronous_standby_names");
  const bool standbys = info.empty() ? o.host.empty() && o.conninfo.empty() && sync_replicas_of(o) > 0
                                     : names != info.end();  // what the server said (before: the options)
  const bool waits = o.synchronous_commit == "on" || o.synchronous_commit.rfind("remote_", 0) == 0;
  if (standbys && waits) {
    const char* how = o.synchronous_commit == "remote_apply"   ? "applied on"
                      : o.synchronous_commit == "remote_write" ? "written (not yet flushed) on"
                                                               : "flushed on";
    const std::string who =
        names != info.end() && !names->second.empty() ? names->second : std::to_string(sync_replicas_of(o));
    return Contract{ContractKind::Replicated, 0,
                    sc + ", synchronous_standby_names '" + who + "': each commit " + how +
                        " the synchronous replicas before it is acknowledged"};
  }
  auto fsync = info.find("fsync");
  const bool unsynced = (fsync != info.end() && fsync->second == "off") || (info.empty() && !o.fsync && o.host.empty());
  auto d = info.find("wal_writer_delay");
  const double delay = d == info.end() ? 0.2 : std::atof(d->second.c_str()) / 1000.0;
  if (unsynced && o.synchronous_commit == "off")
    return Contract{ContractKind::Memory, 0,
                    "fsync=off, " + sc +
                        ": acknowledged before its WAL is written; the WAL "
                        "writer writes it within 3 x wal_writer_delay, never synced"};
  if (unsynced) return Contract{ContractKind::OsBuffer, 0, "fsync=off: WAL written at commit, never synced"};
  if (o.synchronous_commit == "off")
    return Contract{ContractKind::PeriodicFsync, 3 * delay,
                    sc + ": acknowledged before its WAL is flushed; the WAL writer flushes within 3 x "
                         "wal_writer_delay (a kill can lose those commits too)"};
  return Contract{ContractKind::FsyncPerAck, 0, sc + ": the WAL is flushed before each commit is acknowledged"};
}

ServiceSpec service_spec(bool fsync) { return pg_service(fsync); }

Server server_of(const Job& job, bool own, const std::string& data) {
  const auto o = options_of<PgOptions>(job);
  Server s;
  s.ep.timeout_s = job.timeout_s;
  s.ep.synchronous_commit = o.synchronous_commit;
  s.ep.reconnect_max_s = job.reconnect_backoff_s;
  const bool external = !o.host.empty() || !o.conninfo.empty();
  if (!external) {
    if (!o.user.empty() || !o.database.empty() || job.has("port"))
      throw SetupError("postgres: --user, --database and --port name an external server: give --host or --conninfo");
    ServiceSpec spec = pg_service(o.fsync);
    if (!data.empty()) move_data_dir(spec, "{dir}/data", data);
    const std::string key = std::string("postgres:fsync=") + (o.fsync ? "on" : "off");
    if (o.replicas > 0) {  // a set of its own: the primary, its replicas, mwbench watching them
      const std::vector<std::string> more = ReplicaSet::primary_args(sync_replicas_of(o));
      spec.args.insert(spec.args.end(), more.begin(), more.end());
      s.svc = std::make_shared<Service>(spec);
      s.set = std::make_shared<ReplicaSet>(s.svc, o.fsync, o.replicas, sync_replicas_of(o), job.timeout_s);
      s.set->point(s.ep);
      return s;
    }
    s.svc = own ? std::make_shared<Service>(spec) : shared_service(key, spec);
    point_at(s.ep, *s.svc);
    return s;
  }
  if (job.has("fsync"))
    throw SetupError(
        "postgres: --fsync sets the managed server's fsync; an external server "
        "keeps its own (drop --host/--conninfo, or --fsync)");
  if (!o.conninfo.empty()) s.ep.params.push_back({"dbname", o.conninfo});  // expanded: its keywords apply
  if (!o.host.empty()) s.ep.params.push_back({"host", o.host});
  if (!o.host.empty() || job.has("port")) s.ep.params.push_back({"port", std::to_string(o.port)});
  if (!o.user.empty()) s.ep.params.push_back({"user", o.user});
  if (!o.database.empty()) s.ep.params.push_back({"dbname", o.database});
  if (const char* pw = std::getenv(o.password_env.c_str()); pw) s.ep.params.push_back({"password", pw});
  s.ep.where = o.host.empty() ? "conninfo" : o.host + ":" + std::to_string(o.port);
  return s;
}

std::string unavailable(const Job& job) {
  const auto o = options_of<PgOptions>(job);
  if (!o.host.empty() || !o.conninfo.empty()) return "";
  if (binary("postgres").empty() || binary("initdb").empty())
    return "PostgreSQL is not installed (scripts/setup installs it), and no --host or --conninfo was given";
  return "";
}

std::string table_name(const PgOptions& o, const std::string& stem) {
  if (!o.table.empty()) {
    const bool plain = o.table.size() <= 63 &&
                       o.table.find_first_not_of("abcdefghijklmnopqrstuvwxyz0123456789_") == std::string::npos &&
                       !std::isdigit(static_cast<unsigned char>(o.table[0]));
    if (!plain)
      throw SetupError("postgres: --table " + one_line(o.table.c_str()) +
                       ": a plain lower-case name (a-z, 0-9, _; not starting with a digit; up to 63)");
    return o.table;
  }
  static std::atomic<int> n{0};
  return stem + "_" + std::to_string(getpid()) + "_" + std::to_string(++n);
}

}  // namespace mw::pg
