// What the network adapters (http, couchdb, gearman) share to survive a hostile or stopped
// server: one liveness probe per job after a timeout, and the open-file budget checked
// before a run instead of failing as "timeouts" part-way.
#pragma once
#include <sys/resource.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <mutex>
#include <string>
#include <string_view>

#include "util/status.h"

namespace mw {

// At most `max` bytes of `s` that are safe in a one-line message: printable ASCII kept,
// anything else (control bytes, non-UTF-8, multi-byte) shown as '?', "..." when cut.
inline std::string printable_text(std::string_view s, size_t max = 80) {
  std::string out;
  for (size_t i = 0; i < s.size() && i < max; ++i) {
    unsigned char c = static_cast<unsigned char>(s[i]);
    out += c >= 0x20 && c < 0x7f ? static_cast<char>(c) : '?';
  }
  if (s.size() > max) out += "...";
  return out;
}

inline int64_t guard_now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// After a timeout a client is lost unless a fresh connection answers. One probe serves every
// client of the job whose failed request started before the probe did: with -c 300 against a
// stopped server the job ends after about two timeouts, not 300.
class Liveness {
 public:
  // `since_ns`: when the failed request started (guard_now_ns()). `probe` makes a real
  // protocol round trip on a fresh connection, bounded by the timeout, and returns "" when
  // the server answered, else why not.
  bool answers(int64_t since_ns, const std::function<std::string()>& probe) {
    std::lock_guard lk(mu_);
    if (probed_ && last_start_ >= since_ns) return last_ok_;
    last_start_ = guard_now_ns();
    std::string why = probe();
    last_ok_ = why.empty();
    probed_ = true;
    return last_ok_;
  }

 private:
  std::mutex mu_;
  bool probed_ = false, last_ok_ = true;
  int64_t last_start_ = 0;
};

// Checks that `clients` clients needing about `per_client` descriptors each fit under
// RLIMIT_NOFILE, raising the soft limit up to the hard one first. Throws one clear line
// otherwise: better than every client failing with a "timeout" part-way through the run.
inline void ensure_open_files(const std::string& who, int clients, int per_client, int extra = 64) {
  rlimit rl{};
  if (getrlimit(RLIMIT_NOFILE, &rl) != 0) return;
  const rlim_t need = static_cast<rlim_t>(clients) * static_cast<rlim_t>(per_client) + static_cast<rlim_t>(extra);
  if (rl.rlim_cur != RLIM_INFINITY && rl.rlim_cur < need) {
    rlimit raised = rl;
    raised.rlim_cur = rl.rlim_max == RLIM_INFINITY || rl.rlim_max >= need ? need : rl.rlim_max;
    if (setrlimit(RLIMIT_NOFILE, &raised) == 0) rl = raised;
  }
  if (rl.rlim_cur != RLIM_INFINITY && rl.rlim_cur < need)
    throw SetupError(who + " -c " + std::to_string(clients) + ": too many open files (ulimit -n " +
                     std::to_string(rl.rlim_cur) + "; need about " + std::to_string(per_client) + " per client, " +
                     std::to_string(need) + " in all): raise ulimit -n or lower -c");
}

}  // namespace mw
