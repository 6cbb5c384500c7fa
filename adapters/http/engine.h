// The native HTTP/1.1 engine of the http and couchdb adapters, written as the Redis client is:
// each client is one non-blocking socket on the driver's event loop (no epoll set or timer of
// its own), requests encoded once (ab) or per op (couchdb) into one buffer and sent with one
// write, answers framed by libhttp-parser (wire.h). -P > 1 pipelines requests on the
// connection, each timed from its own submit. A keep-alive connection the server closes is
// opened again: requests after an answer that announced the close were never processed and
// are sent again; any other loss of the connection fails what was in flight. libcurl (client.h)
// stays for https, proxies and set-up calls; make_client() picks.
#pragma once
#include <deque>
#include <memory>
#include <string>

#include "adapters/http/client.h"
#include "adapters/http/wire.h"

namespace mw::http {

class NativeClient final : public mw::Client, private ResponseParser::Sink {
 public:
  // `target` is resolved (resolve()); `stats` gets this client's figures when it closes.
  NativeClient(std::unique_ptr<Exchange> ex, const Options& opts, std::shared_ptr<const Target> target, Stats* stats);
  ~NativeClient() override;
  OpResult run(uint64_t seq) override;  // blocking use (tests, set-up)
  int fd() const override { return fd_; }
  bool wants_write() const override { return fd_ >= 0 && (connecting_ || sent_ < buf_.size()); }
  void submit(uint64_t seq) override;
  void submit_request(const Request& r) override;
  void flush() override;
  size_t reap(std::span<Completion> out) override;
  bool alive() const override { return alive_; }
  void abort(std::string_view why) override;

 private:
  struct Flight {
    uint64_t seq;
    size_t len;             // its bytes in buf_
    int64_t start;          // submitted
    int64_t connected = 0;  // its connection was usable (0: not yet)
    int64_t first = 0;      // first byte of its answer
  };
  void on_first_byte() override;
  void on_answer(const Answer& a, std::string& body) override;
  void open();                // a fresh connection, non-blocking
  void connected(int64_t t);  // the connection is usable
  void retire();              // done with the connection (see the .cpp)
  // Fails every request in flight and drops the connection; a failed connect with nothing in
  // flight fails the next request instead (every loss is a counted failure).
  void drop(Status s, const std::string& why, bool connect_failed = false);
  void socket_error(int err, const char* doing);
  void server_closed();  // after an answer that ended the connection
  void finish_front(Status s, std::string why);
  size_t append_request(uint64_t seq);  // encodes the exchange's request for seq into buf_
  void lost_unless_answering();

  std::unique_ptr<Exchange> ex_;
  Options opts_;
  std::shared_ptr<const Target> target_;
  Stats* stats_;
  Stats local_;
  ResponseParser parser_;
  std::string block_;  // header lines of every request
  std::string fixed_;  // the one request of a fixed exchange, encoded once
  std::string method_, url_, body_;
  std::string buf_;  // bytes of the requests in flight, in order
  size_t head_ = 0;  // bytes of answered requests at the front of buf_
  size_t sent_ = 0;  // bytes of buf_ written to the connection
  std::deque<Flight> flights_;
  std::deque<Completion> ready_;
  std::deque<std::string> details_;  // details of ready_ (valid until the driver reaps again)
  std::string scratch_;
  int fd_ = -1;
  int stale_ = -1;  // the last connection, closed once the next is open
  bool connecting_ = false;
  bool alive_ = true;
  bool unsolicited_ = false;
  bool timed_out_ = false;  // the last request timed out, and no answer came since
  struct Pending {
    Status status = Status::Ok;
    std::string why;
  } pending_;               // an answer began with no request in flight
  int64_t now_ = 0;         // the time of the last read
  int64_t started_ns_ = 0;  // the oldest request that timed out (liveness probe)
};

// The engine for a URL: "auto" (native for http://, libcurl for https:// or when a proxy
// variable applies), "native" or "curl". Throws SetupError on a choice that cannot work.
bool use_native(const std::string& engine, const Target& t, const std::string& adapter);
// "native (http-parser 2.9.4)" or "libcurl 7.88.1": what describe() shows.
std::string engine_name(bool native);
// A client on the chosen engine: native when `target` is set, else libcurl.
std::unique_ptr<mw::Client> make_client(std::unique_ptr<Exchange> ex, const Options& opts,
                                        const std::shared_ptr<const Target>& target, Stats* stats);

}  // namespace mw::http
