// What the adapters of a server mwbench can start itself (redis, memcached) declare alike: the
// options naming the server, and the readiness probe of the managed server. For a typed options
// struct O (options.h) with the members host ("": start one), port, key_prefix, server_binary.
#pragma once
#include <functional>
#include <string>

#include "api/options.h"
#include "services/services.h"
#include "util/clock.h"
#include "util/status.h"

namespace mw::conn {

template <class O>
OptionSpec host_option(const std::string& server) {
  return opt(&O::host, {.name = "host", .help = "an external server (default: start a " + server + " on a free port)"});
}

template <class O>
OptionSpec port_option() {
  return opt(&O::port, {.name = "port", .help = "port of the external server", .min = 1, .max = 65535});
}

template <class O>
OptionSpec key_prefix_option() {
  return opt(&O::key_prefix, {.name = "key-prefix", .help = "prefix of every key"});
}

template <class O>
OptionSpec server_binary_option(const std::string& server) {
  return opt(&O::server_binary, {.name = "server-binary", .help = server + " binary for the managed server"});
}

// AdapterSpec::unavailable: runs with --host, or when the server's binary is installed.
template <class O>
std::function<std::string(const Job&)> unavailable_without(const std::string& server) {
  return [server](const Job& j) -> std::string {
    const auto o = options_of<O>(j);
    if (!o.host.empty() || !find_binary(o.server_binary).empty()) return "";
    return server + " is not installed (scripts/setup installs it), and no --host was given";
  };
}

// ServiceSpec::probe: the managed server is ready when a connection's handshake succeeds.
template <class Conn, class Endpoint>
std::function<std::string(int)> handshake_probe() {
  return [](int port) -> std::string {
    try {
      Endpoint ep;
      ep.host = "127.0.0.1";
      ep.port = port;
      ep.timeout_s = 1.0;
      Conn c(ep, now_ns() + 1'000'000'000);
      return "";
    } catch (const SetupError& e) {
      return e.what();
    }
  };
}

}  // namespace mw::conn
