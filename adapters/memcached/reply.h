// memcached replies without a socket: bounded parsers of the replies of both protocols and the
// checker that matches them to the requests in flight. The client feeds it the bytes it reads;
// the fuzz target feeds it arbitrary bytes (adapters/memcached/fuzz_memcached_reply.cpp).
//
// Two protocols, the same checks (--protocol):
// - text (get/gets, set/cas, delete): the classic protocol. Its replies carry no token, so a
//   reply is matched to its request by order and by kind: a get is answered by "VALUE <its key>
//   ... END" or "END", a set by STORED / NOT_STORED, a cas by STORED / EXISTS / NOT_FOUND, a
//   delete by DELETED / NOT_FOUND. Any other reply (or a VALUE of another key) means the stream
//   slipped: fatal for the connection, never miscounted.
// - meta (mg, ms, md; memcached 1.6+): each reply echoes the request's opaque token (O<seq>),
//   so a reply is matched by content as well as by order.
// meta is the default: memcached 1.6 answers each text get with its own sendmsg (one system call
// per get, however deep the pipeline), the meta ones in batches (adapters/memcached/README.md).
#pragma once
#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "adapters/conn/bytes.h"
#include "adapters/conn/ring.h"
#include "util/clock.h"
#include "util/status.h"
#include "workload/workload.h"

namespace mw::memcached {

enum class Protocol : uint8_t { Text, Meta };

// Limits of one reply. A value longer than max_reply fails as soon as its "VA <size>" line is
// read, so a hostile "VA 2000000000" never makes us buffer it.
struct Limits {
  size_t max_reply = size_t{512} << 20;
  int64_t timeout_ns = 5'000'000'000;         // an rmw retries a lost cas race within it (--timeout)
  std::shared_ptr<conn::ReplyBudget> budget;  // the job's clients' replies in progress, together (--max-reply)
  static constexpr size_t kMaxLine = 8192;    // a reply line (memcached's are a few dozen bytes)
};

// One reply; views point into the parser's buffer and stay valid until the next feed.
struct Reply {
  // Stored: meta HD (a set's or a delete's success), text STORED; Deleted: text DELETED.
  enum class Code : uint8_t { Value, Stored, Miss, NotStored, Exists, NotFound, Noop, Error, Deleted };
  Code code = Code::Error;
  std::string_view line;    // the whole reply line, without CRLF
  std::string_view data;    // Value: the data block
  std::string_view opaque;  // meta: the O token, when the reply has one
  std::string_view key;     // text: a VALUE's key
  uint64_t cas = 0;         // the c token, when has_cas
  bool has_cas = false;
};

enum class Parse { Incomplete, Done, Error };

// Parses the reply at the start of `in`. Done: `used` bytes form the reply. Error: `err` says
// why (protocol error, value larger than max_reply).
// A text get's reply is the VALUE line, its data and the END line; a miss the END line alone.
Parse parse_reply(std::string_view in, const Limits& lim, Protocol proto, Reply& out, size_t& used, std::string& err);

using conn::printable;  // a reply's bytes in a message: capped, escaped

// Keys and values: the core's one layout (workload.h): key k is "<prefix><k>" (make_key), a
// native op's value NativeValues', a workload's mw::write_value's (checked by mw::check_value).
struct Keys {
  std::string prefix = "mwbench:";
  NativeValues values;  // sized to the job's largest native value
  std::string key(uint64_t k) const { return make_key(prefix, k); }
};

// The requests, appended to `out`; `tag` is the meta protocol's opaque token (the seq). A get
// with `cas` is text "gets", meta "mg ... c"; a set with `use_cas` is text "cas", meta "ms ... C".
void append_get(std::string& out, Protocol proto, const Keys& keys, uint64_t k, uint64_t tag, bool cas = false);
// The value is written in place: key k, `version`, `size` bytes (mw::write_value).
// `ttl`: seconds the key lives (0: for ever); over 30 days memcached takes a Unix time instead,
// so such a TTL is sent as one.
void append_set(std::string& out, Protocol proto, const Keys& keys, uint64_t k, uint32_t version, uint32_t size,
                uint64_t tag, uint64_t cas = 0, bool use_cas = false, uint32_t ttl = 0);
// A trace's add (Cond::Absent) or replace (Cond::Present): text add / replace, meta ms ... ME / MR;
// NOT_STORED / NS when its condition failed.
void append_cond_set(std::string& out, Protocol proto, const Keys& keys, uint64_t k, uint32_t version, uint32_t size,
                     uint64_t tag, Cond cond, uint32_t ttl);
// A native op's value (NativeValues::write).
void append_set_native(std::string& out, Protocol proto, const Keys& keys, uint64_t k, uint32_t size, uint64_t tag);
void append_delete(std::string& out, Protocol proto, const Keys& keys, uint64_t k, uint64_t tag);

// What a request in flight expects. An rmw is a read (mg with its cas), then a write of the
// changed value with that cas (ms C<cas>); a write that lost the race to another client's
// (EX) reads again while the op is younger than 90% of the timeout (each retry waits behind the
// client's pipeline, so a hot key under -P 4 -c 50 can lose dozens of times in a row: a conflict
// between a job's own clients is latency, not a failure; the retries are counted).
struct Expect {
  enum class Kind : uint8_t { Get, Set, Delete, RmwRead, RmwWrite };
  uint64_t seq = 0;
  uint64_t key = 0;
  uint32_t size = 0;     // Set: bytes written; Get of a native op: the size the value must have (0: any)
  uint32_t version = 0;  // Set / RmwWrite: the version written
  uint32_t ttl = 0;      // Set / RmwWrite: seconds the key lives (0: for ever)
  Kind kind = Kind::Get;
  bool native = false;     // a native op's value (NativeValues), else the workload's
  Cond cond = Cond::None;  // Set: a trace's add or replace, whose NOT_STORED / NS is "not stored" (NotFound)
  uint32_t tries = 0;      // rmw: reads again so far
  int64_t started_ns = 0;  // rmw: when it was sent (set by ReplyChecker::expect)
};

// Matches replies to requests, in order. The client pushes each request on submit and feeds
// what it reads; take() returns the completed requests. A reply no request asked for, a reply
// that does not answer the request in flight (meta: its opaque token; text: its kind or a
// VALUE's key), a protocol error or a reply over the limit is fatal:
// take() stops and sets `fatal`. An rmw's second step is appended to `followups()`, which the
// client sends.
class ReplyChecker {
 public:
  ReplyChecker(const Keys& keys, Limits lim, Protocol proto) : keys_(keys), lim_(lim), proto_(proto) {
    if (lim_.budget) in_.share(lim_.budget);
  }

  void expect(Expect e) {  // an rmw's retries count from here
    if (e.kind == Expect::Kind::RmwRead) e.started_ns = mw::now_ns();
    pending_.push_back(e);
  }
  void feed(const char* data, size_t n) {
    if (!in_.append(data, n) && fatal_.empty()) fatal_ = in_.refused();
  }
  // Fills out[k..] with completions; returns the new k. Details stay valid until clear_details().
  size_t take(std::span<Completion> out, size_t k);
  void clear_details() { details_.clear(); }
  size_t buffered() const { return in_.size(); }
  std::string& followups() { return followups_; }

  const std::string& fatal() const { return fatal_; }
  conn::Ring<Expect>& pending() { return pending_; }
  // Keys that a set acknowledged and keys a delete removed (at most 64 each), for the end check.
  const std::vector<uint64_t>& written() const { return written_; }
  const std::vector<uint64_t>& deleted() const { return deleted_; }
  uint64_t cas_retries() const { return cas_retries_; }  // rmw writes that lost the race (EX)
  void reset_stream() {                                  // a fresh connection: nothing buffered, nothing fatal
    in_.clear();
    fatal_.clear();
    followups_.clear();
  }

 private:
  // The result of `e` given reply `r`; none when the request goes on (an rmw's next step).
  std::optional<OpResult> check(const Expect& e, const Reply& r);
  // Empty when `r` answers `e`; else why not (the stream slipped).
  std::string answers(const Expect& e, const Reply& r) const;
  const char* verb(Expect::Kind k) const;  // the request's command, for messages
  std::string what(const Expect& e) const { return verb(e.kind) + (" " + keys_.key(e.key)); }
  OpResult check_value_of(const Expect& e, const Reply& r);
  std::string_view keep(std::string s) {
    details_.push_back(std::move(s));
    return details_.back();
  }

  const Keys& keys_;
  Limits lim_;
  Protocol proto_;
  conn::InBuffer in_;
  conn::Ring<Expect> pending_;
  std::deque<std::string> details_;
  std::string fatal_, followups_;
  std::vector<uint64_t> written_, deleted_;
  uint64_t cas_retries_ = 0;
};

}  // namespace mw::memcached
