#include "adapters/conn/bytes.h"

#include <algorithm>
#include <cstring>

namespace mw::conn {

bool InBuffer::grow(size_t live) {
  size_t cap = std::max({live, 2 * size(), size_t{4096}});
  if (charge(cap) > held_ && !budget_->take(charge(cap) - held_)) {
    cap = live;  // no room to double: exactly what is needed, or nothing
    if (charge(cap) > held_ && !budget_->take(charge(cap) - held_)) return false;
  }
  std::string fresh;
  fresh.reserve(cap);  // exactly `cap` for a fresh string of more than 30 bytes
  fresh.append(view());
  buf_.swap(fresh);
  off_ = 0;
  if (charge(cap) < held_) budget_->give(held_ - charge(cap));
  held_ = charge(cap);
  return true;
}

void InBuffer::release() {
  if (!budget_) return;
  std::string().swap(buf_);
  buf_.reserve(4096);
  off_ = 0;
  budget_->give(held_);
  held_ = 0;
}

std::string budget_short(uint64_t value, int clients, size_t max_reply) {
  if (value <= InBuffer::kOwn / 2) return "";  // a buffer of twice the value stays in its own allowance
  const uint64_t need = 2 * value * static_cast<uint64_t>(std::max(clients, 1));
  if (need <= max_reply) return "";
  return "-c " + std::to_string(clients) + " clients reading values of up to " + std::to_string(value) +
         " bytes need --max-reply of at least " + std::to_string(need) +
         " (the replies in progress of all clients share it; a buffer holds up to twice its reply)";
}

std::string InBuffer::refused() const {
  return "the replies in progress of all clients passed --max-reply (" +
         std::to_string(budget_ ? budget_->limit() : 0) +
         " bytes) together: a server that streams large replies to every client";
}

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
