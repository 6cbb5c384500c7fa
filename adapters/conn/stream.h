// One connection to a server of a text or binary protocol (redis, memcached): a non-blocking
// TCP socket, optionally TLS (OpenSSL), with non-blocking reads and writes for the event loop
// and blocking set-up calls bounded by a deadline (connect, handshake, a request and its reply,
// a pipelined preload). The protocol's connection (redis/conn.h, memcached/conn.h) derives from
// it and adds its requests; a protocol parser is handed the buffered input by read_parsed().
#pragma once
#include <openssl/ssl.h>

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>

#include "adapters/conn/bytes.h"

namespace mw::conn {

int64_t now_ns();

// The TLS settings of a job (--tls, --cacert, --cert, --key); one SSL_CTX shared by every
// connection of the job. Throws SetupError "<who>: --cacert FILE: ..." on a bad file.
class TlsContext {
 public:
  TlsContext(const std::string& who, const std::string& cacert, const std::string& cert, const std::string& key);
  SSL_CTX* get() const { return ctx_.get(); }
  std::string cacert;     // for messages
  bool has_cert = false;  // a client certificate was given

  // --tls-resume: every new connection offers the session the job's connections got last (a
  // TLS 1.3 ticket, a TLS 1.2 ticket or session ID), as a client with a session cache does, so the
  // server may resume it instead of a full handshake. Off: each connection's handshake is full.
  // Call before the first connection.
  void resume_sessions();
  bool resumes() const { return resume_; }
  // The session to offer on `s` (none before the first one arrived, or without resume_sessions).
  void offer_session(SSL* s);

 private:
  static int on_new_session(SSL* s, SSL_SESSION* sess);  // OpenSSL's callback: keeps the newest
  struct Free {
    void operator()(SSL_CTX* c) const { SSL_CTX_free(c); }
  };
  struct SessionFree {
    void operator()(SSL_SESSION* s) const { SSL_SESSION_free(s); }
  };
  std::unique_ptr<SSL_CTX, Free> ctx_;
  bool resume_ = false;
  std::mutex mu_;  // the job's clients connect on their own threads
  std::unique_ptr<SSL_SESSION, SessionFree> last_;
};

// Where and how to connect; shared by the adapter, its clients and the probes.
struct Address {
  std::string host;
  int port = 0;
  std::shared_ptr<TlsContext> tls;  // null: plain TCP
  std::string sni;                  // name sent and verified; default: host
  double timeout_s = 5;
  // --reconnect-backoff: a client whose connection is lost reconnects, waiting 10 ms before the
  // first try and twice as long after each failed one, up to this (seconds). 0: it stops.
  double reconnect_max_s = 0;
  std::string where() const { return host + ":" + std::to_string(port); }
};

// What a protocol parser made of the buffered input.
enum class Parsed { More, Done, Bad };

class Stream {
 public:
  // Connects (TCP, and the TLS handshake with certificate and host name check when `a.tls`),
  // within the deadline. Throws SetupError "<who> host:port: ..." naming what failed.
  Stream(std::string who, const Address& a, int64_t deadline_ns);
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;
  ~Stream();

  int fd() const { return fd_; }
  // Non-blocking: bytes moved (> 0), 0 when the call would block, -1 on end of stream or error
  // (error() says which). With TLS a read may need the socket writable and a write readable:
  // tls_read_wants_write() / tls_write_wants_read() say so.
  long read_some(char* buf, size_t n);
  long write_some(const char* buf, size_t n);
  bool tls_read_wants_write() const { return read_wants_write_; }
  bool tls_write_wants_read() const { return write_wants_read_; }
  const std::string& error() const { return err_; }
  std::string tls_version() const;
  // The TLS handshake resumed an earlier session (--tls-resume) rather than making a new one.
  bool tls_resumed() const { return resumed_; }

 protected:
  [[noreturn]] void fail(const std::string& what) const;  // SetupError "<who> host:port: what"
  void write_all(const std::string& data, int64_t deadline_ns, const std::string& what);
  // Sends a pipelined payload; the deadline moves with progress (each chunk within the timeout).
  void send_paced(const std::string& payload);
  // Blocking, bounded by the deadline: drops what the last parse used, then offers the buffered
  // input to `parse(input, used, err)` and reads more until it is Done (`used` bytes make the
  // reply; its views stay valid until the next read) or Bad (fails with err). Input well past
  // `max_reply` that still parses as More is refused (the parser's own caps come first).
  template <class Parse>
  void read_parsed(int64_t deadline_ns, const std::string& what, size_t max_reply, Parse&& parse) {
    consume();
    for (;;) {
      std::string err;
      Parsed p = parse(in_.view(), used_, err);
      if (p == Parsed::Done) return;
      if (p == Parsed::Bad) fail(err + " (answer to " + what + ")");
      if (in_.size() > max_reply + kSlack)
        fail("reply larger than --max-reply (" + std::to_string(max_reply) + " bytes) (answer to " + what + ")");
      fill(deadline_ns, what);
    }
  }
  const std::string& who() const { return who_; }
  const Address& address() const { return addr_; }
  // Bytes read past the last parsed reply (a reply that came before it was asked for).
  size_t unparsed() const { return in_.size() - used_; }

 private:
  void wait(short events, int64_t deadline_ns, const std::string& doing);
  void handshake(int64_t deadline_ns);
  void consume();                                           // drops the bytes of the last reply
  void fill(int64_t deadline_ns, const std::string& what);  // reads more into in_

  static constexpr size_t kSlack = 65536 + 64;  // a reply's lines around its data
  struct SslFree {
    void operator()(SSL* s) const { SSL_free(s); }
  };
  std::string who_;
  Address addr_;
  int fd_ = -1;
  std::unique_ptr<SSL, SslFree> ssl_;
  bool read_wants_write_ = false, write_wants_read_ = false;
  bool resumed_ = false;
  // A read or write failed: OpenSSL then allows no close_notify (and the session is spent).
  bool broken_ = false;
  std::string err_;
  InBuffer in_;      // blocking reads: bytes read and not yet parsed
  size_t used_ = 0;  // bytes the last reply took
};

}  // namespace mw::conn
