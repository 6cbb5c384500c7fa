// redis-server's own events for the timeline (api/events.h): INFO persistence and stats (a
// snapshot or an AOF rewrite in progress, forks and their time, delayed AOF fsyncs, evictions,
// expiries) and LATENCY LATEST (the spikes the server measured itself, when enabled), over a
// connection of the probe's own.
#pragma once
#include <map>
#include <memory>
#include <string_view>
#include <vector>

#include "adapters/redis/conn.h"
#include "api/events.h"

namespace mw::redis {

std::unique_ptr<EventProbe> make_event_probe(const Endpoint& ep);

// The events of an INFO reply's text ("key:value" lines), and the fork time of a fork since
// `forks` (the last reading's total_forks; updated). Tests give it INFO's text.
std::vector<EventReading> info_events(std::string_view info, double& forks);

// The events of LATENCY LATEST's reply (`raw`, the whole of it: [[event, unix time, latest ms,
// max ms], ...]), appended to `out`: an event's latest spike when its time moved since the last
// reading (`spikes`: event -> its time; updated; 0 otherwise, and at an event's first reading);
// at most kMaxLatencyEvents events. False when the reply is not an array (an error: not asked
// again).
inline constexpr int64_t kMaxLatencyEvents = 32;
bool latency_events(std::string_view raw, const Limits& lim, std::map<std::string, double>& spikes,
                    std::vector<EventReading>& out);

}  // namespace mw::redis
