// The running jobs' counters for --metrics-listen: ops, errors by kind, the current rate and the
// latency of the intervals closed so far, per job, in the Prometheus text exposition format.
// The timed loop never touches this: a measured phase registers its clients' atomic counters at
// its start and folds them in at its end; the latency arrives once per --interval per client
// (SeriesSink::watch). The metrics server reads it under one short lock.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "api/job.h"
#include "util/series.h"
#include "util/status.h"

namespace mw {

namespace loops {
struct ClientStats;  // loops.h
}
using loops::ClientStats;

namespace live {

// True while a metrics server listens: otherwise phases register nothing. enable(true) and
// enable(false) come in pairs (a server's life).
bool enabled();
void enable(bool on);

// An event of the job's timeline (core/timeline.h) at its last reading: a gauge.
struct EventValue {
  std::string origin, source, name, unit;
  double value = 0;
};

class Phase;
// A measured phase of `job` on `target` begins: its clients' counters are read live until the
// returned handle is destroyed, then added to the job's totals (a job that runs again, --repeat
// or a capacity step, goes on counting in the same series). Null when live metrics are off.
std::unique_ptr<Phase> begin(const Job& job, const std::string& target, const std::vector<const ClientStats*>& clients);

class Phase {
 public:
  Phase(size_t slot, std::vector<const ClientStats*> clients) : slot_(slot), clients_(std::move(clients)) {}
  ~Phase();
  Phase(const Phase&) = delete;
  Phase& operator=(const Phase&) = delete;
  // An interval of the phase's latency closed (from SeriesSink::watch, under the sink's lock).
  void add(const SeriesInterval& iv);
  // The timeline's last readings (from its threads): each replaces the gauge of its source and name.
  void events(const std::vector<EventValue>& v);

 private:
  size_t slot_;
  std::vector<const ClientStats*> clients_;
};

// Four times a second (the metrics server's thread): each running job's op count, of which the
// rate is taken over the last second.
void sample(int64_t now_ns);
// Every job seen so far, in the Prometheus text format (version 0.0.4).
std::string render();

// Under mpirun rank 0 alone serves, the whole run's counters: every other rank sends it
// snapshot() (with its heartbeats and at each phase's end), which rank 0 takes with remote().
// render() adds each rank's latest to rank 0's own; a snapshot older than one already taken
// from that rank is dropped, so no counter goes back.
std::string snapshot();
void remote(int rank, const std::string& text);

}  // namespace live
}  // namespace mw
