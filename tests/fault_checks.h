// What the fault tests share (test_faults.cpp, and the adapters' fault cases).
#pragma once
#include <doctest/doctest.h>

#include <map>
#include <string>

#include "api/fault.h"
#include "core/runner.h"
#include "tests/helpers.h"

namespace mw::test {

// `j` given `opts` and `faults` and run for 4 s: it must be refused before any op, in one line with
// exit 2. The line.
inline std::string refused_fault_job(Job j, const std::map<std::string, std::string>& opts, const std::string& faults) {
  j.duration_s = 4;
  j.reconnect_backoff_s = 0.2;
  if (!faults.empty()) j.faults = parse_faults(faults);
  for (const auto& [k, v] : opts) j.opts[k] = v;
  JobResult r = run_one(j, false);
  CHECK(r.state == JobResult::State::SetupFailed);
  CHECK(exit_of(r) == 2);
  CHECK(r.message.find('\n') == std::string::npos);
  return r.message;
}

}  // namespace mw::test
