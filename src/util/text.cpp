#include "util/text.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <nlohmann/json.hpp>

namespace mw {

namespace {

// Length of the valid UTF-8 sequence at s[i], or 0 when the byte there starts none.
size_t sequence_at(std::string_view s, size_t i) {
  auto b = [&](size_t k) { return static_cast<unsigned char>(s[k]); };
  unsigned char c = b(i);
  if (c < 0x80) return 1;
  size_t n = c >= 0xC2 && c <= 0xDF ? 2 : c >= 0xE0 && c <= 0xEF ? 3 : c >= 0xF0 && c <= 0xF4 ? 4 : 0;
  if (n == 0 || i + n > s.size()) return 0;
  for (size_t k = 1; k < n; ++k)
    if ((b(i + k) & 0xC0) != 0x80) return 0;
  if (c == 0xE0 && b(i + 1) < 0xA0) return 0;   // overlong
  if (c == 0xED && b(i + 1) >= 0xA0) return 0;  // UTF-16 surrogate
  if (c == 0xF0 && b(i + 1) < 0x90) return 0;   // overlong
  if (c == 0xF4 && b(i + 1) >= 0x90) return 0;  // above U+10FFFF
  return n;
}

bool is_valid(std::string_view s) {
  for (size_t i = 0; i < s.size();) {
    size_t n = sequence_at(s, i);
    if (!n) return false;
    i += n;
  }
  return true;
}

// The code point of a bidirectional formatting character (U+061C, U+200E, U+200F, U+202A to
// U+202E, U+2066 to U+2069), which reorders the text around it, or 0.
char32_t bidi_control(std::string_view seq) {
  auto b = [&](size_t k) { return static_cast<unsigned char>(seq[k]); };
  if (seq.size() == 2 && b(0) == 0xD8 && b(1) == 0x9C) return 0x061C;
  if (seq.size() != 3 || b(0) != 0xE2) return 0;
  const char32_t cp = 0x2000 | (static_cast<char32_t>(b(1) & 0x3F) << 6) | (b(2) & 0x3F);
  const bool bidi = cp == 0x200E || cp == 0x200F || (cp >= 0x202A && cp <= 0x202E) || (cp >= 0x2066 && cp <= 0x2069);
  return bidi ? cp : 0;
}

// Appends c as the terminal sees it: an escape for a control character, else itself.
void append_visible(std::string& out, std::string_view seq) {
  unsigned char c = static_cast<unsigned char>(seq[0]);
  char buf[8];
  if (c == '\n')
    out += "\\n";
  else if (c == '\t')
    out += "\\t";
  else if (c == '\r')
    out += "\\r";
  else if (c < 0x20 || c == 0x7F)
    std::snprintf(buf, sizeof buf, "\\x%02x", c), out += buf;
  else if (c == 0xC2 && seq.size() == 2 && static_cast<unsigned char>(seq[1]) < 0xA0)  // C1: U+0080..U+009F
    std::snprintf(buf, sizeof buf, "\\u%04x", static_cast<unsigned char>(seq[1])), out += buf;
  else if (char32_t b = bidi_control(seq))
    std::snprintf(buf, sizeof buf, "\\u%04x", static_cast<unsigned>(b)), out += buf;
  else
    out += seq;
}

}  // namespace

std::string valid_utf8(std::string_view s) {
  if (is_valid(s)) return std::string(s);
  std::string out;
  out.reserve(s.size() + 8);
  for (size_t i = 0; i < s.size();) {
    size_t n = sequence_at(s, i);
    if (n)
      out.append(s.substr(i, n)), i += n;
    else
      out += "\xEF\xBF\xBD", ++i;
  }
  return out;
}

int json_depth(std::string_view t) {
  int depth = 0, deepest = 0;
  bool in_string = false, escaped = false;
  for (char c : t) {
    if (in_string) {
      if (escaped)
        escaped = false;
      else if (c == '\\')
        escaped = true;
      else if (c == '"')
        in_string = false;
      continue;
    }
    if (c == '"')
      in_string = true;
    else if (c == '[' || c == '{')
      deepest = std::max(deepest, ++depth);
    else if (c == ']' || c == '}')
      --depth;
  }
  return deepest;
}

std::string printable(std::string_view s) {
  std::string v = valid_utf8(s), out;
  out.reserve(v.size());
  for (size_t i = 0; i < v.size();) {
    size_t n = sequence_at(v, i);
    append_visible(out, std::string_view(v).substr(i, n));
    i += n;
  }
  return out;
}

std::string html_text(std::string_view s) {
  std::string v = printable(s), out;
  out.reserve(v.size());
  for (char c : v) {
    if (c == '<')
      out += "&lt;";
    else if (c == '>')
      out += "&gt;";
    else if (c == '&')
      out += "&amp;";
    else if (c == '"')
      out += "&quot;";
    else
      out += c;
  }
  return out;
}

std::string roff_text(std::string_view s) {
  std::string v = valid_utf8(s), out;
  out.reserve(v.size() + v.size() / 8);
  bool line_start = true;
  char buf[16];
  for (size_t i = 0; i < v.size();) {
    size_t n = sequence_at(v, i);
    auto c = static_cast<unsigned char>(v[i]);
    if (line_start && (c == '.' || c == '\'')) out += "\\&";  // not a request: text
    line_start = c == '\n';
    if (n > 1) {  // beyond ASCII: \[uXXXX], whatever the reader's input encoding
      uint32_t cp = c & (0x7Fu >> n);
      for (size_t k = 1; k < n; ++k) cp = cp << 6 | (static_cast<unsigned char>(v[i + k]) & 0x3Fu);
      std::snprintf(buf, sizeof buf, cp < 0xA0 ? "\\eu%04x" : "\\[u%04X]", cp);  // C1 controls as printable()
      out += buf;
    } else if (c == '\\')
      out += "\\e";
    else if (c == '-')
      out += "\\-";
    else if (c == '"')
      out += "\\(dq";
    else if (c == '\n')
      out += '\n';
    else if (c == '\t')
      out += ' ';
    else if (c < 0x20 || c == 0x7F)
      std::snprintf(buf, sizeof buf, "\\ex%02x", c), out += buf;
    else
      out += static_cast<char>(c);
    i += n;
  }
  return out;
}

void sanitize_json(nlohmann::json& j) {
  if (j.is_string()) {
    auto& s = j.get_ref<std::string&>();
    if (!is_valid(s)) s = valid_utf8(s);
  } else if (j.is_array()) {
    for (auto& v : j) sanitize_json(v);
  } else if (j.is_object()) {
    bool keys_ok = true;
    for (auto& [k, v] : j.items()) {
      keys_ok &= is_valid(k);
      sanitize_json(v);
    }
    if (!keys_ok) {
      nlohmann::json o = nlohmann::json::object();
      for (auto& [k, v] : j.items()) o[valid_utf8(k)] = std::move(v);
      j = std::move(o);
    }
  }
}

std::string fmt(double v, int decimals) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", decimals, v);
  return buf;
}

std::string fmt_g(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", v);
  return buf;
}

std::string grouped(double v) {
  std::string s = fmt(std::round(v), 0), out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (i && (s.size() - i) % 3 == 0 && s[i - 1] != '-') out += ',';
    out += s[i];
  }
  return out;
}

}  // namespace mw
