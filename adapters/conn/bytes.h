// Bytes from a server, for the protocol parsers of redis and memcached: the input buffer replies
// are parsed from, and the capped, escaped text of a reply that goes into a message.
#pragma once
#include <cstddef>
#include <string>
#include <string_view>

namespace mw::conn {

// Bytes read and not yet parsed. Replies are parsed from view(); consume(n) drops the first n
// bytes without copying; compact() reclaims the dropped prefix once it is large, so a long
// pipelined run neither copies per reply nor grows without bound.
class InBuffer {
 public:
  void append(const char* p, size_t n) { buf_.append(p, n); }
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
  }

 private:
  std::string buf_;
  size_t off_ = 0;
};

// The reply line at the start of `in` of a text protocol (memcached, beanstalkd): a line of at
// most `max_line` bytes ended by CRLF. 1: `line` (without CRLF), `used` its bytes with the CRLF;
// 0: no LF yet; -1: too long or not ended by CRLF, `err` says which.
int read_line(std::string_view in, size_t max_line, std::string_view& line, size_t& used, std::string& err);

// At most `max` bytes of `s` for a one-line message: printable ASCII as it is, any other byte
// as \xNN, "..." when cut.
std::string printable(std::string_view s, size_t max = 200);

}  // namespace mw::conn
