#include "api/fault.h"

#include <cstdlib>

#include "util/parse.h"
#include "util/status.h"
#include "util/text.h"

namespace mw {

namespace {
constexpr const char* kNames[kFaultKinds] = {"kill", "restart",      "stop",      "slow",
                                             "cut",  "kill-primary", "kill-node", "switchover"};

double time_of(const std::string& v, const std::string& what, const std::string& whole) {
  double d = -1;
  try {
    d = parse_duration(v, "fault");
  } catch (const SetupError&) {}
  if (!(d >= 0 && d <= 30 * 86400))
    throw SetupError(printable(whole) + ": " + what + " expects a time (1.5s, 500ms), got '" + printable(v) + "'");
  return d;
}
}  // namespace

const char* fault_kind_name(FaultKind k) { return kNames[static_cast<int>(k)]; }

std::optional<FaultKind> parse_fault_kind(const std::string& s) {
  for (int i = 0; i < kFaultKinds; ++i)
    if (s == kNames[i]) return static_cast<FaultKind>(i);
  return std::nullopt;
}

std::vector<FaultSpec> parse_faults(const std::string& v) {
  std::vector<FaultSpec> out;
  size_t from = 0;
  while (from <= v.size()) {
    size_t nl = v.find('\n', from);
    if (nl == std::string::npos) nl = v.size();
    const std::string one = v.substr(from, nl - from);
    from = nl + 1;
    if (one.empty()) continue;
    const std::string usage =
        "expects KIND@AT[/FOR] (kill@50%, restart@4s, stop@40%/1.5s, "
        "slow@40%/5s:+5ms, cut@40%/2s), got '" +
        printable(one) + "'";
    const size_t at = one.find('@');
    if (at == std::string::npos) throw SetupError(usage);
    FaultSpec f;
    f.text = one;
    std::string kinds;
    for (const char* n : kNames) kinds += (kinds.empty() ? "" : ", ") + std::string(n);
    const auto kind = parse_fault_kind(one.substr(0, at));
    if (!kind)
      throw SetupError(printable(one) + ": unknown kind '" + printable(one.substr(0, at)) + "'; expected one of " +
                       kinds);
    f.kind = *kind;
    std::string rest = one.substr(at + 1), when = rest, dur, extra;
    if (const size_t colon = rest.find(':'); colon != std::string::npos)
      extra = rest.substr(colon + 1), rest = rest.substr(0, colon), when = rest;
    if (const size_t slash = rest.find('/'); slash != std::string::npos)
      when = rest.substr(0, slash), dur = rest.substr(slash + 1);
    if (when.empty()) throw SetupError(usage);
    if (when.back() == '%') {
      char* end = nullptr;
      const double p = std::strtod(when.c_str(), &end);
      if (end != when.c_str() + when.size() - 1 || !(p >= 0 && p < 100))
        throw SetupError(printable(one) + ": AT expects a share of --duration from 0% to below 100%, " + "got '" +
                         printable(when) + "'");
      f.at = p / 100;
    } else {
      f.at_share = false;
      f.at = time_of(when, "AT", one);
    }
    if (!dur.empty()) f.for_s = time_of(dur, "FOR", one);
    if (f.kind == FaultKind::Kill && f.for_s > 0)
      throw SetupError(printable(one) + ": kill leaves the server down; for a time down, then back, " +
                       "give restart@AT/FOR");
    if ((f.kind == FaultKind::Stop || f.kind == FaultKind::Slow || f.kind == FaultKind::Cut) && f.for_s <= 0)
      throw SetupError(printable(one) + ": " + kNames[static_cast<int>(f.kind)] + " needs /FOR, how long it lasts (" +
                       kNames[static_cast<int>(f.kind)] + "@40%/1.5s)");
    if (f.kind == FaultKind::Slow) {
      double d = -1;
      try {
        if (!extra.empty() && extra[0] == '+') d = parse_duration(extra.substr(1), "fault");
      } catch (const SetupError&) {}
      if (!(d > 0 && d <= kMaxFaultDelay))
        throw SetupError(printable(one) + ": slow needs its delay, :+DELAY above 0 and up to 60s (slow@40%/5s:+5ms), " +
                         (extra.empty() ? std::string("got none") : "got ':" + printable(extra) + "'"));
      f.delay_s = d;
    } else if (!extra.empty()) {
      throw SetupError(usage);
    }
    out.push_back(std::move(f));
  }
  return out;
}

}  // namespace mw
