#include "adapters/redis/events.h"

#include <cmath>
#include <map>

#include "adapters/events.h"

namespace mw::redis {

namespace {

using K = EventReading::Kind;

const std::vector<StatEvent> kInfo = {
    {"rdb_bgsave_in_progress", K::Level, "an RDB snapshot in progress (BGSAVE: a forked child writes it)"},
    {"aof_rewrite_in_progress", K::Level, "an AOF rewrite in progress (BGREWRITEAOF: a forked child writes it)"},
    {"total_forks", K::Counter, "forks of redis-server (an RDB snapshot or an AOF rewrite)"},
    {"rdb_saves", K::Counter, "RDB snapshots written"},
    {"aof_delayed_fsync", K::Counter, "AOF fsyncs delayed by a slow disk (the writes waited)"},
    {"evicted_keys", K::Counter, "keys evicted (maxmemory)"},
    {"expired_keys", K::Counter, "keys expired"},
};

// INFO's "key:value" lines.
std::map<std::string, std::string> info_map(std::string_view info) {
  std::map<std::string, std::string> out;
  for (size_t at = 0; at < info.size();) {
    size_t eol = info.find('\n', at);
    std::string_view line = info.substr(at, eol == std::string_view::npos ? std::string_view::npos : eol - at);
    at = eol == std::string_view::npos ? info.size() : eol + 1;
    size_t colon = line.find(':');
    if (colon == std::string_view::npos || line.empty() || line[0] == '#') continue;
    out.emplace(line.substr(0, colon), line.substr(colon + 1));
  }
  return out;
}

class Probe final : public ConnProbe<Conn> {
 public:
  explicit Probe(const Endpoint& ep) : ep_(ep) {}
  std::string source() const override { return "redis-server"; }

 private:
  std::unique_ptr<Conn> connect(int64_t deadline) override { return std::make_unique<Conn>(ep_, deadline); }

  std::vector<EventReading> read(Conn& c, int64_t deadline) override {
    std::string info;
    for (const char* section : {"persistence", "stats"}) {
      Reply r = c.command({"INFO", section}, deadline);
      if (r.type == '-')
        throw ProbeRefused("redis-server " + ep_.where() + ": INFO " + section + " answered '-" +
                           printable(r.str, 120) + "'");
      if (r.type != '$') throw SetupError("INFO answered '" + std::string(1, r.type) + "'");
      info.append(r.str).append("\n");
    }
    std::vector<EventReading> out = info_events(info, forks_);
    if (latency_) latency(c, deadline, out);
    return out;
  }

  // LATENCY LATEST, when it answers (renamed, refused by an ACL: not asked again).
  void latency(Conn& c, int64_t deadline, std::vector<EventReading>& out) {
    std::string_view raw;
    c.command({"LATENCY", "LATEST"}, deadline, &raw);
    latency_ = latency_events(raw, ep_.limits, spikes_, out);
  }

  Endpoint ep_;
  double forks_ = NAN;
  bool latency_ = true;
  std::map<std::string, double> spikes_;  // event -> the time of its latest spike seen
};

}  // namespace

std::vector<EventReading> info_events(std::string_view info, double& forks) {
  const std::map<std::string, std::string> m = info_map(info);
  std::vector<EventReading> out = stat_events(m, kInfo);
  // the fork's time, in the reading that first sees it: the parent stood still that long
  auto total = m.find("total_forks"), usec = m.find("latest_fork_usec");
  if (total != m.end() && usec != m.end()) {
    const double t = stat_number(total->second), u = stat_number(usec->second);
    const bool forked = std::isfinite(forks) && t > forks;
    out.push_back({"fork_ms", forked && std::isfinite(u) ? u / 1000 : 0, K::Level,
                   "a fork's time (redis-server stood still while it forked)", "ms"});
    forks = t;
  }
  return out;
}

bool latency_events(std::string_view raw, const Limits& lim, std::map<std::string, double>& spikes,
                    std::vector<EventReading>& out) {
  Reply r;
  size_t used = 0;
  std::string err;
  if (parse_reply(raw, lim, r, used, err) != Parse::Done || r.type != '*') return false;
  size_t at = raw.find("\r\n");
  for (int64_t i = 0; at != std::string_view::npos && i < r.integer && i < kMaxLatencyEvents; ++i) {
    Reply e;
    std::string why;
    size_t n = 0;
    if (parse_reply(raw.substr(at + 2), lim, e, n, why, true) != Parse::Done) break;
    at += n;
    if (e.type != '*' || e.items.size() < 3) continue;
    const std::string name = printable(e.items[0], 40);
    const double when = stat_number(e.items[1]), ms = stat_number(e.items[2]);
    if (spikes.size() >= kMaxLatencyEvents && !spikes.count(name)) continue;
    auto [seen, first] = spikes.try_emplace(name, when);
    const bool fresh = !first && std::isfinite(when) && when != seen->second;
    seen->second = when;
    out.push_back({"latency_" + name, fresh && std::isfinite(ms) ? ms : 0, K::Level,
                   "a latency spike redis-server measured itself (LATENCY LATEST " + name + ")", "ms"});
  }
  return true;
}

std::unique_ptr<EventProbe> make_event_probe(const Endpoint& ep) { return std::make_unique<Probe>(ep); }

}  // namespace mw::redis
