#include "adapters/rabbitmq/server.h"

#include "adapters/rabbitmq/amqp.h"
#include "util/files.h"
#include "util/status.h"

namespace mw::rabbitmq {

ServiceSpec server_spec(const std::string& binary) {
  const std::string node = unique_name("mwbench") + "@localhost";
  const std::string epmd = std::to_string(free_port()), dist = std::to_string(free_port());
  // The broker's environment, all inside {dir}: no /etc/rabbitmq file, no plugins, no ~/.erlang.cookie.
  std::string env = "export HOME={dir} RABBITMQ_NODENAME=" + node +
                    " RABBITMQ_NODE_IP_ADDRESS=127.0.0.1 RABBITMQ_NODE_PORT={port} RABBITMQ_DIST_PORT=" + dist +
                    " ERL_EPMD_PORT=" + epmd +
                    " RABBITMQ_MNESIA_BASE={dir}/mnesia RABBITMQ_LOG_BASE={dir}/log"
                    " RABBITMQ_CONFIG_FILE={dir}/rabbitmq.conf RABBITMQ_ADVANCED_CONFIG_FILE={dir}/advanced.config"
                    " RABBITMQ_CONF_ENV_FILE={dir}/rabbitmq-env.conf RABBITMQ_ENABLED_PLUGINS_FILE={dir}/plugins"
                    " RABBITMQ_PID_FILE={dir}/rabbitmq.pid RABBITMQ_SERVER_ADDITIONAL_ERL_ARGS='-start_epmd false'; ";
  // epmd first, in the foreground of this group (erl would start a daemon that escapes it).
  std::string script = env + "printf '[].' > {dir}/plugins; : > {dir}/rabbitmq.conf; epmd -port " + epmd +
                       " & until epmd -port " + epmd + " -names >/dev/null 2>&1; do sleep 0.05; done; exec " + binary;
  ServiceSpec s;
  s.name = "rabbitmq-server";
  s.binary = "/bin/sh";
  s.args = {"-c", script, node};  // $0 is the node name: ps shows which node a shell is
  s.start_timeout_s = 180;        // a cold Erlang boot on a loaded machine
  s.probe = [](int port) -> std::string {
    try {
      Endpoint ep;
      ep.port = port;
      ep.timeout_s = 1;
      Amqp a(ep);
      return "";
    } catch (const SetupError& e) {
      return e.what();
    }
  };
  return s;
}

std::string node_of(const ServiceSpec& spec) { return spec.args.size() > 2 ? spec.args[2] : ""; }

}  // namespace mw::rabbitmq
