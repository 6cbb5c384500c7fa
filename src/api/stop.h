// Stopping: set by SIGINT, SIGTERM or SIGHUP (or a test). Every client stops after its current
// op, every wait and set-up loop within a fraction of a second; adapters poll it in their own
// waits (connecting, preloading, server start-up).
#pragma once
#include <atomic>
#include <cstdint>
#include <string>

namespace mw {

std::atomic<bool>& stop_requested();
// The signal that asked to stop; 0 when none did (a test set the flag).
std::atomic<int>& stop_signal();
// For set-up loops (preloads, file layouts): throws Interrupted("interrupted during WHAT")
// once a stop is requested.
void throw_if_stopped(const std::string& what);

// Opening clients or consumers: while one lives on a thread, the adapters' blocking set-up waits
// on that thread (connect, TLS handshake, a first request and its reply) end with Interrupted
// once a stop is requested, instead of waiting out their timeout. Outside it (an end check, a
// drain, a clean-up after the stop) those waits still run to their own deadline.
class OpeningScope {
 public:
  OpeningScope();
  ~OpeningScope();
  OpeningScope(const OpeningScope&) = delete;
  OpeningScope& operator=(const OpeningScope&) = delete;
};
// True when a stop is requested inside an OpeningScope; throw_if_stopped_opening throws
// Interrupted("interrupted during WHAT") then.
bool stop_ends_opening();
void throw_if_stopped_opening(const std::string& what);
// A library's blocking call on a socket that polls no flag of ours (librabbitmq's login waits
// out its whole timeout): while one of these lives on a thread inside an OpeningScope, a stop
// shuts the socket down in both directions, so the call returns at once with an error. The
// caller then calls throw_if_stopped_opening before reporting that error. Outside an
// OpeningScope it does nothing.
class StopShutsDown {
 public:
  explicit StopShutsDown(int fd);
  ~StopShutsDown();
  StopShutsDown(const StopShutsDown&) = delete;
  StopShutsDown& operator=(const StopShutsDown&) = delete;

 private:
  int fd_ = -1;
};
// A blocking wait's deadline once a stop is requested (outside an OpeningScope: a clean-up, a
// drain, a last look at the server): at most half a second from now, so that a silent server cannot
// hold the stop for its whole timeout.
int64_t deadline_after_stop(int64_t deadline_ns);
// The longest step of a set-up wait in ms: short inside an OpeningScope, so that a stop is seen.
int opening_poll_ms(int64_t left_ns);

// This run's id for names every rank must agree on (a CouchDB database, a Gearman function):
// the process id, or rank 0's under MPI.
int run_id();
void set_run_id(int id);

}  // namespace mw
