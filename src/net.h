// Small TCP helpers shared by adapters that speak a protocol over their own sockets.
#pragma once
#include <string>

namespace mw {

// Connects to host:port within timeout_s; returns a non-blocking fd with TCP_NODELAY set,
// or -1 with `err` saying why (refused, timed out, unknown host).
int tcp_connect(const std::string& host, int port, double timeout_s, std::string* err);

}  // namespace mw
