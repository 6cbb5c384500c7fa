// A warning about a job's or a run's figures: what it is about (its kind) and its words. Readers
// decide by the kind, never by the words: the text is for people. Adapters give theirs too
// (Adapter::warnings), so the kind is known from where a warning is made to the file and back.
#pragma once
#include <cstdint>
#include <string>

namespace mw {

enum class WarningKind : uint8_t {
  Other,
  DebugBuild,       // mwbench was built as Debug
  CpuScaling,       // the CPU governor scales the frequency
  SharedCores,      // a managed server and mwbench share this machine's few cores
  RankLost,         // an MPI rank stopped answering: its figures are missing
  Merge,            // merging runs: figures that differ per run and cannot be added up
  Adapter,          // an adapter's, of no kind below (files of before adapters gave kinds)
  PipelineIgnored,  // -P asked of blocking clients
  LoadFailed,       // a workload's load phase did not write every key
  WarmupFailed,     // ops of the warm-up failed
  ClientBound,      // the profile's verdict: mwbench was the limit
  Steal,            // the hypervisor took much of the machine's CPU time
  Unsettled,        // the time series never settled
  Teardown,         // the adapter's teardown failed
  NotSimultaneous,  // merging runs: they did not all measure at the same time (or it cannot tell)
  NotTheDevice,     // an adapter's: a device figure measured in memory (O_DIRECT on tmpfs)
  PageCache,        // an adapter's: reads that come from the page cache after the first pass
  OverServerLimit,  // an adapter's: requests over a limit of the server's, which fail
  TooShort,         // the measured phase lasted under 0.1 s: too short to mean much
  NotConfirmed,     // --find-max: the rate found missed the SLO in some of its repeats
  BehindSchedule,   // --rate by --duration: ops due before the end were not sent by then
  ServerEvents,     // the server's own events could not be read (the timeline's probe)
};
constexpr int kWarningKinds = static_cast<int>(WarningKind::ServerEvents) + 1;

struct Warning {
  WarningKind kind = WarningKind::Other;
  std::string text;
  bool operator==(const Warning&) const = default;
};

}  // namespace mw
