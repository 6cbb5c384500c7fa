#include "api/wait.h"

#include <poll.h>

#include <cerrno>

#include "api/stop.h"
#include "util/clock.h"

namespace mw {

int poll_until(int fd, short events, int64_t deadline_ns) {
  for (;;) {
    const int64_t left = deadline_after_stop(deadline_ns) - now_ns();
    if (left <= 0 || stop_ends_opening()) return 0;
    pollfd p{fd, events, 0};
    const int n = poll(&p, 1, opening_poll_ms(left));
    if (n > 0) return p.revents;
    if (n < 0 && errno != EINTR) return -1;
  }
}

}  // namespace mw
