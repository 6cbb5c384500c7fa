// libFuzzer target: the result loader behind `mwbench compare` and `mwbench report`.
// A file the loader accepts must be safe for everything that reads it afterwards (the compare
// table, the HTML report and its charts); anything else must be a SetupError naming the file.
// Any other exception, crash, leak or sanitizer report is a finding.
#include <cstddef>
#include <cstdint>
#include <string_view>
#include <vector>

#include "report/report.h"
#include "results/results.h"
#include "util/status.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  // Result files of a few MB exist, but what the fuzzer explores is structure, not size.
  if (size > 256 * 1024) return -1;
  std::string_view text(reinterpret_cast<const char*>(data), size);
  try {
    std::vector<mw::RunResult> runs;
    runs.push_back(mw::parse_result(text, "fuzz.json"));
    runs.push_back(runs.front());  // compare and report match a file with itself
    (void)mw::format_compare(runs);
    (void)mw::render_html(runs);
    (void)mw::render_svgs(runs);
  } catch (const mw::SetupError&) {}
  return 0;
}
