#include "core/ranks.h"

#include <algorithm>
#include <bit>
#include <cmath>

#include "util/status.h"

namespace mw {

namespace {
constexpr char kStepOrderTag[] = "MWSO";
constexpr size_t kTagSize = sizeof kStepOrderTag - 1, kStepOrderSize = kTagSize + 2 + 8;
}  // namespace

std::string step_order_bytes(const StepOrder& o) {
  std::string out(kStepOrderTag, kTagSize);
  out += static_cast<char>(kStepOrderVersion);
  out += static_cast<char>(o.kind);
  const uint64_t figure = o.kind == StepOrder::Kind::Step ? std::bit_cast<uint64_t>(o.rate) : o.pick;
  for (int b = 0; b < 8; ++b) out += static_cast<char>(figure >> (8 * b));
  return out;
}

StepOrder step_order_of(std::string_view bytes) {
  auto bad = [](const std::string& what) { return SetupError("a capacity step order " + what); };
  if (bytes.size() < kTagSize + 1 || bytes.substr(0, kTagSize) != std::string_view(kStepOrderTag, kTagSize))
    throw bad("that is not one mwbench writes (" + std::to_string(bytes.size()) + " bytes)");
  const auto version = static_cast<uint8_t>(bytes[kTagSize]);
  if (version != kStepOrderVersion)
    throw bad("of encoding version " + std::to_string(version) + "; this mwbench reads version " +
              std::to_string(kStepOrderVersion) + ": every rank must run the same mwbench");
  if (bytes.size() != kStepOrderSize)
    throw bad("of " + std::to_string(bytes.size()) + " bytes, not " + std::to_string(kStepOrderSize));
  const auto kind = static_cast<uint8_t>(bytes[kTagSize + 1]);
  if (kind > static_cast<uint8_t>(StepOrder::Kind::End)) throw bad("of unknown kind " + std::to_string(kind));
  uint64_t figure = 0;
  for (int b = 0; b < 8; ++b) figure |= static_cast<uint64_t>(static_cast<uint8_t>(bytes[kTagSize + 2 + b])) << (8 * b);
  StepOrder o;
  o.kind = static_cast<StepOrder::Kind>(kind);
  if (o.kind == StepOrder::Kind::End) {
    o.pick = figure;
    return o;
  }
  o.rate = std::bit_cast<double>(figure);
  if (!std::isfinite(o.rate) || o.rate < 0) throw bad("with a rate that is not 0 (the probe) or more ops/s");
  return o;
}
const RankPlan& one_process() {
  static const RankPlan plan;
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
