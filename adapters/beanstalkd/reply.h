// beanstalkd replies without a socket: a bounded parser of the text protocol's replies (a line,
// and for RESERVED, FOUND and OK a data block) and the checker that matches the replies of a
// producer's pipelined use/put to its requests. The client feeds it the bytes it reads; the
// fuzz target feeds it arbitrary bytes (adapters/beanstalkd/fuzz_beanstalkd_reply.cpp).
#pragma once
#include <cstdint>
#include <deque>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "adapters/conn/bytes.h"
#include "adapters/conn/ring.h"
#include "util/status.h"

namespace mw::beanstalkd {

// Limits of one reply. A data block longer than max_reply fails as soon as its line is read,
// so a hostile "RESERVED 1 2000000000" never makes us buffer it.
struct Limits {
  size_t max_reply = size_t{16} << 20;
  static constexpr size_t kMaxLine = 1024;  // a reply line (a tube name is at most 200 bytes)
};

// One reply; views point into the parser's input and stay valid until it changes.
struct Reply {
  enum class Code : uint8_t {
    Inserted,
    Buried,
    Using,
    Watching,
    Reserved,
    TimedOut,
    DeadlineSoon,
    Deleted,
    NotFound,
    Found,
    Ok,
    Error  // OUT_OF_MEMORY, INTERNAL_ERROR, BAD_FORMAT, UNKNOWN_COMMAND, JOB_TOO_BIG, DRAINING, ...
  };
  Code code = Code::Error;
  std::string_view line;  // the whole reply line, without CRLF
  std::string_view word;  // Using: the tube
  std::string_view data;  // Reserved, Found, Ok: the data block
  uint64_t id = 0;        // Inserted, Buried, Reserved, Found: the job id; Watching: the count
  // The data block's two bytes after its byte count were not CRLF: the reply is framed by the
  // count all the same (beanstalkd sends a job's body as it holds it, its CRLF included, so a job
  // damaged in its binlog comes out so), and the job is damaged.
  bool damaged = false;
};

enum class Parse { Incomplete, Done, Error };

// Parses the reply at the start of `in`. Done: `used` bytes form the reply (a data block not
// ended by CRLF is Done and `damaged`). Error: `err` says why (a line too long or not ended by
// CRLF, a reply no command has, a number that is not one, a data block over max_reply).
Parse parse_reply(std::string_view in, const Limits& lim, Reply& out, size_t& used, std::string& err);

using conn::printable;  // a reply's bytes in a message: capped, escaped

// The replies of a producer's pipelined requests, in order: "use <tube>" (USING, completes
// nothing) and "put" (INSERTED completes its seq Ok; BURIED, JOB_TOO_BIG, DRAINING and the
// other errors fail it). A reply no request asked for, a USING of another tube or a protocol
// error is fatal: take() stops and sets fatal().
class PutChecker {
 public:
  struct Pending {
    uint64_t seq;
    int tube;  // a use: the tube's index; a put: -1
  };
  explicit PutChecker(Limits lim) : lim_(lim) {}
  void expect_use(int tube) { pending_.push_back({0, tube}); }
  void expect_put(uint64_t seq) { pending_.push_back({seq, -1}); }
  void feed(const char* data, size_t n) { in_.append(data, n); }
  // Fills out[k..] with completions; returns the new k. Details stay valid until clear_details().
  size_t take(std::span<Completion> out, size_t k);
  void clear_details() { details_.clear(); }
  const std::string& fatal() const { return fatal_; }
  conn::Ring<Pending>& pending() { return pending_; }
  void reset_stream() {  // a fresh connection: nothing buffered, nothing fatal, the first tube used
    in_.clear();
    fatal_.clear();
    tube_ = 0;
  }
  // The tube the connection will use for the next put (the last use queued; a fresh connection
  // uses tube 0: its handshake said so).
  int tube() const { return tube_; }
  void using_tube(int t) { tube_ = t; }
  // The tubes' names, to check USING replies against.
  void set_tubes(const std::vector<std::string>* tubes) { tubes_ = tubes; }

 private:
  Limits lim_;
  conn::InBuffer in_;
  conn::Ring<Pending> pending_;
  std::deque<std::string> details_;
  std::string fatal_;
  int tube_ = 0;
  const std::vector<std::string>* tubes_ = nullptr;
};

}  // namespace mw::beanstalkd
