// --fault slow and cut (api/fault.h): a TCP relay mwbench puts between a job's clients and its
// server. Each route listens on 127.0.0.1 on a port of its own and relays every connection to its
// upstream, on one thread (epoll). Every wait is bounded: an upstream connect, and a write that
// makes no progress, by the timeout (the pair is then reset); each direction holds at most
// kProxyBuffer bytes (reading from its source stops until they drain).
//
// slow(d): every chunk read from then on is passed on d later, in each direction. cut(true): every
// open connection is reset (RST, SO_LINGER 0) and the listeners closed, so that connects are
// refused; cut(false) listens again on the same ports.
//
// The runner installs one for a job with a proxy fault (ProxyRoute): the servers that job's set-up
// starts (services.h) are relayed, and the job's --host and --port point at it (core/runner.cpp).
#pragma once
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace mw {

inline constexpr size_t kProxyBuffer = 1 << 20;  // bytes held per direction of a connection

class FaultProxy {
 public:
  explicit FaultProxy(double timeout_s);
  ~FaultProxy();
  FaultProxy(const FaultProxy&) = delete;
  FaultProxy& operator=(const FaultProxy&) = delete;

  // A listener on 127.0.0.1 relaying to host:port (a name is resolved now); returns its port.
  // Throws SetupError naming the upstream.
  int add(const std::string& host, int port);
  // "127.0.0.1:41000 -> 127.0.0.1:6379", the routes separated by ", ".
  std::string describe() const;
  size_t routes() const;
  // Each chunk read from now on held this long before it is passed on (0: none).
  void slow(int64_t delay_ns) { delay_ns_.store(delay_ns); }
  // true: every connection reset and the listeners closed; false: listening again. "" or why not
  // (a port could not be bound again; the loop did not answer).
  std::string cut(bool on);
  // Connections reset by cuts so far, and relayed in all (for the tests).
  uint64_t resets() const { return resets_.load(); }
  uint64_t relayed() const { return relayed_.load(); }

  struct Loop;  // proxy.cpp

 private:
  std::unique_ptr<Loop> loop_;
  std::atomic<int64_t> delay_ns_{0};
  std::atomic<uint64_t> resets_{0}, relayed_{0};
  std::thread thread_;
};

// While one lives, every Service started (shared_service() included: it then starts one of the job's
// own) relays through `proxy`: its port() is the relay's. One at a time.
class ProxyRoute {
 public:
  explicit ProxyRoute(FaultProxy* proxy);
  ~ProxyRoute();
  ProxyRoute(const ProxyRoute&) = delete;
  ProxyRoute& operator=(const ProxyRoute&) = delete;
};
// The proxy of the route in force, or null.
FaultProxy* routed_proxy();

}  // namespace mw
