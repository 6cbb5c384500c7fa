// --reconnect-every and --connect-rate: a client's connection closed and opened again every N
// ops, by the core (the adapter's open(), AdapterSpec::connects), each open timed into a
// histogram of its own; and the opens of a process's clients paced by a shared gate.
#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>

#include "api/adapter.h"

namespace mw {

class Histogram;

// At most `rate` new connections per second across the clients that share it: a token bucket
// of one token (no burst), so N connections take (N-1)/rate seconds however many clients ask.
class ConnectGate {
 public:
  explicit ConnectGate(double rate) : gap_ns_(static_cast<int64_t>(1e9 / rate)) {}
  // Waits for this caller's turn (in slices, so that a stop ends it): false when a stop or
  // `deadline` (now_ns; the phase's end) came first.
  bool wait(int64_t deadline);

 private:
  const int64_t gap_ns_;
  std::mutex mu_;
  int64_t next_ = 0;  // when the next turn is
};

// How a phase's clients renew their connections (the load phase's never do).
struct Renewal {
  uint64_t every = 0;                                // ops per connection
  std::function<std::unique_ptr<Client>(int)> open;  // the adapter's open() of client i (of the job's)
  ConnectGate* gate = nullptr;                       // --connect-rate; null: unpaced
  // What one renewal took: its open (`connect_ns`) and its wait for the gate before it.
  struct Took {
    int64_t connect_ns = 0, wait_ns = 0;
    bool renewed = false;  // false: a stop or the deadline came during the wait; the client kept its connection
    Handshake handshake = Handshake::None;  // the new connection's (Client::handshake)
  };
  // Closes the client in `slot` (after its gate's turn, if that comes before `deadline`) and opens
  // client `i` in its place. Throws what open() throws, the slot then empty.
  Took renew(std::unique_ptr<Client>& slot, int i, int64_t deadline) const;
};

}  // namespace mw
