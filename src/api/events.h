// A server's own events (a snapshot forking, a checkpoint, a write stall, flow control), read by
// the adapter's event probe: a capability (Abilities::events), run by the core's timeline
// (core/timeline.h) on its own thread and connection once per interval, never on the timed path.
// The core owns the timeline and knows no adapter: it takes the readings as they come, takes the
// difference of counters, and matches them to the episodes it finds (core/episodes.h).
#pragma once
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

namespace mw {

struct EventReading {
  // Counter: a count since some start (the core takes its difference per interval); Level: a state
  // or an amount at the reading (1 while a snapshot runs, a checkpoint's age, a latency reported).
  enum class Kind : uint8_t { Counter, Level };
  std::string name;  // stable and short: "rdb_bgsave_in_progress", "checkpoints_timed"
  double value = 0;
  Kind kind = Kind::Counter;
  // In words, as an episode names it: "an RDB snapshot (BGSAVE) in progress".
  std::string what = {};
  std::string unit = {};  // "" (a count or a state), "ms", "bytes"
};

// Thrown by a probe whose server refuses its reading (an ACL without the right, a managed cloud
// service that hides the command): the timeline says once "server events not readable: <why>"
// and reads no more. Any other exception (a time-out, a lost connection) costs that interval's
// reading; the probe reconnects for the next.
struct ProbeRefused : std::runtime_error {
  using std::runtime_error::runtime_error;
};

class EventProbe {
 public:
  virtual ~EventProbe() = default;
  // Who the events are about, as the episodes name it: redis-server, postgres, rocksdb.
  virtual std::string source() const = 0;
  // Every event now, within `deadline_ns` (now_ns()'s clock): one reading each. A probe connects
  // when it has no connection (the first call, or after a failure), within the same deadline.
  virtual std::vector<EventReading> sample(int64_t deadline_ns) = 0;
};

}  // namespace mw
