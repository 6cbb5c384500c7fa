#include "adapters/nats/server.h"

#include "adapters/nats/client.h"
#include "util/status.h"

namespace mw::nats {

ServiceSpec server_spec(const std::string& binary) {
  ServiceSpec s;
  s.name = "nats-server";
  s.binary = binary;
  s.args = {"-a", "127.0.0.1", "-p", "{port}", "-js", "-sd", "{dir}/jetstream", "-l", "{dir}/nats-server.log"};
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

}  // namespace mw::nats
