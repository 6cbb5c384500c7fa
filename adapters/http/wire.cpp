#include "adapters/http/wire.h"

#include <netdb.h>

#include <cstring>
#include <mutex>

#include "adapters/http/client.h"
#include "util/redact.h"

namespace mw::http {
namespace {

int hex(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

std::string percent_decode(std::string_view s) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '%' && i + 2 < s.size() && hex(s[i + 1]) >= 0 && hex(s[i + 2]) >= 0) {
      out += static_cast<char>(hex(s[i + 1]) * 16 + hex(s[i + 2]));
      i += 2;
    } else {
      out += s[i];
    }
  }
  return out;
}

bool iequals_prefix(std::string_view line, std::string_view name) {
  if (line.size() < name.size()) return false;
  for (size_t i = 0; i < name.size(); ++i)
    if (std::tolower(static_cast<unsigned char>(line[i])) != name[i]) return false;
  return true;
}

// Header blocks may exceed the library's compiled-in 80k: mwbench's own cap (max_header) is
// checked in the callbacks (never above kMaxHeaderBytes), the library's is set just above it.
void allow_large_headers() {
  static std::once_flag once;
  std::call_once(once, [] { http_parser_set_max_header_size(static_cast<uint32_t>(kMaxHeaderBytes + 65536)); });
}

}  // namespace

Target parse_target(const std::string& url) {
  auto bad = [&](const std::string& why) {
    return SetupError("http: --url " + redact_url(url) + ": " + why + " (expected http://host[:port]/path)");
  };
  // Without a scheme, http:// (as libcurl and ab take "127.0.0.1:8080/").
  const std::string full = url.find("://") == std::string::npos ? "http://" + url : url;
  http_parser_url u;
  http_parser_url_init(&u);
  if (full.size() > 65535 || http_parser_parse_url(full.data(), full.size(), 0, &u) != 0) throw bad("not a URL");
  auto field = [&](int f) {
    return (u.field_set & (1 << f)) ? std::string_view(full).substr(u.field_data[f].off, u.field_data[f].len)
                                    : std::string_view();
  };
  Target t;
  t.url = url;
  std::string scheme(field(UF_SCHEMA));
  for (auto& c : scheme) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (scheme != "http" && scheme != "https")
    throw bad(scheme.empty() ? "no scheme" : "scheme " + scheme + " is not http");
  t.https = scheme == "https";
  t.host = field(UF_HOST);
  if (t.host.empty()) throw bad("no host");
  t.port = (u.field_set & (1 << UF_PORT)) ? u.port : t.https ? 443 : 80;
  if (t.port == 0) throw bad("port 0");
  bool v6 = t.host.find(':') != std::string::npos;
  t.host_header = v6 ? "[" + t.host + "]" : t.host;
  if (u.field_set & (1 << UF_PORT)) t.host_header += ":" + std::to_string(t.port);
  t.path = std::string(path_of(full));
  t.userinfo = percent_decode(field(UF_USERINFO));
  return t;
}

void resolve(Target& t) {
  addrinfo hints{}, *res = nullptr;
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  int rc = getaddrinfo(t.host.c_str(), std::to_string(t.port).c_str(), &hints, &res);
  if (rc != 0 || !res)
    throw SetupError("http " + redact_url(t.url) + ": cannot resolve host " + t.host + ": " + gai_strerror(rc));
  std::memcpy(&t.addr, res->ai_addr, res->ai_addrlen);
  t.addr_len = res->ai_addrlen;
  freeaddrinfo(res);
}

std::string_view path_of(std::string_view url) {
  size_t scheme = url.find("://");
  size_t from = scheme == std::string_view::npos ? 0 : scheme + 3;
  size_t slash = url.find('/', from), query = url.find('?', from);
  size_t start = std::min(slash, query);
  if (start == std::string_view::npos) return "/";
  std::string_view p = url.substr(start);
  p = p.substr(0, p.find('#'));
  if (p.empty() || p[0] == '?') return slash == std::string_view::npos && !p.empty() ? p : std::string_view("/");
  return p;
}

std::string base64(std::string_view s) {
  static const char* abc = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  size_t i = 0;
  for (; i + 2 < s.size(); i += 3) {
    uint32_t v = (uint32_t(uint8_t(s[i])) << 16) | (uint32_t(uint8_t(s[i + 1])) << 8) | uint8_t(s[i + 2]);
    for (int k = 18; k >= 0; k -= 6) out += abc[(v >> k) & 63];
  }
  if (i + 1 == s.size()) {
    uint32_t v = uint32_t(uint8_t(s[i])) << 16;
    out += abc[(v >> 18) & 63];
    out += abc[(v >> 12) & 63];
    out += "==";
  } else if (i + 2 == s.size()) {
    uint32_t v = (uint32_t(uint8_t(s[i])) << 16) | (uint32_t(uint8_t(s[i + 1])) << 8);
    out += abc[(v >> 18) & 63];
    out += abc[(v >> 12) & 63];
    out += abc[(v >> 6) & 63];
    out += '=';
  }
  return out;
}

std::string header_block(const Target& t, const std::vector<std::string>& headers, const std::string& userpwd,
                         bool keepalive) {
  bool own_host = false;
  std::string extra;
  for (std::string line : headers) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    size_t colon = line.find(':');
    if (colon == 0 || colon == std::string::npos || line.find_first_of("\r\n") != std::string::npos ||
        line.find_first_of(" \t") < colon)
      throw SetupError("http: --header expects 'Name: value', got '" + printable(redact_text(line), 60) + "'");
    own_host |= iequals_prefix(line, "host:");
    extra += line + "\r\n";
  }
  std::string block = own_host ? "" : "Host: " + t.host_header + "\r\n";
  const std::string& cred = userpwd.empty() ? t.userinfo : userpwd;
  if (!cred.empty()) block += "Authorization: Basic " + base64(cred) + "\r\n";
  if (!keepalive) block += "Connection: close\r\n";
  return block + extra;
}

void encode_request(std::string& out, std::string_view method, std::string_view path, const std::string& block,
                    std::string_view body) {
  out.append(method);
  out += ' ';
  out.append(path);
  out.append(" HTTP/1.1\r\n");
  out.append(block);
  if (!body.empty() || method == "POST" || method == "PUT") {
    char len[32];
    int n = std::snprintf(len, sizeof len, "Content-Length: %zu\r\n", body.size());
    out.append(len, static_cast<size_t>(n));
  }
  out.append("\r\n");
  out.append(body);
}

ResponseParser::ResponseParser(int64_t max_body, int64_t max_header, bool keep_body, Sink* sink)
    : max_body_(max_body), max_header_(max_header), keep_body_(keep_body), sink_(sink) {
  allow_large_headers();
  http_parser_settings_init(&settings_);
  settings_.on_message_begin = &ResponseParser::begin;
  settings_.on_status = &ResponseParser::header_data;
  settings_.on_header_field = &ResponseParser::header_data;
  settings_.on_header_value = &ResponseParser::header_data;
  settings_.on_headers_complete = &ResponseParser::headers_done;
  settings_.on_body = &ResponseParser::body;
  settings_.on_message_complete = &ResponseParser::done;
  reset();
}

void ResponseParser::reset() {
  http_parser_init(&parser_, HTTP_RESPONSE);
  parser_.data = this;
  body_.clear();
  error_.clear();
  in_answer_ = closing_ = dead_ = false;
  cap_ = Cap::None;
}

int ResponseParser::begin(http_parser* p) {
  auto* self = static_cast<ResponseParser*>(p->data);
  self->in_answer_ = true;
  self->cur_ = {};
  self->header_seen_ = 0;
  self->body_.clear();
  self->sink_->on_first_byte();
  return 0;
}

int ResponseParser::header_data(http_parser* p, const char*, size_t n) {
  auto* self = static_cast<ResponseParser*>(p->data);
  self->header_seen_ += static_cast<int64_t>(n);  // the text of the status, names and values
  if (self->header_seen_ <= self->max_header_) return 0;
  self->cap_ = Cap::Header;
  return 1;
}

int ResponseParser::headers_done(http_parser* p) {
  auto* self = static_cast<ResponseParser*>(p->data);
  if ((p->flags & F_CONTENTLENGTH) && !(p->flags & F_CHUNKED) && p->content_length != ULLONG_MAX &&
      p->content_length > static_cast<uint64_t>(self->max_body_)) {
    self->cap_ = Cap::Body;
    return -1;  // anything but 0, 1 and 2 is an error
  }
  return self->head_ ? 1 : 0;
}

int ResponseParser::body(http_parser* p, const char* at, size_t n) {
  auto* self = static_cast<ResponseParser*>(p->data);
  if (static_cast<uint64_t>(self->cur_.body_len) + n > static_cast<uint64_t>(self->max_body_)) {
    self->cap_ = Cap::Body;
    return 1;
  }
  self->cur_.body_len += static_cast<int64_t>(n);
  if (self->keep_body_) self->body_.append(at, n);
  return 0;
}

int ResponseParser::done(http_parser* p) {
  auto* self = static_cast<ResponseParser*>(p->data);
  self->in_answer_ = false;
  int status = static_cast<int>(p->status_code);
  if (status >= 100 && status < 200 && status != 101) return 0;  // informational: the answer follows
  self->cur_.status = status;
  self->cur_.keep_alive = http_should_keep_alive(p) != 0;
  if (!self->cur_.keep_alive) self->closing_ = true;
  self->sink_->on_answer(self->cur_, self->body_);
  self->body_.clear();
  // After an answer that ends the connection, anything more is not an answer: stop here. With
  // the fast path, stop after every answer: feed() tries the fast path on what follows.
  if (self->closing_ || (self->fast_ && !self->head_)) http_parser_pause(p, 1);
  return 0;
}

bool ResponseParser::fail_from_parser() {
  dead_ = true;
  if (cap_ == Cap::Body)
    error_ = "body larger than --max-body " + size_text(max_body_);
  else if (cap_ == Cap::Header)
    error_ = "headers larger than " + size_text(max_header_);
  else
    error_ = std::string("malformed answer: ") + http_errno_description(HTTP_PARSER_ERRNO(&parser_));
  return false;
}

namespace {
// Byte classes of an answer's head: 0 ordinary (printable, tab), 1 CR, 2 anything else (LF,
// other controls, DEL, bytes past ASCII: all sent to http_parser); 4 is added for a token
// character (RFC 9110 tchar) of a header name.
struct ByteClasses {
  uint8_t c[256] = {};
  ByteClasses() {
    for (int b = 0; b < 256; ++b) c[b] = (b >= 0x20 && b < 0x7f) || b == '\t' ? 0 : 2;
    c[static_cast<unsigned char>('\r')] = 1;
    for (int b = '0'; b <= '9'; ++b) c[b] |= 4;
    for (int b = 'a'; b <= 'z'; ++b) c[b] |= 4, c[b - 'a' + 'A'] |= 4;
    for (char b : std::string_view("!#$%&'*+-.^_`|~")) c[static_cast<unsigned char>(b)] |= 4;
  }
};
const ByteClasses kBytes;

inline bool iequals(const char* a, std::string_view lower) {  // a holds lower.size() bytes
  for (size_t i = 0; i < lower.size(); ++i)
    if ((a[i] | 0x20) != lower[i]) return false;  // lower: lower-case letters and '-'
  return true;
}
}  // namespace

size_t ResponseParser::fast_answer(const char* p, size_t n) {
  const uint8_t* cls = kBytes.c;
  auto at = [p](size_t i) { return static_cast<unsigned char>(p[i]); };
  if (n < 16 || std::memcmp(p, "HTTP/1.1 ", 9) != 0) return 0;
  if (p[9] < '2' || p[9] > '5' || p[10] < '0' || p[10] > '9' || p[11] < '0' || p[11] > '9' || p[12] != ' ') return 0;
  const int status = (p[9] - '0') * 100 + (p[10] - '0') * 10 + (p[11] - '0');
  if (status == 204 || status == 304) return 0;
  const size_t cap = static_cast<size_t>(std::min<int64_t>(max_header_, static_cast<int64_t>(n)));
  size_t i = 13;
  while (i < cap && (cls[at(i)] & 3) == 0) ++i;  // the reason phrase
  int64_t length = -1;
  for (;;) {  // at the CR ending a line
    if (i + 3 >= n || p[i] != '\r' || p[i + 1] != '\n') return 0;
    const size_t name = i + 2;
    if (p[name] == '\r') {  // the empty line: the head ends
      if (p[name + 1] != '\n') return 0;
      i = name + 2;
      break;
    }
    size_t j = name;
    while (j < cap && (cls[at(j)] & 4)) ++j;
    if (j == name || j >= cap || p[j] != ':') return 0;
    size_t v = j + 1;
    while (v < cap && (p[v] == ' ' || p[v] == '\t')) ++v;  // leading whitespace; a trailing one goes to http_parser
    size_t e = v;
    while (e < cap && (cls[at(e)] & 3) == 0) ++e;
    if (e >= cap) return 0;  // past the header cap, or not all here
    const char* value = p + v;
    const size_t vlen = e - v;
    // http_parser takes every name that begins with transfer-encoding ("Transfer-Encodings") for
    // one: such an answer is its to frame (or refuse, beside a Content-Length).
    if (j - name >= 17 && iequals(p + name, "transfer-encoding")) return 0;
    switch (j - name) {
      case 14:  // content-length: digits only, once
        if (!iequals(p + name, "content-length")) break;
        if (length >= 0 || vlen == 0 || vlen > 18) return 0;
        length = 0;
        for (size_t k = 0; k < vlen; ++k) {
          if (value[k] < '0' || value[k] > '9') return 0;
          length = length * 10 + (value[k] - '0');
        }
        break;
      case 10:  // connection: keep-alive only
        if (iequals(p + name, "connection") && (vlen != 10 || !iequals(value, "keep-alive"))) return 0;
        break;
      case 7:
        if (iequals(p + name, "upgrade")) return 0;
        break;
      case 16:
        if (iequals(p + name, "proxy-connection")) return 0;
        break;
      default: break;
    }
    i = e;
  }
  if (length < 0 || length > max_body_ || static_cast<uint64_t>(length) > n - i) return 0;
  ++fast_answers_;
  sink_->on_first_byte();
  cur_ = {status, length, true};
  body_.clear();
  if (keep_body_) body_.assign(p + i, static_cast<size_t>(length));
  sink_->on_answer(cur_, body_);
  body_.clear();
  return i + static_cast<size_t>(length);
}

bool ResponseParser::feed(const char* p, size_t n) {
  if (dead_ || closing_) return !dead_;
  for (;;) {
    if (fast_ && !head_)
      while (n > 0 && !in_answer_) {  // http_parser stands between answers: it has nothing to lose
        const size_t used = fast_answer(p, n);
        if (used == 0) break;
        p += used;
        n -= used;
      }
    if (n == 0) return true;
    const size_t used = http_parser_execute(&parser_, &settings_, p, n);
    if (closing_) return true;  // paused at the closing answer: the rest is not read
    if (HTTP_PARSER_ERRNO(&parser_) != HPE_PAUSED || !fast_) {
      n -= used;  // what is left over is an error below
      break;
    }
    http_parser_pause(&parser_, 0);  // paused after an answer (done): go on after it
    p += used;
    n -= used;
  }
  http_errno e = HTTP_PARSER_ERRNO(&parser_);
  if (e != HPE_OK || n != 0 || parser_.upgrade) {
    if (e == HPE_OK && parser_.upgrade) {
      dead_ = true;
      error_ = "the server switched protocols (HTTP " + std::to_string(parser_.status_code) + ")";
      return false;
    }
    return fail_from_parser();
  }
  return true;
}

bool ResponseParser::finish() {
  if (dead_ || closing_) return !dead_;
  if (!in_answer_) return true;
  http_parser_execute(&parser_, &settings_, nullptr, 0);
  if (closing_) return true;  // the answer ran to the end of the stream
  if (HTTP_PARSER_ERRNO(&parser_) == HPE_PAUSED) http_parser_pause(&parser_, 0);  // after an answer (done)
  if (HTTP_PARSER_ERRNO(&parser_) != HPE_OK) {
    fail_from_parser();
    error_ = "connection closed by the server mid-answer (" + error_ + ")";
    return false;
  }
  if (in_answer_) {
    dead_ = true;
    error_ = "connection closed by the server mid-answer";
    return false;
  }
  return true;
}

}  // namespace mw::http
