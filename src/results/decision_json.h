// A decision (decision.h) in the result file: written by json.cpp, read back by results.cpp.
#pragma once
#include <nlohmann/json_fwd.hpp>
#include <string>
#include <vector>

#include "results/decision.h"

namespace mw {

// The top-level "decide": what was asked, the alternatives, every round.
nlohmann::json decide_json(const DecideResult& r);
// One alternative's "decision": the baseline, ratio, ci [low, high], method, verdict, rounds, the
// robust check, the questions' answers and the diagnostics.
nlohmann::json decision_json(const DecideResult& r, const Decision& d);
// Back from the file: `decide` and the decision objects in order (jobs[].decision, or the
// top-level "decisions"). Throws SetupError "LABEL: where: what" for anything not as written.
DecideResult read_decide(const nlohmann::json& decide, const std::vector<const nlohmann::json*>& decisions,
                         const std::string& label);

}  // namespace mw
