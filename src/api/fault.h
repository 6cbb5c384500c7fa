// --fault KIND@AT[/FOR]: a fault injected during the measured phase (docs/guide/faults.md). The
// driver runs the schedule beside the load (core/faults.h); the adapter offers what it can do
// (AdapterSpec::fault_kinds, and the Crashable of its managed server).
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace mw {

enum class FaultKind : uint8_t {
  Kill,         // SIGKILL to the server; it stays down
  Restart,      // SIGKILL, then the server started again on the same files (after FOR, when given)
  Stop,         // SIGSTOP, then SIGCONT after FOR
  Slow,         // through mwbench's TCP proxy: each reply delayed
  Cut,          // through mwbench's TCP proxy: connections dropped, new ones refused, for FOR
  KillPrimary,  // a replicated set-up's primary
  KillNode,     // one node of a cluster
  Switchover,   // a replicated set-up's manager asked to fail the primary over (a planned failover)
};
inline constexpr int kFaultKinds = 8;

const char* fault_kind_name(FaultKind k);  // "kill", "kill-primary"
// slow and cut go through mwbench's TCP proxy (services/proxy.h); the others signal the server.
inline bool through_proxy(FaultKind k) { return k == FaultKind::Slow || k == FaultKind::Cut; }
std::optional<FaultKind> parse_fault_kind(const std::string& s);

struct FaultSpec {
  FaultKind kind = FaultKind::Kill;
  double at = 0;         // a share of --duration (at_share) or seconds from the measured phase's start
  bool at_share = true;  // "40%": a share; "4s": a time
  double for_s = 0;      // FOR: how long the fault lasts; 0: not given
  double delay_s = 0;    // slow: the delay added (":+5ms"), above 0 and up to kMaxFaultDelay
  std::string text;      // as given: "restart@40%/1s"
  // When it falls, in seconds from the measured phase's start, in a run of `duration_s`.
  double at_s(double duration_s) const { return at_share ? at * duration_s : at; }
};
// The first of `faults` that goes through the proxy, or null.
inline const FaultSpec* proxy_fault(const std::vector<FaultSpec>& faults) {
  for (const FaultSpec& f : faults)
    if (through_proxy(f.kind)) return &f;
  return nullptr;
}

// slow's longest delay, seconds: past it a typo (+5s for +5ms) is likelier than a wish.
inline constexpr double kMaxFaultDelay = 60;

// One --fault value, or several (a repeated option's values, one per line). Throws SetupError
// naming the value and what was expected.
std::vector<FaultSpec> parse_faults(const std::string& v);

// --reconnect-backoff: a client whose connection is lost tries again after 10 ms, then twice as
// long after each failed try, up to this (seconds). 0: no reconnect (a lost client stops).
inline constexpr double kDefaultReconnectBackoff = 1.0;

}  // namespace mw
