// libpq connection strings read by libpq's own grammar (PostgreSQL's "Connection Strings"):
// `keyword = value` pairs separated by whitespace; a value is single-quoted (backslash escapes
// a quote or a backslash) or runs to the next whitespace (a backslash escapes the next byte,
// a space too). Redaction (redact.h) masks a secret value by where this grammar ends it, and
// gearman hands a conninfo to gearmand as a URI (conninfo_uri) in a file of its own.
#pragma once
#include <string>
#include <string_view>
#include <vector>

namespace mw {

struct ConninfoPair {
  std::string key, value;  // value unescaped, as libpq reads it
  size_t value_begin = 0;  // the value's raw text in the string: [value_begin, value_end),
  size_t value_end = 0;    //   quotes included
};

struct Conninfo {
  std::vector<ConninfoPair> pairs;  // those read before `error`
  // What libpq would refuse, "" when nothing: a word without '=' ("abc def": where does the
  // value end?), an unterminated quote, a keyword libpq does not know. error_at is where.
  std::string error;
  size_t error_at = std::string::npos;
};

// A "postgresql://" or "postgres://" URI rather than keyword = value pairs.
bool is_conninfo_uri(std::string_view s);
// The pairs of a keyword = value conninfo (not a URI).
Conninfo parse_conninfo(std::string_view s);
// The same pairs as one URI without whitespace ("postgresql://?host=h&password=a%20b"), for a
// consumer that splits its input at whitespace (gearmand's --config-file).
std::string conninfo_uri(const std::vector<ConninfoPair>& pairs);

}  // namespace mw
