// redis-server's own events for the timeline (api/events.h): INFO persistence and stats (a
// snapshot or an AOF rewrite in progress, forks and their time, delayed AOF fsyncs, evictions,
// expiries) and LATENCY LATEST (the spikes the server measured itself, when enabled), over a
// connection of the probe's own.
#pragma once
#include <memory>

#include "adapters/redis/conn.h"
#include "api/events.h"

namespace mw::redis {

std::unique_ptr<EventProbe> make_event_probe(const Endpoint& ep);

// The events of an INFO reply's text ("key:value" lines), and the fork time of a fork since
// `forks` (the last reading's total_forks; updated). Tests give it INFO's text.
std::vector<EventReading> info_events(std::string_view info, double& forks);

}  // namespace mw::redis
