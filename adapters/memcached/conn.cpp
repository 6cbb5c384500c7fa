#include "adapters/memcached/conn.h"

#include "util/status.h"

namespace mw::memcached {

Conn::Conn(const Endpoint& ep, int64_t deadline) : conn::Stream("memcached", ep, deadline), ep_(ep) {
  std::string v = line("version\r\n", deadline);
  if (v.rfind("VERSION ", 0) != 0) fail("'version' answered '" + printable(v, 100) + "' (is it a memcached port?)");
  version_ = printable(v.substr(8), 60);
}

std::string_view Conn::read_line(int64_t deadline, const std::string& what) {
  std::string_view line;
  read_parsed(deadline, what, ep_.limits.max_reply, [&](std::string_view in, size_t& used, std::string& err) {
    const int got = conn::read_line(in, Limits::kMaxLine, line, used, err);
    return got > 0 ? conn::Parsed::Done : got < 0 ? conn::Parsed::Bad : conn::Parsed::More;
  });
  return line;
}

Reply Conn::read_reply(int64_t deadline, const std::string& what) {
  Reply r;
  read_parsed(deadline, what, ep_.limits.max_reply, [&](std::string_view in, size_t& used, std::string& err) {
    Parse p = parse_reply(in, ep_.limits, ep_.protocol, r, used, err);
    return p == Parse::Done ? conn::Parsed::Done : p == Parse::Error ? conn::Parsed::Bad : conn::Parsed::More;
  });
  return r;
}

Reply Conn::call(const std::string& request, int64_t deadline, const std::string& what) {
  write_all(request, deadline, what);
  return read_reply(deadline, what);
}

std::string Conn::line(const std::string& request, int64_t deadline) {
  std::string what = "'" + printable(request.substr(0, request.find('\r')), 40) + "'";
  write_all(request, deadline, what);
  return std::string(read_line(deadline, what));
}

std::map<std::string, std::string> Conn::stats(const std::string& group, int64_t deadline) {
  std::string req = group.empty() ? "stats\r\n" : "stats " + group + "\r\n";
  std::string what = "'" + req.substr(0, req.size() - 2) + "'";
  write_all(req, deadline, what);
  std::map<std::string, std::string> out;
  for (size_t i = 0;; ++i) {
    std::string_view l = read_line(deadline, what);
    if (l == "END") return out;
    if (l.rfind("STAT ", 0) != 0) fail(what + " answered '" + printable(l, 100) + "'");
    if (i >= 4096) fail(what + " answered more than 4096 lines");
    l.remove_prefix(5);
    size_t sp = l.find(' ');
    out[printable(l.substr(0, sp), 60)] = sp == std::string_view::npos ? "" : printable(l.substr(sp + 1), 200);
  }
}

void Conn::pipeline(const std::string& payload, size_t count, const std::function<void(const Reply&)>& each) {
  send_paced(payload);  // the deadline moves with progress: each chunk and each reply within the timeout
  const auto step = static_cast<int64_t>(ep_.timeout_s * 1e9);
  for (size_t i = 0; i < count; ++i) each(read_reply(now_ns() + step, "a pipelined request"));
}

}  // namespace mw::memcached
