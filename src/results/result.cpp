#include <csignal>

#include "results/result.h"

namespace mw {

int exit_code(const RunResult& r) {
  if (r.interrupted) return 128 + (r.signal > 0 ? r.signal : SIGINT);
  int code = 0;
  for (auto& j : r.jobs) {
    if (j.state == JobResult::State::SetupFailed || j.durability.restart_failed) return 2;
    if (j.capacity && j.capacity->verdict == CapacityVerdict::ClientBound)
      return 2;  // the load generator was the limit
    if (j.capacity && j.capacity->verdict == CapacityVerdict::None && code == 0) code = 3;
    if (j.failed()) code = 1;
    if (!j.slo.passed && code == 0) code = 3;
  }
  return code == 0 && r.gate_failed ? 3 : code;
}

}  // namespace mw
