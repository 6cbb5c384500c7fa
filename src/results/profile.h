// Where a job's time went: the resources of its timed phase (read at the phase's start and end,
// never per op) and the verdict drawn from them. Plain data: core/probe.cpp fills it, the
// reporters format it.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace mw {

// A process over the timed phase: mwbench itself, or a server with its threads and children.
struct ProcessProfile {
  std::string name;  // "mwbench", "redis-server"
  std::string how;   // "self", "managed", "listening on port 6379"
  double user_s = 0, sys_s = 0;
  double busiest_thread_s = 0;  // CPU time of the thread that ran most
  uint64_t peak_rss_bytes = 0;  // peak since the process started (VmHWM; ru_maxrss for mwbench)
  uint64_t ctx_voluntary = 0, ctx_involuntary = 0;
  int processes = 0;
  double cpu_s() const { return user_s + sys_s; }
};

// The block device behind one path the job touched. Its counters are the device's: every
// process's I/O on it counts, not only the job's.
struct DiskProfile {
  std::string path, device;  // "/var/tmp", "vda"
  std::string missing;       // why there are no figures ("tmpfs: no block device"); "" when there are
  uint64_t reads = 0, writes = 0, read_bytes = 0, write_bytes = 0, flushes = 0;
  double flush_ms = 0;  // time spent on flushes (summed over flush requests)
  double busy_ms = 0;   // time with any request in flight (io_ticks: the device's utilisation)
};

struct Profile {
  bool taken = false;
  double wall_s = 0;    // the sampled window: the timed phase
  uint64_t ops = 0;     // ops of the phase, succeeded or failed
  int cores = 0;        // cores mwbench may run on (its affinity mask)
  int threads = 0;      // threads the driver ran the clients on
  bool polled = false;  // its event loops polled busily (--poll): mwbench's CPU is no evidence
  ProcessProfile self;
  std::vector<ProcessProfile> servers;
  std::vector<DiskProfile> disks;
  bool net_counted = false;  // mwbench's own TCP sockets (TCP_INFO); false when it used none
  uint64_t bytes_sent = 0, bytes_received = 0;
  // The machine's CPU time over the phase (/proc/stat, every core) and the share of it the
  // hypervisor gave other guests while this one had work to run (steal); -1: not read.
  double steal_share = -1;
  // The driver threads' time runnable but waiting for a CPU over the phase (the kernel's run-queue
  // delay, each thread's /proc/thread-self/schedstat), summed over them; -1: not read.
  double cpu_wait_s = -1;
  // The driver thread runnable longest over the phase (on a CPU or waiting for one): its time on a
  // CPU and its wait for one (schedstat); -1: not read. Both near the phase's length: it always had
  // work, the client was the limit (the client-starved rule).
  double runnable_cpu_s = -1, runnable_wait_s = -1;
  int clients = 0;             // clients the phase ran (this process's)
  bool locks_counted = false;  // the adapter counts its clients' lock waits (SQLite's busy retries)
  uint64_t lock_retries = 0;
  double lock_wait_s = 0;  // time the clients slept waiting on the store's locks
  // The verdict: "server CPU", "client CPU", "client starved", "in-process CPU", "machine CPU", "lock waits",
  // "disk flushes", "the rate you asked for" or "not determined"; evidence: the figures that say so.
  std::string limited_by, evidence;
  bool suspect = false;  // the client was the bottleneck: the figure measures mwbench

  double per_op(double v) const { return ops ? v / static_cast<double>(ops) : 0; }
  double share(double cpu_s) const { return wall_s > 0 ? cpu_s / wall_s : 0; }  // 1.0: one core
  // The share of the phase a driver thread waited for a CPU, on average (0 when not read).
  double cpu_wait_share() const { return cpu_wait_s > 0 && threads > 0 ? share(cpu_wait_s) / threads : 0; }
};

}  // namespace mw
