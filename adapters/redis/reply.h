// Redis replies without a socket: a bounded RESP2 parser and the checker that matches replies
// to the requests in flight. The client feeds it the bytes it reads; the fuzz target feeds it
// arbitrary bytes (adapters/redis/fuzz_redis_reply.cpp).
#pragma once
#include <cstdint>
#include <deque>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "adapters/conn/bytes.h"
#include "adapters/conn/ring.h"
#include "api/job.h"
#include "util/status.h"
#include "workload/workload.h"

namespace mw::redis {

// Limits of one reply. A bulk longer than max_reply fails as soon as its length is read, so a
// hostile `$2000000000` never makes us buffer it; arrays are bounded in elements and depth.
struct Limits {
  size_t max_reply = size_t{512} << 20;
  std::shared_ptr<conn::ReplyBudget> budget;    // the job's clients' replies in progress, together (--max-reply)
  static constexpr size_t kMaxLine = 65536;     // a simple string, error or length line
  static constexpr size_t kMaxElements = 1024;  // all elements of one reply, nested included
  static constexpr int kMaxDepth = 8;
};

// One parsed reply; views point into the parser's buffer and stay valid until the next feed.
struct Reply {
  char type = 0;                        // '+', '-', ':', '$', '*'
  bool nil = false;                     // $-1 or *-1
  std::string_view str;                 // + - $: the text; ':' the digits
  int64_t integer = 0;                  // ':' the value, '*' the number of elements
  std::vector<std::string_view> items;  // '*': its string elements (nested arrays left out)
};

enum class Parse { Incomplete, Done, Error };

// Parses the reply at the start of `in`. Done: `used` bytes form the reply. Error: `err` says
// why (protocol error, reply larger than max_reply, ...). `items` is filled only when asked.
Parse parse_reply(std::string_view in, const Limits& lim, Reply& out, size_t& used, std::string& err,
                  bool want_items = false);

using conn::printable;  // a reply's bytes in a message: capped, escaped

// Keys and values of a job, in the core's one layout (workload.h): key k is "<prefix><k>"
// zero-padded to the key space's digits, so every key of a native job has one length (a command
// is encoded once and submit writes only the digits in); a native value is NativeValues' of the
// job's one size. Everything is written in place, with no allocation per op.
struct KeySpace {
  std::string prefix = "mwbench:";
  uint64_t size = 10000;
  bool random = false;
  size_t value_size = 0;
  NativeValues values;
  size_t digits = 1;

  KeySpace(std::string prefix, uint64_t size, bool random, size_t value_size);
  uint64_t key_of(uint64_t seq) const { return native_key(seq, size, random); }
  size_t key_len() const { return prefix.size() + digits; }
  void write_key(uint64_t k, char* out) const { mw::write_key(prefix, k, digits, out); }  // k < size: key_len() bytes
  std::string key(uint64_t k) const { return make_key(prefix, k, digits); }
  void write_value(uint64_t k, char* out) const { values.write(k, out, value_size); }  // value_size bytes
  // A crash job's SET of op `seq`: the workload's value layout, its version the write's
  // (write_version), so that the check tells which write of a key survived.
  bool stamped = false;
  void write_stamped(uint64_t k, uint64_t seq, char* out) const {
    mw::write_value(k, write_version(seq), out, value_size);
  }
  std::string value(uint64_t k) const { return values.value(k, value_size); }
  bool matches(uint64_t k, const char* data, size_t len) const {
    return len == value_size && values.check(k, data, len) == ValueCheck::Ok;
  }
};

enum class Op { Set, Get, Ping, Mix };

// What a reply is checked against. Native ops know their key from the seq; a workload request
// (--mix) brings its own key, op and value size.
enum class Kind : uint8_t { Set, Get, Ping, Read, Write, Delete, Rmw };
struct Pending {
  uint64_t seq = 0;
  uint64_t key = 0;   // workload requests: the key index
  uint32_t size = 0;  // bytes written (update, insert, rmw)
  Kind kind = Kind::Ping;
  bool must_exist = false;  // a miss on this key is lost data (the detail says so)
  Cond cond = Cond::None;   // a write: SET NX (Absent) or XX (Present), answered nil when not stored
};

using PendingQueue = conn::Ring<Pending>;  // the requests in flight

// Workload keys: "<prefix><k>", k zero-padded to the digits of the key space (as the native
// keys are) and longer for keys inserted past it. Returns the length; `out` holds 20 + prefix.
size_t write_workload_key(const KeySpace& keys, uint64_t k, char* out);
std::string workload_key(const KeySpace& keys, uint64_t k);

// Matches replies to requests, in order. The client pushes each request on submit and feeds
// what it reads; take() returns the completed requests. A reply no request asked for, a
// protocol error or a reply over the limit is fatal: take() stops and sets `fatal`.
// Native requests: SET answers +OK, GET exactly the value SET stored, PING +PONG. Workload
// requests: read (GET) and rmw (EVALSHA, which answers the value it read) return a value that
// passes check_value() for its key or nil (NotFound); update and insert (SET) +OK, and a SET NX
// or XX nil when it stored nothing (NotFound: not stored); delete (DEL) :1, or :0 (NotFound).
class ReplyChecker {
 public:
  ReplyChecker(const KeySpace& keys, Op op, Limits lim) : keys_(keys), op_(op), lim_(lim) {
    if (lim_.budget) in_.share(lim_.budget);
  }

  void expect(uint64_t seq) {  // a native request of the checker's op
    pending_.push_back({.seq = seq, .kind = op_ == Op::Set ? Kind::Set : op_ == Op::Get ? Kind::Get : Kind::Ping});
  }
  void expect(const Pending& p) { pending_.push_back(p); }
  void feed(const char* data, size_t n);
  // Fills out[k..] with completions; returns the new k. Details stay valid until clear_details().
  size_t take(std::span<Completion> out, size_t k);
  void clear_details() { details_.clear(); }
  // Bytes buffered for the reply in progress (bounded by max_reply plus one header line).
  size_t buffered() const { return in_.size(); }

  // A replicated set-up (--sentinel): a READONLY answer (a replica, not the primary) fails its op
  // as Refused and drops the connection, so the next op asks the Sentinels where the primary is.
  void follow_primary() { follow_ = true; }
  // --wait-replicas N: each native SET is followed by WAIT N (its reply an integer): the SET is
  // acknowledged once WAIT says N replicas have it, else it fails (a Timeout: in doubt).
  void wait_after_set(int n) { wait_ = n; }
  const std::string& fatal() const { return fatal_; }
  PendingQueue& pending() { return pending_; }
  // Keys that SET acknowledged (at most 64), for the read-back check.
  const std::vector<uint64_t>& written() const { return written_; }
  void reset_stream() {  // a fresh connection: nothing buffered, nothing fatal
    in_.clear();
    fatal_.clear();
    half_ = false;
  }

 private:
  OpResult check(const Pending& p, const Reply& r);
  OpResult check_workload(const Pending& p, const Reply& r);
  std::string_view keep(std::string s) {
    details_.push_back(std::move(s));
    return details_.back();
  }

  const KeySpace& keys_;
  Op op_;
  Limits lim_;
  conn::InBuffer in_;
  PendingQueue pending_;
  std::deque<std::string> details_;
  std::string fatal_;
  std::vector<uint64_t> written_;
  bool follow_ = false;
  int wait_ = 0;
  bool half_ = false;  // --wait-replicas: the front SET's reply came, its WAIT's not yet
  OpResult first_;     // and what it said (its detail in first_detail_)
  std::string first_detail_;
};

}  // namespace mw::redis
