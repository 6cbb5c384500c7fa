#include "adapters/http/client.h"

#include <sys/epoll.h>
#include <sys/timerfd.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "api/stop.h"

namespace mw::http {
namespace {

struct CurlGlobal {
  CurlGlobal() { curl_global_init(CURL_GLOBAL_DEFAULT); }
};

void global_init() { static CurlGlobal g; }

curl_slist* header_list(const Options& o) {
  curl_slist* h = nullptr;
  h = curl_slist_append(h, "Expect:");  // no 100-continue round trip before a body
  if (!o.keepalive) h = curl_slist_append(h, "Connection: close");
  for (auto& line : o.headers) h = curl_slist_append(h, line.c_str());
  return h;
}

long timeout_ms(const Options& o) {  // never 0: libcurl reads 0 as "no timeout"
  double ms = o.timeout_s * 1000;
  return ms < 1 ? 1L : ms > 86400e3 ? 86400000L : static_cast<long>(ms);
}

void common_options(CURL* e, const Options& o, curl_slist* headers) {
  curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(e, CURLOPT_TCP_NODELAY, 1L);
  curl_easy_setopt(e, CURLOPT_TIMEOUT_MS, timeout_ms(o));
  curl_easy_setopt(e, CURLOPT_CONNECTTIMEOUT_MS, timeout_ms(o));
  // A Content-Length past the cap fails at once; chunked bodies are cut by the write callback.
  curl_easy_setopt(e, CURLOPT_MAXFILESIZE_LARGE, static_cast<curl_off_t>(o.max_body));
  curl_easy_setopt(e, CURLOPT_HTTPHEADER, headers);
  curl_easy_setopt(e, CURLOPT_FORBID_REUSE, o.keepalive ? 0L : 1L);
  if (!o.userpwd.empty()) curl_easy_setopt(e, CURLOPT_USERPWD, o.userpwd.c_str());
}

void set_request(CURL* e, const std::string& method, const std::string& url, const std::string& body) {
  curl_easy_setopt(e, CURLOPT_URL, url.c_str());
  if (method == "GET") {
    curl_easy_setopt(e, CURLOPT_HTTPGET, 1L);
    curl_easy_setopt(e, CURLOPT_CUSTOMREQUEST, nullptr);
  } else if (method == "HEAD") {
    curl_easy_setopt(e, CURLOPT_NOBODY, 1L);
  } else {
    curl_easy_setopt(e, CURLOPT_POSTFIELDS, body.data());
    curl_easy_setopt(e, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(body.size()));
    curl_easy_setopt(e, CURLOPT_CUSTOMREQUEST, method == "POST" ? nullptr : method.c_str());
  }
}

Status status_of(CURLcode rc) {
  switch (rc) {
    case CURLE_OPERATION_TIMEDOUT: return Status::Timeout;
    case CURLE_COULDNT_CONNECT: return Status::Refused;
    default: return Status::Error;
  }
}

// Set-up and probe transfers: body and headers capped like the clients'.
struct Sink {
  std::string body;
  int64_t headers = 0, max_body = 0, max_header = 0;
  bool body_too_big = false, header_too_big = false, stop_at_first_byte = false;
  static size_t on_body(char* p, size_t s, size_t n, void* self) {
    auto* k = static_cast<Sink*>(self);
    if (k->stop_at_first_byte) return 0;  // the status line and headers are all a probe needs
    if (append_capped(k->body, p, s * n, k->max_body)) return s * n;
    k->body_too_big = true;
    return 0;
  }
  static size_t on_header(char*, size_t s, size_t n, void* self) {
    auto* k = static_cast<Sink*>(self);
    if (count_header(k->headers, s * n, k->max_header)) return s * n;
    k->header_too_big = true;
    return 0;
  }
  void attach(CURL* e, const Options& o) {
    max_body = o.max_body;
    max_header = o.max_header;
    curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, &Sink::on_body);
    curl_easy_setopt(e, CURLOPT_WRITEDATA, this);
    curl_easy_setopt(e, CURLOPT_HEADERFUNCTION, &Sink::on_header);
    curl_easy_setopt(e, CURLOPT_HEADERDATA, this);
  }
};

std::string errno_text(const char* call) { return std::string(call) + ": " + std::strerror(errno); }

}  // namespace

bool append_capped(std::string& buf, const char* p, size_t n, int64_t cap) {
  if (cap < 0 || n > static_cast<uint64_t>(cap) || buf.size() > static_cast<uint64_t>(cap) - n) return false;
  buf.append(p, n);
  return true;
}

bool count_header(int64_t& total, size_t n, int64_t cap) {
  if (n > static_cast<uint64_t>(INT64_MAX - total)) return false;
  total += static_cast<int64_t>(n);
  return total <= cap;
}

std::string size_text(int64_t b) {
  const char* units[] = {"G", "M", "k"};
  int64_t mult[] = {int64_t{1} << 30, int64_t{1} << 20, int64_t{1} << 10};
  for (int i = 0; i < 3; ++i)
    if (b >= mult[i] && b % mult[i] == 0) return std::to_string(b / mult[i]) + units[i];
  return std::to_string(b) + " bytes";
}

std::string printable(std::string_view s, size_t max) { return printable_text(s, max); }

namespace {
std::string failure_reason(CURLcode rc, bool body_too_big, bool header_too_big, const Options& o) {
  if (body_too_big || rc == CURLE_FILESIZE_EXCEEDED) return "body larger than --max-body " + size_text(o.max_body);
  if (header_too_big) return "headers larger than " + size_text(o.max_header);
  return curl_easy_strerror(rc);
}
}  // namespace

OpResult transfer_failure(CURLcode rc, bool body_too_big, bool header_too_big, const Options& o, const std::string& url,
                          std::string& detail) {
  detail = failure_reason(rc, body_too_big, header_too_big, o) + " (" + redact_url(url) + ")";
  bool capped = body_too_big || header_too_big || rc == CURLE_FILESIZE_EXCEEDED;
  return {capped ? Status::Error : status_of(rc), 0, detail};
}

void Stats::add(const Stats& o) {
  connect_us.merge(o.connect_us);
  processing_us.merge(o.processing_us);
  waiting_us.merge(o.waiting_us);
  total_us.merge(o.total_us);
  for (auto& [k, v] : o.statuses) statuses[k] += v;
  body_bytes += o.body_bytes;
  header_bytes += o.header_bytes;
  wire_in += o.wire_in;
  sent_bytes += o.sent_bytes;
  connects += o.connects;
  resent += o.resent;
  if (doc_length < 0) doc_length = o.doc_length;
}

void Stats::clear() {
  for (Histogram* h : {&connect_us, &processing_us, &waiting_us, &total_us}) h->reset();
  statuses.clear();
  body_bytes = header_bytes = wire_in = sent_bytes = connects = resent = 0;
}

void Stats::attach(Stats* local) {
  std::lock_guard lk(mu);
  open_.push_back(local);
}

void Stats::detach(Stats& local) {
  std::lock_guard lk(mu);
  std::erase(open_, &local);
  add(local);
}

void Stats::take(Stats& out) {
  std::lock_guard lk(mu);
  out.add(*this);
  clear();
  for (Stats* s : open_) {
    out.add(*s);
    s->clear();
  }
}

Metrics Stats::report(double elapsed_s) const {
  Metrics m;
  if (statuses.empty()) return m;  // no answer at all: the errors say why
  using M = Metric::Merge;
  for (auto& [code, n] : statuses) m.push_back(count_metric("HTTP " + std::to_string(code) + " responses", n));
  if (doc_length >= 0) m.push_back({"document length", static_cast<double>(doc_length), "bytes", M::Same});
  const uint64_t total = body_bytes + header_bytes + (wire_in - std::min(wire_in, body_bytes));
  m.push_back({"received", static_cast<double>(total), "bytes", M::Sum});
  m.push_back({"received rate", elapsed_s > 0 ? static_cast<double>(total) / 1024.0 / elapsed_s : 0, "kB/s", M::Sum});
  m.push_back({"body sent", static_cast<double>(sent_bytes), "bytes", M::Sum});
  m.push_back(count_metric("connections opened", connects));
  if (resent) m.push_back(count_metric("requests sent again (the server closed the connection first)", resent));
  if (total_us.count()) {  // ab's connection times; percentiles of one machine's requests
    auto row = [&](const char* name, const Histogram& h) {
      const std::string n = name;
      auto ms = [](double us) { return us / 1000.0; };
      m.push_back({n + " min", ms(static_cast<double>(h.min())), "ms", M::Same});
      m.push_back({n + " avg", ms(h.mean()), "ms", M::Same});
      m.push_back({n + " p50", ms(static_cast<double>(h.percentile(50))), "ms", M::Same});
      m.push_back({n + " p99", ms(static_cast<double>(h.percentile(99))), "ms", M::Same});
      m.push_back({n + " max", ms(static_cast<double>(h.max())), "ms", M::Same});
    };
    row("connect", connect_us);
    row("processing", processing_us);
    row("waiting", waiting_us);
    row("total", total_us);
  }
  return m;
}

Client::Client(std::unique_ptr<Exchange> ex, const Options& opts, Stats* stats)
    : ex_(std::move(ex)), opts_(opts), stats_(stats), live_(stats ? &stats->live : &local_.live) {
  global_init();
  // Every descriptor and handle is checked: at `ulimit -n` this is one clear set-up error,
  // not a client that shows every request as a "timeout".
  std::string why;
  epoll_event ev{};
  ev.events = EPOLLIN;
  if ((ep_ = epoll_create1(EPOLL_CLOEXEC)) < 0)
    why = errno_text("epoll_create1");
  else if ((timer_ = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC)) < 0)
    why = errno_text("timerfd_create");
  else if (ev.data.fd = timer_, epoll_ctl(ep_, EPOLL_CTL_ADD, timer_, &ev) != 0)
    why = errno_text("epoll_ctl");
  else if (!(multi_ = curl_multi_init()) || !(easy_ = curl_easy_init()))
    why = "libcurl could not create a handle";
  else if (!(headers_ = header_list(opts_)))
    why = "libcurl could not build the header list";
  if (!why.empty()) {
    bool fds = errno == EMFILE || errno == ENFILE;
    release();
    rlimit rl{};
    getrlimit(RLIMIT_NOFILE, &rl);
    throw SetupError("http client: " + why +
                     (fds ? " (ulimit -n " + std::to_string(rl.rlim_cur) + "; need about 4 per client)" : ""));
  }
  curl_multi_setopt(multi_, CURLMOPT_SOCKETFUNCTION, &Client::on_socket);
  curl_multi_setopt(multi_, CURLMOPT_SOCKETDATA, this);
  curl_multi_setopt(multi_, CURLMOPT_TIMERFUNCTION, &Client::on_timer);
  curl_multi_setopt(multi_, CURLMOPT_TIMERDATA, this);
  common_options(easy_, opts_, headers_);
  curl_easy_setopt(easy_, CURLOPT_WRITEFUNCTION, &Client::on_body);
  curl_easy_setopt(easy_, CURLOPT_WRITEDATA, this);
  curl_easy_setopt(easy_, CURLOPT_HEADERFUNCTION, &Client::on_header);
  curl_easy_setopt(easy_, CURLOPT_HEADERDATA, this);
  curl_easy_setopt(easy_, CURLOPT_CLOSESOCKETFUNCTION, &Client::on_close);
  curl_easy_setopt(easy_, CURLOPT_CLOSESOCKETDATA, this);
  if (stats_) stats_->attach(&local_);
}

void Client::release() {
  if (busy_ && multi_ && easy_) curl_multi_remove_handle(multi_, easy_);
  busy_ = false;
  if (easy_) curl_easy_cleanup(easy_);
  if (multi_) curl_multi_cleanup(multi_);
  curl_slist_free_all(headers_);
  if (timer_ >= 0) close(timer_);
  if (ep_ >= 0) close(ep_);
  easy_ = nullptr, multi_ = nullptr, headers_ = nullptr, timer_ = -1, ep_ = -1;
}

Client::~Client() {
  release();
  if (stats_) stats_->detach(local_);
}

// Every epoll_ctl and timerfd_settime is a syscall per request: only real changes are made.
int Client::on_socket(CURL*, curl_socket_t s, int what, void* self, void*) {
  auto* c = static_cast<Client*>(self);
  epoll_event ev{};
  ev.data.fd = s;
  auto it = c->watched_.find(s);
  if (what == CURL_POLL_REMOVE) {
    if (it != c->watched_.end()) {
      epoll_ctl(c->ep_, EPOLL_CTL_DEL, s, &ev);
      c->watched_.erase(it);
    }
    return 0;
  }
  ev.events = (what & CURL_POLL_IN ? EPOLLIN : 0u) | (what & CURL_POLL_OUT ? EPOLLOUT : 0u);
  if (it == c->watched_.end()) {
    if (epoll_ctl(c->ep_, EPOLL_CTL_ADD, s, &ev) != 0) return -1;  // libcurl fails the transfer
    c->watched_[s] = ev.events;
  } else if (it->second != ev.events) {
    if (epoll_ctl(c->ep_, EPOLL_CTL_MOD, s, &ev) != 0) return -1;
    it->second = ev.events;
  }
  return 0;
}

// A closed socket leaves the epoll set by itself; forget it, or a new socket that gets the
// same number would look registered already.
int Client::on_close(void* self, curl_socket_t s) {
  static_cast<Client*>(self)->watched_.erase(s);
  return close(s);
}

int Client::on_timer(CURLM*, long ms, void* self) {
  static_cast<Client*>(self)->set_timer(ms);
  return 0;
}

void Client::set_timer(long ms) {
  // Timeouts of a second or more are the request timeouts, which the driver enforces itself
  // (it aborts a request that waited longer than --timeout); only short timers are armed.
  if (ms < 0 || ms >= 1000) {
    if (armed_) {
      itimerspec off{};
      timerfd_settime(timer_, 0, &off, nullptr);
      armed_ = false;
    }
    return;
  }
  itimerspec t{};
  t.it_value.tv_sec = 0;
  t.it_value.tv_nsec = ms * 1000000 + 1;  // 0 ms: at once (a zero it_value would disarm)
  timerfd_settime(timer_, 0, &t, nullptr);
  armed_ = true;
}

// A body past --max-body stops the transfer (a short count makes libcurl abort it): an
// endless chunked body costs at most the cap, never the machine's memory.
size_t Client::on_body(char* p, size_t size, size_t n, void* self) {
  auto* c = static_cast<Client*>(self);
  if (append_capped(c->reply_, p, size * n, c->opts_.max_body)) return size * n;
  c->body_too_big_ = true;
  return 0;
}

size_t Client::on_header(char*, size_t size, size_t n, void* self) {
  auto* c = static_cast<Client*>(self);
  if (count_header(c->header_total_, size * n, c->opts_.max_header)) return size * n;
  c->header_too_big_ = true;
  return 0;
}

void Client::lost_unless_answering() {
  const std::string& url = opts_.probe_url.empty() ? url_ : opts_.probe_url;
  alive_ = live_->answers(started_ns_, [&] { return probe(url, opts_); });
}

void Client::act(curl_socket_t s, int events) {
  int running = 0;
  curl_multi_socket_action(multi_, s, events, &running);
}

void Client::submit(uint64_t seq) {
  if (busy_) {  // HTTP/1.1: one request in flight per connection
    backlog_.push_back({seq, {Status::Unsupported, 0, "one request in flight per HTTP connection: use -c, not -P"}});
    return;
  }
  seq_ = seq;
  method_.clear();
  url_.clear();
  body_.clear();
  reply_.clear();
  body_too_big_ = header_too_big_ = false;
  header_total_ = 0;
  started_ns_ = guard_now_ns();
  ex_->request(seq, method_, url_, body_);
  set_request(easy_, method_, url_, body_);
  local_.sent_bytes += body_.size();
  busy_ = true;
  curl_multi_add_handle(multi_, easy_);
}

void Client::flush() {
  if (busy_) act(CURL_SOCKET_TIMEOUT, 0);  // start the request just added
}

size_t Client::reap(std::span<Completion> out) {
  size_t k = 0;
  while (k < out.size() && !backlog_.empty()) {
    out[k++] = backlog_.front();
    backlog_.erase(backlog_.begin());
  }
  if (!busy_ || k == out.size()) return k;
  epoll_event evs[8];
  int n = epoll_wait(ep_, evs, 8, 0);
  for (int i = 0; i < n; ++i) {
    if (evs[i].data.fd == timer_) {
      uint64_t expirations;
      armed_ = false;
      if (read(timer_, &expirations, sizeof expirations) > 0) act(CURL_SOCKET_TIMEOUT, 0);
      continue;
    }
    int e = (evs[i].events & EPOLLIN ? CURL_CSELECT_IN : 0) | (evs[i].events & EPOLLOUT ? CURL_CSELECT_OUT : 0) |
            (evs[i].events & (EPOLLERR | EPOLLHUP) ? CURL_CSELECT_ERR : 0);
    act(evs[i].data.fd, e);
  }
  int left = 0;
  while (CURLMsg* m = curl_multi_info_read(multi_, &left)) {
    if (m->msg != CURLMSG_DONE || m->easy_handle != easy_) continue;
    CURLcode rc = m->data.result;
    curl_multi_remove_handle(multi_, easy_);
    busy_ = false;
    OpResult r;
    long status = 0;
    curl_easy_getinfo(easy_, CURLINFO_RESPONSE_CODE, &status);
    if (rc == CURLE_OK) {
      curl_off_t connect = 0, start = 0, total = 0;
      long header = 0, connects = 0;
      curl_easy_getinfo(easy_, CURLINFO_CONNECT_TIME_T, &connect);
      curl_easy_getinfo(easy_, CURLINFO_STARTTRANSFER_TIME_T, &start);
      curl_easy_getinfo(easy_, CURLINFO_TOTAL_TIME_T, &total);
      curl_easy_getinfo(easy_, CURLINFO_HEADER_SIZE, &header);
      curl_easy_getinfo(easy_, CURLINFO_NUM_CONNECTS, &connects);
      local_.connect_us.record(connect);
      local_.waiting_us.record(start - connect);
      local_.processing_us.record(total - connect);
      local_.total_us.record(total);
      local_.header_bytes += static_cast<uint64_t>(header);
      local_.body_bytes += reply_.size();
      local_.connects += static_cast<uint64_t>(connects);
      ++local_.statuses[status];
      if (local_.doc_length < 0) local_.doc_length = static_cast<int64_t>(reply_.size());
      r = ex_->check(seq_, status, reply_, static_cast<int64_t>(reply_.size()), detail_);
      if (r.status == Status::Ok && r.bytes == 0) r.bytes = static_cast<uint32_t>(reply_.size());
    } else {
      r = transfer_failure(rc, body_too_big_, header_too_big_, opts_, url_, detail_);
      if (rc == CURLE_COULDNT_CONNECT) alive_ = false;  // the server is gone
      if (r.status == Status::Timeout) lost_unless_answering();
    }
    out[k++] = {seq_, r};
    break;
  }
  return k;
}

void Client::abort(std::string_view why) {
  if (!busy_) return;
  curl_multi_remove_handle(multi_, easy_);  // closes the connection of the stuck request
  busy_ = false;
  detail_ = std::string(why) + " (" + redact_url(url_) + ")";
  backlog_.push_back({seq_, {Status::Timeout, 0, detail_}});
  lost_unless_answering();
}

OpResult Client::run(uint64_t seq) {
  submit(seq);
  Completion c[1];
  flush();
  for (;;) {
    if (reap(c) == 1) return c[0].result;
    epoll_event ev;
    // Timers of a second or more are not armed (the driver enforces the timeout of pollable
    // use): on a quiet wait, let libcurl check its own, so a blocking call ends too.
    if (epoll_wait(ep_, &ev, 1, 100) == 0) act(CURL_SOCKET_TIMEOUT, 0);
  }
}

namespace {
// A blocking transfer of the set-up (fetch, probe): a stop while clients are being opened ends
// it at once. Its socket is shut down (StopShutsDown, from the moment libcurl makes it), and the
// progress callback, about once a second, covers the time before there is a socket.
struct StopAborts {
  std::vector<std::unique_ptr<StopShutsDown>> sockets;

  explicit StopAborts(CURL* e) {
    curl_easy_setopt(
        e, CURLOPT_XFERINFOFUNCTION,
        +[](void*, curl_off_t, curl_off_t, curl_off_t, curl_off_t) { return stop_ends_opening() ? 1 : 0; });
    curl_easy_setopt(e, CURLOPT_NOPROGRESS, 0L);
    curl_easy_setopt(e, CURLOPT_SOCKOPTDATA, this);
    curl_easy_setopt(
        e, CURLOPT_SOCKOPTFUNCTION, +[](void* me, curl_socket_t fd, curlsocktype) {
          static_cast<StopAborts*>(me)->sockets.push_back(std::make_unique<StopShutsDown>(fd));
          return static_cast<int>(CURL_SOCKOPT_OK);
        });
  }
};
}  // namespace

Reply fetch(const std::string& method, const std::string& url, const std::string& body, const Options& opts) {
  global_init();
  CURL* e = curl_easy_init();
  if (!e) throw SetupError(method + " " + redact_url(url) + ": libcurl could not create a handle");
  curl_slist* h = header_list(opts);
  common_options(e, opts, h);
  StopAborts stop(e);
  set_request(e, method, url, body);
  Reply r;
  Sink sink;
  sink.attach(e, opts);
  CURLcode rc = curl_easy_perform(e);
  curl_easy_getinfo(e, CURLINFO_RESPONSE_CODE, &r.status);
  curl_easy_cleanup(e);
  curl_slist_free_all(h);
  if (rc != CURLE_OK) throw_if_stopped_opening(method + " " + redact_url(url));
  if (rc != CURLE_OK)
    throw SetupError(method + " " + redact_url(url) + ": " +
                     failure_reason(rc, sink.body_too_big, sink.header_too_big, opts));
  r.body = std::move(sink.body);
  return r;
}

std::string probe(const std::string& url, const Options& opts) {
  global_init();
  CURL* e = curl_easy_init();
  if (!e) return "libcurl could not create a handle";
  curl_slist* h = header_list(opts);
  common_options(e, opts, h);
  curl_easy_setopt(e, CURLOPT_FORBID_REUSE, 1L);
  curl_easy_setopt(e, CURLOPT_FRESH_CONNECT, 1L);
  StopAborts stop(e);
  set_request(e, "GET", url, "");
  Sink sink;
  sink.attach(e, opts);
  sink.stop_at_first_byte = true;
  CURLcode rc = curl_easy_perform(e);
  long status = 0;
  curl_easy_getinfo(e, CURLINFO_RESPONSE_CODE, &status);
  curl_easy_cleanup(e);
  curl_slist_free_all(h);
  if (status > 0) return "";  // any HTTP answer: the server is there
  if (rc != CURLE_OK) throw_if_stopped_opening("GET " + redact_url(url));
  return failure_reason(rc, sink.body_too_big, sink.header_too_big, opts);
}

}  // namespace mw::http
