#include "config/capabilities.h"

#include <algorithm>
#include <stdexcept>

#include "config/workload_spec.h"
#include "durability/durability.h"
#include "queue/queue.h"

namespace mw {
namespace {

bool declares(const std::vector<OptionSpec>& opts, const std::string& name) {
  return std::any_of(opts.begin(), opts.end(), [&](const OptionSpec& o) { return o.name == name; });
}

// `o` after the adapter's own options, unless it declares one of that name itself (redis:
// --keys sequential|random, --value-size 3 for its native ops): it takes the shared values too.
void append(std::vector<OptionSpec>& opts, size_t own, const OptionSpec& o) {
  const auto n = static_cast<std::ptrdiff_t>(own);
  if (std::none_of(opts.begin(), opts.begin() + n, [&](const OptionSpec& x) { return x.name == o.name; }))
    opts.push_back(o);
}

void check(const AdapterSpec& s) {
  auto fail = [&](const std::string& why) { throw std::logic_error("adapter spec " + s.name + ": " + why); };
  if (!s.kv_ops.empty() && !s.has(Family::KeyedStore)) fail("kv_ops without the KeyedStore family");
  if (s.has(Family::KeyedStore) && s.kv_ops.empty()) fail("a KeyedStore that maps no abstract op");
  if (s.conditional_writes && !s.maps(KvOp::Update)) fail("conditional writes without the update op");
  if ((s.target == TargetKind::External) != !s.target_option.empty())
    fail("an External target names its option, and only it does");
  if (!s.target_option.empty() && !declares(s.options, s.target_option)) fail("no option " + s.target_option);
  for (auto& d : s.durability_settings)
    if (!declares(s.options, d)) fail("durability setting " + d + " is not an option");
  if (!s.durability_settings.empty() && s.crash_kinds.empty()) fail("durability settings without a crash kind");
}

}  // namespace

AdapterSpec complete_spec(AdapterSpec spec) {
  const size_t own = spec.options.size();
  if (!spec.kv_ops.empty())
    for (const OptionSpec& o : workload_options())
      if (o.name != "scan-length" || spec.maps(KvOp::Scan)) append(spec.options, own, o);
  if (spec.has(Family::Queue))
    for (const OptionSpec& o : queue_option_specs()) append(spec.options, own, o);
  if (!spec.crash_kinds.empty())
    for (OptionSpec o : durability_options()) {
      if (o.name == "crash") {
        o.choices = {"none"};
        for (CrashKind k : spec.crash_kinds) o.choices.push_back(crash_name(k));
      }
      // A queue's --expect (a delivery) and a crash's (durable) are one option: each reads its own
      // values (check_durability_options refuses a delivery on an op that is no queue's).
      auto queue_expect = std::find_if(spec.options.begin() + static_cast<std::ptrdiff_t>(own), spec.options.end(),
                                       [&](const OptionSpec& x) { return x.name == o.name; });
      if (o.name == "expect" && queue_expect != spec.options.end()) {
        for (const std::string& c : o.choices)
          if (std::find(queue_expect->choices.begin(), queue_expect->choices.end(), c) == queue_expect->choices.end())
            queue_expect->choices.push_back(c);
        queue_expect->help += "; with --crash, " + o.help;
        continue;
      }
      append(spec.options, own, o);
    }
  check(spec);
  return spec;
}

std::string capabilities_text(const AdapterSpec& s) {
  static const char* const kFamily[] = {"keyed store", "queue", "raw"};
  std::string out;
  for (Family f : s.families) {
    out += (out.empty() ? "" : ", ") + std::string(kFamily[static_cast<int>(f)]);
    if (f != Family::KeyedStore) continue;
    std::string ops;
    for (KvOp k : s.kv_ops) ops += (ops.empty() ? "" : " ") + std::string(kv_op_name(k));
    out += " (" + ops + ")";
  }
  out += s.target == TargetKind::External ? "; target: --" + s.target_option
         : s.target == TargetKind::None   ? "; target: none (the driver alone)"
                                          : "; target: local";
  if (s.connects) out += "; reconnects (--reconnect-every)";
  if (!s.crash_kinds.empty()) {
    std::string kinds, settings;
    for (CrashKind k : s.crash_kinds) kinds += (kinds.empty() ? "" : ", ") + std::string(crash_name(k));
    for (auto& d : s.durability_settings) settings += (settings.empty() ? "" : ", ") + d;
    out += "; crash: " + kinds + (settings.empty() ? "" : " (settings: " + settings + ")");
  }
  return out;
}

}  // namespace mw
