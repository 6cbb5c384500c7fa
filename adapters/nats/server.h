// The managed nats-server: JetStream on (-js), its store in the service's temp dir (-sd), on a
// free loopback port; a round trip (CONNECT, PING, PONG through nats.c) says it answers.
#pragma once
#include <string>

#include "services/services.h"

namespace mw::nats {

ServiceSpec server_spec(const std::string& binary);
// The monitoring port the managed server chose, from its log ("Starting http monitor on
// 127.0.0.1:PORT"); 0 when the log does not say.
int monitor_port(const std::string& log);

}  // namespace mw::nats
