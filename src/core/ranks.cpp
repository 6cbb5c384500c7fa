#include "core/ranks.h"

#include <algorithm>

namespace mw {
RankPlan& rank_plan() {
  static RankPlan plan;
  return plan;
}

std::pair<int, int> RankPlan::clients(int total) const {
  if (size <= 1) return {0, total};
  int base = total / size, extra = total % size;
  int first = rank * base + std::min(rank, extra);
  return {first, base + (rank < extra ? 1 : 0)};
}

uint64_t share_of(uint64_t total, int clients, int first, int count) {
  if (clients <= 0) return total;
  uint64_t c = static_cast<uint64_t>(clients), base = total / c, extra = total % c, out = 0;
  for (int i = first; i < first + count; ++i) out += base + (static_cast<uint64_t>(i) < extra ? 1 : 0);
  return out;
}

}  // namespace mw
