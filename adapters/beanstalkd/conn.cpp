#include "adapters/beanstalkd/conn.h"

#include <poll.h>

#include "util/status.h"

namespace mw::beanstalkd {

void fail(const Endpoint& ep, const std::string& what) { throw SetupError("beanstalkd " + ep.where() + ": " + what); }

Conn::Conn(const Endpoint& ep, int64_t deadline) : conn::Stream("beanstalkd", ep, deadline), ep_(ep) {
  const std::string cmd = ep.tube.empty() ? "list-tube-used" : "use " + ep.tube;
  Reply r = call(cmd + "\r\n", deadline);
  if (r.code != Reply::Code::Using || (!ep.tube.empty() && r.word != ep.tube))
    Stream::fail("'" + printable(cmd, 60) + "' answered '" + printable(r.line, 100) + "' (is it a beanstalkd port?)");
}

void Conn::send(const std::string& command, int64_t deadline) {
  write_all(command, deadline, "'" + printable(command.substr(0, command.find('\r')), 60) + "'");
}

Reply Conn::call(const std::string& command, int64_t deadline) {
  send(command, deadline);
  return read(deadline, "'" + printable(command.substr(0, command.find('\r')), 60) + "'");
}

bool Conn::ready(int64_t until) {
  if (unparsed() > 0) return true;
  const int64_t left = until - now_ns();
  pollfd p{fd(), POLLIN, 0};
  return poll(&p, 1, left <= 0 ? 0 : static_cast<int>(left / 1000000 + 1)) > 0;
}

Reply Conn::read(int64_t deadline, const std::string& what) {
  Reply r;
  read_parsed(deadline, what, ep_.limits.max_reply, [&](std::string_view in, size_t& used, std::string& err) {
    const Parse p = parse_reply(in, ep_.limits, r, used, err);
    return p == Parse::Done ? conn::Parsed::Done : p == Parse::Error ? conn::Parsed::Bad : conn::Parsed::More;
  });
  return r;
}

std::map<std::string, std::string> Conn::stats(const std::string& command, int64_t deadline) {
  Reply r = call(command + "\r\n", deadline);
  if (r.code != Reply::Code::Ok)
    Stream::fail("'" + printable(command, 60) + "' answered '" + printable(r.line, 100) + "'");
  std::map<std::string, std::string> out;
  std::string_view yaml = r.data;
  for (size_t lines = 0; !yaml.empty() && lines < 4096; ++lines) {
    const size_t nl = yaml.find('\n');
    std::string_view l = yaml.substr(0, nl);
    yaml = nl == std::string_view::npos ? std::string_view() : yaml.substr(nl + 1);
    const size_t colon = l.find(": ");
    if (colon != std::string_view::npos) out[printable(l.substr(0, colon), 60)] = printable(l.substr(colon + 2), 200);
  }
  return out;
}

}  // namespace mw::beanstalkd
