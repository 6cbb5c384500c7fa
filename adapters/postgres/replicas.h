// A replicated PostgreSQL mwbench starts (--replicas N): the primary, N streaming replicas
// (pg_basebackup of the primary, hot standbys on 127.0.0.1, each its own port and temp dir), and
// mwbench as their failover manager, as Patroni or repmgr would be: it watches the primary and,
// once it has not answered for kFailoverAfterMs, promotes the replica that received the most WAL
// and points the others at it. With --sync-replicas K the primary's synchronous_standby_names is
// 'ANY K (*)': a commit is acknowledged once K replicas have it (synchronous_commit says how far:
// on, flushed; remote_write, written; remote_apply, applied). Every connection of the job names
// all the nodes and asks for a read-write session (libpq's target_session_attrs), so a client
// that reconnects finds the promoted replica by itself.
#pragma once
#include <atomic>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "adapters/postgres/pg.h"
#include "services/services.h"

namespace mw::pg {

// The watch: the primary asked every kWatchMs; no answer for kFailoverAfterMs starts a failover
// (docs/guide/faults.md says them).
inline constexpr int kWatchMs = 100, kFailoverAfterMs = 1000;

class ReplicaSet {
 public:
  // Starts `replicas` replicas of `primary` (a managed server of `fsync`, started with
  // replica_args()), and returns once each streams and `sync` of them are synchronous, within
  // `timeout_s`; throws SetupError naming what is not. The watch starts then.
  ReplicaSet(std::shared_ptr<Service> primary, bool fsync, int replicas, int sync, double timeout_s);
  ~ReplicaSet();
  ReplicaSet(const ReplicaSet&) = delete;
  ReplicaSet& operator=(const ReplicaSet&) = delete;

  // The primary's arguments for a set of `sync` synchronous replicas.
  static std::vector<std::string> primary_args(int sync);
  // Every node, a read-write session wanted: where the job's connections go.
  void point(Endpoint& ep) const;
  // SIGKILL to the node that is primary now (and its backends); returns once it is gone.
  void kill_primary();
  // --fault switchover, a planned failover as Patroni's switchover does it: the primary shut down
  // cleanly (a fast shutdown, which waits until its WAL senders shipped everything up to its
  // shutdown checkpoint), the replica with the most WAL promoted, the others pointed at it, and the
  // old primary started again as a standby of it. Nothing acknowledged is lost, asynchronous or
  // not. Returns once the old primary streams again, within `timeout_s`; throws SetupError naming
  // the step that failed.
  void switch_over(double timeout_s);
  // The node that is primary now: "primary (127.0.0.1:PORT)", "replica 1 (127.0.0.1:PORT)"; "" when
  // none is (a failover under way, or one that failed: failover_error() says why).
  std::string primary() const;
  std::string failover_error() const;
  std::string describe() const;  // "1 replica, streaming, asynchronous; failover by mwbench ..."

 private:
  void wait_ready(double timeout_s);
  void watch();
  void fail_over(size_t dead);
  void rejoin(size_t old, double timeout_s);
  std::string node_name(size_t i) const;
  std::string conninfo_of(size_t i) const;  // primary_conninfo naming node i
  Endpoint node(size_t i, double timeout_s) const;

  std::vector<std::shared_ptr<Service>> nodes_;  // [0] the primary at the start, then the replicas
  int sync_ = 0;
  std::atomic<int> primary_{0};  // index into nodes_; -1: none
  std::atomic<bool> quit_{false};
  mutable std::mutex mu_;
  std::string error_;     // the last failover's failure
  std::mutex manage_mu_;  // one failover at a time: the watch's, or a switchover's
  std::thread watcher_;
};

}  // namespace mw::pg
