// ab-style HTTP load: one URL, a method, a body, headers, N requests over C connections.
// Success is a 2xx whose length is the first response's (ab's "length changed" check);
// non-2xx responses are failures, never throughput. -P > 1 pipelines (native engine).
#include "http.h"

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <fstream>
#include <sstream>

#include "client.h"
#include "engine.h"

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

class AbExchange final : public http::Exchange {
 public:
  AbExchange(std::string method, std::string url, const std::string* body, bool check_length,
             std::atomic<int64_t>* first_length)
      : method_(std::move(method)), url_(std::move(url)), body_(body), check_length_(check_length), first_(first_length) {}
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
  explicit HttpAdapter(const Job& job) : url_(job.str("url")), method_(job.str("method", "GET")) {
    if (url_.empty()) throw SetupError("http: --url is required");
    if (job.has("body")) {
      std::ifstream in(job.str("body"), std::ios::binary);
      if (!in) throw SetupError("http: cannot read --body " + job.str("body"));
      body_.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
    }
    opts_.keepalive = job.flag("keepalive", false);
    opts_.timeout_s = job.timeout_s;
    opts_.max_body = http::max_body_option("http", job);
    opts_.probe_url = url_;
    opts_.headers = lines(job.str("header"));
    if (job.has("content-type")) opts_.headers.push_back("Content-Type: " + job.str("content-type"));
    if (const char* cred = std::getenv(job.str("credentials-env", "MWBENCH_HTTP_CREDENTIALS").c_str())) opts_.userpwd = cred;
    http::Target t = http::parse_target(url_);
    if (http::use_native(job.str("engine", "auto"), t, "http")) {
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
  }
  std::unique_ptr<Client> open(const Job& job, int) override {
    auto ex = std::make_unique<AbExchange>(method_, url_, &body_, job.flag("check-length", true), &first_length_);
    return http::make_client(std::move(ex), opts_, target_, &stats_);
  }
  Info metrics(double elapsed_s) override { return stats_.report(elapsed_s); }
  Info describe() override {
    return {{"engine", http::engine_name(target_ != nullptr)}, {"method", method_},
            {"keepalive", opts_.keepalive ? "yes" : "no"}, {"body_bytes", std::to_string(body_.size())}};
  }
  std::string target() const override { return redact_url(url_); }

 private:
  std::string url_, method_, body_;
  std::shared_ptr<http::Target> target_;  // the native engine's; null: libcurl
  http::Options opts_;
  http::Stats stats_;
  std::atomic<int64_t> first_length_{-1};
};

}  // namespace

AdapterSpec http_adapter_spec() {
  using K = OptionSpec::Kind;
  return {.name = "http",
          .summary = "ab-style HTTP load on one URL; non-2xx and changed lengths are failures, never throughput",
          .ops = {{"request", Op::Request}},
          .default_ops = "request",
          .options = {{"url", "the URL (credentials in it are never printed)", "", true},
                      {"method", "HTTP method", "GET", false, K::Str, {"GET", "POST", "PUT", "DELETE", "HEAD"}},
                      {"body", "file whose bytes are the request body", "", false},
                      {"content-type", "Content-Type of the body", "", false},
                      {"header", "an extra header 'K: V'", "", false, K::Str, {}, true},
                      {"keepalive", "keep connections open (ab -k)", "false", true, K::Bool},
                      {"check-length", "a body whose length differs from the first is a failure (ab)", "true", false, K::Bool},
                      {"max-body", "a longer response body is a failure (the transfer is cut there)", "64M", false, K::Int, {}, false, 1, 4294967296.0},
                      {"credentials-env", "environment variable holding user:password", "MWBENCH_HTTP_CREDENTIALS", false},
                      {"engine", "native (own sockets, http-parser), curl (libcurl), auto: native unless https or a proxy", "auto", false, K::Str, {"auto", "native", "curl"}}},
          .unavailable = nullptr,
          .make = [](const Job& j) { return std::make_unique<HttpAdapter>(j); }};
}

}  // namespace mw
