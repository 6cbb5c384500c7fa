// One blocking wait on a socket for the adapters' set-up and clean-up exchanges (a handshake,
// an admin command, a library's non-blocking connect): until the socket is ready, its deadline
// passes, or a stop ends it (at once inside an OpeningScope, within half a second outside one:
// see stop.h).
#pragma once
#include <cstdint>

namespace mw {

// Polls fd for events in steps short enough to see a stop. Returns poll's revents (> 0) once
// the socket is ready; 0 when the deadline passed or a stop ended the wait (the caller tells
// the two apart with stop_ends_opening / throw_if_stopped_opening); -1 on a poll error (errno
// is kept). The deadline is shortened by deadline_after_stop at every step, so a stop that
// comes during the wait shortens it too.
int poll_until(int fd, short events, int64_t deadline_ns);

}  // namespace mw
