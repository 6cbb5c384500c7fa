#include "adapters/nats/server.h"

#include <cstdlib>
#include <fstream>

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

}  // namespace mw::nats
