// The "stores:" lines under the table: what a job's sync or round-trip latency means for the
// stores people run (the rules are results/stores.cpp's, which the result file holds too).
#include "report.h"

namespace mw {

std::vector<std::string> guidance_lines(const std::string& name, const JobResult& j) {
  StoreGuidance g = store_guidance(j);
  if (g.figure.empty()) return {};
  std::vector<std::string> out{"stores: " + name + ": " + g.figure};
  for (auto& r : g.rules) out.push_back("  " + r);
  return out;
}

}  // namespace mw
