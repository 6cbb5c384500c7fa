// After a request times out, is the server still there? A fresh connection that answers within
// the timeout says yes (and takes over); otherwise the client is lost. One verdict is shared by
// the clients of a job for one timeout, so a stopped server costs one probe, not one per client.
// For adapters with their own connections (redis, memcached).
#pragma once
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>

#include "util/status.h"

namespace mw {

template <class Conn>
class Health {
 public:
  // `open` makes a fresh connection within the timeout or throws SetupError saying why.
  std::unique_ptr<Conn> probe(double timeout_s, const std::function<std::unique_ptr<Conn>()>& open, std::string& why) {
    std::lock_guard lk(mu_);
    if (failed_ && now() - failed_at_ < timeout_s) {
      why = why_;
      return nullptr;
    }
    try {
      auto c = open();
      failed_ = false;
      return c;
    } catch (const SetupError& e) {
      failed_ = true;
      failed_at_ = now();
      why_ = e.what();
      why = why_;
      return nullptr;
    }
  }
  // Why the server was given up during the run ("" when it was not).
  std::string lost() {
    std::lock_guard lk(mu_);
    return failed_ ? why_ : "";
  }

 private:
  static double now() {
    return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
  }
  std::mutex mu_;
  bool failed_ = false;
  double failed_at_ = 0;
  std::string why_;
};

}  // namespace mw
