// ab-style HTTP load: one URL, a method, a body, headers, N requests over C connections.
// Success is a 2xx whose length is the first response's (ab's "length changed" check);
// non-2xx responses are failures, never throughput. -P > 1 pipelines (native engine).
#include "adapters/http/http.h"

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <fstream>
#include <sstream>

#include <unistd.h>

#include "adapters/http/client.h"
#include "adapters/http/engine.h"
#include "adapters/http/http_options.h"
#include "api/stop.h"
#include "util/net.h"

namespace mw {

OpResult http::check_ab_reply(long status, const std::string& reply, bool check_length, std::atomic<int64_t>& first,
                              std::string& detail) {
  return check_ab_length(status, static_cast<int64_t>(reply.size()), check_length, first, detail);
}

OpResult http::check_ab_length(long status, int64_t len, bool check_length, std::atomic<int64_t>& first,
                               std::string& detail) {
  if (status < 200 || status > 299) {
    detail = "HTTP " + std::to_string(status) + " (non-2xx response)";
    return {status == 404 ? Status::NotFound : Status::Error, 0, detail};
  }
  int64_t expected = -1;
  if (check_length && !first.compare_exchange_strong(expected, len) && expected != len) {
    detail = "length changed: " + std::to_string(len) + " bytes, the first response had " + std::to_string(expected);
    return {Status::Mismatch, 0, detail};
  }
  return {Status::Ok, static_cast<uint32_t>(std::clamp<int64_t>(len, 0, UINT32_MAX)), {}};
}

namespace {

enum class Op { Request };

// The options of `mwbench http`, typed (options.h); the member initialisers are the defaults.
struct HttpOptions {
  std::string url;
  std::string method = "GET";
  std::string body;  // a file
  std::string content_type;
  std::string header;  // one 'K: V' a line (--header may be given several times)
  bool keepalive = false;
  bool check_length = true;
  int64_t max_body = http::kDefaultMaxBody;
  std::string credentials_env = "MWBENCH_HTTP_CREDENTIALS";
  std::string engine = "auto";
};

class AbExchange final : public http::Exchange {
 public:
  AbExchange(std::string method, std::string url, const std::string* body, bool check_length,
             std::atomic<int64_t>* first_length)
      : method_(std::move(method)),
        url_(std::move(url)),
        body_(body),
        check_length_(check_length),
        first_(first_length) {}
  void request(uint64_t, std::string& method, std::string& url, std::string& body) override {
    method = method_;
    url = url_;
    body = *body_;
  }
  OpResult check(uint64_t, long status, const std::string&, int64_t length, std::string& detail) override {
    return http::check_ab_length(status, length, check_length_, *first_, detail);
  }
  bool fixed() const override { return true; }
  bool keeps_body() const override { return false; }

 private:
  std::string method_, url_;
  const std::string* body_;
  bool check_length_;
  std::atomic<int64_t>* first_;
};

std::vector<std::string> lines(const std::string& s) {
  std::vector<std::string> out;
  std::istringstream in(s);
  for (std::string l; std::getline(in, l);)
    if (!l.empty()) out.push_back(l);
  return out;
}

class HttpAdapter final : public Adapter {
 public:
  explicit HttpAdapter(const Job& job) : o_(options_of<HttpOptions>(job)), url_(o_.url) {
    if (url_.empty()) throw SetupError("http: --url is required");
    if (!o_.body.empty()) {
      std::ifstream in(o_.body, std::ios::binary);
      if (!in) throw SetupError("http: cannot read --body " + o_.body);
      body_.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
    }
    opts_.keepalive = o_.keepalive;
    opts_.timeout_s = job.timeout_s;
    opts_.max_body = o_.max_body;
    opts_.probe_url = url_;
    opts_.headers = lines(o_.header);
    if (!o_.content_type.empty()) opts_.headers.push_back("Content-Type: " + o_.content_type);
    if (const char* cred = std::getenv(o_.credentials_env.c_str())) opts_.userpwd = cred;
    http::Target t = http::parse_target(url_);
    if (http::use_native(o_.engine, t, "http")) {
      http::header_block(t, opts_.headers, opts_.userpwd, opts_.keepalive);  // bad headers: a set-up error now
      target_ = std::make_shared<http::Target>(std::move(t));
    }
  }
  void prepare(const Job& job) override {
    if (job.pipeline > 1 && !target_)
      throw SetupError("http: -P > 1 (pipelining) needs the native engine (http:// URLs, --engine auto or native)");
    if (job.pipeline > 1 && !opts_.keepalive) throw SetupError("http: -P > 1 (pipelining) needs --keepalive");
    // libcurl: an epoll set, a timerfd and a socket per client, and a probe's socket; native:
    // a socket, the one it replaces, and a probe's socket (budgeted as libcurl's)
    ensure_open_files("http", job.clients, 4);
    if (target_) http::resolve(*target_);
    // An unreachable server is a set-up error (exit 2), as on every adapter: one connect first.
    const http::Target t = http::parse_target(url_);
    std::string err;
    const int fd = tcp_connect(t.host, t.port, job.timeout_s, &err, [] { return stop_ends_opening(); });
    if (fd < 0) {
      throw_if_stopped_opening("http " + redact_url(url_) + ": connecting");
      throw SetupError("http " + redact_url(url_) + ": cannot connect: " + err);
    }
    close(fd);
  }
  std::unique_ptr<Client> open(const Job&, int) override {
    auto ex = std::make_unique<AbExchange>(o_.method, url_, &body_, o_.check_length, &first_length_);
    return http::make_client(std::move(ex), opts_, target_, &stats_);
  }
  Metrics metrics(double elapsed_s) override { return stats_.report(elapsed_s); }
  std::optional<Metrics> take_metrics(double elapsed_s, const Counts&) override {
    http::Stats step;
    stats_.take(step);
    return step.report(elapsed_s);
  }
  Info describe() override {
    return {{"engine", http::engine_name(target_ != nullptr)},
            {"method", o_.method},
            {"keepalive", opts_.keepalive ? "yes" : "no"},
            {"body_bytes", std::to_string(body_.size())}};
  }
  std::string target() const override { return redact_url(url_); }

 private:
  HttpOptions o_;
  std::string url_, body_;
  std::shared_ptr<http::Target> target_;  // the native engine's; null: libcurl
  http::Options opts_;
  http::Stats stats_;
  std::atomic<int64_t> first_length_{-1};
};

}  // namespace

AdapterSpec http_adapter_spec() {
  using O = HttpOptions;
  return {
      .name = "http",
      .summary = "ab-style HTTP load on one URL; non-2xx and changed lengths are failures, never throughput",
      .ops = {{"request", Op::Request}},
      .default_ops = "request",
      .options = {opt(&O::url, {.name = "url",
                                .help = "the URL, or env:VAR, file:PATH holding it (credentials in it are never "
                                        "printed)",
                                .list = true,
                                .secret = true}),
                  opt(&O::method,
                      {.name = "method", .help = "HTTP method", .choices = {"GET", "POST", "PUT", "DELETE", "HEAD"}}),
                  opt(&O::body, {.name = "body", .help = "file whose bytes are the request body"}),
                  opt(&O::content_type, {.name = "content-type", .help = "Content-Type of the body"}),
                  opt(&O::header, {.name = "header",
                                   .help = "an extra header 'K: V', or env:VAR, file:PATH holding "
                                           "it",
                                   .repeat = true,
                                   .secret = true}),
                  opt(&O::keepalive, {.name = "keepalive", .help = "keep connections open (ab -k)", .list = true}),
                  opt(&O::check_length,
                      {.name = "check-length", .help = "a body whose length differs from the first is a failure (ab)"}),
                  http::max_body_option<O>(), http::credentials_option<O>(), http::engine_option<O>()},
      .unavailable = nullptr,
      .make = [](const Job& j, WorkloadPtr) { return std::make_unique<HttpAdapter>(j); },
      .target = TargetKind::External,
      .target_option = "url",
      .connects_note =
          "connects inside its requests (--keepalive false: a connection per request, ab's way, its "
          "connects in the job's metrics)",
      .reset = "none: the server at --url, as it is"};
}

}  // namespace mw
