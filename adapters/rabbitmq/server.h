// The managed rabbitmq-server: its own node in a temp dir, on free ports (AMQP, distribution,
// epmd), its own cookie (HOME is the temp dir). epmd runs in the foreground in the broker's
// process group, so stopping the group leaves no epmd, no beam.smp and (the temp dir removed)
// no Mnesia dir behind.
#pragma once
#include <string>

#include "services/services.h"

namespace mw::rabbitmq {

// `binary`: the rabbitmq-server script (Debian: /usr/lib/rabbitmq/bin/rabbitmq-server).
ServiceSpec server_spec(const std::string& binary);
// The node name of a managed server's spec ("mwbench-<pid>-<n>@localhost"), for tests.
std::string node_of(const ServiceSpec& spec);

}  // namespace mw::rabbitmq
