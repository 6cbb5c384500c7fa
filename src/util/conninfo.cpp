#include "util/conninfo.h"

#include <algorithm>
#include <iterator>

namespace mw {

namespace {

bool space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'; }

// libpq's keywords (PostgreSQL 12 to 18): a pair of another name is refused by libpq, and its
// "keyword" may be the tail of the value before it ("password=abc def=x").
bool known_keyword(std::string_view k) {
  static constexpr std::string_view kKeywords[] = {"application_name",
                                                   "channel_binding",
                                                   "client_encoding",
                                                   "connect_timeout",
                                                   "dbname",
                                                   "fallback_application_name",
                                                   "gssdelegation",
                                                   "gssencmode",
                                                   "gsslib",
                                                   "host",
                                                   "hostaddr",
                                                   "keepalives",
                                                   "keepalives_count",
                                                   "keepalives_idle",
                                                   "keepalives_interval",
                                                   "krbsrvname",
                                                   "load_balance_hosts",
                                                   "max_protocol_version",
                                                   "min_protocol_version",
                                                   "oauth_ca_file",
                                                   "oauth_client_id",
                                                   "oauth_client_secret",
                                                   "oauth_issuer",
                                                   "oauth_scope",
                                                   "options",
                                                   "passfile",
                                                   "password",
                                                   "port",
                                                   "replication",
                                                   "require_auth",
                                                   "requirepeer",
                                                   "requiressl",
                                                   "scram_client_key",
                                                   "scram_server_key",
                                                   "service",
                                                   "ssl_max_protocol_version",
                                                   "ssl_min_protocol_version",
                                                   "sslcert",
                                                   "sslcertmode",
                                                   "sslcompression",
                                                   "sslcrl",
                                                   "sslcrldir",
                                                   "sslkey",
                                                   "sslkeylogfile",
                                                   "sslmode",
                                                   "sslnegotiation",
                                                   "sslpassword",
                                                   "sslrootcert",
                                                   "sslsni",
                                                   "target_session_attrs",
                                                   "tcp_user_timeout",
                                                   "user"};
  return std::find(std::begin(kKeywords), std::end(kKeywords), k) != std::end(kKeywords);
}

}  // namespace

bool is_conninfo_uri(std::string_view s) {
  size_t i = 0;
  while (i < s.size() && space(s[i])) ++i;
  s.remove_prefix(i);
  return s.rfind("postgresql://", 0) == 0 || s.rfind("postgres://", 0) == 0;
}

Conninfo parse_conninfo(std::string_view s) {
  Conninfo out;
  size_t i = 0;
  auto skip_space = [&] {
    while (i < s.size() && space(s[i])) ++i;
  };
  for (;;) {
    skip_space();
    if (i >= s.size()) return out;
    const size_t key_at = i;
    while (i < s.size() && s[i] != '=' && !space(s[i])) ++i;
    ConninfoPair p;
    p.key = std::string(s.substr(key_at, i - key_at));
    skip_space();
    if (i >= s.size() || s[i] != '=') {
      out.error = "missing \"=\" after a word";
      out.error_at = key_at;
      return out;
    }
    ++i;
    skip_space();
    p.value_begin = i;
    if (i < s.size() && s[i] == '\'') {
      bool closed = false;
      for (++i; i < s.size(); ++i) {
        if (s[i] == '\\' && i + 1 < s.size()) {
          p.value += s[++i];
        } else if (s[i] == '\'') {
          closed = true;
          ++i;
          break;
        } else {
          p.value += s[i];
        }
      }
      p.value_end = i;
      if (!closed) {
        out.pairs.push_back(std::move(p));
        out.error = "unterminated quoted string";
        out.error_at = out.pairs.back().value_begin;
        return out;
      }
    } else {
      for (; i < s.size() && !space(s[i]); ++i) {
        if (s[i] == '\\' && ++i == s.size()) break;  // a backslash escapes the next byte, whitespace too
        p.value += s[i];
      }
      p.value_end = i;
    }
    const bool known = known_keyword(p.key);
    out.pairs.push_back(std::move(p));
    if (!known) {
      out.error = "unknown keyword";
      out.error_at = key_at;
      return out;
    }
  }
}

std::string conninfo_uri(const std::vector<ConninfoPair>& pairs) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  auto encoded = [](const std::string& v) {
    std::string e;
    for (char c : v) {
      const auto u = static_cast<unsigned char>(c);
      if ((u >= 'a' && u <= 'z') || (u >= 'A' && u <= 'Z') || (u >= '0' && u <= '9') || c == '-' || c == '_' ||
          c == '.' || c == '~')
        e += c;
      else
        e += '%', e += kHex[u >> 4], e += kHex[u & 15];
    }
    return e;
  };
  std::string uri = "postgresql://";
  for (size_t k = 0; k < pairs.size(); ++k)
    uri += (k ? "&" : "?") + encoded(pairs[k].key) + "=" + encoded(pairs[k].value);
  return uri;
}

}  // namespace mw
