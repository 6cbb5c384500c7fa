#include "adapters/conn/hostport.h"

#include <charconv>

#include "adapters/conn/bytes.h"
#include "util/status.h"

namespace mw::conn {

std::vector<HostPort> parse_addresses(const std::string& list, int default_port, const std::string& option) {
  const std::string usage =
      option + (default_port ? " expects HOST[:PORT][,HOST[:PORT]...]" : " expects HOST:PORT[,HOST:PORT...]") +
      " (port 1 to 65535), got '";
  std::vector<HostPort> at;
  for (size_t from = 0; from <= list.size();) {
    size_t comma = list.find(',', from);
    if (comma == std::string::npos) comma = list.size();
    const std::string one = list.substr(from, comma - from);
    from = comma + 1;
    // The port follows the last colon, unless the host is a bare IPv6 address (colons, no brackets).
    const size_t colon = one.rfind(':');
    const bool bracketed = !one.empty() && one.front() == '[';
    const bool has_port =
        colon != std::string::npos && (bracketed ? colon > 0 && one[colon - 1] == ']' : one.find(':') == colon);
    HostPort a;
    a.host = has_port ? one.substr(0, colon) : one;
    a.port = default_port;
    if (has_port) {
      const char* b = one.data() + colon + 1;
      const auto [end, ec] = std::from_chars(b, one.data() + one.size(), a.port);
      if (ec != std::errc() || end != one.data() + one.size()) a.port = 0;
    }
    if (a.host.size() > 2 && a.host.front() == '[' && a.host.back() == ']')
      a.host = a.host.substr(1, a.host.size() - 2);
    if (a.host.empty() || a.host.size() > 255 || a.host.find_first_of(" \t[]/") != std::string::npos || a.port < 1 ||
        a.port > 65535)
      throw SetupError(usage + printable(one, 100) + "'");
    at.push_back(std::move(a));
    if (at.size() > 64) throw SetupError(option + ": at most 64 addresses");
  }
  return at;
}

std::string describe_addresses(const HostPort& first, const std::vector<HostPort>& others) {
  std::string s = first.host + ":" + std::to_string(first.port);
  for (const HostPort& a : others) s += "," + (a.host == first.host ? "" : a.host + ":") + std::to_string(a.port);
  return s;
}

}  // namespace mw::conn
