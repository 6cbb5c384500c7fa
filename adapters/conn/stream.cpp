#include "adapters/conn/stream.h"

#include <arpa/inet.h>
#include <openssl/err.h>
#include <openssl/x509v3.h>
#include <poll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>

#include "api/stop.h"
#include "api/wait.h"
#include "util/net.h"
#include "util/status.h"
#include "util/text.h"

namespace mw::conn {
namespace {

// What is at `path` when it is there and is not a regular file (a FIFO would block the load).
std::string not_regular(const std::string& path) {
  struct stat st {};
  if (stat(path.c_str(), &st) != 0 || S_ISREG(st.st_mode)) return "";
  return S_ISFIFO(st.st_mode) ? "a FIFO" : S_ISDIR(st.st_mode) ? "a directory" : "not a regular file";
}

// OpenSSL's passphrase callback: none is ever asked for (its default reads the terminal).
int no_passphrase(char*, int, int, void* asked) {
  if (asked) *static_cast<bool*>(asked) = true;
  return -1;
}

std::string openssl_errors() {
  std::string s;
  while (unsigned long e = ERR_get_error()) {
    char buf[256];
    ERR_error_string_n(e, buf, sizeof buf);
    const char* reason = ERR_reason_error_string(e);
    if (!s.empty()) s += "; ";
    s += reason ? reason : buf;
  }
  return s;
}

}  // namespace

int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

TlsContext::TlsContext(const std::string& who, const std::string& ca, const std::string& cert, const std::string& key)
    : cacert(ca) {
  auto bad = [&](const std::string& opt, const std::string& file) {
    std::string why = access(file.c_str(), R_OK) != 0 ? std::strerror(errno) : openssl_errors();
    ERR_clear_error();
    return SetupError(who + ": " + opt + " " + file + ": cannot load: " + (why.empty() ? "not a PEM file" : why));
  };
  if (cert.empty() != key.empty())
    throw SetupError(who + ": --cert and --key go together (a client certificate and its private key)");
  for (auto [opt, file] : {std::pair{"--cacert", &ca}, {"--cert", &cert}, {"--key", &key}})
    if (std::string what = file->empty() ? "" : not_regular(*file); !what.empty())
      throw SetupError(who + ": " + opt + " " + *file + ": is " + what + ", not a PEM file");
  ctx_.reset(SSL_CTX_new(TLS_client_method()));
  if (!ctx_) throw SetupError(who + ": TLS: cannot create a context: " + openssl_errors());
  SSL_CTX_set_min_proto_version(ctx_.get(), TLS1_2_VERSION);
  bool asked = false;  // an encrypted key or certificate fails instead of prompting on the terminal
  SSL_CTX_set_default_passwd_cb(ctx_.get(), no_passphrase);
  SSL_CTX_set_default_passwd_cb_userdata(ctx_.get(), &asked);
  SSL_CTX_set_verify(ctx_.get(), SSL_VERIFY_PEER, nullptr);
  if (!ca.empty()) {
    if (SSL_CTX_load_verify_locations(ctx_.get(), ca.c_str(), nullptr) != 1) throw bad("--cacert", ca);
  } else {
    SSL_CTX_set_default_verify_paths(ctx_.get());
  }
  if (!cert.empty()) {
    if (SSL_CTX_use_certificate_chain_file(ctx_.get(), cert.c_str()) != 1) throw bad("--cert", cert);
    bool loaded = SSL_CTX_use_PrivateKey_file(ctx_.get(), key.c_str(), SSL_FILETYPE_PEM) == 1;
    if (!loaded && asked) {
      ERR_clear_error();
      throw SetupError(who + ": --key " + key +
                       " is encrypted: mwbench never asks for a passphrase; give it a key "
                       "without one (openssl pkey -in " +
                       key + " -out plain.key)");
    }
    if (!loaded && ERR_GET_REASON(ERR_peek_last_error()) != X509_R_KEY_VALUES_MISMATCH) throw bad("--key", key);
    if (!loaded || SSL_CTX_check_private_key(ctx_.get()) != 1) {
      ERR_clear_error();
      throw SetupError(who + ": --key " + key + " is not the private key of --cert " + cert);
    }
    has_cert = true;
  }
  SSL_CTX_set_default_passwd_cb_userdata(ctx_.get(), nullptr);  // `asked` ends here
}

void TlsContext::resume_sessions() {
  resume_ = true;
  // OpenSSL keeps no client sessions by itself: the callback gets each new one (a TLS 1.3
  // ticket arrives after the handshake, with the first reply read).
  SSL_CTX_set_app_data(ctx_.get(), this);
  SSL_CTX_set_session_cache_mode(ctx_.get(), SSL_SESS_CACHE_CLIENT | SSL_SESS_CACHE_NO_INTERNAL_STORE);
  SSL_CTX_sess_set_new_cb(ctx_.get(), &TlsContext::on_new_session);
}

int TlsContext::on_new_session(SSL* s, SSL_SESSION* sess) {
  auto* self = static_cast<TlsContext*>(SSL_CTX_get_app_data(SSL_get_SSL_CTX(s)));
  if (!self) return 0;
  // A copy of its own: the connection's session is spent when that connection ends without a
  // close_notify (a timeout, a lost server), and the copy stays resumable.
  SSL_SESSION* copy = SSL_SESSION_dup(sess);
  if (!copy) return 0;
  std::lock_guard lock(self->mu_);
  self->last_.reset(copy);
  return 0;  // OpenSSL keeps (and frees) its own reference
}

void TlsContext::offer_session(SSL* s) {
  if (!resume_) return;
  // Each connection gets a copy: the one it resumes becomes its own session, which its end can
  // spend, and the kept one must stay resumable for the next.
  SSL_SESSION* copy = nullptr;
  {
    std::lock_guard lock(mu_);
    if (last_) copy = SSL_SESSION_dup(last_.get());
  }
  if (!copy) return;
  SSL_set_session(s, copy);  // takes a reference of its own
  SSL_SESSION_free(copy);
}

void Stream::fail(const std::string& what) const { throw SetupError(who_ + " " + addr_.where() + ": " + what); }

Stream::Stream(std::string who, const Address& a, int64_t deadline) : who_(std::move(who)), addr_(a) {
  std::string err;
  double left = std::max(0.001, static_cast<double>(deadline_after_stop(deadline) - now_ns()) / 1e9);
  fd_ = tcp_connect(addr_.host, addr_.port, left, &err, [] { return stop_ends_opening(); });
  if (fd_ < 0) {
    throw_if_stopped_opening(who_ + " " + addr_.where() + ": connecting");
    if (err == std::strerror(EMFILE) || err == std::strerror(ENFILE)) {
      rlimit rl{};
      getrlimit(RLIMIT_NOFILE, &rl);
      err += " (ulimit -n " + std::to_string(rl.rlim_cur) + "; each " + who_ + " client needs one connection)";
    }
    fail("cannot connect: " + err);
  }
  if (addr_.tls) {
    try {
      handshake(deadline);
    } catch (...) {  // the destructor does not run for a constructor that throws
      ssl_.reset();
      close(fd_);
      throw;
    }
  }
}

Stream::~Stream() {
  // A close_notify ends a connection that is still sound, as a client closing its connection
  // does (one try: the socket does not block); a session whose connection ended without one
  // cannot be resumed.
  if (ssl_ && !broken_ && SSL_is_init_finished(ssl_.get())) {
    ERR_clear_error();
    SSL_shutdown(ssl_.get());
  }
  ssl_.reset();
  if (fd_ >= 0) close(fd_);
}

void Stream::handshake(int64_t deadline) {
  ssl_.reset(SSL_new(addr_.tls->get()));
  if (!ssl_) fail("TLS: " + openssl_errors());
  SSL* s = ssl_.get();
  SSL_set_fd(s, fd_);
  SSL_set_mode(s, SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
  const std::string& name = addr_.sni.empty() ? addr_.host : addr_.sni;
  unsigned char bin[16];
  bool ip = inet_pton(AF_INET, name.c_str(), bin) == 1 || inet_pton(AF_INET6, name.c_str(), bin) == 1;
  if (ip) {
    X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(s), name.c_str());
  } else {
    SSL_set_tlsext_host_name(s, name.c_str());
    SSL_set1_host(s, name.c_str());
  }
  addr_.tls->offer_session(s);
  for (;;) {
    ERR_clear_error();
    int r = SSL_connect(s);
    if (r == 1) {
      resumed_ = SSL_session_reused(s) == 1;
      break;
    }
    int e = SSL_get_error(s, r);
    if (e == SSL_ERROR_WANT_READ) {
      wait(POLLIN, deadline, "the TLS handshake (is it a TLS port?)");
    } else if (e == SSL_ERROR_WANT_WRITE) {
      wait(POLLOUT, deadline, "the TLS handshake");
    } else {
      long v = SSL_get_verify_result(s);
      if (v != X509_V_OK)
        fail(std::string("TLS: certificate verify failed: ") + X509_verify_cert_error_string(v) +
             (addr_.tls->cacert.empty() ? " (checked against the system CA store; give --cacert)"
                                        : " (checked against --cacert " + addr_.tls->cacert + ")"));
      std::string why = openssl_errors();
      if (why.empty()) why = e == SSL_ERROR_SYSCALL && errno ? std::strerror(errno) : "connection closed by the server";
      fail("TLS handshake failed: " + why);
    }
  }
}

std::string Stream::tls_version() const { return ssl_ ? SSL_get_version(ssl_.get()) : ""; }

long Stream::read_some(char* buf, size_t n) {
  if (!ssl_) {
    ssize_t r = ::read(fd_, buf, n);
    if (r > 0) return r;
    if (r == 0)
      err_ = "connection closed by the server";
    else if (errno == EAGAIN || errno == EINTR)
      return 0;
    else
      err_ = std::string("connection lost: ") + std::strerror(errno);
    return -1;
  }
  read_wants_write_ = false;
  ERR_clear_error();
  int r = SSL_read(ssl_.get(), buf, static_cast<int>(std::min<size_t>(n, 1 << 30)));
  if (r > 0) return r;
  int e = SSL_get_error(ssl_.get(), r);
  if (e == SSL_ERROR_WANT_READ) return 0;
  if (e == SSL_ERROR_WANT_WRITE) {
    read_wants_write_ = true;
    return 0;
  }
  broken_ = true;
  if (e == SSL_ERROR_ZERO_RETURN) {
    err_ = "connection closed by the server";
  } else {
    std::string why = openssl_errors();
    if (why.empty()) why = e == SSL_ERROR_SYSCALL && errno ? std::strerror(errno) : "closed by the server";
    err_ = "connection lost (TLS): " + why;
  }
  return -1;
}

long Stream::write_some(const char* buf, size_t n) {
  if (!ssl_) {
    ssize_t r = ::send(fd_, buf, n, MSG_NOSIGNAL);
    if (r >= 0) return r;
    if (errno == EAGAIN || errno == EINTR) return 0;
    err_ = std::string("connection lost while sending: ") + std::strerror(errno);
    return -1;
  }
  write_wants_read_ = false;
  ERR_clear_error();
  int r = SSL_write(ssl_.get(), buf, static_cast<int>(std::min<size_t>(n, 1 << 30)));
  if (r > 0) return r;
  int e = SSL_get_error(ssl_.get(), r);
  if (e == SSL_ERROR_WANT_WRITE) return 0;
  if (e == SSL_ERROR_WANT_READ) {
    write_wants_read_ = true;
    return 0;
  }
  broken_ = true;
  std::string why = openssl_errors();
  if (why.empty()) why = e == SSL_ERROR_SYSCALL && errno ? std::strerror(errno) : "closed by the server";
  err_ = "connection lost while sending (TLS): " + why;
  return -1;
}

void Stream::wait(short events, int64_t deadline, const std::string& doing) {
  const int r = poll_until(fd_, events, deadline);
  if (r > 0) return;
  if (r < 0) fail(std::string("poll: ") + std::strerror(errno));
  throw_if_stopped_opening(who_ + " " + addr_.where() + ": " + doing);
  fail("no answer to " + doing + " within the timeout (" + fmt_g(addr_.timeout_s) + "s)");
}

void Stream::write_all(const std::string& data, int64_t deadline, const std::string& what) {
  size_t off = 0;
  while (off < data.size()) {
    long n = write_some(data.data() + off, data.size() - off);
    if (n < 0) fail(err_);
    if (n > 0)
      off += static_cast<size_t>(n);
    else
      wait(write_wants_read_ ? POLLIN : POLLOUT, deadline, what + " (sending)");
  }
}

void Stream::send_paced(const std::string& payload) {
  const auto step = static_cast<int64_t>(addr_.timeout_s * 1e9);
  size_t off = 0;
  int64_t deadline = now_ns() + step;
  while (off < payload.size()) {
    long n = write_some(payload.data() + off, payload.size() - off);
    if (n < 0) fail(err_);
    if (n > 0) {
      off += static_cast<size_t>(n);
      deadline = now_ns() + step;
    } else {
      wait(write_wants_read_ ? POLLIN : POLLOUT, deadline, "a pipelined request (sending)");
    }
  }
}

void Stream::consume() {
  in_.consume(used_);
  used_ = 0;
  in_.compact();
}

void Stream::fill(int64_t deadline, const std::string& what) {
  char buf[65536];
  for (;;) {
    long n = read_some(buf, sizeof buf);
    if (n < 0) fail(err_ + " (answer to " + what + ")");
    if (n > 0) {
      in_.append(buf, static_cast<size_t>(n));
      return;
    }
    wait(read_wants_write_ ? POLLOUT : POLLIN, deadline, what);
  }
}

}  // namespace mw::conn
