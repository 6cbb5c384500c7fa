// libFuzzer target: arbitrary bytes as the text a server gives the timeline's event probes
// (api/events.h): redis-server's INFO and LATENCY LATEST, nats-server's /varz and /jsz JSON,
// gearmand's status, and the "name value" statistics of memcached, beanstalkd and mosquitto.
// The first byte picks which; for NATS the bytes up to the first NUL are /varz, the rest /jsz.
// Checked: no crash, no read past the input, every reading named in printable text, a bounded
// number of readings, the counters' values finite.
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "adapters/events.h"
#include "adapters/redis/events.h"
#if MWBENCH_WITH_NATS
#include "adapters/nats/server.h"
#endif
#if MWBENCH_WITH_GEARMAN
#include "adapters/gearman/gearman.h"
#endif

using namespace mw;

namespace {

void check(const std::vector<EventReading>& out, size_t most) {
  if (out.size() > most) abort();
  for (const EventReading& r : out) {
    if (r.name.empty()) abort();
    for (char c : r.name + r.what + r.unit)
      if (static_cast<unsigned char>(c) < 0x20 || static_cast<unsigned char>(c) >= 0x7f) abort();
    if (r.kind == EventReading::Kind::Counter && !std::isfinite(r.value)) abort();
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const std::string_view in(reinterpret_cast<const char*>(data + 1), size - 1);
  switch (data[0] % 5) {
    case 0: {  // INFO persistence and stats, read twice: the second sees the first's forks
      double forks = NAN;
      check(redis::info_events(in, forks), 16);
      check(redis::info_events(in, forks), 16);
      break;
    }
    case 1: {  // LATENCY LATEST's whole reply, read twice: the second sees the first's times
      redis::Limits lim;
      lim.max_reply = 4096;
      std::map<std::string, double> spikes;
      std::vector<EventReading> out;
      redis::latency_events(in, lim, spikes, out);
      check(out, redis::kMaxLatencyEvents);
      out.clear();
      redis::latency_events(in, lim, spikes, out);
      check(out, redis::kMaxLatencyEvents);
      if (spikes.size() > static_cast<size_t>(redis::kMaxLatencyEvents)) abort();
      break;
    }
    case 2: {
#if MWBENCH_WITH_NATS
      const size_t nul = in.find('\0');
      check(nats::monitor_events(in.substr(0, nul), nul == std::string_view::npos ? "" : in.substr(nul + 1)), 2);
#endif
      break;
    }
    case 3: {
#if MWBENCH_WITH_GEARMAN
      if (gearman::status_events(std::string(in)).size() != 3) abort();  // queued, running, workers
#endif
      break;
    }
    case 4: {  // "name value" lines, as memcached's and beanstalkd's stats become a map
      std::map<std::string, std::string> stats;
      for (size_t at = 0; at < in.size();) {
        const size_t eol = std::min(in.find('\n', at), in.size());
        const std::string_view line = in.substr(at, eol - at);
        const size_t sp = line.find(' ');
        if (sp != std::string_view::npos) stats.emplace(line.substr(0, sp), line.substr(sp + 1));
        at = eol + 1;
      }
      const std::vector<StatEvent> table = {{"evictions", EventReading::Kind::Counter, "items evicted"},
                                            {"curr_connections", EventReading::Kind::Level, "connections"},
                                            {"job-timeouts", EventReading::Kind::Counter, "timeouts", "job_timeouts"}};
      check(stat_events(stats, table), table.size());
      break;
    }
  }
  return 0;
}
