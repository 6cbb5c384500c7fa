// What the adapters' event probes share (api/events.h): a connection of the probe's own, made
// when there is none and dropped after a failure, so that the next reading connects afresh; and
// the readings of a server's "name value" statistics by a table of the names read.
#pragma once
#include <atomic>
#include <charconv>
#include <cmath>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "api/events.h"

namespace mw {

template <class Conn>
class ConnProbe : public EventProbe {
 public:
  std::vector<EventReading> sample(int64_t deadline_ns) final {
    try {
      if (!c_) c_ = connect(deadline_ns);
      return read(*c_, deadline_ns);
    } catch (const ProbeRefused&) {
      throw;
    } catch (...) {
      c_.reset();  // a fresh connection for the next reading
      throw;
    }
  }

 protected:
  virtual std::unique_ptr<Conn> connect(int64_t deadline_ns) = 0;
  virtual std::vector<EventReading> read(Conn& c, int64_t deadline_ns) = 0;

 private:
  std::unique_ptr<Conn> c_;
};

// A statistic a probe reads: its name in the server's statistics, and what it is.
struct StatEvent {
  const char* key;
  EventReading::Kind kind;
  const char* what;
  const char* name = nullptr;  // the event's name when not the key's
};

// A statistic's text as a number; NaN when it is not one.
inline double stat_number(std::string_view v) {
  while (!v.empty() && (v.back() == '\r' || v.back() == ' ')) v.remove_suffix(1);
  while (!v.empty() && v.front() == ' ') v.remove_prefix(1);
  double d = 0;
  auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), d);
  return ec == std::errc() && end == v.data() + v.size() ? d : NAN;
}

// The readings of `table` found in `stats` (name -> text); the rest are left out.
inline std::vector<EventReading> stat_events(const std::map<std::string, std::string>& stats,
                                             const std::vector<StatEvent>& table) {
  std::vector<EventReading> out;
  for (const StatEvent& s : table) {
    auto it = stats.find(s.key);
    if (it == stats.end()) continue;
    if (double v = stat_number(it->second); std::isfinite(v))
      out.push_back({s.name ? s.name : s.key, v, s.kind, s.what});
  }
  return out;
}

// An in-process store's events (LMDB, Tokyo Cabinet: the store runs inside mwbench): mwbench's
// major page faults (a mapped file read from the device) and the syncs its commits made, counted by
// the adapter in `syncs` (null: none counted). `source`: the store's name.
std::unique_ptr<EventProbe> in_process_events(std::string source, const std::atomic<uint64_t>* syncs,
                                              std::string syncs_what);

// One HTTP/1.0 GET of `path` at host:port (a monitoring port's JSON), the whole exchange within
// the deadline and the answer capped at 4 MiB: the body of a 200, else SetupError naming the
// status or what failed.
std::string http_get(const std::string& host, int port, const std::string& path, int64_t deadline_ns);

}  // namespace mw
