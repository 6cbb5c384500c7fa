#include "adapters/events.h"

#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>

#include "api/wait.h"
#include "services/resources.h"
#include "util/clock.h"
#include "util/net.h"
#include "util/status.h"
#include "util/text.h"

namespace mw {

namespace {

class InProcess final : public EventProbe {
 public:
  InProcess(std::string source, const std::atomic<uint64_t>* syncs, std::string what)
      : source_(std::move(source)), syncs_(syncs), what_(std::move(what)) {}
  std::string source() const override { return source_; }
  std::vector<EventReading> sample(int64_t) override {
    using K = EventReading::Kind;
    std::vector<EventReading> out;
    if (const TaskSample t = sample_tasks({getpid()}); t.found)
      out.push_back({"major_faults", static_cast<double>(t.major_faults), K::Counter,
                     "mwbench's major page faults (the store's mapped pages read from the device)"});
    if (syncs_) out.push_back({"syncs", static_cast<double>(syncs_->load()), K::Counter, what_});
    return out;
  }

 private:
  std::string source_;
  const std::atomic<uint64_t>* syncs_;
  std::string what_;
};

}  // namespace

std::unique_ptr<EventProbe> in_process_events(std::string source, const std::atomic<uint64_t>* syncs,
                                              std::string syncs_what) {
  return std::make_unique<InProcess>(std::move(source), syncs, std::move(syncs_what));
}

std::string http_get(const std::string& host, int port, const std::string& path, int64_t deadline) {
  constexpr size_t kCap = 4 << 20;
  const std::string where = host + ":" + std::to_string(port);
  std::string err;
  const double left_s = std::max(0.001, static_cast<double>(deadline - now_ns()) / 1e9);
  const int fd = tcp_connect(host, port, left_s, &err);
  if (fd < 0) throw SetupError(where + ": cannot connect: " + err);
  auto fail = [&](const std::string& why) {
    close(fd);
    throw SetupError(where + path + ": " + why);
  };
  const std::string req = "GET " + path + " HTTP/1.0\r\nHost: " + host + "\r\n\r\n";
  for (size_t sent = 0; sent < req.size();) {
    if (poll_until(fd, POLLOUT, deadline) <= 0) fail("cannot send the request within the timeout");
    const ssize_t n = ::send(fd, req.data() + sent, req.size() - sent, MSG_NOSIGNAL);
    if (n < 0 && (errno == EAGAIN || errno == EINTR)) continue;
    if (n <= 0) fail("cannot send the request");
    sent += static_cast<size_t>(n);
  }
  std::string out;
  char buf[16384];
  for (;;) {
    if (poll_until(fd, POLLIN, deadline) <= 0) fail("no whole answer within the timeout");
    const ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0 && (errno == EAGAIN || errno == EINTR)) continue;
    if (n <= 0) break;  // HTTP/1.0: the answer ends with the connection
    out.append(buf, static_cast<size_t>(n));
    if (out.size() > kCap) fail("the answer is larger than 4 MiB");
  }
  close(fd);
  const size_t head = out.find("\r\n\r\n");
  if (out.rfind("HTTP/1.", 0) != 0 || head == std::string::npos)
    throw SetupError(where + path + ": not an HTTP answer");
  const std::string status = out.substr(9, 3);
  if (status == "401" || status == "403")  // the monitoring port wants credentials this probe has not
    throw ProbeRefused(where + path + ": HTTP " + status);
  if (status != "200")
    throw SetupError(where + path + ": HTTP " + printable(out.substr(9, std::min<size_t>(out.find('\r'), 80) - 9)));
  return out.substr(head + 4);
}

}  // namespace mw
