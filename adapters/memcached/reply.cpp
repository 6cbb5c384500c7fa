#include "reply.h"

#include <algorithm>
#include <charconv>
#include <cstring>
#include <optional>

namespace mw::memcached {
namespace {

// Unsigned decimal of at most `max_digits` digits; false on anything else.
bool to_u64(std::string_view s, uint64_t& v, size_t max_digits = 19) {
  if (s.empty() || s.size() > max_digits) return false;
  uint64_t x = 0;
  for (char c : s) {
    if (c < '0' || c > '9') return false;
    x = x * 10 + static_cast<uint64_t>(c - '0');
  }
  v = x;
  return true;
}

bool from_hex(std::string_view s, uint64_t& v) {
  if (s.empty() || s.size() > 16) return false;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v, 16);
  return ec == std::errc() && p == s.data() + s.size();
}

void append_hex(std::string& out, uint64_t v) {
  char b[16];
  auto r = std::to_chars(b, b + sizeof b, v, 16);
  out.append(b, static_cast<size_t>(r.ptr - b));
}

void append_dec(std::string& out, uint64_t v) {
  char b[20];
  auto r = std::to_chars(b, b + sizeof b, v);
  out.append(b, static_cast<size_t>(r.ptr - b));
}

void append_key(std::string& out, const Keys& keys, uint64_t k) { mw::append_key(out, keys.prefix, k); }

Parse fail(std::string& err, std::string why) {
  err = std::move(why);
  return Parse::Error;
}

// The two-letter meta codes and what they mean.
struct Code2 {
  const char* text;
  Reply::Code code;
};
constexpr Code2 kCodes[] = {{"HD", Reply::Code::Stored}, {"EN", Reply::Code::Miss},     {"NS", Reply::Code::NotStored},
                            {"EX", Reply::Code::Exists}, {"NF", Reply::Code::NotFound}, {"MN", Reply::Code::Noop},
                            {"VA", Reply::Code::Value}};

}  // namespace

Parse parse_reply(std::string_view in, const Limits& lim, Reply& out, size_t& used, std::string& err) {
  used = 0;
  std::string_view line;
  size_t len = 0;
  if (const int got = conn::read_line(in, Limits::kMaxLine, line, len, err); got <= 0)
    return got < 0 ? Parse::Error : Parse::Incomplete;
  len -= 1;  // the line and its CR
  out = Reply{};
  out.line = line;
  if (line == "ERROR" || line.starts_with("CLIENT_ERROR ") || line.starts_with("SERVER_ERROR ")) {
    out.code = Reply::Code::Error;
    used = len + 1;
    return Parse::Done;
  }
  bool known = false;
  if (line.size() == 2 || (line.size() > 2 && line[2] == ' '))
    for (const Code2& c : kCodes)
      if (line.substr(0, 2) == c.text) {
        out.code = c.code;
        known = true;
      }
  if (!known) return fail(err, "protocol error: unexpected reply '" + printable(line, 60) + "'");

  // Tokens after the code: VA's size first, then flags (O<opaque>, c<cas>; others ignored).
  std::string_view rest = line.size() > 3 ? line.substr(3) : std::string_view();
  uint64_t size = 0;
  bool first = true;
  while (!rest.empty()) {
    size_t sp = rest.find(' ');
    std::string_view t = rest.substr(0, sp);
    rest = sp == std::string_view::npos ? std::string_view() : rest.substr(sp + 1);
    if (t.empty()) continue;
    if (first && out.code == Reply::Code::Value) {
      if (!to_u64(t, size, 12)) return fail(err, "protocol error: bad value size '" + printable(t, 40) + "'");
      first = false;
      continue;
    }
    if (t[0] == 'O') out.opaque = t.substr(1);
    if (t[0] == 'c') {
      if (!to_u64(t.substr(1), out.cas, 20) || t.size() > 20)
        return fail(err, "protocol error: bad cas token '" + printable(t, 40) + "'");
      out.has_cas = true;
    }
  }
  if (out.code != Reply::Code::Value) {
    used = len + 1;
    return Parse::Done;
  }
  if (first) return fail(err, "protocol error: a VA reply without a size");
  if (size > lim.max_reply)
    return fail(err, "reply larger than --max-reply (" + std::to_string(lim.max_reply) + " bytes): a value of " +
                         std::to_string(size) + " bytes");
  const size_t need = len + 1 + static_cast<size_t>(size) + 2;
  if (in.size() < need) return Parse::Incomplete;
  if (in[need - 2] != '\r' || in[need - 1] != '\n') return fail(err, "protocol error: a value not ended by CRLF");
  out.data = in.substr(len + 1, static_cast<size_t>(size));
  used = need;
  return Parse::Done;
}

void append_get(std::string& out, const Keys& keys, uint64_t k, uint64_t tag, bool cas) {
  out += "mg ";
  append_key(out, keys, k);
  out += cas ? " v c O" : " v O";
  append_hex(out, tag);
  out += "\r\n";
}

namespace {
// "ms <key> <size> [C<cas>] O<tag>\r\n", then room for the value and its CRLF; returns where the
// value goes.
size_t append_set_line(std::string& out, const Keys& keys, uint64_t k, uint32_t size, uint64_t tag, uint64_t cas,
                       bool use_cas) {
  out += "ms ";
  append_key(out, keys, k);
  out += ' ';
  append_dec(out, size);
  if (use_cas) {
    out += " C";
    append_dec(out, cas);
  }
  out += " O";
  append_hex(out, tag);
  out += "\r\n";
  const size_t at = out.size();
  out.resize(at + size + 2);
  out[at + size] = '\r';
  out[at + size + 1] = '\n';
  return at;
}
}  // namespace

void append_set(std::string& out, const Keys& keys, uint64_t k, uint32_t version, uint32_t size, uint64_t tag,
                uint64_t cas, bool use_cas) {
  const size_t at = append_set_line(out, keys, k, size, tag, cas, use_cas);
  write_value(k, version, out.data() + at, size);
}

void append_set_native(std::string& out, const Keys& keys, uint64_t k, uint32_t size, uint64_t tag) {
  const size_t at = append_set_line(out, keys, k, size, tag, 0, false);
  keys.values.write(k, out.data() + at, size);
}

void append_delete(std::string& out, const Keys& keys, uint64_t k, uint64_t tag) {
  out += "md ";
  append_key(out, keys, k);
  out += " O";
  append_hex(out, tag);
  out += "\r\n";
}

size_t ReplyChecker::take(std::span<Completion> out, size_t k) {
  std::string err;
  while (k < out.size() && fatal_.empty()) {
    Reply r;
    size_t used = 0;
    Parse p = parse_reply(in_.view(), lim_, r, used, err);
    if (p == Parse::Error) {
      fatal_ = err;
      break;
    }
    if (p == Parse::Incomplete) break;
    if (pending_.empty()) {
      fatal_ = "unexpected reply '" + printable(r.line, 60) + "' with no request waiting";
      break;
    }
    const Expect e = pending_.front();
    // An error line carries no opaque token; every other reply must carry its request's.
    uint64_t tag = 0;
    if (r.code != Reply::Code::Error && !(from_hex(r.opaque, tag) && tag == e.seq)) {
      fatal_ = "reply '" + printable(r.line, 60) + "' does not answer the request in flight (opaque O";
      append_hex(fatal_, e.seq);
      fatal_ += ")";
      break;
    }
    pending_.pop_front();
    in_.consume(used);
    if (std::optional<OpResult> res = check(e, r)) out[k++] = {e.seq, *res};
  }
  in_.compact();
  return k;
}

OpResult ReplyChecker::check_value_of(const Expect& e, const Reply& r) {
  const auto n = static_cast<uint32_t>(r.data.size());
  const ValueCheck c = e.native ? keys_.values.check(e.key, r.data.data(), r.data.size())
                                : check_value(e.key, r.data.data(), r.data.size());
  switch (c) {
    case ValueCheck::Ok:
      if (e.kind == Expect::Kind::Get && e.size && n != e.size)
        return {Status::Mismatch, 0,
                keep("mg " + keys_.key(e.key) + " returned " + std::to_string(n) + " bytes, " + std::to_string(e.size) +
                     " were set")};
      return {Status::Ok, n, {}};
    case ValueCheck::OtherKey:
      return {Status::Mismatch, 0, keep("mg " + keys_.key(e.key) + " returned another key's value")};
    case ValueCheck::Corrupt:
      break;
  }
  return {Status::Mismatch, 0, keep("mg " + keys_.key(e.key) + " returned a corrupt value")};
}

std::optional<OpResult> ReplyChecker::check(const Expect& e, const Reply& r) {
  using C = Reply::Code;
  using K = Expect::Kind;
  if (r.code == C::Error) {
    std::string why = printable(r.line);
    if (r.line.find("too large") != std::string_view::npos && (e.kind == K::Set || e.kind == K::RmwWrite))
      why += " (a value of " + std::to_string(e.size) + " bytes is over the server's item size limit, memcached -I)";
    return OpResult{Status::Error, 0, keep(std::move(why))};
  }
  switch (e.kind) {
    case K::Get:
      if (r.code == C::Value) return check_value_of(e, r);
      if (r.code == C::Miss) return OpResult{Status::NotFound, 0, keep("mg " + keys_.key(e.key) + ": no such key")};
      break;
    case K::Set:
      if (r.code == C::Stored) {
        if (written_.size() < 64) written_.push_back(e.key);
        return OpResult{Status::Ok, e.size, {}};
      }
      if (r.code == C::NotStored)
        return OpResult{Status::Error, 0, keep("ms " + keys_.key(e.key) + ": not stored (NS)")};
      break;
    case K::Delete:
      if (r.code == C::Stored) {
        if (deleted_.size() < 64) deleted_.push_back(e.key);
        return OpResult{Status::Ok, 0, {}};
      }
      if (r.code == C::NotFound) return OpResult{Status::NotFound, 0, keep("md " + keys_.key(e.key) + ": no such key")};
      break;
    case K::RmwRead:
      if (r.code == C::Miss) return OpResult{Status::NotFound, 0, keep("mg " + keys_.key(e.key) + ": no such key")};
      if (r.code == C::Value && r.has_cas) {
        OpResult res = check_value_of(e, r);
        if (res.status != Status::Ok) return res;
        Expect w = e;  // the write, guarded by the cas just read
        w.kind = K::RmwWrite;
        append_set(followups_, keys_, e.key, e.version, e.size, e.seq, r.cas, true);
        pending_.push_back(w);
        return std::nullopt;
      }
      break;
    case K::RmwWrite:
      if (r.code == C::Stored) return OpResult{Status::Ok, e.size, {}};
      if (r.code == C::NotFound)
        return OpResult{Status::NotFound, 0,
                        keep("ms " + keys_.key(e.key) + ": deleted between the read and the write")};
      if (r.code == C::Exists) {
        if (e.tries >= kRmwTries)
          return OpResult{Status::Error, 0,
                          keep("ms " + keys_.key(e.key) + ": another client wrote it between the read and the write " +
                               std::to_string(kRmwTries) + " times (cas EX)")};
        ++cas_retries_;
        Expect again = e;  // lost the race: read again
        again.kind = K::RmwRead;
        again.tries = static_cast<uint8_t>(e.tries + 1);
        append_get(followups_, keys_, e.key, e.seq, true);
        pending_.push_back(again);
        return std::nullopt;
      }
      break;
  }
  return OpResult{Status::Mismatch, 0, keep("unexpected reply '" + printable(r.line, 60) + "'")};
}

}  // namespace mw::memcached
