// Stopping: set by SIGINT, SIGTERM or SIGHUP (or a test). Every client stops after its current
// op, every wait and set-up loop within a fraction of a second; adapters poll it in their own
// waits (connecting, preloading, server start-up).
#pragma once
#include <atomic>
#include <string>

namespace mw {

std::atomic<bool>& stop_requested();
// The signal that asked to stop; 0 when none did (a test set the flag).
std::atomic<int>& stop_signal();
// For set-up loops (preloads, file layouts): throws Interrupted("interrupted during WHAT")
// once a stop is requested.
void throw_if_stopped(const std::string& what);

// This run's id for names every rank must agree on (a CouchDB database, a Gearman function):
// the process id, or rank 0's under MPI.
int run_id();
void set_run_id(int id);

}  // namespace mw
