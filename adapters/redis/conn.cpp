#include "adapters/redis/conn.h"

#include "adapters/redis/sentinel.h"
#include "util/status.h"

namespace mw::redis {

Endpoint follow(const Endpoint& ep, int64_t deadline) {
  if (!ep.sentinels) return ep;
  Endpoint at = ep;
  std::tie(at.host, at.port) = ep.sentinels->primary(deadline);
  at.sentinels.reset();
  return at;
}

Conn::Conn(const Endpoint& ep, int64_t deadline) : Conn(follow(ep, deadline), deadline, Followed{}) {}

Conn::Conn(const Endpoint& ep, int64_t deadline, Followed) : conn::Stream("redis", ep, deadline), ep_(ep) {
  try {
    greet(deadline);
  } catch (const SetupError& e) {
    // TLS 1.3 servers check the client certificate after the handshake: the first command
    // then meets a closed connection or an alert.
    std::string m = e.what();
    if (ep_.tls && !ep_.tls->has_cert && m.find("connection ") != std::string::npos)
      throw SetupError(m + " (does the server require a client certificate? give --cert and --key)");
    throw;
  }
}

void Conn::greet(int64_t deadline) {
  if (!ep_.password.empty()) {
    std::vector<std::string> argv = {"AUTH"};
    if (!ep_.user.empty()) argv.push_back(ep_.user);
    argv.push_back(ep_.password);
    Reply r = command(argv, deadline);
    if (!(r.type == '+' && r.str == "OK")) fail("AUTH failed: " + printable(r.str));
  } else if (!ep_.user.empty()) {
    fail("--user " + ep_.user + " needs a password: put it in the variable named by --password-env");
  }
  Reply pong = command({"PING"}, deadline);
  if (pong.type == '-' && pong.str.substr(0, 6) == "NOAUTH")
    fail("the server wants a password: put it in the variable named by --password-env");
  if (!(pong.type == '+' && pong.str == "PONG"))
    fail("PING answered '" + std::string(1, pong.type) + printable(pong.str) + "'");
}

Reply Conn::read_reply(int64_t deadline, const std::string& what, std::string_view* raw) {
  Reply r;
  read_parsed(deadline, what, ep_.limits.max_reply, [&](std::string_view in, size_t& used, std::string& err) {
    Parse p = parse_reply(in, ep_.limits, r, used, err, true);
    if (p == Parse::Done && raw) *raw = in.substr(0, used);
    return p == Parse::Done ? conn::Parsed::Done : p == Parse::Error ? conn::Parsed::Bad : conn::Parsed::More;
  });
  return r;
}

Reply Conn::command(const std::vector<std::string>& argv, int64_t deadline, std::string_view* raw) {
  std::string cmd;
  append_command(cmd, argv);
  std::string what = argv.empty() ? "a request" : argv[0];
  write_all(cmd, deadline, what);
  return read_reply(deadline, what, raw);
}

void Conn::pipeline(const std::string& payload, size_t count, const std::function<void(const Reply&)>& each) {
  send_paced(payload);  // the deadline moves with progress: each chunk and each reply within the timeout
  const auto step = static_cast<int64_t>(ep_.timeout_s * 1e9);
  for (size_t i = 0; i < count; ++i) each(read_reply(now_ns() + step, "a pipelined request"));
}

void append_command(std::string& out, const std::vector<std::string>& argv) {
  out += '*';
  out += std::to_string(argv.size());
  out += "\r\n";
  for (auto& a : argv) {
    out += '$';
    out += std::to_string(a.size());
    out += "\r\n";
    out += a;
    out += "\r\n";
  }
}

}  // namespace mw::redis
