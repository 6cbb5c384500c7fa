#include "util/redact.h"

#include <algorithm>
#include <cctype>
#include <string_view>

#include "util/conninfo.h"

namespace mw {
namespace {

constexpr std::string_view kMask = "***";

std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

bool has_any(const std::string& s, std::initializer_list<std::string_view> words) {
  return std::any_of(words.begin(), words.end(), [&](std::string_view w) { return s.find(w) != std::string::npos; });
}

bool ends_with(const std::string& s, std::string_view tail) {
  return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
}

// Option names and key=value keys whose whole value is a secret.
bool secret_key(const std::string& k) {
  return !ends_with(k, "-env") && !ends_with(k, "_env") &&
         has_any(k, {"password", "passwd", "secret", "token", "credential", "apikey", "api-key", "api_key",
                     "access-key", "access_key", "private-key", "private_key", "scram_client_key", "scram_server_key"});
}

// Header names whose value is a secret (--header 'X-Api-Key: ...').
bool secret_header(const std::string& name) {
  return has_any(
      name, {"auth", "token", "key", "secret", "cookie", "password", "passwd", "session", "credential", "signature"});
}

bool word_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '.'; }
bool space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }
bool token_end(char c) { return space(c) || c == '"' || c == '\'' || c == '<' || c == '>' || c == '`'; }

bool all_digits(std::string_view s) {
  return !s.empty() &&
         std::all_of(s.begin(), s.end(), [](char c) { return std::isdigit(static_cast<unsigned char>(c)); });
}

// Removes the userinfo of the authority starting at `start` (just after "://", or where a
// scheme-less "user:pass@host" begins); returns the position to continue from.
size_t strip_userinfo(std::string& s, size_t start, bool has_scheme) {
  size_t end = start;
  while (end < s.size() && !token_end(s[end])) ++end;
  size_t slash = s.find('/', start);
  if (slash == std::string::npos || slash > end) slash = end;
  size_t at = s.rfind('@', slash == 0 ? 0 : slash - 1);
  if (at != std::string::npos && at >= start && at < slash) {  // user:pass@host (the password may hold '@')
    std::string_view user(s.data() + start, at - start);
    if (has_scheme || user.find(':') != std::string_view::npos) {
      s.erase(start, at + 1 - start);
      return start;
    }
    return slash;
  }
  // u:pa/ss@host: a '/' in the password (not host:port/path@x, whose ':' is followed by digits)
  at = s.find('@', slash);
  size_t colon = s.find(':', start);
  if (at != std::string::npos && at < end && colon < slash &&
      !all_digits(std::string_view(s).substr(colon + 1, slash - colon - 1))) {
    s.erase(start, at + 1 - start);
    return start;
  }
  return end;
}

// Masks the value after `pos` (which points just past a '=' or ':'), quoted or up to a
// delimiter; returns the position after the mask.
size_t mask_value(std::string& s, size_t pos, std::string_view stops, char quote_before = 0) {
  while (pos < s.size() && (s[pos] == ' ' || s[pos] == '\t')) ++pos;
  size_t end = pos;
  if (pos < s.size() && (s[pos] == '\'' || s[pos] == '"')) {
    char q = s[pos];
    for (end = pos + 1; end < s.size() && s[end] != q; ++end)
      if (s[end] == '\\') ++end;
    end = std::min(s.size(), end + 1);
  } else {
    while (end < s.size() && stops.find(s[end]) == std::string_view::npos && s[end] != quote_before) ++end;
  }
  if (end == pos || std::string_view(s).substr(pos, end - pos) == kMask) return end;
  s.replace(pos, end - pos, kMask);
  return pos + kMask.size();
}

// Where the end of the value starting at `pos` (just past a '=') is, by libpq's conninfo grammar:
// a quoted value ('...' or "...") runs to its closing quote, a backslash escaping the next byte;
// an unquoted one to the next whitespace (a backslash escapes it too), or in a URL's query
// (`query`) to the next '&' or '#'. What comes after decides whether that end is sure: the end of
// the line, or another `key=` pair. Anything else ("password=abc def": is "def" the password's
// second word?) and an unterminated quote make the end unsure: it is then the end of the line.
size_t value_end(const std::string& s, size_t pos, bool query) {
  auto line_end = [&] { return std::min(s.size(), s.find_first_of("\r\n", pos)); };
  size_t end = pos;
  if (pos < s.size() && (s[pos] == '\'' || s[pos] == '"')) {
    for (end = pos + 1; end < s.size() && s[end] != s[pos]; ++end)
      if (s[end] == '\\') ++end;
    return end < s.size() ? end + 1 : line_end();
  }
  while (end < s.size() && !space(s[end]) && !(query && (s[end] == '&' || s[end] == '#')))
    end += s[end] == '\\' ? 2 : 1;
  end = std::min(end, s.size());
  if (end == s.size() || s[end] == '\n' || s[end] == '\r' || s[end] == '&' || s[end] == '#') return end;
  size_t next = end;
  while (next < s.size() && (s[next] == ' ' || s[next] == '\t')) ++next;
  if (next == s.size() || s[next] == '\n' || s[next] == '\r') return end;
  size_t w = next;
  while (w < s.size() && word_char(s[w])) ++w;
  while (w < s.size() && (s[w] == ' ' || s[w] == '\t')) ++w;
  if (w > next && w < s.size() && s[w] == '=') return end;  // another pair
  return line_end();
}

// password=..., token=... (conninfo, query strings, --mysql-password=...): the value masked, to
// where value_end() says it ends.
void mask_pairs(std::string& s) {
  for (size_t i = 0; i < s.size(); ++i) {
    if (!word_char(s[i]) || (i > 0 && word_char(s[i - 1]))) continue;
    size_t e = i;
    while (e < s.size() && word_char(s[e])) ++e;
    size_t eq = e;
    while (eq < s.size() && (s[eq] == ' ' || s[eq] == '\t')) ++eq;
    if (eq < s.size() && s[eq] == '=' && secret_key(lower(std::string_view(s).substr(i, e - i)))) {
      size_t pos = eq + 1;
      while (pos < s.size() && (s[pos] == ' ' || s[pos] == '\t')) ++pos;
      const size_t end = value_end(s, pos, i > 0 && (s[i - 1] == '?' || s[i - 1] == '&'));
      if (end > pos && std::string_view(s).substr(pos, end - pos) != kMask) s.replace(pos, end - pos, kMask);
      e = end > pos ? pos + kMask.size() : pos;
    }
    i = e - 1 < i ? i : e - 1;
  }
}

// "Authorization: Bearer ...", "Cookie: ...", "X-Api-Key: ..." in text: the value masked to the
// end of the line (or of the quotes the header stands in).
void mask_headers(std::string& s) {
  for (size_t i = 0; i < s.size(); ++i) {
    if (!(std::isalpha(static_cast<unsigned char>(s[i]))) || (i > 0 && word_char(s[i - 1]))) continue;
    size_t e = i;
    while (e < s.size() && (std::isalnum(static_cast<unsigned char>(s[e])) || s[e] == '-' || s[e] == '_')) ++e;
    if (e < s.size() && s[e] == ':' && (e + 1 == s.size() || s[e + 1] == ' ' || s[e + 1] == '\t')) {
      std::string name = lower(std::string_view(s).substr(i, e - i));
      if (has_any(name, {"authorization", "cookie", "token", "api-key", "apikey", "secret", "password", "passwd",
                         "session"})) {
        char q = i > 0 && (s[i - 1] == '\'' || s[i - 1] == '"') ? s[i - 1] : 0;
        e = mask_value(s, e + 1, "\r\n", q);
      }
    }
    i = e > i ? e - 1 : i;
  }
}

std::string header_line(const std::string& line) {
  size_t colon = line.find(':');
  if (colon == std::string::npos) return redact_text(line);
  std::string name = lower(line.substr(0, colon));
  while (!name.empty() && space(name.back())) name.pop_back();
  if (!secret_header(name)) return redact_text(line);
  return line.substr(0, colon + 1) + " " + std::string(kMask);
}

std::string shell_quote(const std::string& a) {
  bool plain = !a.empty() && std::all_of(a.begin(), a.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) ||
           std::string_view("_./:=,@%+-*").find(c) != std::string_view::npos;
  });
  if (plain) return a;
  std::string q = "'";
  for (char c : a) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

}  // namespace

std::string redact_url(const std::string& text) {
  std::string s = text;
  for (size_t p = s.find("://"); p != std::string::npos; p = s.find("://", p)) p = strip_userinfo(s, p + 3, true);
  // scheme-less: a token (or the value of --opt=) holding "user:pass@host"
  for (size_t i = 0; i < s.size();) {
    while (i < s.size() && token_end(s[i])) ++i;
    size_t end = i;
    while (end < s.size() && !token_end(s[end])) ++end;
    std::string_view tok = std::string_view(s).substr(i, end - i);
    size_t at = tok.find('@');
    if (at == std::string_view::npos || tok.find("://") != std::string_view::npos) {
      i = end;
      continue;
    }
    size_t start = i;
    if (size_t eq = tok.substr(0, at).find('='); eq != std::string_view::npos) start = i + eq + 1;
    size_t next = strip_userinfo(s, start, false);
    i = std::max(next, start + 1);
    while (i < s.size() && !token_end(s[i])) ++i;
  }
  return s;
}

std::string redact_text(const std::string& text) {
  std::string s = redact_url(text);
  mask_pairs(s);
  mask_headers(s);
  return s;
}

bool is_secret_reference(const std::string& value) {
  if (value.rfind("file:", 0) == 0) return value.size() > 5;
  if (value.rfind("env:", 0) != 0 || value.size() == 4) return false;
  return !std::isdigit(static_cast<unsigned char>(value[4])) && std::all_of(value.begin() + 4, value.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '_';
  });
}

std::string redact_conninfo(const std::string& text) {
  if (is_conninfo_uri(text)) return redact_text(text);
  const Conninfo c = parse_conninfo(text);
  std::string s = text;
  size_t first_secret = std::string::npos;  // the raw start of the first secret value
  for (auto p = c.pairs.rbegin(); p != c.pairs.rend(); ++p) {
    if (!secret_key(lower(p->key))) continue;
    s.replace(p->value_begin, p->value_end - p->value_begin, kMask);
    first_secret = p->value_begin;
  }
  if (c.error.empty()) return s;
  // Refused by libpq's grammar: what follows a secret may be its tail ("password=abc def"), so
  // everything from the first secret value on is masked; without a secret before the fault, the
  // rest is read as free text.
  if (first_secret != std::string::npos && first_secret <= c.error_at)
    return text.substr(0, first_secret) + std::string(kMask);
  return text.substr(0, c.error_at) + redact_text(text.substr(c.error_at));
}

std::vector<std::string> conninfo_secrets(const std::string& text) {
  std::vector<std::string> out;
  if (is_conninfo_uri(text)) return out;  // the URL's password: the callers read userinfo themselves
  const Conninfo c = parse_conninfo(text);
  bool secret_before = false;
  for (const ConninfoPair& p : c.pairs)
    if (secret_key(lower(p.key))) {
      secret_before |= p.value_begin <= c.error_at;
      out.push_back(p.value);
      out.push_back(text.substr(p.value_begin, p.value_end - p.value_begin));
    }
  if (!c.error.empty() && secret_before) {  // the words after the fault, each maybe a secret's tail
    size_t i = c.error_at;
    while (i < text.size()) {
      while (i < text.size() && space(text[i])) ++i;
      size_t e = i;
      while (e < text.size() && !space(text[e])) ++e;
      if (e > i) out.push_back(text.substr(i, e - i));
      i = e;
    }
  }
  return out;
}

std::string redact(const std::string& key, const std::string& value) {
  std::string k = lower(key);
  while (!k.empty() && k[0] == '-') k.erase(0, 1);
  if (value.empty() || is_secret_reference(value)) return value;
  if (secret_key(k)) return std::string(kMask);
  if (k.find("header") != std::string::npos) {
    std::string out;
    size_t start = 0;
    while (start <= value.size()) {
      size_t nl = value.find('\n', start);
      if (nl == std::string::npos) nl = value.size();
      out += (start ? "\n" : "") + header_line(value.substr(start, nl - start));
      start = nl + 1;
    }
    return out;
  }
  if (k.find("conninfo") != std::string::npos) return redact_conninfo(value);
  return redact_text(value);
}

std::vector<std::string> redact_args(const std::vector<std::string>& args) {
  std::vector<std::string> out;
  std::string pending;  // the option whose value the next argument is
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    bool option = a.size() > 1 && a[0] == '-' && (a[1] == '-' || std::isalpha(static_cast<unsigned char>(a[1])));
    if (option) {
      size_t eq = a.find('=');
      if (eq != std::string::npos && a.rfind("--", 0) == 0) {
        out.push_back(a.substr(0, eq + 1) + redact(a.substr(0, eq), a.substr(eq + 1)));
        pending.clear();
      } else {
        out.push_back(redact_text(a));
        pending = a;
      }
    } else {
      out.push_back(i == 0 ? a : pending.empty() ? redact_text(a) : redact(pending, a));
      pending.clear();
    }
  }
  return out;
}

std::string redact_command_line(const std::vector<std::string>& args) {
  std::string out;
  for (const std::string& a : redact_args(args)) out += (out.empty() ? "" : " ") + shell_quote(a);
  return out;
}

}  // namespace mw
