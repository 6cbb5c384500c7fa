// --fault (api/fault.h): the driver's side of faults injected during the measured phase. A thread
// beside the load injects each fault at its time through the adapter's abilities (its Crashable's
// kill, restart, pause; its Replication's or Cluster's kills) or the runner's proxy (slow, cut)
// and watches for the first success after it; a server that never answers again ends the phase
// --timeout after the fault (what was measured is kept). After the phase the ops' record
// (ClientStats::acked and marks) gives each fault's figures, and the acknowledged writes are read back.
// Internal to the driver (driver.cpp).
#pragma once
#include <atomic>
#include <thread>
#include <vector>

#include "api/adapter.h"
#include "core/loops.h"
#include "results/result.h"

namespace mw {

class FaultProxy;  // services/proxy.h
namespace queue {
struct Figures;  // queue/queue.h
}

class FaultPlan {
 public:
  // Inactive (no --fault) or armed; throws SetupError when the adapter's `abilities` (asked once
  // for the job) cannot do a fault kind. `expires`: the job's writes take a TTL, so a key read
  // back missing proves no loss.
  FaultPlan(const Job& job, const Abilities& abilities, bool expires = false);
  ~FaultPlan();
  bool active() const { return !job_.faults.empty(); }
  // The phase's halt flag: set when the server did not come back within --timeout.
  const std::atomic<bool>* halt() const { return &halt_; }
  // Starts the schedule once `started` (the measured phase's start, now_ns) is set; `stats`:
  // every client's figures, read for their success counts while the phase runs.
  void arm(std::vector<const loops::ClientStats*> stats, const std::atomic<int64_t>* started);
  // After the phase (from `t0` to `end`): each fault's figures from the clients' successes (acked)
  // and failures (marks), its p99s from the job's `series` (intervals of `interval_s`), and the
  // acknowledged writes read back (the server restarted first when a fault left it down).
  std::vector<FaultResult> finish(const std::vector<const loops::ClientStats*>& stats, int64_t t0, int64_t end,
                                  const std::vector<SeriesInterval>& series, double interval_s);

 private:
  struct Done {
    int64_t at = 0, end = 0;  // now_ns: injected, its action ended
    std::string error;
    bool down = false;     // it left the server down
    std::string promoted;  // kill-primary, switchover, kill-node: the primary (leader) once a success came after it
    std::string node;      // kill-node: the node killed, and why
  };
  void run(const std::vector<const loops::ClientStats*>& stats, const std::atomic<int64_t>* started);
  bool sleep_until(int64_t t);  // false: the phase or a stop ended the wait
  void lost_writes(std::vector<FaultResult>& out, const std::vector<const loops::ClientStats*>& stats);
  std::vector<WriteState> keyed_states(KeyedReadBack& keyed, const std::vector<Ack>& acked);
  void heal();                 // the proxy relays as before: no delay, listening
  std::string victim() const;  // what a fault hit, for its error

  Job job_;
  bool expires_ = false;
  bool replicated_ = false;
  bool queue_ = false;  // a queue's messages: counted from its ledger (queue_across), not read back  // an acknowledged
                        // write is on other nodes (contract.h): a loss fails the job
  Crashable* crash_ = nullptr;
  Replication* replication_ = nullptr;  // kill-primary, switchover: the crash hooks' replicated set-up
  Cluster* cluster_ = nullptr;          // kill-node
  FaultProxy* proxy_ = nullptr;         // slow, cut: the runner's (services/proxy.h)
  std::vector<Done> done_;
  std::atomic<bool> halt_{false}, quit_{false};
  std::thread thread_;
  bool down_ = false;  // the server is down after the schedule (a kill, a restart that failed)
};

// A queue's fault job, after its end check: the ledger's messages lost, duplicated and reordered
// go to the first fault that kills a server (the others say so), with what an acknowledgement
// promised (`contract`); a loss under a replicated contract is the fault's error.
void queue_across(std::vector<FaultResult>& faults, const queue::Figures& q, const std::optional<Contract>& contract);

}  // namespace mw
