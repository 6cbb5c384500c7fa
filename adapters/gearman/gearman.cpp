// Gearman job submission through libgearman: background jobs (submit-bg), foreground jobs
// answered by echo workers that mwbench runs itself (submit-fg), and a worker consuming queued
// jobs (drain). One gearmand per queue backend, started by mwbench, unless --server.
#include "adapters/gearman/gearman.h"

#include "adapters/gearman/crash.h"
#include "adapters/guard.h"
#include "api/options.h"
#include "api/stop.h"
#include "durability/durability.h"
#include "queue/queue.h"
#include "util/clock.h"
#include "util/files.h"

#include <libgearman/gearman.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <sstream>
#include <thread>

namespace mw {
namespace {

using namespace gearman;

enum class Op { SubmitBg, SubmitFg, Drain };

bool connection_error(gearman_return_t rc) {
  return rc == GEARMAN_COULD_NOT_CONNECT || rc == GEARMAN_LOST_CONNECTION || rc == GEARMAN_ERRNO ||
         rc == GEARMAN_SERVER_ERROR || rc == GEARMAN_SHUTDOWN || rc == GEARMAN_NO_SERVERS;
}

Status status_of(gearman_return_t rc) {
  if (rc == GEARMAN_TIMEOUT) return Status::Timeout;
  if (rc == GEARMAN_COULD_NOT_CONNECT) return Status::Refused;
  return Status::Error;
}

// Every libgearman handle has a timeout: no call waits for a stopped server longer than it.
gearman_client_st* new_client(const std::string& host, int port, int timeout_ms) {
  gearman_client_st* c = gearman_client_create(nullptr);
  if (!c) throw SetupError("gearman: libgearman could not create a client");
  gearman_client_add_server(c, host.c_str(), static_cast<in_port_t>(port));
  gearman_client_set_timeout(c, std::max(1, timeout_ms));
  return c;
}

void* echo_fn(gearman_job_st* job, void*, size_t* size, gearman_return_t* ret) {
  *size = gearman_job_workload_size(job);
  void* out = std::malloc(*size ? *size : 1);
  std::memcpy(out, gearman_job_workload(job), *size);
  *ret = GEARMAN_SUCCESS;
  return out;
}

void* done_fn(gearman_job_st*, void*, size_t* size, gearman_return_t* ret) {
  *size = 0;
  *ret = GEARMAN_SUCCESS;
  return nullptr;
}

gearman_worker_st* new_worker(const std::string& host, int port, const std::string& fn, int timeout_ms, bool echo) {
  gearman_worker_st* w = gearman_worker_create(nullptr);
  if (!w) throw SetupError("gearman: libgearman could not create a worker");
  gearman_worker_add_server(w, host.c_str(), static_cast<in_port_t>(port));
  gearman_worker_set_timeout(w, std::max(1, timeout_ms));
  gearman_worker_add_function(w, fn.c_str(), 0, echo ? echo_fn : done_fn, nullptr);
  return w;
}

class GearmanClient final : public Client {
 public:
  GearmanClient(const std::string& host, int port, const std::string& fn, Op op, const GearmanOptions& o,
                double timeout_s, Liveness* live)
      : host_(host),
        port_(port),
        fn_(fn),
        op_(op),
        timeout_ms_(static_cast<int>(timeout_s * 1000)),
        live_(live),
        per_job_(o.per_job),
        payload_size_(o.payload_size) {
    if (op_ == Op::Drain)
      worker_ = new_worker(host_, port_, fn_, timeout_ms_, false);
    else if (!per_job_)
      client_ = new_client(host_, port_, timeout_ms_);
  }
  ~GearmanClient() override {
    if (client_) gearman_client_free(client_);
    if (worker_) gearman_worker_free(worker_);
  }
  bool alive() const override { return alive_; }

  OpResult run(uint64_t seq) override {
    started_ns_ = guard_now_ns();
    if (op_ == Op::Drain) {
      gearman_return_t rc = gearman_worker_work(worker_);
      if (rc == GEARMAN_SUCCESS) return {Status::Ok, 0, {}};
      OpResult r = fail(rc, gearman_worker_error(worker_));
      if (r.status == Status::Timeout) after_timeout();
      return r;
    }
    gearman_client_st* c = client_;
    if (per_job_) {
      try {
        c = new_client(host_, port_, timeout_ms_);
      } catch (const SetupError& e) {  // never out of a worker thread: a failed op
        detail_ = e.what();
        return {Status::Error, 0, detail_};
      }
    }
    std::string payload = payload_for(seq, payload_size_);
    OpResult r;
    if (op_ == Op::SubmitBg) {
      char handle[GEARMAN_JOB_HANDLE_SIZE] = {};
      gearman_return_t rc =
          gearman_client_do_background(c, fn_.c_str(), nullptr, payload.data(), payload.size(), handle);
      if (rc != GEARMAN_SUCCESS)
        r = fail(rc, gearman_client_error(c));
      else if (handle[0] == '\0')
        r = {Status::Mismatch, 0, "the server answered without a job handle"};
      else
        r = {Status::Ok, static_cast<uint32_t>(payload.size()), {}};
    } else {
      size_t size = 0;
      gearman_return_t rc = GEARMAN_SUCCESS;
      void* reply = gearman_client_do(c, fn_.c_str(), nullptr, payload.data(), payload.size(), &size, &rc);
      if (rc != GEARMAN_SUCCESS)
        r = fail(rc, gearman_client_error(c));
      else if (size != payload.size() || std::memcmp(reply, payload.data(), size) != 0)
        r = {Status::Mismatch, 0, "the worker's reply is not the payload that was sent"};
      else
        r = {Status::Ok, static_cast<uint32_t>(size), {}};
      std::free(reply);
    }
    if (per_job_) gearman_client_free(c);
    if (r.status == Status::Timeout) after_timeout();
    return r;
  }

 private:
  // After a timeout the client is lost unless a fresh connection answers an ECHO (one probe
  // serves all clients of the job). The connection that timed out is replaced: a late answer
  // on it would otherwise be read as the next job's.
  void after_timeout() {
    alive_ = live_->answers(started_ns_, [&] { return echo(host_, port_, timeout_ms_); });
    if (!alive_) return;
    try {
      if (client_) gearman_client_free(client_), client_ = nullptr, client_ = new_client(host_, port_, timeout_ms_);
      if (worker_)
        gearman_worker_free(worker_), worker_ = nullptr, worker_ = new_worker(host_, port_, fn_, timeout_ms_, false);
    } catch (const SetupError&) {  // no new handle: the client cannot go on
      alive_ = false;
    }
  }

  OpResult fail(gearman_return_t rc, const char* msg) {
    // libgearman's message may carry the server's bytes: one printable line
    detail_ = printable_text(msg && *msg ? std::string_view(msg) : std::string_view(gearman_strerror(rc)), 200) + " (" +
              host_ + ":" + std::to_string(port_) + ")";
    if (connection_error(rc)) alive_ = false;
    return {status_of(rc), 0, detail_};
  }

  std::string host_;
  int port_;
  std::string fn_;
  Op op_;
  int timeout_ms_;
  Liveness* live_;
  int64_t started_ns_ = 0;
  bool per_job_;
  size_t payload_size_;
  gearman_client_st* client_ = nullptr;
  gearman_worker_st* worker_ = nullptr;
  bool alive_ = true;
  std::string detail_;
};

// gearmand's own events for the timeline (api/events.h): the admin protocol's "status" (a fresh
// connection each reading), summed over its functions: jobs queued and running, workers.
class GearmanEvents final : public EventProbe {
 public:
  GearmanEvents(std::string host, int port) : host_(std::move(host)), port_(port) {}
  std::string source() const override { return "gearmand"; }
  std::vector<EventReading> sample(int64_t deadline) override {
    const double timeout_s = std::max(0.01, static_cast<double>(deadline - now_ns()) / 1e9);
    return gearman::status_events(gearman::admin(host_, port_, "status", timeout_s));
  }

 private:
  std::string host_;
  int port_;
};

class GearmanAdapter final : public Adapter {
 public:
  explicit GearmanAdapter(const Job& job) : o_(options_of<GearmanOptions>(job)), queue_(o_.queue) {
    op_ = op_of<Op>(job);
    fn_ = "mwbench_" + std::to_string(run_id()) + "_" + unique_name("", '_').substr(1);  // the same on every MPI rank
    if (!o_.server.empty()) {
      const std::string& s = o_.server;
      auto colon = s.rfind(':');
      host_ = colon == std::string::npos ? s : s.substr(0, colon);
      port_ = colon == std::string::npos ? 4730 : std::atoi(s.c_str() + colon + 1);
      if (port_ <= 0 || port_ > 65535) throw SetupError("gearman: --server expects host:port, got '" + s + "'");
      queue_ = "external";
    }
  }
  ~GearmanAdapter() override { teardown(); }

  void prepare(const Job& job) override {
    if (op_ == Op::Drain && job.duration_s > 0)
      throw SetupError("gearman drain consumes -n queued jobs: give -n, not --duration");
    // a socket per client and per echo worker, and a probe's socket after a timeout
    int workers = op_ == Op::SubmitFg ? o_.workers.value_or(job.clients) : 0;
    ensure_open_files("gearman", job.clients, 2, 64 + 2 * std::max(0, workers));
    if (host_.empty()) {
      const CrashKind crash = op_ == Op::SubmitBg ? durability_options_of(job).crash : CrashKind::None;
      GearmanOptions o = o_;
      if (cuts_power(crash)) {  // --crash power, torn: the queue's file on the page-cache layer
        check_power(crash);
        layer_ = power_layer(job, o.store_dir.empty() ? "/tmp" : o.store_dir);
        o.store_dir = layer_->path();
      }
      gearmand_ = start_gearmand(queue_, o, job.timeout_s);
      host_ = "127.0.0.1";
      port_ = gearmand_->server->port();
      info_ = gearmand_->info;
      if (crash != CrashKind::None)
        crash_ = make_crashable(*gearmand_, queue_, fn_, o_.payload_size, job.timeout_s,
                                layer_           ? CrashTarget::All
                                : o_.crash_store ? CrashTarget::Store
                                                 : CrashTarget::Gearmand);
      if (layer_) {  // the queue's store as gearmand made it is on disk before the power can go
        sync_layer(*layer_);
        crash_->set_pagecache(layer_.get());
      }
    } else {
      info_ = {{"server", "gearmand"}, {"version", server_version(host_, port_, job.timeout_s)}, {"managed", "no"}};
    }
    info_["libgearman"] = gearman_version();
    info_["function"] = fn_;
    info_["connection"] = o_.per_job ? "per-job" : "persistent";
    int timeout_ms = static_cast<int>(job.timeout_s * 1000);
    if (op_ == Op::SubmitFg) {  // echo workers answer the foreground jobs
      for (int i = 0; i < std::max(1, workers); ++i) {
        gearman_worker_st* w =
            new_worker(host_, port_, fn_, std::min(timeout_ms, 200), true);  // may throw: not in a thread
        workers_.emplace_back([this, w] {
          while (!stop_workers_.load()) gearman_worker_work(w);
          gearman_worker_free(w);
        });
      }
      info_["workers"] = std::to_string(workers_.size());
    }
    if (op_ == Op::Drain) {  // queue the jobs the measured workers will consume (untimed)
      gearman_client_st* c = new_client(host_, port_, timeout_ms);
      uint64_t total = job.n + job.warmup_ops;
      for (uint64_t i = 0; i < total; ++i) {
        if (i % 256 == 0 && stop_requested().load(std::memory_order_relaxed)) {
          gearman_client_free(c);
          throw Interrupted("interrupted while queueing the jobs to drain");
        }
        std::string p = payload_for(i, o_.payload_size);
        char handle[GEARMAN_JOB_HANDLE_SIZE];
        gearman_return_t rc = gearman_client_do_background(c, fn_.c_str(), nullptr, p.data(), p.size(), handle);
        if (rc != GEARMAN_SUCCESS) {
          std::string e = gearman_client_error(c) ? gearman_client_error(c) : gearman_strerror(rc);
          gearman_client_free(c);
          throw SetupError("gearman " + target() + ": queueing jobs to drain failed: " + e);
        }
      }
      gearman_client_free(c);
      queued_before_ = static_cast<int64_t>(total);
    }
  }

  std::unique_ptr<Client> open(const Job& job, int) override {
    return std::make_unique<GearmanClient>(host_, port_, fn_, op_, o_, job.timeout_s, &live_);
  }

  Verdict verify(const Job& job, const Counts& c) override {
    stop_workers();
    int64_t done = static_cast<int64_t>(c.ok + c.warmup_ok);
    int64_t want = op_ == Op::SubmitBg ? done : op_ == Op::SubmitFg ? 0 : queued_before_ - done;
    std::string what = op_ == Op::SubmitBg   ? "submitted"
                       : op_ == Op::SubmitFg ? "left after foreground jobs"
                                             : "left after draining";
    // The server's own count of queued jobs for this job's function.
    int64_t have = 0;
    try {
      have = queued(host_, port_, {fn_}, job.timeout_s);
    } catch (const SetupError& e) {  // a server that stopped answering fails the check; it is no set-up error
      return {true, false,
              "gearmand status not read: " + std::string(e.what()) + "; expected " + std::to_string(want) +
                  " jobs queued (" + what + ")"};
    }
    Verdict v{true, have == want,
              "gearmand status: " + std::to_string(have) + " jobs queued, expected " + std::to_string(want) + " (" +
                  what + ")"};
    if (op_ == Op::SubmitBg && !gearmand_) drain_external(job, have);
    return v;
  }

  Info describe() override { return info_; }
  std::string target() const override {
    return (host_.empty() ? std::string("127.0.0.1:?") : host_ + ":" + std::to_string(port_)) + " " + queue_;
  }
  std::vector<std::string> paths() const override { return {}; }
  Abilities abilities(const Job& job) override {
    return {.crash = crash_.get(),  // submit-bg on a managed gearmand
            .contract = contract(job),
            .events = [this]() -> std::unique_ptr<EventProbe> {
              return host_.empty() ? nullptr : std::make_unique<GearmanEvents>(host_, port_);
            }};
  }
  std::optional<Contract> contract(const Job&) const {
    if (op_ != Op::SubmitBg || queue_ == "external") return std::nullopt;
    return gearman::contract_of(queue_);
  }
  void teardown() override {
    stop_workers();
    gearmand_.reset();
  }

 private:
  void stop_workers() {
    stop_workers_ = true;
    for (auto& t : workers_) t.join();
    workers_.clear();
  }
  // Jobs left on someone else's server are consumed again, untimed.
  // At most the jobs the server said it holds: a server that hands out jobs forever cannot
  // keep verification going.
  void drain_external(const Job& job, int64_t jobs) {
    gearman_worker_st* w = new_worker(host_, port_, fn_, static_cast<int>(std::min(job.timeout_s, 1.0) * 1000), false);
    for (int64_t i = 0; i < jobs && !stop_requested().load() && gearman_worker_work(w) == GEARMAN_SUCCESS; ++i) {}
    gearman_worker_free(w);
  }

  // A power cut takes gearmand and the servers behind it; the PostgreSQL mwbench starts keeps its
  // data directory on the layer, an external one (--pg-conninfo) and MySQL keep their files
  // elsewhere, so those queues are not offered.
  void check_power(CrashKind kind) const {
    const std::string crash = crash_name(kind);
    const std::string t = queue_.substr(0, queue_.find(':'));
    if (o_.crash_store)
      throw SetupError("gearman: --crash " + crash +
                       " cuts the power of gearmand and its store together: "
                       "--crash-target store is for --crash kill");
    if (t == "mysql" || (t == "postgres" && !o_.pg_conninfo.empty()))
      throw SetupError("gearman: --crash " + crash + " puts the queue's files on the page-cache layer; the " + t +
                       " queue's server" + (t == "postgres" ? " given by --pg-conninfo" : "") +
                       " keeps its own files elsewhere: use --crash kill, or another --queue");
  }

  GearmanOptions o_;
  std::string queue_, host_, fn_;
  int port_ = 0;
  Op op_;
  std::unique_ptr<PageCacheMount> layer_;  // --crash power, torn; outlives gearmand on it
  std::unique_ptr<Gearmand> gearmand_;
  std::unique_ptr<Crashable> crash_;
  Liveness live_;
  Info info_;
  std::vector<std::thread> workers_;
  std::atomic<bool> stop_workers_{false};
  int64_t queued_before_ = 0;
};

}  // namespace

namespace gearman {

// Queued jobs of the functions, from the admin protocol's status ("fn\ttotal\trunning\tworkers").
int64_t queued(const std::string& host, int port, const std::vector<std::string>& fns, double timeout_s) {
  std::istringstream in(admin(host, port, "status", timeout_s));
  int64_t sum = 0;
  for (std::string line; std::getline(in, line);) {
    std::istringstream ls(line);
    std::string name;
    int64_t total = 0;
    if (std::getline(ls, name, '\t') && std::find(fns.begin(), fns.end(), name) != fns.end() && ls >> total)
      sum += total;
  }
  return sum;
}

std::vector<EventReading> status_events(const std::string& status) {
  std::istringstream in(status);
  double queued = 0, running = 0, workers = 0;
  for (std::string line; std::getline(in, line);) {
    std::istringstream ls(line);
    std::string name;
    double total = 0, run = 0, w = 0;
    if (std::getline(ls, name, '\t') && ls >> total >> run >> w) queued += total, running += run, workers += w;
  }
  using K = EventReading::Kind;
  return {{"jobs_queued", queued, K::Level, "jobs queued at gearmand (every function)"},
          {"jobs_running", running, K::Level, "jobs running (given to a worker)"},
          {"workers", workers, K::Level, "workers registered"}};
}

}  // namespace gearman

AdapterSpec gearman_adapter_spec() {
  using O = GearmanOptions;
  std::string queues;
  for (auto& q : queue_names()) queues += (queues.empty() ? "" : ", ") + q;
  return {
      .name = "gearman",
      .summary = "Gearman job submission; one gearmand per queue backend, started by mwbench unless --server",
      .ops = {{"submit-bg", Op::SubmitBg},
              {"submit-fg", Op::SubmitFg},
              {"drain", Op::Drain},
              {"produce", QueueOp::Produce},
              {"consume", QueueOp::Consume},
              {"roundtrip", QueueOp::Roundtrip}},
      .default_ops = "submit-bg",
      .options =
          {opt(&O::queue, {.name = "queue", .help = "queue backend(s), side by side: " + queues, .list = true}),
           opt(&O::server, {.name = "server", .help = "an external gearmand host:port instead"}),
           opt(&O::gearmand, {.name = "gearmand", .help = "gearmand binary for managed servers"}),
           opt(&O::store_dir, {.name = "store-dir",
                               .help = "directory for the queue's file (libsqlite3, libtokyocabinet) or the managed "
                                       "PostgreSQL's data directory (postgres)",
                               .list = true}),
           opt(&O::payload_size, {.name = "payload-size", .help = "bytes per job", .max = 16 << 20}),
           opt(&O::per_job, {.name = "connection", .help = "persistent, or a new connection per job", .list = true},
               {{"persistent", false}, {"per-job", true}}),
           opt(&O::workers, {.name = "workers",
                             .help = "echo workers for submit-fg (default: one per client)",
                             .min = 1,
                             .max = 10000}),
           opt(&O::pg_conninfo, {.name = "pg-conninfo",
                                 .help = "libpq conninfo of a running PostgreSQL for the postgres queue "
                                         "(or env:VAR, file:PATH holding it)",
                                 .secret = true}),
           opt(&O::mysql_host, {.name = "mysql-host", .help = "MySQL host for the mysql queue"}),
           opt(&O::mysql_port, {.name = "mysql-port", .help = "MySQL port", .def = "3306", .min = 1, .max = 65535}),
           opt(&O::mysql_user, {.name = "mysql-user", .help = "MySQL user"}),
           opt(&O::mysql_password, {.name = "mysql-password",
                                    .help = "MySQL password: env:VAR or file:PATH (given plainly it is "
                                            "in the process list)",
                                    .secret = true}),
           opt(&O::mysql_db, {.name = "mysql-db", .help = "MySQL database"}),
           opt(&O::queues, {.name = "queues",
                            .help = "functions per job; message i goes to function i mod N",
                            .min = 1,
                            .max = 1000,
                            .used_by = {"produce", "consume", "roundtrip"}}),
           opt(&O::crash_store,
               {.name = "crash-target",
                .help = "--crash kills gearmand, or the store behind its queue "
                        "(libmemcached, redis, postgres; gearmand is restarted after it)"},
               {{"gearmand", false}, {"store", true}})},
      .unavailable = [](const Job& j) -> std::string {
        const auto o = options_of<GearmanOptions>(j);
        if (!o.server.empty()) return "";
        return queue_unavailable(o.queue, o);
      },
      .make = [](const Job& j, WorkloadPtr) -> std::unique_ptr<Adapter> {
        if (is_queue_op(j.op)) return make_queue_adapter(j);
        return std::make_unique<GearmanAdapter>(j);
      },
      .machine = []() -> std::string {
        std::string bin = find_binary("gearmand");
        if (bin.empty()) return "gearmand: not installed";
        std::string types;
        for (auto& t : supported_queue_types(bin)) types += (types.empty() ? "" : ", ") + t;
        return "gearmand: " + bin + ", queue types: " + types;
      },
      .families = {Family::Raw, Family::Queue},
      .target = TargetKind::External,
      .target_option = "server",
      .libraries = {"libgearman"},
      .crash_kinds = {CrashKind::Kill, CrashKind::Power, CrashKind::Torn},
      .crash_ops = {"submit-bg"},
      .connects_note = "keeps its clients' connections: a job's submitter, its workers and their functions go together",
      .durability_settings = {"queue"}};
}

}  // namespace mw
