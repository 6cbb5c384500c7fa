// A job's timeline: the events of each interval of its series (the machine's, a local server's
// process, the server's own through its adapter's probe) and the episodes found over the finished
// series, each with the events that coincide. Plain data: core/timeline.cpp reads the events,
// core/episodes.cpp finds the episodes, the reporters format them.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace mw {

// One event over the intervals of a job's series: a count per interval (the difference of a
// counter), or a level read at the interval's end, or a share of the interval (PSI, steal, a
// process's CPU). NaN: not read in that interval (the probe got no answer, or nothing to read).
struct EventTrack {
  // What read it: "machine" (PSI, steal, faults, a device), "process" (a local server's process in
  // /proc), "server" (the adapter's probe, over the server's own protocol), "client" (mwbench).
  std::string origin;
  std::string source;  // "machine", "vda", "mwbench", "redis-server"
  std::string name;    // "psi_cpu_some", "flushes", "cpu_wait", "rdb_bgsave_in_progress"
  std::string unit;    // "share" (of the interval, 0-1; summed over threads it may pass 1), "count", "ms", ""
  std::string what;    // in words: "CPU pressure (PSI: some task waiting for a CPU)"
  std::vector<double> values;
};

// An event that coincides with an episode: where it comes from, which, and the figures that say
// so ("forked for an RDB snapshot: 2 forks in the episode, none in 95% of the other intervals").
struct EpisodeCause {
  std::string source, event, evidence;
  double score = 0;  // the rank: how far the event left its own norm
};

// A stretch of the series where p99 or throughput left the run's own norm (core/episodes.h's rules).
struct Episode {
  double start_s = 0, end_s = 0;         // from the measured phase's start
  bool p99 = false, throughput = false;  // which left the norm
  double p99_ns = 0, norm_p99_ns = 0;    // the episode's worst interval p99, and the median interval's
  double rps = 0, norm_rps = 0;          // the episode's lowest interval throughput, and the median interval's
  std::string what;                      // "p99 48 ms (median interval 0.9 ms), throughput -62%"
  std::vector<EpisodeCause> causes;      // ranked, best first
  // No event coincides: said as such ("no event read moved with it; ..."); "" when causes name it.
  std::string unexplained;
};

}  // namespace mw
