// Whether a run has a resource profile (the "limited by" column); its lines under the table are
// notes (results/notes.cpp).
#include "report/report.h"

namespace mw {

bool any_profile(const RunResult& r) {
  for (auto& j : r.jobs)
    if (j.profile.taken) return true;
  return false;
}

}  // namespace mw
