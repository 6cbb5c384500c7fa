// --metrics-listen ADDR:PORT: the running jobs' counters (live.h) over HTTP, for Prometheus to
// scrape, from one thread of its own. Bounded so it can never hold up a run: at most 16
// connections at once (more are closed at once), a request of at most 8 KiB (431 beyond), 2 s
// for a client to send its request and read the reply (then it is closed), non-blocking
// sockets throughout; it closes its socket and every connection when destroyed.
#pragma once
#include <atomic>
#include <memory>
#include <string>
#include <thread>

namespace mw {

class MetricsServer {
 public:
  // Listens on `spec` ("127.0.0.1:9464", "[::1]:9464"; port 0: any free one). A non-loopback
  // address needs `any`. Throws SetupError naming --metrics-listen (a bad address, a port in use).
  MetricsServer(const std::string& spec, bool any);
  ~MetricsServer();
  MetricsServer(const MetricsServer&) = delete;
  MetricsServer& operator=(const MetricsServer&) = delete;
  int port() const { return port_; }
  std::string url() const { return url_; }

  static constexpr size_t kMaxRequest = 8192;
  static constexpr int kMaxConnections = 16;
  static constexpr int64_t kClientTimeoutNs = 2'000'000'000;

 private:
  void serve();
  int fd_ = -1, wake_ = -1, port_ = 0;
  std::string url_;
  std::thread thread_;
};

}  // namespace mw
