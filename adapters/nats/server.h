// The managed nats-server: JetStream on (-js), its store in the service's temp dir (-sd), on a
// free loopback port; a round trip (CONNECT, PING, PONG through nats.c) says it answers.
#pragma once
#include <string>
#include <string_view>
#include <vector>

#include "api/events.h"

#include "services/services.h"

namespace mw::nats {

ServiceSpec server_spec(const std::string& binary);
// Node `k` (0-based) of a cluster (--cluster): server_spec's, named node-<k+1>, in cluster
// "mwbench", listening for routes on route_ports[k] and soliciting routes to the others'.
ServiceSpec cluster_node_spec(const std::string& binary, size_t k, const std::vector<int>& route_ports);
inline std::string node_name(size_t k) { return "node-" + std::to_string(k + 1); }
// The monitoring port the managed server chose, from its log ("Starting http monitor on
// 127.0.0.1:PORT"); 0 when the log does not say.
int monitor_port(const std::string& log);
// The events of the monitoring port's answers: slow consumers (/varz's JSON) and, when `jsz` is
// not empty, the JetStream API's errors (/jsz's). What is not there, or not a number, is left out.
std::vector<EventReading> monitor_events(std::string_view varz, std::string_view jsz);

}  // namespace mw::nats
