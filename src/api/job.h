// A job: one op on one target, N times, by C clients with P in flight each.
#pragma once
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "api/fault.h"
#include "util/parse.h"
#include "util/redact.h"  // adapters use redact_url in their messages
#include "util/status.h"

namespace mw {

// --poll: what an event loop with nothing to read does before it sleeps in epoll_wait (loops.h,
// Phase::spin_ns). Off: sleeps at once. Auto: polls up to 100 us, only while polls pay (a reply
// arrives within the window), only with a core to spare, and only on a loop with at most
// loops::kPollDepthMax requests in flight (clients x -P). Fixed: polls `window_ns`, always.
struct PollPolicy {
  enum class Mode : uint8_t { Off, Auto, Fixed };
  Mode mode = Mode::Auto;
  int64_t window_ns = 100'000;
  std::string text() const;  // "auto", "off", "50us"
};
PollPolicy parse_poll(const std::string& v);  // throws SetupError naming --poll

struct Job {
  std::string name;  // shown in tables; defaults to "<adapter> <op>"
  std::string adapter;
  std::string op;
  uint64_t n = 10000;       // ops in the measured phase (ignored when duration_s > 0)
  double duration_s = 0;    // run for this long instead of n ops
  uint64_t warmup_ops = 0;  // untimed ops before measuring (split across clients)
  double warmup_s = 0;      // or untimed seconds
  int clients = 1;          // -c
  int pipeline = 1;         // -P: requests in flight per client
  int threads = 0;          // 0: one per blocking client, 1 event loop for pollable clients
  double rate = 0;          // ops/s across all clients; 0 = closed loop
  double timeout_s = 5;     // per request
  std::string source;       // "file:line" of the config that declared it, or "cli"
  std::string label;        // " key=value" for each list it took one value of (expand_jobs): its name ends with it
  std::string slo;          // objectives the job must meet (slo.h), checked when parsed
  // --find-max SLO: search the highest open-loop rate that meets it (core/capacity.h)
  std::string find_max;
  double find_precision = 0.05;             // the search ends when its bracket is this narrow (a fraction)
  double step_s = 5;                        // --step-duration: each step's measured time (after its warm-up)
  int find_repeat = 3;                      // the found rate measured again this many times (min-max reported)
  double interval_s = 1;                    // the time series' interval (series.h)
  PollPolicy poll;                          // --poll
  bool server_events = true;                // --server-events: the timeline's readings (core/timeline.h)
  std::vector<FaultSpec> faults;            // --fault: injected during the measured phase (api/fault.h)
  double reconnect_backoff_s = 0;           // --reconnect-backoff: the longest wait between reconnects; 0: none
  uint64_t reconnect_every = 0;             // --reconnect-every: a client's new connection every N ops; 0: kept
  double connect_rate = 0;                  // --connect-rate: new connections per second, at most; 0: unbounded
  std::map<std::string, std::string> opts;  // adapter options (strings, parsed by the adapter)

  bool has(const std::string& k) const { return opts.count(k) != 0; }
  std::string str(const std::string& k, const std::string& def = "") const;
  int64_t integer(const std::string& k, int64_t def) const;  // accepts 4k, 1M, 1G suffixes
  double number(const std::string& k, double def) const;
  bool flag(const std::string& k, bool def = false) const;
};

}  // namespace mw
