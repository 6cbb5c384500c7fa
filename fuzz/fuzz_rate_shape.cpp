// libFuzzer target: --rate's parser (a number or a shape: ramp, steps, sine, spike) and the
// schedule it drives. Bad input must end as a SetupError; a shape it accepts must offer its ops
// in order: the due times of a client's schedule never go backwards, and time_of inverts
// ops_until. Any other exception, crash or sanitizer report is a finding.
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <string>

#include "util/status.h"
#include "workload/rate_shape.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size > 4096) return -1;  // a command-line value
  const std::string text(reinterpret_cast<const char*>(data), size);
  try {
    const mw::RateShape s = mw::parse_rate_shape(text);
    if (!(s.mean_rate() >= 0)) __builtin_trap();
    if (s.mean_rate() == 0) return 0;  // the closed loop: no schedule
    for (mw::Arrivals a : {mw::Arrivals::Uniform, mw::Arrivals::Poisson}) {
      mw::Schedule sched(&s, 0.5, a, size);
      int64_t last = 0;
      for (int i = 0; i < 64; ++i) {
        const int64_t t = sched.next_ns();
        if (t < last) __builtin_trap();
        last = t;
      }
    }
    size_t piece = 0;
    for (double t : {0.0, 0.5, 3.0, 100.0}) {
      const double back = s.time_of(s.ops_until(t), piece);
      if (!(std::fabs(back - t) <= 1e-6 * (1 + t)) && s.rate_at(t) > 0) __builtin_trap();
    }
  } catch (const mw::SetupError&) {}
  return 0;
}
