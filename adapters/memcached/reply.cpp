#include "adapters/memcached/reply.h"

#include <algorithm>
#include <charconv>
#include <cstring>
#include <ctime>
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

// Whether `s` is key k (without building it).
bool key_is(std::string_view s, const Keys& keys, uint64_t k) {
  char d[20];
  const auto n = static_cast<size_t>(std::to_chars(d, d + sizeof d, k).ptr - d);
  return s.size() == keys.prefix.size() + n && s.starts_with(keys.prefix) &&
         s.substr(keys.prefix.size()) == std::string_view(d, n);
}

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

namespace {

// The reply line at the start of `in`, without its CRLF (conn::read_line); Incomplete until it
// is whole.
Parse reply_line(std::string_view in, std::string_view& line, std::string& err) {
  size_t used = 0;
  const int got = conn::read_line(in, Limits::kMaxLine, line, used, err);
  return got < 0 ? Parse::Error : got == 0 ? Parse::Incomplete : Parse::Done;
}

bool is_error_line(std::string_view line) {
  return line == "ERROR" || line.starts_with("CLIENT_ERROR ") || line.starts_with("SERVER_ERROR ");
}

// The data block of `size` bytes after a line of `line_len` bytes (CRLF included), then `tail`
// (CRLF, or CRLF and the text protocol's END line).
Parse value_block(std::string_view in, size_t line_len, uint64_t size, std::string_view tail, const Limits& lim,
                  Reply& out, size_t& used, std::string& err) {
  if (size > lim.max_reply)
    return fail(err, "reply larger than --max-reply (" + std::to_string(lim.max_reply) + " bytes): a value of " +
                         std::to_string(size) + " bytes");
  const size_t need = line_len + static_cast<size_t>(size) + tail.size();
  if (in.size() < need) return Parse::Incomplete;
  if (in.substr(need - tail.size(), 2) != "\r\n") return fail(err, "protocol error: a value not ended by CRLF");
  if (in.substr(need - tail.size(), tail.size()) != tail)
    return fail(err, "protocol error: a VALUE not followed by END (one key was asked for)");
  out.data = in.substr(line_len, static_cast<size_t>(size));
  used = need;
  return Parse::Done;
}

Parse parse_meta(std::string_view in, std::string_view line, const Limits& lim, Reply& out, size_t& used,
                 std::string& err) {
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
    used = line.size() + 2;
    return Parse::Done;
  }
  if (first) return fail(err, "protocol error: a VA reply without a size");
  return value_block(in, line.size() + 2, size, "\r\n", lim, out, used, err);
}

// The text protocol's one-word replies.
constexpr Code2 kWords[] = {{"STORED", Reply::Code::Stored},   {"NOT_STORED", Reply::Code::NotStored},
                            {"EXISTS", Reply::Code::Exists},   {"NOT_FOUND", Reply::Code::NotFound},
                            {"DELETED", Reply::Code::Deleted}, {"END", Reply::Code::Miss}};

// "VALUE <key> <flags> <bytes> [<cas>]", its data, "END".
Parse parse_value(std::string_view in, std::string_view line, const Limits& lim, Reply& out, size_t& used,
                  std::string& err) {
  std::string_view t[5];
  size_t n = 0;
  for (std::string_view rest = line.substr(6); !rest.empty();) {
    const size_t sp = rest.find(' ');
    if (sp == 0 || n == 5) return fail(err, "protocol error: a malformed VALUE line '" + printable(line, 60) + "'");
    t[n++] = rest.substr(0, sp);
    rest = sp == std::string_view::npos ? std::string_view() : rest.substr(sp + 1);
  }
  uint64_t flags = 0, size = 0;
  if (n < 3 || n > 4 || !to_u64(t[1], flags, 10))
    return fail(err, "protocol error: a malformed VALUE line '" + printable(line, 60) + "'");
  if (!to_u64(t[2], size, 12)) return fail(err, "protocol error: bad value size '" + printable(t[2], 40) + "'");
  if (n == 4 && !to_u64(t[3], out.cas, 20))
    return fail(err, "protocol error: bad cas token '" + printable(t[3], 40) + "'");
  out.code = Reply::Code::Value;
  out.key = t[0];
  out.has_cas = n == 4;
  return value_block(in, line.size() + 2, size, "\r\nEND\r\n", lim, out, used, err);
}

Parse parse_text(std::string_view in, std::string_view line, const Limits& lim, Reply& out, size_t& used,
                 std::string& err) {
  if (line.starts_with("VALUE ")) return parse_value(in, line, lim, out, used, err);
  for (const Code2& c : kWords)
    if (line == c.text) {
      out.code = c.code;
      used = line.size() + 2;
      return Parse::Done;
    }
  return fail(err, "protocol error: unexpected reply '" + printable(line, 60) + "'");
}

}  // namespace

Parse parse_reply(std::string_view in, const Limits& lim, Protocol proto, Reply& out, size_t& used, std::string& err) {
  used = 0;
  std::string_view line;
  if (Parse p = reply_line(in, line, err); p != Parse::Done) return p;
  out = Reply{};
  out.line = line;
  if (is_error_line(line)) {
    out.code = Reply::Code::Error;
    used = line.size() + 2;
    return Parse::Done;
  }
  return proto == Protocol::Meta ? parse_meta(in, line, lim, out, used, err)
                                 : parse_text(in, line, lim, out, used, err);
}

void append_get(std::string& out, Protocol proto, const Keys& keys, uint64_t k, uint64_t tag, bool cas) {
  if (proto == Protocol::Text) {
    out += cas ? "gets " : "get ";
    append_key(out, keys, k);
    out += "\r\n";
    return;
  }
  out += "mg ";
  append_key(out, keys, k);
  out += cas ? " v c O" : " v O";
  append_hex(out, tag);
  out += "\r\n";
}

namespace {
// Text: "set <key> 0 0 <size>\r\n" or "cas <key> 0 0 <size> <cas>\r\n"; meta: "ms <key> <size>
// [C<cas>] O<tag>\r\n"; then room for the value and its CRLF. Returns where the value goes.
size_t append_set_line(std::string& out, Protocol proto, const Keys& keys, uint64_t k, uint32_t size, uint64_t tag,
                       uint64_t cas, bool use_cas, uint32_t ttl, Cond cond = Cond::None) {
  const bool text = proto == Protocol::Text;
  // memcached reads an exptime over 30 days as a Unix time
  const uint64_t exptime = ttl > 30 * 86400 ? static_cast<uint64_t>(std::time(nullptr)) + ttl : ttl;
  out += !text ? "ms " : use_cas ? "cas " : cond == Cond::Absent ? "add " : cond == Cond::Present ? "replace " : "set ";
  append_key(out, keys, k);
  if (text) {
    out += " 0 ";
    append_dec(out, exptime);
    out += " ";
  } else {
    out += " ";
  }
  append_dec(out, size);
  if (!text && ttl) {
    out += " T";
    append_dec(out, exptime);
  }
  if (use_cas) {
    out += text ? " " : " C";
    append_dec(out, cas);
  }
  if (!text && cond == Cond::Absent) out += " ME";   // the meta set's mode: add
  if (!text && cond == Cond::Present) out += " MR";  // replace
  if (!text) {
    out += " O";
    append_hex(out, tag);
  }
  out += "\r\n";
  const size_t at = out.size();
  out.resize(at + size + 2);
  out[at + size] = '\r';
  out[at + size + 1] = '\n';
  return at;
}
}  // namespace

void append_set(std::string& out, Protocol proto, const Keys& keys, uint64_t k, uint32_t version, uint32_t size,
                uint64_t tag, uint64_t cas, bool use_cas, uint32_t ttl) {
  const size_t at = append_set_line(out, proto, keys, k, size, tag, cas, use_cas, ttl);
  write_value(k, version, out.data() + at, size);
}

void append_cond_set(std::string& out, Protocol proto, const Keys& keys, uint64_t k, uint32_t version, uint32_t size,
                     uint64_t tag, Cond cond, uint32_t ttl) {
  const size_t at = append_set_line(out, proto, keys, k, size, tag, 0, false, ttl, cond);
  write_value(k, version, out.data() + at, size);
}

void append_set_native(std::string& out, Protocol proto, const Keys& keys, uint64_t k, uint32_t size, uint64_t tag) {
  const size_t at = append_set_line(out, proto, keys, k, size, tag, 0, false, 0);
  keys.values.write(k, out.data() + at, size);
}

void append_delete(std::string& out, Protocol proto, const Keys& keys, uint64_t k, uint64_t tag) {
  out += proto == Protocol::Text ? "delete " : "md ";
  append_key(out, keys, k);
  if (proto == Protocol::Meta) {
    out += " O";
    append_hex(out, tag);
  }
  out += "\r\n";
}

size_t ReplyChecker::take(std::span<Completion> out, size_t k) {
  std::string err;
  while (k < out.size() && fatal_.empty()) {
    Reply r;
    size_t used = 0;
    Parse p = parse_reply(in_.view(), lim_, proto_, r, used, err);
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
    if (std::string why = answers(e, r); !why.empty()) {
      fatal_ = "reply '" + printable(r.line, 60) + "' does not answer the request in flight (" + why + ")";
      break;
    }
    pending_.pop_front();
    in_.consume(used);
    if (std::optional<OpResult> res = check(e, r)) out[k++] = {e.seq, *res};
  }
  in_.compact();
  return k;
}

const char* ReplyChecker::verb(Expect::Kind k) const {
  using K = Expect::Kind;
  const bool text = proto_ == Protocol::Text;
  switch (k) {
    case K::Get: return text ? "get" : "mg";
    case K::RmwRead: return text ? "gets" : "mg";
    case K::Set: return text ? "set" : "ms";
    case K::RmwWrite: return text ? "cas" : "ms";
    case K::Delete: break;
  }
  return text ? "delete" : "md";
}

// Meta: an error line carries no opaque token; every other reply must carry its request's.
// Text: the reply must be one its request's command can have, a VALUE of its key.
std::string ReplyChecker::answers(const Expect& e, const Reply& r) const {
  using C = Reply::Code;
  using K = Expect::Kind;
  if (r.code == C::Error) return {};
  std::string why;
  if (proto_ == Protocol::Meta) {
    uint64_t tag = 0;
    if (from_hex(r.opaque, tag) && tag == e.seq) return {};
    why = "opaque O";
    append_hex(why, e.seq);
    return why;
  }
  bool ok = false;
  switch (e.kind) {
    case K::Get:
    case K::RmwRead: ok = r.code == C::Miss || (r.code == C::Value && key_is(r.key, keys_, e.key)); break;
    case K::Set: ok = r.code == C::Stored || r.code == C::NotStored; break;
    case K::RmwWrite: ok = r.code == C::Stored || r.code == C::Exists || r.code == C::NotFound; break;
    case K::Delete: ok = r.code == C::Deleted || r.code == C::NotFound; break;
  }
  if (ok) return {};
  why = verb(e.kind);
  why += ' ';
  append_key(why, keys_, e.key);
  return why;
}

OpResult ReplyChecker::check_value_of(const Expect& e, const Reply& r) {
  const auto n = static_cast<uint32_t>(r.data.size());
  const ValueCheck c = e.native ? keys_.values.check(e.key, r.data.data(), r.data.size())
                                : check_value(e.key, r.data.data(), r.data.size());
  switch (c) {
    case ValueCheck::Ok:
      if (e.kind == Expect::Kind::Get && e.size && n != e.size)
        return {Status::Mismatch, 0,
                keep(what(e) + " returned " + std::to_string(n) + " bytes, " + std::to_string(e.size) + " were set")};
      return {Status::Ok, n, {}};
    case ValueCheck::OtherKey: return {Status::Mismatch, 0, keep(what(e) + " returned another key's value")};
    case ValueCheck::Corrupt: break;
  }
  return {Status::Mismatch, 0, keep(what(e) + " returned a corrupt value")};
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
      if (r.code == C::Miss) return OpResult{Status::NotFound, 0, keep(what(e) + ": no such key")};
      break;
    case K::Set:
      if (r.code == C::Stored) {
        if (written_.size() < 64) written_.push_back(e.key);
        return OpResult{Status::Ok, e.size, {}};
      }
      if (r.code == C::NotStored && e.cond > Cond::Upsert)  // a trace's add or replace: its condition failed
        return OpResult{Status::NotFound, 0, e.cond == Cond::Absent ? "add: the key is there" : "replace: no such key"};
      if (r.code == C::NotStored)
        return OpResult{Status::Error, 0,
                        keep(what(e) + (proto_ == Protocol::Text ? ": not stored (NOT_STORED)" : ": not stored (NS)"))};
      break;
    case K::Delete:
      if (r.code == C::Stored || r.code == C::Deleted) {  // meta HD, text DELETED
        if (deleted_.size() < 64) deleted_.push_back(e.key);
        return OpResult{Status::Ok, 0, {}};
      }
      if (r.code == C::NotFound) return OpResult{Status::NotFound, 0, keep(what(e) + ": no such key")};
      break;
    case K::RmwRead:
      if (r.code == C::Miss) return OpResult{Status::NotFound, 0, keep(what(e) + ": no such key")};
      if (r.code == C::Value && r.has_cas) {
        OpResult res = check_value_of(e, r);
        if (res.status != Status::Ok) return res;
        Expect w = e;  // the write, guarded by the cas just read
        w.kind = K::RmwWrite;
        append_set(followups_, proto_, keys_, e.key, e.version, e.size, e.seq, r.cas, true, e.ttl);
        pending_.push_back(w);
        return std::nullopt;
      }
      break;
    case K::RmwWrite:
      if (r.code == C::Stored) return OpResult{Status::Ok, e.size, {}};
      if (r.code == C::NotFound)
        return OpResult{Status::NotFound, 0, keep(what(e) + ": deleted between the read and the write")};
      if (r.code == C::Exists) {
        if (mw::now_ns() - e.started_ns >= lim_.timeout_ns / 10 * 9)  // the last try fits before the timeout
          return OpResult{Status::Error, 0,
                          keep(what(e) + ": another client wrote it between the read and the write " +
                               std::to_string(e.tries + 1) + (e.tries ? " times" : " time") + " within the timeout" +
                               (proto_ == Protocol::Text ? " (cas EXISTS)" : " (cas EX)"))};
        ++cas_retries_;
        Expect again = e;  // lost the race: read again
        again.kind = K::RmwRead;
        again.tries = e.tries + 1;
        append_get(followups_, proto_, keys_, e.key, e.seq, true);
        pending_.push_back(again);
        return std::nullopt;
      }
      break;
  }
  return OpResult{Status::Mismatch, 0, keep("unexpected reply '" + printable(r.line, 60) + "'")};
}

}  // namespace mw::memcached
