#include "adapters/beanstalkd/reply.h"

#include <algorithm>
#include <cstring>

namespace mw::beanstalkd {
namespace {

// Unsigned decimal of at most 20 digits that fits 64 bits; false on anything else.
bool to_u64(std::string_view s, uint64_t& v) {
  if (s.empty() || s.size() > 20) return false;
  uint64_t x = 0;
  for (char c : s) {
    if (c < '0' || c > '9') return false;
    const auto d = static_cast<uint64_t>(c - '0');
    if (x > (UINT64_MAX - d) / 10) return false;
    x = x * 10 + d;
  }
  v = x;
  return true;
}

Parse fail(std::string& err, std::string why) {
  err = std::move(why);
  return Parse::Error;
}

// The replies that are one word, and what they mean.
struct Word {
  const char* text;
  Reply::Code code;
};
constexpr Word kWords[] = {{"TIMED_OUT", Reply::Code::TimedOut},    {"DEADLINE_SOON", Reply::Code::DeadlineSoon},
                           {"DELETED", Reply::Code::Deleted},       {"NOT_FOUND", Reply::Code::NotFound},
                           {"BURIED", Reply::Code::Buried},         {"OUT_OF_MEMORY", Reply::Code::Error},
                           {"INTERNAL_ERROR", Reply::Code::Error},  {"BAD_FORMAT", Reply::Code::Error},
                           {"UNKNOWN_COMMAND", Reply::Code::Error}, {"EXPECTED_CRLF", Reply::Code::Error},
                           {"JOB_TOO_BIG", Reply::Code::Error},     {"DRAINING", Reply::Code::Error},
                           {"NOT_IGNORED", Reply::Code::Error}};

// The replies followed by arguments: how many numbers, and whether a data block follows.
struct Head {
  const char* text;
  Reply::Code code;
  int numbers;  // id and/or byte count; USING takes a word instead
  bool data;
};
constexpr Head kHeads[] = {{"INSERTED", Reply::Code::Inserted, 1, false},
                           {"BURIED", Reply::Code::Buried, 1, false},
                           {"WATCHING", Reply::Code::Watching, 1, false},
                           {"USING", Reply::Code::Using, 0, false},
                           {"RESERVED", Reply::Code::Reserved, 2, true},
                           {"FOUND", Reply::Code::Found, 2, true},
                           {"OK", Reply::Code::Ok, 1, true}};

// The arguments of `h` in `args` (after "<head> "): the id and the data block's size.
Parse parse_args(const Head& h, std::string_view args, Reply& out, uint64_t& bytes, std::string& err) {
  if (h.numbers == 0) {  // USING <tube>
    if (args.empty() || args.find(' ') != std::string_view::npos)
      return fail(err, "protocol error: USING without one tube name");
    out.word = args;
    return Parse::Done;
  }
  const size_t sp = args.find(' ');
  std::string_view first = args.substr(0, sp), second = sp == std::string_view::npos ? "" : args.substr(sp + 1);
  if (h.numbers == 1 && sp != std::string_view::npos) return fail(err, "protocol error: one number expected");
  uint64_t a = 0, b = 0;
  if (!to_u64(first, a) || (h.numbers == 2 && !to_u64(second, b)))
    return fail(err, std::string("protocol error: ") + h.text + " with a number that is not one");
  if (h.code == Reply::Code::Ok)
    bytes = a;
  else
    out.id = a;
  if (h.numbers == 2) bytes = b;
  return Parse::Done;
}

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
  for (const Word& w : kWords)
    if (line == w.text) {
      out.code = w.code;
      used = len + 1;
      return Parse::Done;
    }
  const size_t sp = line.find(' ');
  const std::string_view head = line.substr(0, sp);
  const Head* h = nullptr;
  for (const Head& c : kHeads)
    if (head == c.text) h = &c;
  if (!h || sp == std::string_view::npos)
    return fail(err, "protocol error: '" + printable(line, 60) + "' is no beanstalkd reply");
  out.code = h->code;
  uint64_t bytes = 0;
  if (parse_args(*h, line.substr(sp + 1), out, bytes, err) == Parse::Error) return Parse::Error;
  if (!h->data) {
    used = len + 1;
    return Parse::Done;
  }
  if (bytes > lim.max_reply)
    return fail(err, "reply larger than --max-reply (" + std::to_string(bytes) + " > " + std::to_string(lim.max_reply) +
                         " bytes)");
  const size_t start = len + 1;
  if (in.size() - start < bytes + 2) return Parse::Incomplete;
  out.damaged = in[start + bytes] != '\r' || in[start + bytes + 1] != '\n';
  out.data = in.substr(start, bytes);
  used = start + bytes + 2;
  return Parse::Done;
}

size_t PutChecker::take(std::span<Completion> out, size_t k) {
  while (k < out.size() && fatal_.empty()) {
    Reply r;
    size_t used = 0;
    const Parse p = parse_reply(in_.view(), lim_, r, used, fatal_);
    if (p != Parse::Done) break;  // Incomplete, or Error (fatal_ says why)
    in_.consume(used);
    if (pending_.empty()) {
      fatal_ = "a reply with no request waiting: '" + printable(r.line, 100) + "'";
      break;
    }
    const Pending e = pending_.front();
    pending_.pop_front();
    if (e.tube >= 0) {  // a use
      if (r.code != Reply::Code::Using || (tubes_ && r.word != (*tubes_)[static_cast<size_t>(e.tube)])) {
        fatal_ = "'use' answered '" + printable(r.line, 100) + "'";
        break;
      }
      continue;
    }
    if (r.code == Reply::Code::Inserted) {
      out[k++] = {e.seq, {Status::Ok, 0, {}}};
      continue;
    }
    if (r.code != Reply::Code::Buried && r.code != Reply::Code::Error) {
      fatal_ = "'put' answered '" + printable(r.line, 100) + "'";
      break;
    }
    details_.push_back("put answered " + printable(r.line, 100));
    out[k++] = {e.seq, {Status::Error, 0, details_.back()}};
  }
  in_.compact();
  return k;
}

}  // namespace mw::beanstalkd
