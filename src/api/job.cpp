#include "api/job.h"

#include <cmath>
#include <cstdlib>

namespace mw {

std::string PollPolicy::text() const {
  if (mode == Mode::Off) return "off";
  if (mode == Mode::Auto) return "auto";
  return std::to_string(window_ns / 1000) + "us";
}

PollPolicy parse_poll(const std::string& v) {
  PollPolicy p;
  if (v == "auto") return p;
  p.mode = v == "off" ? PollPolicy::Mode::Off : PollPolicy::Mode::Fixed;
  if (p.mode == PollPolicy::Mode::Off) return p;
  double s = -1;
  try {
    s = parse_duration(v, "poll");
  } catch (const SetupError&) {}
  if (!(s >= 1e-6 && s <= 1e-2))
    throw SetupError("poll expects off, auto or a time from 1us to 10ms (50us), got '" + v + "'");
  p.window_ns = static_cast<int64_t>(std::llround(s * 1e9));
  return p;
}

std::string Job::str(const std::string& k, const std::string& def) const {
  auto it = opts.find(k);
  return it == opts.end() ? def : it->second;
}

int64_t Job::integer(const std::string& k, int64_t def) const {
  auto it = opts.find(k);
  return it == opts.end() ? def : parse_size(it->second, "option " + k);
}

double Job::number(const std::string& k, double def) const {
  auto it = opts.find(k);
  if (it == opts.end()) return def;
  size_t used = 0;
  double v = parse_number(it->second, &used);
  if (used == 0 || used != it->second.size())
    throw SetupError("option " + k + ": expected a number, got '" + it->second + "'");
  return v;
}

bool Job::flag(const std::string& k, bool def) const {
  auto it = opts.find(k);
  if (it == opts.end()) return def;
  const std::string& v = it->second;
  if (v == "true" || v == "1" || v == "yes" || v == "on" || v.empty()) return true;
  if (v == "false" || v == "0" || v == "no" || v == "off") return false;
  throw SetupError("option " + k + ": expected true or false, got '" + v + "'");
}

}  // namespace mw
