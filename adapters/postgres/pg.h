// What the postgres store (store.cpp) and the postgres queue (queue.cpp) share: the options, a
// libpq connection whose every step has a deadline, and the one managed PostgreSQL (initdb and
// postgres as a non-root user in a temp dir, a free port, its unix socket in that dir).
#pragma once
#include <libpq-fe.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "api/adapter.h"
#include "api/contract.h"
#include "durability/service_crash.h"
#include "services/services.h"

namespace mw::pg {

// The options of `mwbench postgres`, typed (options.h); the member initialisers are the defaults.
struct PgOptions {
  std::string host;  // "": start a PostgreSQL in a temp dir
  int port = 5432;
  std::string user;      // "": postgres on the managed server, libpq's default otherwise
  std::string database;  // "": postgres on the managed server, libpq's default otherwise
  std::string password_env = "PGPASSWORD";
  std::string conninfo;  // a libpq conninfo string or URI; --host/--port/--user/--database override it
  std::string synchronous_commit = "on";
  bool unlogged = false;
  bool fsync = true;      // the managed server's fsync
  std::string table;      // "": a fresh table per job, dropped after it
  int64_t batch = 1;      // queue consume: rows taken per transaction
  double poll_ms = 1;     // queue consume: pause between looks at an empty table
  int64_t queues = 1;     // queue: tables per job; message i goes to table i mod N
  int replicas = 0;       // streaming replicas of the managed server (replicas.h)
  int sync_replicas = 0;  // of them, synchronous (synchronous_standby_names 'ANY K (*)')
};
std::vector<OptionSpec> option_specs();

// Where the job connects: libpq keywords, and what to call it in messages.
struct Endpoint {
  std::vector<std::pair<std::string, std::string>> params;  // conninfo (expanded) first
  std::string where;                                        // "127.0.0.1:5432", "managed /tmp/mwbench-svc-x:5433"
  double timeout_s = 5;
  std::string synchronous_commit = "on";
  // --reconnect-backoff: a client whose connection is lost connects again, waiting 10 ms before the
  // first try and twice as long after each failed one, up to this (seconds); 0: it stops.
  double reconnect_max_s = 0;
};

// One connection. Connecting and every statement of set-up are bounded by the deadline given;
// errors are SetupError with the server's message (never the password).
class Conn {
 public:
  Conn(const Endpoint& ep, int64_t deadline_ns);
  ~Conn();
  Conn(const Conn&) = delete;
  Conn& operator=(const Conn&) = delete;
  PGconn* get() const { return c_; }
  int fd() const { return PQsocket(c_); }
  // Runs `sql` (one statement or several) and returns the last result; SetupError on an error
  // or when no answer comes before the deadline.
  // `binary`: results in the binary format (bytea as its bytes, int8 as 8 bytes).
  std::unique_ptr<PGresult, void (*)(PGresult*)> exec(const std::string& sql, int64_t deadline_ns,
                                                      const std::vector<std::string>& params = {}, bool binary = false);
  // The results of a query already sent (PQsendQueryPrepared): as exec().
  std::unique_ptr<PGresult, void (*)(PGresult*)> exec_sent(const std::string& what, int64_t deadline_ns) {
    return collect(what, deadline_ns);
  }
  // A prepared statement of this connection, named `name`.
  void prepare(const std::string& name, const std::string& sql, int nparams, int64_t deadline_ns);
  // COPY ... FROM STDIN with `data` (COPY's text format).
  void copy_in(const std::string& sql, const std::string& data, int64_t deadline_ns);
  std::string error() const;  // the connection's last message, one line
  std::string server_version() const;

 private:
  bool wait(short events, int64_t deadline_ns);
  std::unique_ptr<PGresult, void (*)(PGresult*)> collect(const std::string& what, int64_t deadline_ns);
  PGconn* c_ = nullptr;
  std::string where_;
};
using Result = std::unique_ptr<PGresult, void (*)(PGresult*)>;

class ReplicaSet;
// The job's endpoint: the managed server (started or shared) or the external one.
struct Server {
  Endpoint ep;
  std::shared_ptr<Service> svc;     // null when external
  std::shared_ptr<ReplicaSet> set;  // --replicas: svc is its first primary, ep names every node
  bool managed() const { return svc != nullptr; }
};
// Starts (or shares) the managed server unless --host/--conninfo; `own`: a server of the job's
// alone (a crash or fault job's, which is killed; a replicated set-up's, always). `data`: its data directory there
// (made here, owned by the server's user; --crash power puts it on the page-cache layer) instead of one in its temp
// dir.
Server server_of(const Job& job, bool own, const std::string& data = "");
// Where a managed service's socket is.
void point_at(Endpoint& ep, const Service& svc);
// --crash kill, power and torn, and --fault, on a job's own server (server_of's `own`): kill()
// SIGKILLs the postmaster and every backend, restart() starts it on the same data directory and
// points `s.ep` at it, pause() stops or continues them all, a replicated set-up's primary is
// killed or switched over, and named (replicas.h); `check` reads the writes back (a workload's keys: set_held).
// `s` outlives it.
class PgCrash final : public ServiceCrash, public Replication {
 public:
  // A replicated set-up's (`s.set`) hooks are its Replication too (Crashable::replication).
  PgCrash(Server& s, std::function<std::vector<WriteState>(std::span<const uint64_t>)> check, std::string note);
  bool pause(bool on) override;
  void kill_primary() override;
  void switchover() override;
  std::string primary() override;

 private:
  Server& s_;
};
std::unique_ptr<PgCrash> crash_of(Server& s, std::function<std::vector<WriteState>(std::span<const uint64_t>)> check,
                                  std::string note);
// A connection to the job's server that waits out a failover (a replicated set-up's primary killed
// and no replica promoted yet), up to the endpoint's timeout: the read-back's.
std::unique_ptr<Conn> connect_settled(const Server& s);
// What a crash job may be: the writes the check reads back.
inline constexpr const char* kCrashOps =
    "postgres: --crash needs op insert or produce, or a --mix (its writes are read back)";
// The server's durability settings (fsync, wal_writer_delay, full_page_writes) into `info`.
void show_durability(Conn& c, Info& info, int64_t deadline_ns);
// The contract of a job's writes (an INSERT's commit): from its options and, once connected,
// the server's settings show_durability() put in `info` (empty before: the managed server's).
Contract contract_of(const PgOptions& o, const Info& info);
// --sync-replicas, or 1 when it is not given and --synchronous-commit waits for a replica (remote_*).
int sync_replicas_of(const PgOptions& o);
// Sends `sig` to a managed server's postmaster and each of its children (backends and helpers
// run in sessions of their own, out of its process group): SIGSTOP freezes the whole server,
// SIGKILL kills it as a crash would.
void signal_server(pid_t postmaster, int sig);
// "" when this machine can run the job (PostgreSQL's binaries, or an external server).
std::string unavailable(const Job& job);
// A PostgreSQL program ("initdb", "pg_basebackup"): the packaged version's, else from PATH; "".
std::string binary(const std::string& tool);
// --replicas, --sync-replicas, --synchronous-commit and --fault together: one line when they do
// not go together (a replicated set-up takes kill-primary and the store's ops).
void check_replicated(const Job& job);
std::string where_of(const Endpoint& ep);
// The server's own events for the timeline (events.cpp), over a connection of the probe's own.
std::unique_ptr<EventProbe> event_probe(const Endpoint& ep);
// The managed server's spec (fsync on or off): tests start one of their own with more settings.
ServiceSpec service_spec(bool fsync);

// A table name of this job: --table, or a fresh one ("mwbench_kv_<pid>_<n>").
std::string table_name(const PgOptions& o, const std::string& stem);
// A whole-number parameter in the binary format (int8, network order) and back.
std::string int8_param(int64_t v);
int64_t int8_of(const char* p);
// One line of a libpq message: trailing newline cut, at most 300 printable bytes.
std::string one_line(const char* msg);
int64_t deadline(double timeout_s);

}  // namespace mw::pg
