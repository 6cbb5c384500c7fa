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
// --cluster: epmd on a free port of 127.0.0.1, in the foreground (the nodes of one host find
// each other through one epmd: a node asks its ERL_EPMD_PORT's for the others' distribution ports).
ServiceSpec epmd_spec();
// Node `k` (0-based) of a cluster: server_spec's environment, named <stem>-node-<k+1>@localhost,
// registered with the cluster's epmd (none of its own), the cluster's Erlang cookie in its HOME
// (from the environment, never the command line); nodes after the first join the first at their
// boot (classic-config peer discovery).
ServiceSpec cluster_node_spec(const std::string& binary, size_t k, const std::string& stem, int epmd_port,
                              const std::string& cookie);
std::string cluster_node(const std::string& stem, size_t k);  // "<stem>-node-2@localhost"
inline std::string node_label(size_t k) { return "node-" + std::to_string(k + 1); }
// rabbitmqctl beside `binary`, run against `node` as the cluster's CLI (its cookie in `home`, the
// cluster's epmd): its standard output. Throws SetupError when it fails or takes over timeout_s.
std::string ctl(const std::string& binary, const std::string& home, int epmd_port, const std::string& node,
                const std::string& args, double timeout_s);
// The node name of a managed server's spec ("mwbench-<pid>-<n>@localhost"), for tests.
std::string node_of(const ServiceSpec& spec);

}  // namespace mw::rabbitmq
