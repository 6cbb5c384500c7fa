// A job's resource profile: the machine's counters read at the timed phase's start and end
// (never per op), their differences, and the verdict on what limited the job.
#pragma once
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "api/adapter.h"
#include "api/job.h"
#include "results/profile.h"
#include "services/resources.h"
#include "services/services.h"

namespace mw {

class ProfileProbe {
 public:
  // A loopback target's server, found by its listening port. Finding it reads every process's
  // descriptors (milliseconds on a busy machine), so whoever runs many phases against one target
  // (a capacity search's steps) keeps what was found here between them; it is looked for again
  // when the process found is gone.
  struct Listener {
    int port = 0;  // 0: not looked for yet
    pid_t pid = -1;
  };
  // The adapter gives the files and folders the job touches and where its server is
  // ("127.0.0.1:6379"); `in_process`: the store runs inside mwbench (no server of its own);
  // `lock_waits`: its clients' lock waits so far (Abilities::lock_waits; null: not counted).
  // `known`, when given, outlives the probe.
  ProfileProbe(const Adapter& adapter, bool in_process, Listener* known = nullptr,
               std::function<LockWaits()> lock_waits = nullptr);
  void start();  // the phase begins: the managed servers (services.h's claims) or the listener
  void stop();   // the phase ended (before the clients close: their sockets' counts are read)
  // The phase did `ops` ops at `rps` with `clients` clients on `threads` driver threads
  // (`polled`: its event loops polled busily between replies): the profile, judged.
  struct Run {
    uint64_t ops = 0;
    double rps = 0;
    int clients = 0, threads = 0;
    bool polled = false;
    // The CPU time (RUSAGE_THREAD, at its exit) of the driver's busiest thread: its threads start
    // and end inside the phase, so neither of its edges' samples sees them.
    double busiest_worker_s = 0;
    // The driver threads' run-queue wait over the phase, summed (each read at its start and its
    // exit, for the same reason); and the one runnable longest (on a CPU or waiting for one): its
    // time on a CPU and its wait (schedstat). -1: not read.
    double cpu_wait_s = -1, runnable_cpu_s = -1, runnable_wait_s = -1;
  };
  Profile finish(const Job& job, const Run& run) const;
  // The local servers found at start(): managed, or listening on the target's loopback port.
  std::vector<ServerProcess> servers() const;

 private:
  struct Server {
    ServerProcess proc;
    std::string how;
    ProcSample at_start, at_end;
  };
  struct Disk {
    DiskDevice device;
    DiskSample at_start, at_end;
  };
  std::function<LockWaits()> lock_waits_;
  std::vector<std::string> paths_;
  std::string target_;
  bool in_process_;
  Listener* known_;
  double t0_ = 0, t1_ = 0;
  ProcSample self_, self_end_;
  std::vector<Server> servers_;
  std::vector<Disk> disks_;
  NetSample net_, net_end_;
  CpuSample cpu_, cpu_end_;
  std::optional<LockWaits> locks_, locks_end_;
};

// A process's share of a phase from its samples at the start (a) and the end (b).
ProcessProfile difference(const ProcSample& a, const ProcSample& b, const std::string& how);

// The verdict of a profile: limited_by, evidence and suspect, by the rules of
// docs/guide/profile.md. Conservative: "not determined" unless one resource's evidence is clear.
void judge(Profile& p, const Job& job, double rps, bool in_process);

}  // namespace mw
