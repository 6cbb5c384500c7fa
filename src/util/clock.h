// The one clock of every figure: steady_clock in nanoseconds.
#pragma once
#include <chrono>
#include <cstdint>

namespace mw {

inline int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

}  // namespace mw
