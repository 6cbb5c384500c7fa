// What the adapters of a server mwbench can start itself (redis, memcached) declare alike: the
// options naming the server, and the readiness probe of the managed server. For a typed options
// struct O (options.h) with the members host ("": start one), port, key_prefix, server_binary.
#pragma once
#include <functional>
#include <string>
#include <utility>

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

// AdapterSpec::unavailable of an adapter that starts its own server unless one is named: it runs
// when `named(o)` (an external server was given: --host, --url) or when `binary(o)` finds the
// managed server's binary (its path; "" when none), else `missing(o)` says what to install.
template <class O>
std::function<std::string(const Job&)> unavailable_unless(std::function<bool(const O&)> named,
                                                          std::function<std::string(const O&)> binary,
                                                          std::function<std::string(const O&)> missing) {
  return [named = std::move(named), binary = std::move(binary), missing = std::move(missing)](const Job& j) {
    const auto o = options_of<O>(j);
    return named(o) || !binary(o).empty() ? std::string() : missing(o);
  };
}

// The same for the options struct's members host ("": start one) and server_binary (found on the
// PATH): "SERVER is not installed (scripts/setup installs it), and no --host was given".
template <class O>
std::function<std::string(const Job&)> unavailable_without(const std::string& server) {
  return unavailable_unless<O>(
      [](const O& o) { return !o.host.empty(); }, [](const O& o) { return find_binary(o.server_binary); },
      [server](const O&) { return server + " is not installed (scripts/setup installs it), and no --host was given"; });
}

// The same for a server its Debian package installs, named by --server-binary's value:
// "BINARY not found (apt-get install PACKAGE, or give --host)".
template <class O>
std::function<std::string(const Job&)> unavailable_without_package(const std::string& package) {
  return unavailable_unless<O>(
      [](const O& o) { return !o.host.empty(); }, [](const O& o) { return find_binary(o.server_binary); },
      [package](const O& o) {
        return o.server_binary + " not found (apt-get install " + package + ", or give --host)";
      });
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
