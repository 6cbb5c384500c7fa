// The HTTP engine shared by the couchdb and http adapters: one libcurl easy handle per client
// (one keep-alive connection), driven through libcurl's multi-socket API. Each client's fd is
// an epoll set of its own holding curl's socket and a timerfd for curl's timer, so the driver's
// event loop polls one fd per client: -c connections need no thread each, and curl's timers
// (connect, new connection after a close) run on time.
#pragma once
#include <curl/curl.h>

#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "adapter.h"
#include "histogram.h"

namespace mw::http {

// The protocol of one kind of request: what to send for an op, and whether the answer is right.
class Exchange {
 public:
  virtual ~Exchange() = default;
  virtual void request(uint64_t seq, std::string& method, std::string& url, std::string& body) = 0;
  // `detail` is storage the exchange may point the result's detail at.
  virtual OpResult check(uint64_t seq, long status, const std::string& body, std::string& detail) = 0;
};

struct Options {
  bool keepalive = true;
  double timeout_s = 5;
  std::vector<std::string> headers;  // "K: V"
  std::string userpwd;               // "user:password", never printed
};

// What the clients of a job saw, merged when each client closes (ab's report).
struct Stats {
  std::mutex mu;
  Histogram connect_us, processing_us, waiting_us, total_us;  // per request, libcurl's own timers (ab's)
  std::map<long, uint64_t> statuses;           // HTTP status -> responses
  uint64_t body_bytes = 0, header_bytes = 0, sent_bytes = 0, connects = 0;
  int64_t doc_length = -1;                     // the first response's body length
  void merge(Stats& other);
  Info report(double elapsed_s) const;         // ab-style figures
};

class Client final : public mw::Client {
 public:
  Client(std::unique_ptr<Exchange> ex, const Options& opts, Stats* stats);
  ~Client() override;
  OpResult run(uint64_t seq) override;  // blocking use (set-up, tests)
  int fd() const override { return ep_; }
  void submit(uint64_t seq) override;
  void flush() override;
  size_t reap(std::span<Completion> out) override;
  bool alive() const override { return alive_; }
  void abort(std::string_view why) override;

 private:
  static int on_socket(CURL*, curl_socket_t s, int what, void* self, void*);
  static int on_timer(CURLM*, long ms, void* self);
  static int on_close(void* self, curl_socket_t s);
  static size_t on_body(char* p, size_t size, size_t n, void* self);
  void act(curl_socket_t s, int events);
  void set_timer(long ms);

  std::unique_ptr<Exchange> ex_;
  Options opts_;
  Stats* stats_;
  Stats local_;
  CURLM* multi_ = nullptr;
  CURL* easy_ = nullptr;
  curl_slist* headers_ = nullptr;
  int ep_ = -1;     // epoll set: curl's sockets and timer_
  int timer_ = -1;  // timerfd armed for libcurl's short timeouts
  bool armed_ = false;
  std::map<int, uint32_t> watched_;  // socket -> events registered in ep_
  bool busy_ = false, alive_ = true;
  uint64_t seq_ = 0;
  std::string method_, url_, body_, reply_, detail_;
  std::vector<Completion> backlog_;
};

// One blocking request (set-up, verification): status code, body; throws SetupError naming
// the URL (without credentials) when the server cannot be reached.
struct Reply {
  long status = 0;
  std::string body;
};
Reply fetch(const std::string& method, const std::string& url, const std::string& body, const Options& opts);

}  // namespace mw::http
