// Small TCP helpers shared by adapters that speak a protocol over their own sockets.
#pragma once
#include <functional>
#include <string>

namespace mw {

// Connects to host:port within timeout_s; returns a non-blocking fd with TCP_NODELAY set,
// or -1 with `err` saying why (refused, timed out, unknown host). `give_up`, when given, is asked
// every 100 ms while the connect waits: true ends the wait as a time-out.
int tcp_connect(const std::string& host, int port, double timeout_s, std::string* err,
                const std::function<bool()>& give_up = {});

// One request line and the start of its answer: "" when the answer starts with `expect`, else
// what went wrong. For readiness probes of line protocols (memcached "version", redis "PING").
std::string tcp_probe(const std::string& host, int port, const std::string& request, const std::string& expect,
                      double timeout_s = 1.0);

}  // namespace mw
