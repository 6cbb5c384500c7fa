#include "adapters/nats/server.h"

#include <cmath>
#include <cstdlib>
#include <fstream>
#include <nlohmann/json.hpp>

#include "adapters/nats/client.h"
#include "util/status.h"

namespace mw::nats {

ServiceSpec server_spec(const std::string& binary) {
  ServiceSpec s;
  s.name = "nats-server";
  s.binary = binary;
  // -m -1: a monitoring port of its own choice (its log says which: monitor_port), read by the
  // timeline's probe
  s.args = {"-a", "127.0.0.1", "-p", "{port}", "-js", "-sd", "{dir}/jetstream", "-l", "{dir}/nats-server.log",
            "-m", "-1"};
  s.probe = [](int port) -> std::string {
    try {
      Endpoint ep;
      ep.port = port;
      ep.timeout_s = 1;
      Conn c(ep);
      return "";
    } catch (const SetupError& e) {
      return e.what();
    }
  };
  return s;
}

ServiceSpec cluster_node_spec(const std::string& binary, size_t k, const std::vector<int>& route_ports) {
  ServiceSpec s = server_spec(binary);
  s.name = "nats-server " + node_name(k);
  std::string routes;
  for (size_t i = 0; i < route_ports.size(); ++i)
    if (i != k)
      routes += (routes.empty() ? "" : ",") + std::string("nats://127.0.0.1:") + std::to_string(route_ports[i]);
  for (const std::string& a : {std::string("--server_name"), node_name(k), std::string("--cluster_name"),
                               std::string("mwbench"), std::string("--cluster"),
                               "nats://127.0.0.1:" + std::to_string(route_ports[k]), std::string("--routes"), routes})
    s.args.push_back(a);
  return s;
}

int monitor_port(const std::string& log) {
  std::ifstream in(log);
  const std::string mark = "Starting http monitor on ";
  for (std::string line; std::getline(in, line);)
    if (size_t at = line.find(mark); at != std::string::npos) {
      const size_t colon = line.rfind(':');
      if (colon != std::string::npos && colon > at) return std::atoi(line.c_str() + colon + 1);
    }
  return 0;
}

std::vector<EventReading> monitor_events(std::string_view varz, std::string_view jsz) {
  using K = EventReading::Kind;
  using nlohmann::json;
  // a member's number, or NaN (absent, not a number, not an object)
  auto number = [](const json& o, const char* key) -> double {
    if (!o.is_object()) return NAN;
    auto it = o.find(key);
    return it != o.end() && it->is_number() ? it->get<double>() : NAN;
  };
  std::vector<EventReading> out;
  if (double v = number(json::parse(varz, nullptr, false), "slow_consumers"); std::isfinite(v))
    out.push_back(
        {"slow_consumers", v, K::Counter, "slow consumers (the server dropped a subscriber that fell behind)"});
  if (!jsz.empty()) {
    const json j = json::parse(jsz, nullptr, false);
    const auto api = j.is_object() ? j.find("api") : j.end();
    if (double v = api != j.end() ? number(*api, "errors") : NAN; std::isfinite(v))
      out.push_back({"api_errors", v, K::Counter, "JetStream API errors"});
  }
  return out;
}

}  // namespace mw::nats
