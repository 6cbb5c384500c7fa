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

ServiceSpec epmd_spec() {
  ServiceSpec s;
  s.name = "epmd";
  s.binary = "epmd";
  s.args = {"-address", "127.0.0.1", "-port", "{port}"};
  s.probe = [](int port) -> std::string {
    const std::string out = capture_output({"epmd", "-port", std::to_string(port), "-names"}, 2);
    return out.find("up and running") != std::string::npos ? "" : "epmd does not answer";
  };
  return s;
}

std::string cluster_node(const std::string& stem, size_t k) { return stem + "-" + node_label(k) + "@localhost"; }

ServiceSpec cluster_node_spec(const std::string& binary, size_t k, const std::string& stem, int epmd_port,
                              const std::string& cookie) {
  const std::string node = cluster_node(stem, k), dist = std::to_string(free_port());
  std::string env = "export HOME={dir} RABBITMQ_NODENAME=" + node +
                    " RABBITMQ_NODE_IP_ADDRESS=127.0.0.1 RABBITMQ_NODE_PORT={port} RABBITMQ_DIST_PORT=" + dist +
                    " ERL_EPMD_PORT=" + std::to_string(epmd_port) +
                    " RABBITMQ_MNESIA_BASE={dir}/mnesia RABBITMQ_LOG_BASE={dir}/log"
                    " RABBITMQ_CONFIG_FILE={dir}/rabbitmq.conf RABBITMQ_ADVANCED_CONFIG_FILE={dir}/advanced.config"
                    " RABBITMQ_CONF_ENV_FILE={dir}/rabbitmq-env.conf RABBITMQ_ENABLED_PLUGINS_FILE={dir}/plugins"
                    " RABBITMQ_PID_FILE={dir}/rabbitmq.pid RABBITMQ_SERVER_ADDITIONAL_ERL_ARGS='-start_epmd false'; ";
  // The first node boots alone; the others find it in their config and join it at their boot.
  std::string conf = k == 0 ? std::string()
                            : "cluster_formation.peer_discovery_backend = classic_config\\n"
                              "cluster_formation.classic_config.nodes.1 = " +
                                  cluster_node(stem, 0) + "\\n";
  std::string script = env +
                       "umask 077; printf '%s' \"$MWBENCH_ERLANG_COOKIE\" > {dir}/.erlang.cookie; "
                       "printf '[].' > {dir}/plugins; printf '" +
                       conf + "' > {dir}/rabbitmq.conf; exec " + binary;
  ServiceSpec s = server_spec(binary);
  s.name = "rabbitmq-server " + node_label(k);
  s.args = {"-c", script, node};
  s.env = {{"MWBENCH_ERLANG_COOKIE", cookie}};
  return s;
}

std::string ctl(const std::string& binary, const std::string& home, int epmd_port, const std::string& node,
                const std::string& args, double timeout_s) {
  const std::string dir = binary.substr(0, binary.rfind('/') + 1);
  const std::string cmd = "HOME=" + home + " ERL_EPMD_PORT=" + std::to_string(epmd_port) +
                          " RABBITMQ_CONF_ENV_FILE=" + home + "/rabbitmq-env.conf " + dir + "rabbitmqctl -n " + node +
                          " -q " + args + " 2>&1; echo \"exit $?\"";
  std::string out = capture_output({"/bin/sh", "-c", "(" + cmd + ")"}, timeout_s);
  const size_t at = out.rfind("exit ");
  if (at == std::string::npos)
    throw SetupError("rabbitmqctl " + args + ": no answer within " + std::to_string(timeout_s) + " s");
  const std::string rc = out.substr(at + 5, out.find('\n', at) - at - 5);
  out.resize(at);
  if (rc != "0") {
    while (!out.empty() && (out.back() == '\n' || out.back() == ' ')) out.pop_back();
    throw SetupError("rabbitmqctl -n " + node + " " + args + ": " + (out.empty() ? "exit " + rc : out));
  }
  return out;
}

std::string node_of(const ServiceSpec& spec) { return spec.args.size() > 2 ? spec.args[2] : ""; }

}  // namespace mw::rabbitmq
