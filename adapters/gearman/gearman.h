#pragma once
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "api/adapter.h"
#include "services/services.h"

namespace mw {

AdapterSpec gearman_adapter_spec();

// The adapter's options (options.h); defaults are the member initialisers.
struct GearmanOptions {
  std::string queue = "builtin";
  std::string server;  // host:port of an external gearmand
  std::string gearmand = "gearmand";
  std::string store_dir;
  size_t payload_size = 64;
  bool per_job = false;        // --connection per-job
  std::optional<int> workers;  // submit-fg echo workers; default: one per client
  std::string pg_conninfo;
  std::string mysql_host, mysql_user, mysql_password, mysql_db;
  std::optional<int> mysql_port;
  bool crash_store = false;  // --crash-target store: kill the queue's store, not gearmand
  int64_t queues = 1;        // queue ops: functions per job; message i goes to function i mod N
};

// queues.cpp: gearmand and its persistent queue backends.
namespace gearman {

// The queue names mwbench knows, in the order `mwbench list` shows them.
const std::vector<std::string>& queue_names();
// Queue types a gearmand binary supports, read from its --help ("builtin" always).
std::vector<std::string> supported_queue_types(const std::string& gearmand);
// Why `queue` cannot run with this gearmand on this machine, or "".
std::string queue_unavailable(const std::string& queue, const GearmanOptions& o);

// A gearmand started for one job with a fresh, empty store for `queue`, plus whatever server
// the backend itself needs (memcached, redis-server, PostgreSQL; with --store-dir, PostgreSQL's
// data directory is made there). Stopped and removed when destroyed.
struct Gearmand {
  std::vector<std::unique_ptr<Service>> backing;  // started first, stopped last
  std::unique_ptr<Service> server;
  std::string store;    // the queue's file, when it has one
  std::string pg_data;  // the postgres queue's data directory in --store-dir, removed last
  Info info;
  ~Gearmand();  // stops gearmand, removes the store, then the rest
};
std::unique_ptr<Gearmand> start_gearmand(const std::string& queue, const GearmanOptions& o, double timeout_s);

// The payload of job `seq`: "<seq>:" padded with 'p' to `size` bytes.
std::string payload_for(uint64_t seq, size_t size);

// gearmand's version from the admin protocol ("1.1.20+ds").
std::string server_version(const std::string& host, int port, double timeout_s);
// One admin-protocol round trip ("status", "version"), the whole of it bounded by timeout_s and
// the answer by kMaxAdminReply bytes; throws SetupError naming host:port.
constexpr size_t kMaxAdminReply = size_t{16} << 20;
std::string admin(const std::string& host, int port, const std::string& command, double timeout_s);
// A real round trip (an ECHO request) on a fresh connection within timeout_ms: "" when the
// server answered, else why not.
std::string echo(const std::string& host, int port, int timeout_ms);
// Queued jobs of the functions, from the admin protocol's status ("fn\ttotal\trunning\tworkers").
int64_t queued(const std::string& host, int port, const std::vector<std::string>& fns, double timeout_s);
// gearmand's events for the timeline from the admin protocol's status, summed over its functions:
// jobs queued and running, workers. A line that is not "fn\ttotal\trunning\tworkers" is left out.
std::vector<EventReading> status_events(const std::string& status);

// queue.cpp: the adapter of the queue ops (produce = submit-bg, consume = a worker's grab).
std::unique_ptr<Adapter> make_queue_adapter(const Job& job);

}  // namespace gearman
}  // namespace mw
