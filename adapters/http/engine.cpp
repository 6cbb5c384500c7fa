#include "adapters/http/engine.h"

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "util/redact.h"

namespace mw::http {
namespace {

constexpr size_t kReadBuf = 65536;

int64_t us(int64_t ns) { return ns > 0 ? ns / 1000 : 0; }

// A proxy variable libcurl would use for this host (http_proxy, all_proxy; not excluded by
// no_proxy).
bool proxy_applies(const std::string& host) {
  auto env = [](const char* n) {
    const char* v = std::getenv(n);
    return std::string(v ? v : "");
  };
  if (env("http_proxy").empty() && env("all_proxy").empty() && env("ALL_PROXY").empty()) return false;
  std::string no = env("no_proxy").empty() ? env("NO_PROXY") : env("no_proxy");
  size_t at = 0;
  while (at <= no.size()) {
    size_t comma = no.find(',', at);
    std::string e = no.substr(at, comma == std::string::npos ? std::string::npos : comma - at);
    e.erase(0, e.find_first_not_of(" \t"));
    e.erase(e.find_last_not_of(" \t") + 1);
    if (!e.empty() && e[0] == '.') e.erase(0, 1);
    if (e == "*" || (!e.empty() &&
                     (host == e || (host.size() > e.size() && host.compare(host.size() - e.size(), e.size(), e) == 0 &&
                                    host[host.size() - e.size() - 1] == '.'))))
      return false;
    if (comma == std::string::npos) break;
    at = comma + 1;
  }
  return true;
}

}  // namespace

bool use_native(const std::string& engine, const Target& t, const std::string& adapter) {
  if (engine == "curl") return false;
  if (engine == "native") {
    if (t.https)
      throw SetupError(adapter + ": --engine native speaks plain HTTP; https URLs need --engine curl (or auto)");
    return true;
  }
  if (engine != "auto") throw SetupError(adapter + ": --engine expects auto, native or curl, got '" + engine + "'");
  return !t.https && !proxy_applies(t.host);
}

std::string engine_name(bool native) {
  if (!native) return std::string("libcurl ") + curl_version_info(CURLVERSION_NOW)->version;
  unsigned long v = http_parser_version();
  return "native (http-parser " + std::to_string((v >> 16) & 255) + "." + std::to_string((v >> 8) & 255) + "." +
         std::to_string(v & 255) + ")";
}

std::unique_ptr<mw::Client> make_client(std::unique_ptr<Exchange> ex, const Options& opts,
                                        const std::shared_ptr<const Target>& target, Stats* stats) {
  if (target) return std::make_unique<NativeClient>(std::move(ex), opts, target, stats);
  return std::make_unique<Client>(std::move(ex), opts, stats);
}

NativeClient::NativeClient(std::unique_ptr<Exchange> ex, const Options& opts, std::shared_ptr<const Target> target,
                           Stats* stats)
    : ex_(std::move(ex)),
      opts_(opts),
      target_(std::move(target)),
      stats_(stats),
      parser_(opts.max_body, opts.max_header, ex_->keeps_body(), this) {
  block_ = header_block(*target_, opts_.headers, opts_.userpwd, opts_.keepalive);
  if (ex_->fixed()) {
    ex_->request(0, method_, url_, body_);
    encode_request(fixed_, method_, path_of(url_), block_, body_);
    parser_.set_head(method_ == "HEAD");
  }
  // Connected now, like the Redis client: the driver polls clients whose fd is open.
  open();
  if (fd_ < 0 && pending_.status == Status::Error && pending_.why.rfind("socket: ", 0) == 0)
    throw SetupError("http client: " + pending_.why.substr(0, pending_.why.rfind(" (")));
  if (stats_) stats_->attach(&local_);
}

NativeClient::~NativeClient() {
  if (fd_ >= 0) close(fd_);
  if (stale_ >= 0) close(stale_);
  if (stats_) stats_->detach(local_);
}

// A connection that ends is kept open (as stale_) until the next one is: its fd number then
// differs from the new one's, so the driver, which keeps the fd it watches, sees the change
// and registers the new socket. Closing first would let socket() hand out the same number,
// which the driver would take for the registration the close removed.
void NativeClient::retire() {
  if (fd_ < 0) return;
  if (stale_ >= 0) close(stale_);
  stale_ = fd_;
  fd_ = -1;
  connecting_ = false;
}

void NativeClient::open() {
  const Target& t = *target_;
  int s = socket(t.addr.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (s < 0) {
    std::string why = std::string("socket: ") + std::strerror(errno);
    if (errno == EMFILE || errno == ENFILE) {
      rlimit rl{};
      getrlimit(RLIMIT_NOFILE, &rl);
      why += " (ulimit -n " + std::to_string(rl.rlim_cur) + ")";
    }
    return drop(Status::Error, why, true);
  }
  if (stale_ >= 0) close(stale_);
  stale_ = -1;
  if (opts_.keepalive) {  // pipelined writes must not wait for an ACK (Nagle)
    int one = 1;
    setsockopt(s, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  }
  fd_ = s;
  ++local_.connects;
  parser_.reset();
  if (!fixed_.empty()) parser_.set_head(method_ == "HEAD");
  if (connect(s, reinterpret_cast<const sockaddr*>(&t.addr), t.addr_len) == 0) return connected(guard_now_ns());
  if (errno == EINPROGRESS) {
    connecting_ = true;  // the first write tells whether it worked
    return;
  }
  socket_error(errno, "connect");
}

void NativeClient::connected(int64_t t) {
  connecting_ = false;
  for (auto& f : flights_)
    if (!f.connected) f.connected = std::max(t, f.start);
}

void NativeClient::submit(uint64_t seq) {
  int64_t t = guard_now_ns();
  if (pending_.status != Status::Ok) {  // the connection failed before this request: it fails with that
    details_.push_back(std::move(pending_.why));
    ready_.push_back({seq, {pending_.status, 0, details_.back()}});
    if (pending_.status == Status::Refused) alive_ = false;
    pending_ = {};
    return;
  }
  if (fd_ < 0) {
    flights_.push_back({seq, 0, t});
    open();
    if (flights_.empty() || flights_.back().seq != seq) return;  // the connection failed: answered already
    flights_.pop_back();
  }
  flights_.push_back({seq, append_request(seq), t, connecting_ ? 0 : t});
}

void NativeClient::submit_request(const Request& r) {
  ex_->begin(r);
  submit(r.seq);
}

size_t NativeClient::append_request(uint64_t seq) {
  size_t before = buf_.size();
  if (!fixed_.empty()) {
    buf_ += fixed_;
  } else {
    method_.clear();
    url_.clear();
    body_.clear();
    ex_->request(seq, method_, url_, body_);
    encode_request(buf_, method_, path_of(url_), block_, body_);
  }
  local_.sent_bytes += body_.size();
  return buf_.size() - before;
}

void NativeClient::flush() {
  while (fd_ >= 0 && sent_ < buf_.size()) {
    ssize_t n = ::send(fd_, buf_.data() + sent_, buf_.size() - sent_, MSG_NOSIGNAL);
    if (n > 0) {
      if (connecting_) connected(guard_now_ns());
      sent_ += static_cast<size_t>(n);
      continue;
    }
    if (n < 0 && (errno == EAGAIN || errno == EINTR)) return;
    return socket_error(n < 0 ? errno : EPIPE, connecting_ ? "connect" : "send");
  }
}

void NativeClient::socket_error(int err, const char* doing) {
  bool refused = err == ECONNREFUSED;
  std::string why = refused ? "connection refused" : std::string(doing) + ": " + std::strerror(err);
  // Nobody listens: the server is gone, the client stops (after the failure is counted).
  if (refused && !flights_.empty()) alive_ = false;
  drop(refused ? Status::Refused : Status::Error, why, connecting_ || std::strcmp(doing, "connect") == 0);
}

void NativeClient::drop(Status s, const std::string& why, bool connect_failed) {
  std::string detail = why + " (" + redact_url(target_->url) + ")";
  if (flights_.empty() && connect_failed) pending_ = {s, detail};  // the next request fails with it
  while (!flights_.empty()) finish_front(s, detail);
  buf_.clear();
  head_ = sent_ = 0;
  retire();
}

void NativeClient::finish_front(Status s, std::string why) {
  Flight f = flights_.front();
  flights_.pop_front();
  details_.push_back(std::move(why));
  ready_.push_back({f.seq, {s, 0, details_.back()}});
}

void NativeClient::on_first_byte() {
  if (flights_.empty())
    unsolicited_ = true;
  else
    flights_.front().first = now_;
}

void NativeClient::on_answer(const Answer& a, std::string& body) {
  if (flights_.empty()) return;  // unsolicited: reap() drops the connection
  Flight f = flights_.front();
  flights_.pop_front();
  head_ += f.len;
  const int64_t connected = f.connected ? f.connected : f.start;
  local_.connect_us.record(us(connected - f.start));
  local_.waiting_us.record(us((f.first ? f.first : now_) - connected));
  local_.processing_us.record(us(now_ - connected));
  local_.total_us.record(us(now_ - f.start));
  local_.body_bytes += static_cast<uint64_t>(a.body_len);
  ++local_.statuses[a.status];
  if (local_.doc_length < 0) local_.doc_length = a.body_len;
  scratch_.clear();
  OpResult r = ex_->check(f.seq, a.status, body, a.body_len, scratch_);
  timed_out_ = false;       // the server answers
  if (ex_->again(f.seq)) {  // the op goes on: its next request, sent at the end of reap()
    flights_.push_back({f.seq, append_request(f.seq), now_, now_});  // ab's figures are per exchange
    return;
  }
  if (r.status == Status::Ok && r.bytes == 0)
    r.bytes = static_cast<uint32_t>(std::min<int64_t>(a.body_len, UINT32_MAX));
  if (!r.detail.empty()) {
    details_.emplace_back(r.detail);
    r.detail = details_.back();
  }
  ready_.push_back({f.seq, r});
}

// The server announced that this connection ends (Connection: close, HTTP/1.0): it processed
// nothing after the answer that said so, so what is still in flight goes again on a fresh one.
void NativeClient::server_closed() {
  retire();
  if (flights_.empty()) {
    buf_.clear();
    head_ = sent_ = 0;
    return;
  }
  local_.resent += flights_.size();
  buf_.erase(0, head_);
  head_ = sent_ = 0;
  for (auto& f : flights_) f.connected = f.first = 0;
  open();
  flush();
}

size_t NativeClient::reap(std::span<Completion> out) {
  if (ready_.empty()) details_.clear();
  if (fd_ >= 0 && !connecting_) {
    char buf[kReadBuf];
    for (;;) {
      ssize_t n = ::read(fd_, buf, sizeof buf);
      if (n < 0) {
        if (errno != EAGAIN && errno != EINTR) socket_error(errno, "read");
        break;
      }
      now_ = guard_now_ns();
      local_.wire_in += static_cast<uint64_t>(n);
      bool ok = n > 0 ? parser_.feed(buf, static_cast<size_t>(n)) : parser_.finish();
      if (!ok) {
        drop(Status::Error, parser_.error());
        break;
      }
      if (parser_.closing()) {
        server_closed();
        break;
      }
      if (n == 0) {  // closed without saying so: what was sent may have been processed
        drop(Status::Error, "connection closed by the server before the answer");
        break;
      }
      if (unsolicited_) {  // bytes with no request in flight: this connection cannot be trusted
        unsolicited_ = false;
        drop(Status::Error, "an answer nobody asked for");
        break;
      }
      if (static_cast<size_t>(n) < sizeof buf) break;
    }
    if (head_ == buf_.size()) {
      buf_.clear();
      head_ = sent_ = 0;
    } else if (head_ >= kReadBuf && head_ * 2 >= buf_.size()) {
      buf_.erase(0, head_);
      sent_ -= head_;
      head_ = 0;
    }
  }
  if (fd_ >= 0 && (connecting_ || sent_ < buf_.size())) flush();  // a connect to check, or an op's next request
  size_t k = 0;
  while (k < out.size() && !ready_.empty()) {
    out[k++] = ready_.front();
    ready_.pop_front();
  }
  return k;
}

void NativeClient::lost_unless_answering() {
  const std::string& url = opts_.probe_url.empty() ? target_->url : opts_.probe_url;
  Liveness& live = stats_ ? stats_->live : local_.live;
  alive_ = live.answers(started_ns_, [&] { return probe(url, opts_); });
}

// A timeout alone does not say the server is gone: the client goes on if a fresh connection
// gets an answer (one probe per job, Liveness). A second timeout with no answer in between
// means the server answers the probe but not these requests: the client stops, so a run
// cannot take one timeout per request.
void NativeClient::abort(std::string_view why) {
  if (flights_.empty()) return;
  started_ns_ = flights_.front().start;
  if (timed_out_) {
    drop(Status::Timeout, std::string(why) + "; again with no answer in between, the client stops");
    alive_ = false;
    return;
  }
  drop(Status::Timeout, std::string(why));
  timed_out_ = true;
  lost_unless_answering();
}

OpResult NativeClient::run(uint64_t seq) {
  submit(seq);
  flush();
  Completion c[1];
  const int64_t deadline = guard_now_ns() + static_cast<int64_t>(opts_.timeout_s * 1e9);
  for (;;) {
    if (reap(c) == 1) return c[0].result;
    if (fd_ < 0 && flights_.empty()) return {Status::Error, 0, "connection lost"};
    if (guard_now_ns() >= deadline) {
      abort("no reply within the timeout");
      continue;
    }
    pollfd p{fd_, static_cast<short>(POLLIN | (wants_write() ? POLLOUT : 0)), 0};
    if (poll(&p, 1, 100) > 0 && (p.revents & POLLOUT)) flush();
  }
}

}  // namespace mw::http
