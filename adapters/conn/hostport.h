// Where a server is, as a user gives it: HOST[:PORT][,HOST[:PORT]...] (an IPv6 address in
// brackets), the nodes of a cluster or the Sentinels of a replicated set-up.
#pragma once
#include <string>
#include <vector>

namespace mw::conn {

struct HostPort {
  std::string host;
  int port = 0;
  bool operator==(const HostPort&) const = default;
};

// The list's addresses, in order; a host without a port takes `default_port` (0: a port is
// required). Throws SetupError "<option> expects HOST[:PORT][,HOST[:PORT]...] ..., got '...'"
// naming the bad entry; at most 64 addresses.
std::vector<HostPort> parse_addresses(const std::string& list, int default_port, const std::string& option);

// "127.0.0.1:4222,4223" for `first` and `others` on its host, "a:1,b:2" across hosts.
std::string describe_addresses(const HostPort& first, const std::vector<HostPort>& others);

}  // namespace mw::conn
