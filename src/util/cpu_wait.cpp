#include "util/cpu_wait.h"

#include <cstdio>

namespace mw {

SchedTimes sched_times() {
  FILE* f = std::fopen("/proc/thread-self/schedstat", "re");
  if (!f) return {};
  unsigned long long on_cpu = 0, waited = 0;  // ns on a CPU, ns runnable on a run queue, timeslices
  const int n = std::fscanf(f, "%llu %llu", &on_cpu, &waited);
  std::fclose(f);
  if (n != 2) return {};
  return {static_cast<int64_t>(on_cpu), static_cast<int64_t>(waited)};
}

int64_t cpu_wait_ns() { return sched_times().wait_ns; }

}  // namespace mw
