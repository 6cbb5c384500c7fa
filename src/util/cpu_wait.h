// What the scheduler counts for the calling thread: its time on a CPU and its wait for one.
#pragma once
#include <cstdint>

namespace mw {

// The calling thread's time so far on a CPU and runnable but waiting for one (the kernel's
// run-queue delay): /proc/thread-self/schedstat's first two fields, ns; -1 each when it cannot be
// read (no schedstats).
struct SchedTimes {
  int64_t on_cpu_ns = -1, wait_ns = -1;
};
SchedTimes sched_times();

// The calling thread's wait for a CPU so far (sched_times().wait_ns).
int64_t cpu_wait_ns();

}  // namespace mw
