#include "adapters/redis/reply.h"

#include <algorithm>
#include <cstring>

#include "util/keys.h"
#include "workload/workload.h"

namespace mw::redis {
namespace {

bool to_int(std::string_view s, int64_t& v) {
  size_t i = 0;
  bool neg = false;
  if (!s.empty() && s[0] == '-') neg = true, i = 1;
  if (i == s.size() || s.size() - i > 18) return false;  // 18 digits cannot overflow int64
  int64_t x = 0;
  for (; i < s.size(); ++i) {
    if (s[i] < '0' || s[i] > '9') return false;
    x = x * 10 + (s[i] - '0');
  }
  v = neg ? -x : x;
  return true;
}

struct Parser {
  std::string_view in;
  const Limits& lim;
  std::string& err;
  size_t pos = 0;
  size_t elements = 0;

  Parse fail(std::string why) {
    err = std::move(why);
    return Parse::Error;
  }
  Parse line(std::string_view& out) {
    size_t avail = in.size() - pos;
    const char* p = in.data() + pos;
    const void* nl = std::memchr(p, '\n', std::min(avail, Limits::kMaxLine + 2));
    if (!nl) {
      if (avail > Limits::kMaxLine + 1)
        return fail("protocol error: a reply line longer than " + std::to_string(Limits::kMaxLine) + " bytes");
      return Parse::Incomplete;
    }
    size_t len = static_cast<size_t>(static_cast<const char*>(nl) - p);
    if (len == 0 || p[len - 1] != '\r') return fail("protocol error: a reply line not ended by CRLF");
    out = {p, len - 1};
    pos += len + 1;
    return Parse::Done;
  }
  Parse length(std::string_view l, char type, int64_t& n) {
    if (!to_int(l, n) || n < -1)
      return fail(std::string("protocol error: bad ") + (type == '$' ? "bulk" : "array") + " length '" +
                  printable(l, 40) + "'");
    return Parse::Done;
  }
  Parse one(Reply* r, int depth, bool want_items) {
    if (pos >= in.size()) return Parse::Incomplete;
    char t = in[pos++];
    std::string_view l;
    if (t != '+' && t != '-' && t != ':' && t != '$' && t != '*')
      return fail("protocol error: unknown reply type " + printable(std::string_view(&t, 1)));
    if (Parse p = line(l); p != Parse::Done) return p;
    if (r) r->type = t;
    switch (t) {
      case '+':
      case '-':
        if (r) r->str = l;
        return Parse::Done;
      case ':': {
        int64_t v = 0;
        if (!to_int(l, v)) return fail("protocol error: bad integer '" + printable(l, 40) + "'");
        if (r) r->str = l, r->integer = v;
        return Parse::Done;
      }
      case '$': {
        int64_t n = 0;
        if (Parse p = length(l, t, n); p != Parse::Done) return p;
        if (n == -1) {
          if (r) r->nil = true;
          return Parse::Done;
        }
        if (static_cast<uint64_t>(n) > lim.max_reply)
          return fail("reply larger than --max-reply (" + std::to_string(lim.max_reply) + " bytes): a bulk of " +
                      std::to_string(n) + " bytes");
        size_t need = static_cast<size_t>(n) + 2;
        if (in.size() - pos < need) return Parse::Incomplete;
        if (in[pos + need - 2] != '\r' || in[pos + need - 1] != '\n')
          return fail("protocol error: a bulk not ended by CRLF");
        if (r) r->str = in.substr(pos, static_cast<size_t>(n));
        pos += need;
        return Parse::Done;
      }
      default: {  // '*'
        int64_t n = 0;
        if (Parse p = length(l, t, n); p != Parse::Done) return p;
        if (r) r->integer = n;
        if (n == -1) {
          if (r) r->nil = true;
          return Parse::Done;
        }
        if (static_cast<uint64_t>(n) > Limits::kMaxElements - elements)
          return fail("reply larger than " + std::to_string(Limits::kMaxElements) + " array elements");
        elements += static_cast<size_t>(n);
        if (depth + 1 >= Limits::kMaxDepth)
          return fail("protocol error: arrays nested deeper than " + std::to_string(Limits::kMaxDepth));
        for (int64_t i = 0; i < n; ++i) {
          Reply child;
          Reply* c = want_items && r ? &child : nullptr;
          if (Parse p = one(c, depth + 1, false); p != Parse::Done) return p;
          if (c && (c->type == '$' || c->type == '+' || c->type == '-' || c->type == ':')) r->items.push_back(c->str);
        }
        return Parse::Done;
      }
    }
  }
};

std::string describe(const Reply& r) {
  switch (r.type) {
    case '+': return "'+" + printable(r.str, 60) + "'";
    case '-': return "'-" + printable(r.str, 60) + "'";
    case ':': return "':" + printable(r.str, 40) + "'";
    case '$': return r.nil ? "'$-1' (nil)" : "(a bulk of " + std::to_string(r.str.size()) + " bytes)";
    default: return r.nil ? "'*-1' (nil)" : "(an array of " + std::to_string(r.integer) + " elements)";
  }
}

}  // namespace

Parse parse_reply(std::string_view in, const Limits& lim, Reply& out, size_t& used, std::string& err, bool want_items) {
  Parser p{in, lim, err};
  Parse r = p.one(&out, 0, want_items);
  used = r == Parse::Done ? p.pos : 0;
  return r;
}

KeySpace::KeySpace(std::string p, uint64_t n, bool rnd, size_t vsize)
    : prefix(std::move(p)),
      size(std::max<uint64_t>(1, n)),
      random(rnd),
      value_size(vsize),
      digits(decimal_digits(size - 1)) {
  values.resize(value_size);
}

void ReplyChecker::feed(const char* data, size_t n) {
  if (!in_.append(data, n) && fatal_.empty()) fatal_ = in_.refused();
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
    if (p == Parse::Incomplete) {
      // An array of bulks each under the limit can still add up past it.
      if (buffered() > lim_.max_reply + Limits::kMaxLine + 64)
        fatal_ = "reply larger than --max-reply (" + std::to_string(lim_.max_reply) + " bytes)";
      break;
    }
    if (pending_.empty()) {
      fatal_ = "unexpected reply " + describe(r) + " with no request waiting";
      in_.consume(used);
      break;
    }
    const Pending req = pending_.front();
    if (wait_ > 0 && req.kind == Kind::Set) {  // two replies: the SET's, then its WAIT's
      if (!half_) {
        first_ = check(req, r);
        first_detail_ = first_.detail;
        half_ = true;
        in_.consume(used);
        continue;
      }
      half_ = false;
      pending_.pop_front();
      OpResult res = first_;
      res.detail = keep(first_detail_);
      if (res.status == Status::Ok && r.type != ':')
        res = {Status::Mismatch, 0, keep("WAIT answered " + describe(r))};
      else if (res.status == Status::Ok && r.integer < wait_)
        res = {Status::Timeout, 0,
               keep("WAIT: " + std::to_string(r.integer) + " of " + std::to_string(wait_) +
                    " replicas had the write in time")};
      out[k++] = {req.seq, res};
      in_.consume(used);
      continue;
    }
    pending_.pop_front();
    out[k++] = {req.seq, check(req, r)};
    in_.consume(used);
  }
  in_.compact();
  return k;
}

OpResult ReplyChecker::check(const Pending& p, const Reply& r) {
  if (r.type == '-') {
    if (follow_ && r.str.starts_with("READONLY")) {
      fatal_ = "a replica answered READONLY: the primary is asked of the Sentinels again";
      return {Status::Refused, 0, keep(printable(r.str))};
    }
    return {Status::Error, 0, keep(printable(r.str))};
  }
  switch (p.kind) {
    case Kind::Ping:
      if (r.type == '+' && r.str == "PONG") return {Status::Ok, 4, {}};
      break;
    case Kind::Set:
      if (r.type == '+' && r.str == "OK") {
        if (written_.size() < 64) written_.push_back(keys_.key_of(p.seq));
        return {Status::Ok, static_cast<uint32_t>(keys_.value_size), {}};
      }
      break;
    case Kind::Get: {
      if (r.type != '$') break;
      uint64_t ki = keys_.key_of(p.seq);
      if (r.nil) return {Status::NotFound, 0, keep("GET " + keys_.key(ki) + ": no such key")};
      if (keys_.matches(ki, r.str.data(), r.str.size())) return {Status::Ok, static_cast<uint32_t>(r.str.size()), {}};
      return {Status::Mismatch, 0,
              keep("GET " + keys_.key(ki) + " returned a value that was not set (" + std::to_string(r.str.size()) +
                   " bytes)")};
    }
    default: return check_workload(p, r);
  }
  return {Status::Mismatch, 0, keep("unexpected reply " + describe(r))};
}

// A miss is the common case of a mix with deletes: its detail is a constant (no allocation)
// unless the key must exist, when it is a failure worth naming.
OpResult ReplyChecker::check_workload(const Pending& p, const Reply& r) {
  const char* cmd = p.kind == Kind::Read     ? "GET"
                    : p.kind == Kind::Rmw    ? "rmw (EVALSHA)"
                    : p.kind == Kind::Delete ? "DEL"
                                             : "SET";
  auto named = [&](const std::string& what) {
    return keep(std::string(cmd) + " " + printable(workload_key(keys_, p.key), 100) + what);
  };
  switch (p.kind) {
    case Kind::Read:
    case Kind::Rmw: {
      if (r.type != '$') break;
      if (r.nil) {
        if (!p.must_exist) return {Status::NotFound, 0, p.kind == Kind::Read ? "GET: no such key" : "rmw: no such key"};
        return {Status::NotFound, 0, named(": no such key, though it was loaded and never deleted (lost)")};
      }
      switch (check_value(p.key, r.str.data(), r.str.size())) {
        case ValueCheck::Ok:
          return {Status::Ok, p.kind == Kind::Read ? static_cast<uint32_t>(r.str.size()) : p.size, {}};
        case ValueCheck::OtherKey:
          return {Status::Mismatch, 0,
                  named(" returned another key's value (" + std::to_string(r.str.size()) + " bytes)")};
        case ValueCheck::Corrupt:
          return {Status::Mismatch, 0,
                  named(" returned a corrupt value (checksum; " + std::to_string(r.str.size()) + " bytes)")};
      }
      break;
    }
    case Kind::Write:
      if (r.type == '+' && r.str == "OK") return {Status::Ok, p.size, {}};
      if (r.type == '$' && r.nil && p.cond == Cond::Absent) return {Status::NotFound, 0, "SET NX: the key is there"};
      if (r.type == '$' && r.nil && p.cond == Cond::Present) return {Status::NotFound, 0, "SET XX: no such key"};
      break;
    case Kind::Delete:
      if (r.type != ':') break;
      if (r.integer == 1) return {};
      if (r.integer == 0) return {Status::NotFound, 0, "DEL: no such key"};
      break;
    default: break;
  }
  return {Status::Mismatch, 0, named(": unexpected reply " + describe(r))};
}

size_t write_workload_key(const KeySpace& keys, uint64_t k, char* out) {
  return write_key(keys.prefix, k, keys.digits, out);
}

std::string workload_key(const KeySpace& keys, uint64_t k) { return make_key(keys.prefix, k, keys.digits); }

}  // namespace mw::redis
