// The libcurl engine of the couchdb and http adapters (https, proxies, set-up calls; the
// native engine in engine.h serves plain http), and what both engines share: the options, the
// reply caps, ab's figures (Stats). One libcurl easy handle per client
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

#include "adapters/guard.h"
#include "api/adapter.h"
#include "util/histogram.h"

namespace mw::http {

// The protocol of one kind of request: what to send for an op, and whether the answer is right.
class Exchange {
 public:
  virtual ~Exchange() = default;
  virtual void request(uint64_t seq, std::string& method, std::string& url, std::string& body) = 0;
  // `body` is the answer's body when keeps_body() (else empty), `length` its length in bytes.
  // `detail` is storage the exchange may point the result's detail at.
  virtual OpResult check(uint64_t seq, long status, const std::string& body, int64_t length, std::string& detail) = 0;
  // Every request is the same (ab's): the native engine encodes it once.
  virtual bool fixed() const { return false; }
  virtual bool keeps_body() const { return true; }
  // A workload request (--mix, native engine): told before request() is asked for its seq.
  virtual void begin(const Request& /*r*/) {}
  // Ops of more than one exchange (read the revision, then write): after check(), true when the
  // op goes on with another request for `seq` (request() is asked again); the op completes,
  // timed from its first submit, with the answer for which again() is false.
  virtual bool again(uint64_t /*seq*/) { return false; }
};

constexpr int64_t kDefaultMaxBody = int64_t{64} << 20;   // --max-body default
constexpr int64_t kMaxHeaderBytes = int64_t{256} << 10;  // all header lines of one response

struct Options {
  bool keepalive = true;
  double timeout_s = 5;                // bounds every transfer, set-up calls too
  std::vector<std::string> headers;    // "K: V"
  std::string userpwd;                 // "user:password", never printed
  int64_t max_body = kDefaultMaxBody;  // a longer body is a failure, never buffered whole
  int64_t max_header = kMaxHeaderBytes;
  std::string probe_url;  // asked after a timeout: does the server still answer?
};

// The reply checks, callable without a socket (tests, adapters/couchdb/fuzz_http_reply.cpp).
// Appends [p, p+n) to `buf` unless it would exceed `cap`; false means the transfer must stop.
bool append_capped(std::string& buf, const char* p, size_t n, int64_t cap);
// Counts one header line against `cap`; false means the headers are too large.
bool count_header(int64_t& total, size_t n, int64_t cap);
// "64M", "512k", "1000 bytes": a size as the --max-body flag accepts it.
std::string size_text(int64_t bytes);
// At most `max` bytes of `s` that are safe in a one-line message: printable ASCII kept,
// anything else (control bytes, non-UTF-8, multi-byte) shown as '?', "..." when cut.
std::string printable(std::string_view s, size_t max = 80);
// The outcome of a transfer that did not complete (curl's code), and why, in words.
OpResult transfer_failure(CURLcode rc, bool body_too_big, bool header_too_big, const Options& o, const std::string& url,
                          std::string& detail);

// What the clients of a job saw, merged when each client closes (ab's report). A capacity
// search's steps run on clients opened once: take() reads the open clients' counts between two
// phases, so that the job's row carries its own step's figures, not every step's summed.
struct Stats {
  std::mutex mu;
  Liveness live;                                              // one probe per job after timeouts
  Histogram connect_us, processing_us, waiting_us, total_us;  // per request, libcurl's own timers (ab's)
  std::map<long, uint64_t> statuses;                          // HTTP status -> responses
  uint64_t body_bytes = 0, header_bytes = 0, sent_bytes = 0, connects = 0;
  uint64_t wire_in = 0;                    // bytes read off the connection (the native engine's:
                                           // its headers are wire_in less the bodies)
  uint64_t resent = 0;                     // sent again after the server announced a close
  int64_t doc_length = -1;                 // the first response's body length
  Metrics report(double elapsed_s) const;  // ab-style figures
  // A client's own counts (its `local`) are registered while it is open, and merged when it closes.
  void attach(Stats* local);
  void detach(Stats& local);
  // Between two phases, while no client runs: `out` (a fresh Stats) gets every count since the
  // last take (or since the clients opened), the open clients' included, and they count anew.
  void take(Stats& out);

 private:
  void add(const Stats& o);  // o's counts added to these (the caller holds mu)
  void clear();              // every count back to 0 (the first response's length stays)
  std::vector<Stats*> open_;
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
  static size_t on_header(char* p, size_t size, size_t n, void* self);
  void act(curl_socket_t s, int events);
  void set_timer(long ms);
  void lost_unless_answering();  // after a timeout: alive_ stays true only if a probe answers
  void release();

  std::unique_ptr<Exchange> ex_;
  Options opts_;
  Stats* stats_;
  Stats local_;
  Liveness* live_;
  CURLM* multi_ = nullptr;
  CURL* easy_ = nullptr;
  curl_slist* headers_ = nullptr;
  int ep_ = -1;     // epoll set: curl's sockets and timer_
  int timer_ = -1;  // timerfd armed for libcurl's short timeouts
  bool armed_ = false;
  std::map<int, uint32_t> watched_;  // socket -> events registered in ep_
  bool busy_ = false, alive_ = true;
  bool body_too_big_ = false, header_too_big_ = false;
  int64_t header_total_ = 0;
  int64_t started_ns_ = 0;
  uint64_t seq_ = 0;
  std::string method_, url_, body_, reply_, detail_;
  std::vector<Completion> backlog_;
};

// One blocking request (set-up, verification): status code, body; throws SetupError naming
// the URL (without credentials) when the server cannot be reached, does not answer within
// the timeout, or sends a body or headers past the caps.
struct Reply {
  long status = 0;
  std::string body;
};
Reply fetch(const std::string& method, const std::string& url, const std::string& body, const Options& opts);
// A GET of `url` on a fresh connection, bounded by the timeout: "" when the server answered
// with any HTTP status, else why not.
std::string probe(const std::string& url, const Options& opts);

}  // namespace mw::http
