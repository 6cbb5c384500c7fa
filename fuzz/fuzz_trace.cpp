// libFuzzer target: the trace parsers (--trace: Twitter cache-trace CSV, Redis MONITOR output,
// the generic CSV), each line of the input in each format. A malformed line must be refused with
// what was expected; one accepted must hold a value size within the cap and a finite time. Any
// exception, crash or sanitizer report is a finding.
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "workload/trace.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size > 64 * 1024) return -1;
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  for (mw::TraceFormat f : {mw::TraceFormat::Twitter, mw::TraceFormat::Monitor, mw::TraceFormat::Csv}) {
    size_t at = 0;
    while (at <= text.size()) {
      const size_t nl = text.find('\n', at);
      const std::string_view line = text.substr(at, nl == std::string_view::npos ? std::string_view::npos : nl - at);
      mw::TraceRecord r;
      bool skip = false;
      std::string why;
      const bool ok = mw::parse_trace_line(f, line, r, skip, why);
      if (!ok && why.empty()) __builtin_trap();  // refused without saying why
      if (ok && !skip && (r.value_size > mw::kMaxTraceValue || !std::isfinite(r.t) || r.t < 0)) __builtin_trap();
      if (nl == std::string_view::npos) break;
      at = nl + 1;
    }
  }
  return 0;
}
