// Gearman as a queue, on every gearmand queue backend (--queue): produce is a background job
// (submit-bg: the server acknowledges it with a job handle once it is queued, and stored by a
// persistent backend), consume is a worker's grab of one job (libgearman's worker API: the job
// is done when the worker function returns). The backend of src/queue/queue.h's QueueAdapter.
// --queues N: N functions of the job's own; message i goes to function i mod N, a worker takes
// any of them.
#include <libgearman/gearman.h>

#include <cstdlib>
#include <cstring>

#include "adapters/gearman/crash.h"
#include "adapters/gearman/gearman.h"
#include "adapters/guard.h"
#include "api/options.h"
#include "api/stop.h"
#include "queue/queue.h"
#include "util/files.h"

namespace mw {
namespace {

using namespace gearman;

class GearmanQueueConn final : public QueueConn {
 public:
  GearmanQueueConn(const std::string& host, int port, const std::vector<std::string>& fns, double timeout_s)
      : host_(host), port_(port), fns_(fns), timeout_ms_(std::max(1, static_cast<int>(timeout_s * 1000))) {}
  ~GearmanQueueConn() override {
    if (client_) gearman_client_free(client_);
    if (worker_) gearman_worker_free(worker_);
  }
  bool alive() const override { return alive_; }

  OpResult produce(std::string_view msg) override {
    if (!client_) {
      client_ = gearman_client_create(nullptr);
      if (!client_) return {Status::Error, 0, "libgearman could not create a client"};
      gearman_client_add_server(client_, host_.c_str(), static_cast<in_port_t>(port_));
      gearman_client_set_timeout(client_, timeout_ms_);
    }
    const std::string& fn = fns_[queue::queue_of(msg, fns_.size())];
    char handle[GEARMAN_JOB_HANDLE_SIZE] = {};
    gearman_return_t rc = gearman_client_do_background(client_, fn.c_str(), nullptr, msg.data(), msg.size(), handle);
    if (rc != GEARMAN_SUCCESS) return fail(rc, gearman_client_error(client_));
    if (handle[0] == '\0') return {Status::Mismatch, 0, "the server answered without a job handle"};
    return {Status::Ok, 0, {}};
  }

  OpResult consume(std::string& msg, double wait_s) override {
    if (!worker_) {
      worker_ = gearman_worker_create(nullptr);
      if (!worker_) return {Status::Error, 0, "libgearman could not create a worker"};
      gearman_worker_add_server(worker_, host_.c_str(), static_cast<in_port_t>(port_));
      for (const std::string& fn : fns_) gearman_worker_add_function(worker_, fn.c_str(), 0, take, this);
    }
    gearman_worker_set_timeout(worker_, std::max(1, static_cast<int>(wait_s * 1000)));
    got_ = false;
    gearman_return_t rc = gearman_worker_work(worker_);
    if (rc == GEARMAN_SUCCESS && got_) {
      msg.swap(msg_);
      return {Status::Ok, 0, {}};
    }
    if (rc == GEARMAN_TIMEOUT || rc == GEARMAN_NO_JOBS) return {Status::NotFound, 0, {}};
    return fail(rc, gearman_worker_error(worker_));
  }

 private:
  // The worker function: the job's payload is the message; returning completes the job.
  static void* take(gearman_job_st* job, void* self, size_t* size, gearman_return_t* ret) {
    auto* c = static_cast<GearmanQueueConn*>(self);
    c->msg_.assign(static_cast<const char*>(gearman_job_workload(job)), gearman_job_workload_size(job));
    c->got_ = true;
    *size = 0;
    *ret = GEARMAN_SUCCESS;
    return nullptr;
  }

  OpResult fail(gearman_return_t rc, const char* msg) {
    detail_ = printable_text(msg && *msg ? std::string_view(msg) : std::string_view(gearman_strerror(rc)), 200) + " (" +
              host_ + ":" + std::to_string(port_) + ")";
    if (rc == GEARMAN_COULD_NOT_CONNECT || rc == GEARMAN_LOST_CONNECTION || rc == GEARMAN_ERRNO ||
        rc == GEARMAN_SHUTDOWN || rc == GEARMAN_NO_SERVERS)
      alive_ = false;
    return {rc == GEARMAN_TIMEOUT ? Status::Timeout : Status::Error, 0, detail_};
  }

  std::string host_;
  int port_;
  const std::vector<std::string>& fns_;
  int timeout_ms_;
  gearman_client_st* client_ = nullptr;
  gearman_worker_st* worker_ = nullptr;
  std::string msg_, detail_;
  bool got_ = false, alive_ = true;
};

class GearmanQueueAdapter final : public QueueAdapter {
 public:
  explicit GearmanQueueAdapter(const Job& job)
      : QueueAdapter(job), o_(options_of<GearmanOptions>(job)), queue_(o_.queue) {
    const std::string fn = "mwbench_" + std::to_string(run_id()) + "_" + unique_name("", '_').substr(1);
    for (int64_t k = 0; k < o_.queues; ++k) fns_.push_back(o_.queues == 1 ? fn : fn + "_" + std::to_string(k));
    if (!o_.server.empty()) {
      auto colon = o_.server.rfind(':');
      host_ = colon == std::string::npos ? o_.server : o_.server.substr(0, colon);
      port_ = colon == std::string::npos ? 4730 : std::atoi(o_.server.c_str() + colon + 1);
      if (port_ <= 0 || port_ > 65535) throw SetupError("gearman: --server expects host:port, got '" + o_.server + "'");
      queue_ = "external";
    }
  }
  ~GearmanQueueAdapter() override { QueueAdapter::teardown(); }

  std::string target() const override {
    return (host_.empty() ? std::string("127.0.0.1:?") : host_ + ":" + std::to_string(port_)) + " " + queue_;
  }
  Info describe() override { return info_; }
  // A produce is a background job, acknowledged once gearmand queued it in its queue backend.
  Abilities backend_abilities(const Job&) override {
    if (queue_ == "external") return {};  // an external gearmand's queue is its own
    return {.contract = contract_of(queue_)};
  }

 protected:
  void start(const Job& job) override {
    ensure_open_files("gearman", job.clients + queue_options().consumers, 2, 64);
    if (host_.empty()) {
      gearmand_ = start_gearmand(queue_, o_, job.timeout_s);
      host_ = "127.0.0.1";
      port_ = gearmand_->server->port();
      info_ = gearmand_->info;
    } else {
      info_ = {{"server", "gearmand"}, {"version", server_version(host_, port_, job.timeout_s)}, {"managed", "no"}};
    }
    info_["libgearman"] = gearman_version();
    info_["function"] = fns_.front();
    info_["functions"] = std::to_string(fns_.size());
  }
  std::unique_ptr<QueueConn> connect(const Job& job) override {
    return std::make_unique<GearmanQueueConn>(host_, port_, fns_, job.timeout_s);
  }
  int64_t remaining(const Job& job) override { return queued(host_, port_, fns_, job.timeout_s); }
  void stop_backend() override { gearmand_.reset(); }

 private:
  GearmanOptions o_;
  std::string queue_, host_;
  std::vector<std::string> fns_;
  int port_ = 0;
  std::unique_ptr<Gearmand> gearmand_;
  Info info_;
};

}  // namespace

namespace gearman {
std::unique_ptr<Adapter> make_queue_adapter(const Job& job) { return std::make_unique<GearmanQueueAdapter>(job); }
}  // namespace gearman

}  // namespace mw
