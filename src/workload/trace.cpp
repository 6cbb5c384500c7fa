#include "workload/trace.h"

#include <fcntl.h>
#include <unistd.h>
#include <zstd.h>

#include <array>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstring>

#include "util/status.h"
#include "util/text.h"

namespace mw {

namespace {

constexpr size_t kReadChunk = 1 << 16;
constexpr size_t kMaxLine = 4 << 20;  // a line longer than this is malformed (MONITOR of a 1 MiB value fits)
constexpr std::array<std::string_view, kTraceOpCount> kOpNames = {
    "get", "gets", "set", "add", "replace", "cas", "append", "prepend", "delete", "incr", "decr"};

bool op_of(std::string_view name, TraceOp& op) {
  for (int i = 0; i < kTraceOpCount; ++i)
    if (name == kOpNames[i]) {
      op = static_cast<TraceOp>(i);
      return true;
    }
  return false;
}

template <class T>
bool whole(std::string_view s, T& out) {
  if (s.empty()) return false;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
  return ec == std::errc() && p == s.data() + s.size();
}

bool seconds(std::string_view s, double& out) {
  if (s.empty()) return false;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
  return ec == std::errc() && p == s.data() + s.size() && std::isfinite(out) && out >= 0;
}

std::string shown(std::string_view s) { return "'" + printable(s.substr(0, 60)) + (s.size() > 60 ? "...'" : "'"); }

// Twitter: timestamp,key,key size,value size,client id,op,TTL. The key is what lies between the
// first comma and the fifth from the end (an anonymized key has no comma, but one that has is kept).
bool parse_twitter(std::string_view line, TraceRecord& r, std::string& why) {
  const std::string form = "timestamp,key,key size,value size,client id,op,TTL";
  std::array<size_t, 5> right{};
  size_t end = line.size();
  for (int i = 4; i >= 0; --i) {
    const size_t c = line.rfind(',', end == 0 ? std::string_view::npos : end - 1);
    if (c == std::string_view::npos || end == 0) return why = "expected " + form + ", got " + shown(line), false;
    right[i] = c;
    end = c;
  }
  const size_t first = line.find(',');
  if (first >= right[0]) return why = "expected " + form + ", got " + shown(line), false;
  auto field = [&](int i) {  // the fields after the key: 0 key size ... 4 TTL
    const size_t b = right[i] + 1, e = i < 4 ? right[i + 1] : line.size();
    return line.substr(b, e - b);
  };
  const std::string_view key = line.substr(first + 1, right[0] - first - 1);
  if (!seconds(line.substr(0, first), r.t))
    return why = "expected a timestamp in seconds, got " + shown(line.substr(0, first)), false;
  if (key.empty()) return why = "expected a key, got an empty one", false;
  if (!whole(field(0), r.key_size)) return why = "expected a key size, got " + shown(field(0)), false;
  if (!whole(field(1), r.value_size) || r.value_size > kMaxTraceValue)
    return why = "expected a value size from 0 to 1 MiB, got " + shown(field(1)), false;
  if (!whole(field(2), r.client)) return why = "expected a client id, got " + shown(field(2)), false;
  if (!op_of(field(3), r.op))
    return why = "expected an op (get, gets, set, add, replace, cas, append, prepend, delete, incr, decr), got " +
                 shown(field(3)),
           false;
  if (!whole(field(4), r.ttl)) return why = "expected a TTL in seconds, got " + shown(field(4)), false;
  r.key = trace_key_id(key);
  return true;
}

// Generic CSV: time,op,key,value_size after its header.
bool parse_csv(std::string_view line, TraceRecord& r, std::string& why) {
  const std::string form = "time,op,key,value_size";
  const size_t a = line.find(','), b = a == std::string_view::npos ? a : line.find(',', a + 1);
  const size_t c = line.rfind(',');
  if (a == std::string_view::npos || b == std::string_view::npos || c <= b)
    return why = "expected " + form + ", got " + shown(line), false;
  if (!seconds(line.substr(0, a), r.t))
    return why = "expected a time in seconds, got " + shown(line.substr(0, a)), false;
  if (!op_of(line.substr(a + 1, b - a - 1), r.op))
    return why = "expected an op (get, set, add, replace, cas, append, prepend, delete, incr, decr, gets), got " +
                 shown(line.substr(a + 1, b - a - 1)),
           false;
  const std::string_view key = line.substr(b + 1, c - b - 1);
  if (key.empty()) return why = "expected a key, got an empty one", false;
  if (!whole(line.substr(c + 1), r.value_size) || r.value_size > kMaxTraceValue)
    return why = "expected a value size from 0 to 1 MiB, got " + shown(line.substr(c + 1)), false;
  r.key = trace_key_id(key);
  r.key_size = static_cast<uint32_t>(key.size());
  r.client = 0, r.ttl = 0;
  return true;
}

// A MONITOR argument: a double-quoted string with C escapes; its unescaped length. `at` moves
// past it and the space after.
bool monitor_arg(std::string_view line, size_t& at, std::string& out) {
  out.clear();
  if (at >= line.size() || line[at] != '"') return false;
  for (size_t i = at + 1; i < line.size(); ++i) {
    const char ch = line[i];
    if (ch == '"') {
      at = i + 1;
      if (at < line.size() && line[at] == ' ') ++at;
      return true;
    }
    if (ch != '\\') {
      out += ch;
      continue;
    }
    if (++i >= line.size()) return false;
    switch (line[i]) {
      case 'x': {
        unsigned v = 0;
        if (i + 2 >= line.size() ||
            std::from_chars(line.data() + i + 1, line.data() + i + 3, v, 16).ptr != line.data() + i + 3)
          return false;
        out += static_cast<char>(v);
        i += 2;
        break;
      }
      case 'n': out += '\n'; break;
      case 'r': out += '\r'; break;
      case 't': out += '\t'; break;
      case 'a': out += '\a'; break;
      case 'b': out += '\b'; break;
      default: out += line[i];
    }
  }
  return false;
}

// MONITOR: `1339518083.107412 [0 127.0.0.1:60866] "set" "key" "value"`. Commands that touch no
// key (PING, SELECT, ...) and its "OK" are skipped; a data command it cannot map is malformed.
bool parse_monitor(std::string_view line, TraceRecord& r, bool& skip, std::string& why) {
  const std::string form = "TIMESTAMP [DB CLIENT] \"COMMAND\" \"ARG\" ...";
  if (line == "OK") return skip = true, true;
  const size_t sp = line.find(' ');
  if (sp == std::string_view::npos || !seconds(line.substr(0, sp), r.t))
    return why = "expected " + form + ", got " + shown(line), false;
  const size_t open = sp + 1, close = line.find("] ", open);
  if (open >= line.size() || line[open] != '[' || close == std::string_view::npos)
    return why = "expected " + form + ", got " + shown(line), false;
  const std::string_view who = line.substr(open + 1, close - open - 1);  // "0 127.0.0.1:60866"
  const size_t space = who.find(' ');
  r.client = trace_key_id(space == std::string_view::npos ? who : who.substr(space + 1));
  size_t at = close + 2;
  std::string cmd, key, arg;
  if (!monitor_arg(line, at, cmd))
    return why = "expected a quoted command, got " + shown(line.substr(close + 2)), false;
  for (char& c : cmd) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  const bool keyed = cmd == "get" || cmd == "set" || cmd == "setex" || cmd == "psetex" || cmd == "setnx" ||
                     cmd == "del" || cmd == "unlink" || cmd == "incr" || cmd == "decr" || cmd == "incrby" ||
                     cmd == "decrby" || cmd == "append" || cmd == "getex" || cmd == "getdel";
  if (!keyed) return skip = true, true;
  if (!monitor_arg(line, at, key)) return why = "expected the key of " + printable(cmd) + " in quotes", false;
  r.key = trace_key_id(key);
  r.key_size = static_cast<uint32_t>(key.size());
  r.value_size = 0, r.ttl = 0;
  std::string value;
  if (cmd == "get" || cmd == "getex" || cmd == "getdel") {
    r.op = TraceOp::Get;
  } else if (cmd == "del" || cmd == "unlink") {
    r.op = TraceOp::Delete;
  } else if (cmd == "incr" || cmd == "incrby") {
    r.op = TraceOp::Incr;
  } else if (cmd == "decr" || cmd == "decrby") {
    r.op = TraceOp::Decr;
  } else if (cmd == "setex" || cmd == "psetex") {
    if (!monitor_arg(line, at, arg) || !whole(std::string_view(arg), r.ttl) || !monitor_arg(line, at, value))
      return why = "expected " + printable(cmd) + " \"KEY\" \"TTL\" \"VALUE\"", false;
    if (cmd == "psetex") r.ttl = (r.ttl + 999) / 1000;
    r.op = TraceOp::Set;
  } else {  // set, setnx, append: the value, then set's options
    if (!monitor_arg(line, at, value)) return why = "expected " + printable(cmd) + " \"KEY\" \"VALUE\"", false;
    r.op = cmd == "setnx" ? TraceOp::Add : cmd == "append" ? TraceOp::Append : TraceOp::Set;
    while (cmd == "set" && monitor_arg(line, at, arg)) {
      for (char& c : arg) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
      std::string n;
      if (arg == "nx") r.op = TraceOp::Add;
      if (arg == "xx") r.op = TraceOp::Replace;
      if ((arg == "ex" || arg == "px") && monitor_arg(line, at, n) && whole(std::string_view(n), r.ttl) && arg == "px")
        r.ttl = (r.ttl + 999) / 1000;
    }
  }
  if (value.size() > kMaxTraceValue) return why = "expected a value of at most 1 MiB", false;
  r.value_size = static_cast<uint32_t>(value.size());
  return true;
}

TraceFormat detect(std::string_view first) {
  if (first.rfind("time,op,key,value_size", 0) == 0) return TraceFormat::Csv;
  if (first == "OK") return TraceFormat::Monitor;
  const size_t sp = first.find(' ');
  if (sp != std::string_view::npos && sp + 1 < first.size() && first[sp + 1] == '[') return TraceFormat::Monitor;
  return TraceFormat::Twitter;
}

}  // namespace

TraceFormat parse_trace_format(const std::string& v) {
  if (v == "twitter") return TraceFormat::Twitter;
  if (v == "monitor") return TraceFormat::Monitor;
  if (v == "csv") return TraceFormat::Csv;
  throw SetupError("expected twitter, monitor or csv, got '" + printable(v) + "'");
}

const char* trace_format_name(TraceFormat f) {
  return f == TraceFormat::Monitor ? "monitor" : f == TraceFormat::Csv ? "csv" : "twitter";
}

std::string_view trace_op_name(TraceOp op) { return kOpNames[static_cast<int>(op)]; }

KvOp kv_op_of(TraceOp op) {
  switch (op) {
    case TraceOp::Get:
    case TraceOp::Gets: return KvOp::Read;
    case TraceOp::Delete: return KvOp::Delete;
    case TraceOp::Incr:
    case TraceOp::Decr: return KvOp::Rmw;
    default: return KvOp::Update;
  }
}

Cond cond_of(TraceOp op, bool conds) {
  if (kv_op_of(op) != KvOp::Update) return Cond::None;
  if (conds && op == TraceOp::Add) return Cond::Absent;
  if (conds && op == TraceOp::Replace) return Cond::Present;
  return Cond::Upsert;
}

uint64_t trace_key_id(std::string_view key) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (char c : key) h = (h ^ static_cast<uint8_t>(c)) * 0x100000001b3ull;
  return mix64(h);
}

bool parse_trace_line(TraceFormat f, std::string_view line, TraceRecord& r, bool& skip, std::string& why) {
  skip = false;
  if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
  if (line.empty() || line[0] == '#') return skip = true, true;
  switch (f) {
    case TraceFormat::Twitter: return parse_twitter(line, r, why);
    case TraceFormat::Monitor: return parse_monitor(line, r, skip, why);
    case TraceFormat::Csv:
      if (line == "time,op,key,value_size") return skip = true, true;
      return parse_csv(line, r, why);
  }
  return false;
}

struct TraceReader::Zstd {
  ZSTD_DStream* ds = ZSTD_createDStream();
  std::string in;
  size_t in_pos = 0;
  size_t last = 0;  // the last ZSTD_decompressStream's hint: 0 when a frame just ended
  ~Zstd() { ZSTD_freeDStream(ds); }
};

TraceReader::TraceReader(const std::string& path, const TraceFormat* format, bool skip_bad)
    : path_(path), skip_bad_(skip_bad) {
  fd_ = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd_ < 0) throw SetupError("--trace: cannot open " + printable(path) + ": " + std::strerror(errno));
  char magic[4] = {};
  const ssize_t n = ::pread(fd_, magic, 4, 0);
  if (n == 4 && static_cast<uint8_t>(magic[0]) == 0x28 && static_cast<uint8_t>(magic[1]) == 0xB5 &&
      static_cast<uint8_t>(magic[2]) == 0x2F && static_cast<uint8_t>(magic[3]) == 0xFD)
    zstd_ = std::make_unique<Zstd>();
  if (format) {
    format_ = *format;
    return;
  }
  std::string_view first;  // detected from the first line that is not empty
  while (fill()) {
    const size_t nl = buf_.find('\n', pos_);
    if (nl == std::string::npos && !eof_) continue;
    first = std::string_view(buf_).substr(pos_, nl == std::string::npos ? std::string::npos : nl - pos_);
    if (!first.empty() && first.back() == '\r') first.remove_suffix(1);
    break;
  }
  format_ = detect(first);
}

TraceReader::~TraceReader() {
  if (fd_ >= 0) ::close(fd_);
}

// More bytes into buf_ (decompressed); false when there are none left.
bool TraceReader::fill() {
  if (eof_) return false;
  if (pos_ > 0 && pos_ >= buf_.size() / 2) buf_.erase(0, pos_), pos_ = 0;
  char chunk[kReadChunk];
  for (;;) {
    if (zstd_ && zstd_->in_pos < zstd_->in.size()) {
      const size_t before = buf_.size();
      buf_.resize(before + kReadChunk);
      ZSTD_inBuffer in{zstd_->in.data(), zstd_->in.size(), zstd_->in_pos};
      ZSTD_outBuffer out{buf_.data() + before, kReadChunk, 0};
      const size_t rc = ZSTD_decompressStream(zstd_->ds, &out, &in);
      buf_.resize(before + out.pos);
      zstd_->in_pos = in.pos;
      if (ZSTD_isError(rc))
        throw SetupError("--trace: " + printable(path_) + ": not a valid zstd stream (" + ZSTD_getErrorName(rc) + ")");
      zstd_->last = rc;
      if (out.pos > 0) return true;
      continue;
    }
    const ssize_t n = ::read(fd_, chunk, sizeof chunk);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) throw SetupError("--trace: reading " + printable(path_) + ": " + std::strerror(errno));
    if (n == 0) {
      eof_ = true;
      if (zstd_ && zstd_->last != 0)
        throw SetupError("--trace: " + printable(path_) + ": truncated zstd frame (the file ends inside it)");
      return false;
    }
    if (!zstd_) {
      buf_.append(chunk, static_cast<size_t>(n));
      return true;
    }
    zstd_->in.assign(chunk, static_cast<size_t>(n));
    zstd_->in_pos = 0;
  }
}

bool TraceReader::next_line(std::string_view& line) {
  for (;;) {
    const size_t nl = buf_.find('\n', pos_);
    if (nl != std::string::npos) {
      line = std::string_view(buf_).substr(pos_, nl - pos_);
      pos_ = nl + 1;
      return true;
    }
    if (buf_.size() - pos_ > kMaxLine)
      throw SetupError(printable(path_) + ":" + std::to_string(line_ + 1) + ": a line longer than 4 MiB");
    if (!fill()) {
      if (pos_ >= buf_.size()) return false;
      line = std::string_view(buf_).substr(pos_);
      pos_ = buf_.size();
      return true;
    }
  }
}

bool TraceReader::next(TraceRecord& r) {
  std::string_view line;
  std::string why;
  while (next_line(line)) {
    ++line_;
    bool skip = false;
    const bool parsed = parse_trace_line(format_, line, r, skip, why);
    const std::string where = printable(path_) + ":" + std::to_string(line_) + ": ";
    if (parsed && skip) continue;
    if (parsed && r.t < last_t_)  // never skipped: the replay's timing would be wrong
      throw SetupError(where + "the timestamp goes backwards (" + std::to_string(r.t) + " after " +
                       std::to_string(last_t_) + ")");
    if (parsed) {
      last_t_ = r.t;
      return true;
    }
    if (!skip_bad_) throw SetupError(where + why + " (" + trace_format_name(format_) + " trace)");
    if (first_bad_.empty()) first_bad_ = where + why;
    ++skipped_;
    why.clear();
  }
  return false;
}

}  // namespace mw

namespace mw {

namespace {
int64_t due_ns(double s) { return s >= 1e9 ? TraceFeed::kNever - 1 : static_cast<int64_t>(s * 1e9); }
}  // namespace

TraceFeed::TraceFeed(const std::string& path, const TraceFormat* format, bool skip_bad, int client, int clients,
                     double speed, const std::array<bool, kKvOpCount>& runs, bool ttls, bool conds)
    : reader_(path, format, skip_bad),
      client_(static_cast<uint64_t>(client)),
      clients_(static_cast<uint64_t>(std::max(1, clients))),
      speed_(speed),
      runs_(runs),
      spread_(reader_.format() == TraceFormat::Twitter),
      ttls_(ttls) {
  for (int k = 0; k < kTraceOpCount; ++k) conds_[k] = cond_of(static_cast<TraceOp>(k), conds);
}

bool TraceFeed::mine(const TraceRecord& r) {
  const uint64_t who = reader_.format() == TraceFormat::Csv ? dealt_ : r.client;
  ++dealt_;
  if (who % clients_ != client_) return false;
  if (!runs_[static_cast<int>(kv_op_of(r.op))]) {
    ++left_out_[static_cast<int>(r.op)];
    return false;
  }
  return true;
}

// The next second that has requests: this client's of them, and how many it has in all.
bool TraceFeed::read_second() {
  second_.clear(), at_ = 0;
  TraceRecord r;
  if (have_ahead_)
    r = ahead_, have_ahead_ = false;
  else if (!reader_.next(r))
    return false;
  if (!started_) t0_ = std::floor(r.t), started_ = true;
  const double sec = std::floor(r.t);
  uint64_t n = 0;
  for (;;) {
    if (mine(r)) second_.push_back({r, n});
    ++n;
    if (!reader_.next(r)) break;
    if (std::floor(r.t) != sec) {
      ahead_ = r, have_ahead_ = true;
      break;
    }
  }
  second_n_ = n;
  for (auto& [rec, k] : second_) rec.t = sec + static_cast<double>(k) / static_cast<double>(n);
  return true;
}

int64_t TraceFeed::advance_ns() {
  if (spread_) {
    while (at_ >= second_.size())
      if (!read_second()) return kNever;
    cur_ = second_[at_++].first;
    return due_ns((cur_.t - t0_) / speed_);
  }
  TraceRecord r;
  while (reader_.next(r)) {
    if (!started_) t0_ = r.t, started_ = true;
    if (!mine(r)) continue;
    cur_ = r;
    return due_ns((r.t - t0_) / speed_);
  }
  return kNever;
}

}  // namespace mw
