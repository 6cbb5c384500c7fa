#include "options.h"

#include "config.h"

#include <cmath>
#include <cstdlib>

namespace mw {

bool parse_bool_word(const std::string& v) {
  if (v == "true" || v == "1" || v == "yes" || v == "on" || v.empty()) return true;
  if (v == "false" || v == "0" || v == "no" || v == "off") return false;
  throw SetupError("expected true or false, got '" + v + "'");
}

namespace detail {

int64_t parse_int(const std::string& v) {
  try {
    return parse_size(v, "value");
  } catch (const SetupError&) {
    throw SetupError("expected a whole number, optionally with k, M or G, got '" + v + "'");
  }
}

double parse_num(const std::string& v) {
  char* end = nullptr;
  double x = std::strtod(v.c_str(), &end);
  if (v.empty() || *end || !std::isfinite(x)) throw SetupError("expected a number, got '" + v + "'");
  return x;
}

const AdapterSpec& spec_of(const Job& job) {
  const AdapterSpec* s = find_adapter(job.adapter);
  if (!s) throw std::logic_error("no adapter '" + job.adapter + "'");
  return *s;
}

void fill_options(const Job& job, const std::vector<OptionSpec>& options, const std::type_info& owner, void* into) {
  for (const OptionSpec& o : options) {
    if (!o.store || *o.owner != owner) continue;  // the core's options (the workload's) are not the adapter's
    auto it = job.opts.find(o.name);
    if (it == job.opts.end()) continue;
    // Numbers are checked again here, for jobs built without the command line or a suite (tests,
    // the runner's own jobs): no value reaches an adapter's arithmetic out of its range.
    if (o.kind == OptionSpec::Kind::Int || o.kind == OptionSpec::Kind::Num)
      check_option_value(o, it->second, "--" + o.name);
    try {
      o.store(into, it->second);
    } catch (const SetupError& e) {
      throw SetupError("--" + o.name + ": " + e.what());
    }
  }
}

}  // namespace detail
}  // namespace mw
