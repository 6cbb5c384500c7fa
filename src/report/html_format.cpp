// Numbers and labels as the HTML report prints them: digits grouped, units chosen per value,
// and a width estimate so that chart labels are laid out where they cannot overlap.
#include <cmath>
#include <cstdio>

#include "report/html_model.h"
#include "util/text.h"

namespace mw::html {

std::string esc(const std::string& s) { return html_text(s); }

std::string fixed(double v, int decimals) {
  char b[64];
  std::snprintf(b, sizeof b, "%.*f", decimals, v);
  return b;
}

std::string rate(double rps) {
  if (rps < 1) return fixed(rps, 2);
  if (rps < 100) return fixed(rps, 1);
  std::string digits = fixed(std::round(rps), 0), out;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return out;
}

std::string compact(double v) {
  static const std::pair<double, const char*> units[] = {{1e12, "T"}, {1e9, "G"}, {1e6, "M"}, {1e3, "k"}};
  char b[32];
  for (auto [scale, suffix] : units)
    if (v >= scale) {
      std::snprintf(b, sizeof b, "%.3g%s", v / scale, suffix);
      return b;
    }
  std::snprintf(b, sizeof b, "%.3g", v);
  return b;
}

std::string duration_ns(double ns) {
  static const std::pair<double, const char*> units[] = {{1e9, "s"}, {1e6, "ms"}, {1e3, "\xC2\xB5s"}};
  for (auto [scale, unit] : units)
    if (ns >= scale) {
      double v = ns / scale;
      return fixed(v, v < 10 ? 2 : v < 100 ? 1 : 0) + " " + unit;
    }
  return fixed(ns, 0) + " ns";
}

std::string ratio(double x) { return fixed(x, x < 10 ? 2 : x < 100 ? 1 : 0) + "\xC3\x97"; }

namespace {

// Width of one character in ems, on the wide side of DejaVu Sans / Liberation Sans.
double char_em(unsigned char c) {
  if (c >= 0x80) return 0.95;  // a UTF-8 lead byte: one character (continuation bytes add 0)
  if (c == ' ' || c == '.' || c == ',' || c == ':' || c == ';' || c == '\'' || c == '|' || c == '!' || c == 'i' ||
      c == 'j' || c == 'l' || c == 'I')
    return 0.34;
  if (c == 'f' || c == 't' || c == 'r' || c == '(' || c == ')' || c == '[' || c == ']' || c == '/' || c == '-')
    return 0.45;
  if (c == 'm' || c == 'w' || c == 'M' || c == 'W' || c == '%' || c == '@') return 0.95;
  if (c >= 'A' && c <= 'Z') return 0.74;
  return 0.64;
}

}  // namespace

double text_width(const std::string& text, double px) {
  double em = 0;
  for (unsigned char c : text)
    if ((c & 0xC0) != 0x80) em += char_em(c);
  return em * px;
}

std::string fit(const std::string& text, double width, double px) {
  if (text_width(text, px) <= width) return text;
  std::string out;
  double used = text_width("\xE2\x80\xA6", px);
  for (size_t i = 0; i < text.size();) {
    size_t n = 1;  // the whole UTF-8 sequence, never half of one
    while (i + n < text.size() && (static_cast<unsigned char>(text[i + n]) & 0xC0) == 0x80) ++n;
    double w = text_width(text.substr(i, n), px);
    if (used + w > width) break;
    used += w;
    out += text.substr(i, n);
    i += n;
  }
  return out + "\xE2\x80\xA6";
}

}  // namespace mw::html
