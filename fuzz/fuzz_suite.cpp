// libFuzzer target: the TOML suite loader (what `mwbench run FILE` reads).
// A hostile suite must end as a SetupError (one line naming the file); any other exception,
// crash, leak or sanitizer report is a finding.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "adapters/registry.h"
#include "config/config.h"

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  mw::install_registered_adapters();  // as mwbench's main() does
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  // Suites are small; the loader's size bound is not what this target explores.
  if (size > 64 * 1024) return -1;
  std::string_view text(reinterpret_cast<const char*>(data), size);
  try {
    mw::Suite s = mw::parse_suite(text, "fuzz.toml");
    for (const mw::Job& j : s.jobs)
      if (j.adapter.empty() || j.op.empty()) __builtin_trap();  // a job the runner cannot run
  } catch (const mw::SetupError&) {}
  return 0;
}
