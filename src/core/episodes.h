// Episodes: the stretches of a finished series where p99 or throughput left the run's own norm,
// each matched to the events of the timeline that coincide (results/episodes.h), ranked, with
// their figures. A pure function of the series and the events: the tests give it both.
#pragma once
#include <cstddef>

#include "results/result.h"

namespace mw {

// The rules (docs/guide/episodes.md says why each is what it is). The norm is the run's own: the
// median of its whole intervals' p99 and throughput. An interval leaves it when its p99 is
// p99_factor times the median or more and at least p99_floor_ns above it, or when its throughput
// is rps_factor times the median or less (judged only when the median interval completes
// min_ops ops or more). Intervals that leave it are merged when adjacent or one interval apart;
// an episode holds min_s (and one interval) at least of intervals out of the norm in a row; a run
// of fewer than min_intervals whole intervals has no norm and is not judged.
struct EpisodeRules {
  double p99_factor = 3;
  double p99_floor_ns = 2e6;
  double rps_factor = 0.7;
  double min_ops = 20;
  double min_s = 0.25;
  size_t min_intervals = 8;
};

// The names of the timeline's own tracks the rules read (core/timeline.cpp makes them): a local
// server's process, under its name as the source.
inline constexpr const char* kProcessCpu = "process_cpu";           // share of a core
inline constexpr const char* kProcessStopped = "process_stopped";   // 1: stopped (state T) at the reading
inline constexpr const char* kProcessCpuWait = "process_cpu_wait";  // share of the interval not scheduled
// The machine's and mwbench's own: the client's threads waiting for a CPU, the machine's CPU
// pressure (PSI, some task waiting), the hypervisor's steal; shares of the interval.
inline constexpr const char* kCpuWait = "cpu_wait";
inline constexpr const char* kPsiCpuSome = "psi_cpu_some";
inline constexpr const char* kSteal = "steal";
// A source's probe that got no answer in an interval it was read in before: 1 (0 when it answered).
inline constexpr const char* kProbeUnanswered = "probe_unanswered";

// j.episodes and j.episodes_judged from j.series (of j.series_interval_s, over j.elapsed_s) and
// j.events.
void find_episodes(JobResult& j, const EpisodeRules& rules = EpisodeRules{});

}  // namespace mw
