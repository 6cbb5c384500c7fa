// What the machine counts for a process, a device and mwbench's own sockets, read from /proc and
// /sys at a phase's start and end (never per op): the raw samples a job's resource profile
// (core/probe.h) is the difference of.
#pragma once
#include <sys/types.h>

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace mw {

// A process and every process below it (children, grandchildren), with all their threads.
struct ProcSample {
  bool found = false;
  std::string name;  // the root's comm
  double cpu_s = 0;  // user + system of every process, and of the children they reaped
  double user_s = 0, sys_s = 0;
  std::map<pid_t, double> thread_cpu_s;             // per thread (tid) of every process
  uint64_t peak_rss_bytes = 0;                      // VmHWM summed over the processes (peak since each started)
  uint64_t ctx_voluntary = 0, ctx_involuntary = 0;  // summed over every thread
  int processes = 0;
};
// `with_children`: false samples the process alone (mwbench, whose children are the supervisors
// of the servers it manages).
ProcSample sample_process(pid_t root, bool with_children = true);
// /proc/PID/stat's start time (field 22): with the pid, names a process even after pid reuse;
// "" when the process is gone.
std::string start_time(pid_t pid);
// The processes whose parent is `parent` (from /proc; in its process group or not).
std::vector<pid_t> children_of(pid_t parent);
// mwbench itself: getrusage(RUSAGE_SELF) (microseconds) and its threads from /proc/self/task.
ProcSample sample_self();
// The process listening on 127.0.0.1/0.0.0.0/::1/:: TCP `port` (/proc/net/tcp{,6} inode ->
// /proc/*/fd), or -1 when none can be seen (another user's process, another namespace).
pid_t listener_of(int port);

// The block device behind a path: the disk (a partition counts as its disk) whose /proc/diskstats
// line counts the path's I/O. `why_not` says why there is none ("tmpfs: no block device").
struct DiskDevice {
  std::string name;     // "vda"
  std::string why_not;  // "" when found
};
DiskDevice disk_of(const std::string& path);
struct DiskSample {
  bool found = false;
  uint64_t reads = 0, writes = 0, read_bytes = 0, write_bytes = 0, flushes = 0;
  double flush_ms = 0, busy_ms = 0;  // time flushing; time with any I/O in flight (io_ticks)
};
DiskSample sample_disk(const std::string& device);

// The machine's CPU time, every core's, from /proc/stat's first line (clock ticks): all of it
// and what the hypervisor gave other guests while this one had work to run (steal).
struct CpuSample {
  bool found = false;
  uint64_t total = 0, steal = 0;
};
CpuSample sample_cpu();
// The same from the text of /proc/stat (tests).
CpuSample parse_cpu(const std::string& proc_stat);

// Pressure stall information (/proc/pressure/{cpu,io,memory}): the microseconds since boot in
// which some task (some) or every task (full) stalled on the resource; -1 when not read (a kernel
// without PSI, or one booted with psi=0).
struct PsiSample {
  int64_t cpu_some = -1, io_some = -1, io_full = -1, memory_some = -1, memory_full = -1;
};
PsiSample sample_psi();
// The total= of a pressure file's line ("some" or "full"); -1 when it has none (tests).
int64_t parse_psi_total(const std::string& text, const std::string& line);
// The machine's major page faults since boot (/proc/vmstat's pgmajfault); -1 when not read.
int64_t major_faults();

// Processes read once per interval (the timeline, core/timeline.h): their CPU time, their threads'
// waits for a CPU (schedstat), their major faults and the first one's state.
struct TaskSample {
  bool found = false;    // the first process was there
  char state = 0;        // the first's: 'R', 'S', 'D', 'T' (stopped), 't', 'Z'
  double cpu_s = 0;      // user + system, and what they reaped of their children
  int64_t wait_ns = -1;  // summed over every thread; -1: no schedstats
  uint64_t major_faults = 0;
};
TaskSample sample_tasks(const std::vector<pid_t>& pids);
// `root` and every process below it, found in one pass over /proc.
std::vector<pid_t> process_tree(pid_t root);

// Bytes mwbench's own TCP sockets sent (and had acknowledged) and received: TCP_INFO of every
// socket in /proc/self/fd, keyed by inode.
struct NetSample {
  std::map<ino_t, std::pair<uint64_t, uint64_t>> sockets;  // inode -> (acked sent, received)
};
NetSample sample_net();
// Bytes over the sockets open at `end`: all of a socket's bytes when it opened after `start`.
std::pair<uint64_t, uint64_t> net_delta(const NetSample& start, const NetSample& end);

}  // namespace mw
