// Bytes from a server, for the protocol parsers of redis and memcached: the input buffer replies
// are parsed from, and the capped, escaped text of a reply that goes into a message.
#pragma once
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

namespace mw::conn {

// The memory of the replies in progress of all of a job's clients together (--max-reply): a
// client's input buffer beyond its own allowance (InBuffer::kOwn) is taken from it, and given
// back when the reply is parsed. Thread-safe.
class ReplyBudget {
 public:
  explicit ReplyBudget(size_t limit) : limit_(limit) {}
  bool take(size_t n) {
    size_t cur = used_.load(std::memory_order_relaxed);
    do {
      if (n > limit_ - cur) return false;
    } while (!used_.compare_exchange_weak(cur, cur + n, std::memory_order_relaxed));
    return true;
  }
  void give(size_t n) { used_.fetch_sub(n, std::memory_order_relaxed); }
  size_t limit() const { return limit_; }
  size_t used() const { return used_.load(std::memory_order_relaxed); }

 private:
  const size_t limit_;
  std::atomic<size_t> used_{0};
};

// Bytes read and not yet parsed. Replies are parsed from view(); consume(n) drops the first n
// bytes without copying; compact() reclaims the dropped prefix once it is large, so a long
// pipelined run neither copies per reply nor grows without bound. With a budget, the buffer's
// capacity beyond kOwn is taken from it: append() refuses (false, nothing appended) what the
// budget cannot hold, and a buffer emptied of a large reply gives its memory back.
class InBuffer {
 public:
  static constexpr size_t kOwn = size_t{1} << 20;
  InBuffer() = default;
  InBuffer(const InBuffer&) = delete;
  InBuffer& operator=(const InBuffer&) = delete;
  ~InBuffer() { release(); }

  void share(std::shared_ptr<ReplyBudget> b) {
    release();
    budget_ = std::move(b);
  }
  bool append(const char* p, size_t n) {
    if (budget_ && buf_.size() + n > buf_.capacity() && !grow(size() + n)) return false;
    buf_.append(p, n);
    return true;
  }
  std::string_view view() const { return std::string_view(buf_).substr(off_); }
  size_t size() const { return buf_.size() - off_; }
  void consume(size_t n) { off_ += n; }
  void compact() {
    if (off_ == buf_.size()) {
      clear();
    } else if (off_ > 65536 && off_ > buf_.size() / 2) {
      buf_.erase(0, off_);
      off_ = 0;
    }
  }
  void clear() {
    buf_.clear();
    off_ = 0;
    if (held_) release();  // a large reply is done: its memory goes back
  }
  // Why append() refused: for a message.
  std::string refused() const;

 private:
  static size_t charge(size_t capacity) { return capacity > kOwn ? capacity - kOwn : 0; }
  bool grow(size_t live);  // a buffer for `live` bytes and room to grow, the budget allowing
  void release();          // an empty buffer of the own allowance, the budget given back

  std::string buf_;
  size_t off_ = 0;
  std::shared_ptr<ReplyBudget> budget_;
  size_t held_ = 0;  // taken from the budget
};

// "" when `clients` replies of `value` bytes each fit the budget of --max-reply together; else
// what to give (a job whose own values the budget would refuse is a set-up error).
std::string budget_short(uint64_t value, int clients, size_t max_reply);

// The reply line at the start of `in` of a text protocol (memcached, beanstalkd): a line of at
// most `max_line` bytes ended by CRLF. 1: `line` (without CRLF), `used` its bytes with the CRLF;
// 0: no LF yet; -1: too long or not ended by CRLF, `err` says which.
int read_line(std::string_view in, size_t max_line, std::string_view& line, size_t& used, std::string& err);

// At most `max` bytes of `s` for a one-line message: printable ASCII as it is, any other byte
// as \xNN, "..." when cut.
std::string printable(std::string_view s, size_t max = 200);

}  // namespace mw::conn
