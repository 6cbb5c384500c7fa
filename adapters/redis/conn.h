// One connection to a Redis server: a non-blocking socket, optionally TLS (OpenSSL), with
// non-blocking reads and writes for the event loop and blocking calls bounded by a deadline
// for set-up (connect, handshake, AUTH, PING, INFO, preload, read-back).
#pragma once
#include <openssl/ssl.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "reply.h"

namespace mw::redis {

// The TLS settings of a job (--tls, --cacert, --cert, --key, --sni); one SSL_CTX shared by
// every connection of the job. Throws SetupError naming the option and file on a bad file.
class TlsContext {
 public:
  TlsContext(const std::string& cacert, const std::string& cert, const std::string& key);
  SSL_CTX* get() const { return ctx_.get(); }
  std::string cacert;     // for messages
  bool has_cert = false;  // a client certificate was given

 private:
  struct Free {
    void operator()(SSL_CTX* c) const { SSL_CTX_free(c); }
  };
  std::unique_ptr<SSL_CTX, Free> ctx_;
};

// Where and how to connect; shared by the adapter, its clients and the probes.
struct Endpoint {
  std::string host;
  int port = 6379;
  std::shared_ptr<TlsContext> tls;  // null: plain TCP
  std::string sni;                  // name sent and verified; default: host
  std::string user, password;       // AUTH [user] password when password is set
  double timeout_s = 5;
  Limits limits;
  std::string where() const { return host + ":" + std::to_string(port); }
};

int64_t now_ns();

class Conn {
 public:
  // Connects (TCP, TLS handshake with certificate and host name check, AUTH, PING), all
  // within the deadline. Throws SetupError "redis host:port: ..." naming what failed.
  Conn(const Endpoint& ep, int64_t deadline_ns);
  Conn(const Conn&) = delete;
  Conn& operator=(const Conn&) = delete;

  int fd() const { return fd_.v; }
  // Non-blocking: bytes moved (> 0), 0 when the call would block, -1 on end of stream or error
  // (error() says which). With TLS a read may need the socket writable and a write readable:
  // tls_read_wants_write() / tls_write_wants_read() say so.
  long read_some(char* buf, size_t n);
  long write_some(const char* buf, size_t n);
  bool tls_read_wants_write() const { return read_wants_write_; }
  bool tls_write_wants_read() const { return write_wants_read_; }
  const std::string& error() const { return err_; }
  std::string tls_version() const;

  // Blocking, bounded by the deadline: one command and its reply (argv as RESP bulks). An
  // error reply is returned as a Reply of type '-'. Throws SetupError on time-out, lost
  // connection, protocol error or a reply over the limit.
  Reply command(const std::vector<std::string>& argv, int64_t deadline_ns);
  // Pipelined: sends `payload` (several commands), then reads `count` replies; `each` gets
  // every reply; each reply must arrive within timeout_s of the previous one.
  void pipeline(const std::string& payload, size_t count, const std::function<void(const Reply&)>& each);

  const Endpoint& endpoint() const { return ep_; }

 private:
  void fail(const std::string& what) const;
  void wait(short events, int64_t deadline_ns, const std::string& doing);
  void write_all(const std::string& data, int64_t deadline_ns, const std::string& what);
  Reply read_reply(int64_t deadline_ns, const std::string& what);
  void handshake(int64_t deadline_ns);
  void greet(int64_t deadline_ns);  // AUTH and PING

  struct SslFree {
    void operator()(SSL* s) const { SSL_free(s); }
  };
  struct Fd {  // closed with the Conn, also when its constructor throws
    int v = -1;
    ~Fd();
  };
  Endpoint ep_;
  Fd fd_;
  std::unique_ptr<SSL, SslFree> ssl_;
  bool read_wants_write_ = false, write_wants_read_ = false;
  std::string err_;
  std::string in_;   // blocking reads: bytes read, parsed from off_
  size_t off_ = 0;
  size_t used_ = 0;  // bytes the last reply took (its views stay valid until the next read)
};

// Appends one RESP command (an array of bulks).
void append_command(std::string& out, const std::vector<std::string>& argv);

}  // namespace mw::redis
