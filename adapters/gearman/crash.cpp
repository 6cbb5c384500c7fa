#include "adapters/gearman/crash.h"

#include <libgearman/gearman.h>

#include <charconv>
#include <cstring>
#include <unordered_map>

namespace mw::gearman {
std::optional<Contract> contract_of(const std::string& queue) {
  const std::string t = queue.substr(0, queue.find(':'));
  if (t == "builtin") return Contract{ContractKind::Memory, 0, "builtin queue: gearmand's memory"};
  if (queue == "libtokyocabinet:mem") return Contract{ContractKind::Memory, 0, "Tokyo Cabinet in memory"};
  if (t == "libtokyocabinet")
    return Contract{ContractKind::OsBuffer, 0, "Tokyo Cabinet file, never synced by gearmand"};
  if (t == "libsqlite3")
    return Contract{ContractKind::FsyncPerAck, 0,
                    "libsqlite3: a SQLite insert per job, SQLite's default synchronous=full"};
  if (t == "libmemcached") return Contract{ContractKind::Memory, 0, "memcached's memory"};
  if (t == "redis") return Contract{ContractKind::Memory, 0, "redis-server without persistence"};
  if (t == "postgres") return Contract{ContractKind::FsyncPerAck, 0, "PostgreSQL, a commit per job"};
  return std::nullopt;
}

namespace {

// What the check's worker took: payloads by the seq they name; the rest counted apart.
struct Taken {
  std::unordered_map<uint64_t, std::string> by_seq;
  uint64_t unreadable = 0;
  void add(const char* p, size_t n) {
    uint64_t seq = 0;
    auto [end, ec] = std::from_chars(p, p + n, seq);
    if (ec != std::errc() || end == p + n || *end != ':')
      ++unreadable;
    else
      by_seq[seq].assign(p, n);
  }
};

class GearmandCrash final : public Crashable {
 public:
  GearmandCrash(Gearmand& g, std::string queue, std::string fn, size_t payload_size, double timeout_s,
                CrashTarget target)
      : g_(g),
        queue_(std::move(queue)),
        fn_(std::move(fn)),
        payload_size_(payload_size),
        timeout_s_(timeout_s),
        store_(target == CrashTarget::Store),
        all_(target == CrashTarget::All) {}

  std::string victim() const override {
    if (store_) return g_.backing.back()->name() + " (the queue's store)";
    if (all_ && !g_.backing.empty()) return "gearmand and " + g_.backing.back()->name();
    return "gearmand";
  }
  void kill() override {
    if (!store_) g_.server->kill_now();
    if (store_ || all_)
      for (auto& b : g_.backing) b->kill_now();
  }
  void restart() override {
    if (store_ || all_)
      for (auto& b : g_.backing) b->restart();
    if (store_) g_.server->kill_now();  // gearmand's memory still holds the jobs: its queue must come from the store
    g_.server->restart();
  }

  // Every job queued for the function, grabbed by one worker that never completes them (a
  // completed job is deleted from the store, a write per job): gearmand's status says how many it
  // holds, and a grab that waits longer than the timeout ends the check too. The jobs go back to
  // the queue when the worker disconnects.
  std::vector<WriteState> check(std::span<const uint64_t> seqs) override {
    const int port = g_.server->port();
    int64_t held = queued_jobs(port);
    Taken t;
    gearman_worker_st* w = gearman_worker_create(nullptr);
    if (!w) throw SetupError("gearman: libgearman could not create a worker");
    gearman_worker_add_server(w, "127.0.0.1", static_cast<in_port_t>(port));
    gearman_worker_set_timeout(w, std::max(1, static_cast<int>(timeout_s_ * 1000)));
    gearman_worker_register(w, fn_.c_str(), 0);
    for (int64_t i = 0; i < held; ++i) {
      gearman_return_t rc = GEARMAN_SUCCESS;
      gearman_job_st* job = gearman_worker_grab_job(w, nullptr, &rc);
      if (!job || rc != GEARMAN_SUCCESS) {
        if (job) gearman_job_free(job);
        break;
      }
      t.add(static_cast<const char*>(gearman_job_workload(job)), gearman_job_workload_size(job));
      gearman_job_free(job);
    }
    gearman_worker_free(w);
    std::vector<WriteState> out;
    out.reserve(seqs.size());
    for (uint64_t s : seqs) {
      auto it = t.by_seq.find(s);
      if (it == t.by_seq.end())
        out.push_back(WriteState::Missing);
      else
        out.push_back(it->second == payload_for(s, payload_size_) ? WriteState::Present : WriteState::Corrupt);
    }
    return out;
  }

  std::string note() const override {
    const std::string t = queue_.substr(0, queue_.find(':'));
    if (t == "builtin") return "builtin queue: in gearmand's memory only";
    if (t == "libsqlite3") return "libsqlite3: gearmand's SQLite defaults (its journal, synchronous)";
    if (all_ && (t == "libmemcached" || t == "redis"))
      return std::string(t == "redis" ? "redis-server without persistence" : "memcached") +
             " keeps the queue in its memory only: the power cut takes it";
    if (queue_ == "libtokyocabinet:mem") return "Tokyo Cabinet in memory: nothing on disk";
    if (t == "libmemcached")
      return store_ ? "memcached keeps the queue in its memory only"
                    : "memcached keeps the queue in its memory; it was not killed";
    if (t == "redis")
      return store_ ? "redis-server without persistence keeps the queue in its memory only"
                    : "redis-server (no persistence) keeps the queue; it was not killed";
    if (t == "postgres") return "PostgreSQL keeps the queue (commit per job)";
    return "";
  }

 private:
  int64_t queued_jobs(int port) {
    std::string status = admin("127.0.0.1", port, "status", timeout_s_);
    for (size_t at = 0; at < status.size();) {
      size_t end = status.find('\n', at);
      if (end == std::string::npos) end = status.size();
      std::string line = status.substr(at, end - at);
      at = end + 1;
      if (line.rfind(fn_ + "\t", 0) != 0) continue;
      int64_t total = 0;
      std::from_chars(line.data() + fn_.size() + 1, line.data() + line.size(), total);
      return total;
    }
    return 0;
  }

  Gearmand& g_;
  std::string queue_, fn_;
  size_t payload_size_;
  double timeout_s_;
  bool store_, all_;
};

}  // namespace

std::unique_ptr<Crashable> make_crashable(Gearmand& g, const std::string& queue, const std::string& fn,
                                          size_t payload_size, double timeout_s, CrashTarget target) {
  if (target == CrashTarget::Store && g.backing.empty())
    throw SetupError(
        "gearman: --crash-target store needs a queue with a server behind it (libmemcached, redis, "
        "postgres without --pg-conninfo), not " +
        queue);
  return std::make_unique<GearmandCrash>(g, queue, fn, payload_size, timeout_s, target);
}

}  // namespace mw::gearman
