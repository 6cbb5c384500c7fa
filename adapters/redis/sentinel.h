// A replicated redis set-up mwbench starts (--replicas N, --sentinel): the primary, N replicas
// (replicaof the primary) and three Sentinels watching them, all on 127.0.0.1; and who the primary
// is now, asked of the Sentinels (SENTINEL get-master-addr-by-name), which is where every
// connection of the job goes (conn.h's Endpoint::sentinels).
#pragma once
#include <atomic>
#include <memory>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "adapters/redis/conn.h"
#include "services/services.h"

namespace mw::redis {

// The Sentinels' settings: three, a quorum of two, the primary down after a second without an
// answer, a failover given a few seconds (docs/guide/faults.md says them).
inline constexpr const char* kMasterName = "mwbench";
inline constexpr int kSentinels = 3, kQuorum = 2;
inline constexpr int kDownAfterMs = 1000, kFailoverTimeoutMs = 3000;

// Where the Sentinels listen and the master name they watch: the set-up mwbench starts, or an
// external one (--sentinels HOST:PORT,... --master-name NAME).
struct Sentinels {
  std::vector<std::pair<std::string, int>> at;  // host, port
  std::string name = kMasterName;
  double timeout_s = 5;
  // --sentinels: "HOST:PORT[,HOST:PORT...]" (a host may be [v6]:PORT); throws SetupError naming
  // the option and what was expected.
  static Sentinels parse(const std::string& list, const std::string& name, double timeout_s);
  // The primary's host and port: each Sentinel asked in turn (a second at most each, all within
  // `deadline_ns`) until one names it. Throws SetupError with what each said.
  std::pair<std::string, int> primary(int64_t deadline_ns) const;
  // --fault switchover: SENTINEL FAILOVER, each Sentinel asked in turn until one agrees (a planned
  // failover: it promotes a replica without waiting for the primary to be found down). Throws
  // SetupError with what each said.
  void failover(int64_t deadline_ns) const;
  std::string describe() const;  // "3 Sentinels (127.0.0.1:26379, ...) of mymaster"
};

// What the Sentinels name primary, asked every kWatchMs (one at a time, a second at most each): a
// change (+switch-master) bumps the generation, and each client of the job drops a connection made
// before it, as Sentinel-aware clients do (Jedis, Lettuce, go-redis watch +switch-master), instead
// of writing on to a primary that was replaced until the Sentinels make it a replica.
inline constexpr int kWatchMs = 100;
class PrimaryWatch {
 public:
  explicit PrimaryWatch(std::shared_ptr<const Sentinels> s);
  ~PrimaryWatch();
  PrimaryWatch(const PrimaryWatch&) = delete;
  PrimaryWatch& operator=(const PrimaryWatch&) = delete;
  uint64_t generation() const { return gen_.load(std::memory_order_acquire); }

 private:
  std::shared_ptr<const Sentinels> s_;
  std::atomic<uint64_t> gen_{0};
  std::atomic<bool> quit_{false};
  std::thread thread_;
};

// --fault switchover: the Sentinels asked to fail over (Sentinels::failover), then waited for, within
// `deadline_ns`, until they name another primary, and then two of the watch's periods (the clients
// have seen it). Throws SetupError naming what did not happen.
void switch_over(const Sentinels& s, int64_t deadline_ns);

class ReplicaSet {
 public:
  // Starts `replicas` replicas of `primary` (the spec's arguments and replicaof its port), and with
  // `sentinel` three Sentinels; returns once each replica's link is up and every Sentinel knows the
  // replicas and the other Sentinels (within `timeout_s`); throws SetupError naming what is not.
  ReplicaSet(std::shared_ptr<Service> primary, const ServiceSpec& spec, int replicas, bool sentinel, double timeout_s);
  ~ReplicaSet();
  std::shared_ptr<const Sentinels> sentinels() const { return sentinels_; }
  // SIGKILL to the node the Sentinels name primary; returns once it is gone.
  void kill_primary();
  // The node the Sentinels name primary: "replica 1 (127.0.0.1:PORT)"; "" when none answers.
  std::string primary() const;
  std::string describe() const;  // "1 replica, 3 Sentinels (quorum 2, ...)"

 private:
  std::string node_name(int port) const;
  void wait_ready(double timeout_s);

  std::vector<std::shared_ptr<Service>> nodes_;  // [0] the primary at the start, then the replicas
  std::vector<std::unique_ptr<Service>> watchers_;
  std::shared_ptr<Sentinels> sentinels_;
};

}  // namespace mw::redis
