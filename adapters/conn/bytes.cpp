#include "bytes.h"

#include <algorithm>
#include <cstring>

namespace mw::conn {

int read_line(std::string_view in, size_t max_line, std::string_view& line, size_t& used, std::string& err) {
  const void* nl = std::memchr(in.data(), '\n', std::min(in.size(), max_line + 2));
  if (!nl) {
    if (in.size() <= max_line + 1) return 0;
    err = "protocol error: a reply line longer than " + std::to_string(max_line) + " bytes";
    return -1;
  }
  const size_t len = static_cast<size_t>(static_cast<const char*>(nl) - in.data());
  if (len == 0 || in[len - 1] != '\r') {
    err = "protocol error: a reply line not ended by CRLF";
    return -1;
  }
  line = in.substr(0, len - 1);
  used = len + 1;
  return 1;
}

std::string printable(std::string_view s, size_t max) {
  static const char* hex = "0123456789abcdef";
  std::string out;
  for (size_t i = 0; i < s.size() && i < max; ++i) {
    auto c = static_cast<unsigned char>(s[i]);
    if (c >= 0x20 && c < 0x7f) {
      out += static_cast<char>(c);
    } else {
      out += "\\x";
      out += hex[c >> 4];
      out += hex[c & 15];
    }
  }
  if (s.size() > max) out += "...";
  return out;
}

}  // namespace mw::conn
