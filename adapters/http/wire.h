// HTTP/1.1 on the wire for the native engine (engine.h): the target of a URL, requests encoded
// once, and answers framed by Debian's libhttp-parser (the parser wrk uses) with mwbench's
// caps. No sockets here: the parser is fed bytes, so tests and adapters/http/fuzz_http_wire.cpp drive
// it directly.
#pragma once
#include <http_parser.h>
#include <sys/socket.h>

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace mw::http {

// Where an http:// or https:// URL points. Throws SetupError naming the URL (without
// credentials) when it cannot be parsed.
struct Target {
  std::string url;  // as given (show it through redact_url)
  bool https = false;
  std::string host;  // without IPv6 brackets
  int port = 80;
  std::string host_header;  // the Host header's value
  std::string path;         // "/..." with the query, never empty
  std::string userinfo;     // "user:password" from the URL, percent-decoded; "" when none
  sockaddr_storage addr{};  // filled by resolve()
  socklen_t addr_len = 0;
};
Target parse_target(const std::string& url);
// Looks the host up once (set-up); throws SetupError when it cannot be resolved.
void resolve(Target& t);
// The path and query of a URL ("/" when it has none): what a request line carries.
std::string_view path_of(std::string_view url);
std::string base64(std::string_view s);

// The header lines every request of a client carries, encoded once: Host (unless given in
// `headers`), Authorization: Basic for `userpwd` ("user:password"), Connection: close when not
// keep-alive, then `headers` ("Name: value" each). Throws SetupError on a line that is not
// "Name: value" or holds a line break.
std::string header_block(const Target& t, const std::vector<std::string>& headers, const std::string& userpwd,
                         bool keepalive);
// Appends one request: request line, `block`, Content-Length when there is a body (or the
// method sends one), the body.
void encode_request(std::string& out, std::string_view method, std::string_view path, const std::string& block,
                    std::string_view body);

// One complete answer.
struct Answer {
  int status = 0;
  int64_t body_len = 0;
  bool keep_alive = true;  // false: the server ends the connection after this answer
};

// Frames answers out of a byte stream, one connection's worth. Bodies past `max_body` and
// header blocks past `max_header` are errors at the first byte over the cap (nothing past it
// is buffered); so are a bad status line, a bad or doubled Content-Length, bad chunking.
// Informational answers (1xx but 101) are skipped.
class ResponseParser {
 public:
  class Sink {
   public:
    virtual ~Sink() = default;
    virtual void on_first_byte() = 0;                                // an answer begins
    virtual void on_answer(const Answer& a, std::string& body) = 0;  // body empty unless keep_body
  };
  ResponseParser(int64_t max_body, int64_t max_header, bool keep_body, Sink* sink);
  void reset();                               // a new connection
  void set_head(bool head) { head_ = head; }  // answers to HEAD carry no body
  // False on a framing error or a cap; error() says which in words, and the stream is dead
  // until reset(). Answers completed before the error were delivered.
  bool feed(const char* p, size_t n);
  // The connection ended: an answer that runs to the end of the stream completes; one cut
  // short is an error.
  bool finish();
  bool in_answer() const { return in_answer_; }  // some bytes of an answer, not all
  bool closing() const { return closing_; }      // the last answer ended the connection
  const std::string& error() const { return error_; }
  // On by default; off, every byte goes through http_parser (the differential tests and the
  // fuzz target compare the two).
  void set_fast_path(bool on) { fast_ = on; }
  uint64_t fast_answers() const { return fast_answers_; }  // answers the fast path framed

 private:
  // A whole plain answer at the start of [p, p + n), framed without http_parser: "HTTP/1.1",
  // a status 200-599 but 204 and 304, CRLF lines of token names and printable values, one
  // Content-Length, no Transfer-Encoding, Upgrade or Proxy-Connection, Connection absent or
  // keep-alive, under both caps, the whole body present. Returns the bytes it took, or 0: then
  // http_parser frames it (and says what is wrong, if anything), as it would have anyway.
  size_t fast_answer(const char* p, size_t n);
  static int begin(http_parser* p);
  static int header_data(http_parser* p, const char*, size_t n);
  static int headers_done(http_parser* p);
  static int body(http_parser* p, const char* at, size_t n);
  static int done(http_parser* p);
  bool fail_from_parser();

  http_parser parser_{};
  http_parser_settings settings_{};
  int64_t max_body_, max_header_;
  bool keep_body_, head_ = false, fast_ = true;
  Sink* sink_;
  std::string body_, error_;
  Answer cur_;
  uint64_t fast_answers_ = 0;
  int64_t header_seen_ = 0;  // status line and header bytes of the current answer
  bool in_answer_ = false, closing_ = false, dead_ = false;
  enum class Cap { None, Body, Header } cap_ = Cap::None;
};

}  // namespace mw::http
