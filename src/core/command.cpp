#include "core/command.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <regex>

#include "api/stop.h"
#include "util/status.h"
#include "util/text.h"

namespace mw {

namespace {

std::regex compile(const std::string& pattern) {
  try {
    return std::regex(pattern, std::regex::ECMAScript);
  } catch (const std::regex_error& e) {
    throw SetupError("--metric: '" + pattern + "' is not a regular expression: " + e.what());
  }
}

// Reads a line's figure: the first group of the first match that took part.
bool match_line(const std::regex& re, const std::string& line, std::string& group) {
  std::smatch m;
  if (!std::regex_search(line, m, re)) return false;
  for (size_t g = 1; g < m.size(); ++g)
    if (m[g].matched) {
      group = m[g].str();
      return true;
    }
  return false;
}

}  // namespace

std::string CommandRun::why() const {
  if (!started) return "could not start";
  if (stopped) return "stopped";
  if (timed_out) return "timed out after " + fmt(wall_s, 0) + " s";
  if (signal) return "killed by signal " + std::to_string(signal);
  if (exit_code != 0) return "exit " + std::to_string(exit_code);
  return "";
}

void check_metric_pattern(const std::string& pattern) {
  if (compile(pattern).mark_count() < 1)
    throw SetupError("--metric: '" + pattern +
                     "' has no group: put the figure in parentheses ('([0-9.]+) requests per second')");
}

CommandRun run_command(const std::string& command, const std::string& pattern, double timeout_s) {
  CommandRun out;
  const bool want = !pattern.empty();
  std::regex re;
  if (want) re = compile(pattern);
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) return out;
  const auto start = std::chrono::steady_clock::now();
  const pid_t pid = fork();
  if (pid < 0) {
    ::close(fds[0]), ::close(fds[1]);
    return out;
  }
  if (pid == 0) {  // the child: its own group (killed whole), output into the pipe, input from nothing
    setpgid(0, 0);
    signal(SIGPIPE, SIG_DFL);
    for (int sig : {SIGINT, SIGTERM, SIGHUP}) signal(sig, SIG_DFL);
    int in = ::open("/dev/null", O_RDONLY);
    if (in >= 0) dup2(in, 0);
    dup2(fds[1], 1);
    dup2(fds[1], 2);
    execl("/bin/sh", "sh", "-c", command.c_str(), static_cast<char*>(nullptr));
    _exit(127);
  }
  setpgid(pid, pid);  // (both sides set it: whichever runs first)
  ::close(fds[1]);
  out.started = true;
  std::deque<std::string> tail;
  std::string line;
  bool found = false;
  auto take_line = [&] {
    if (want && !found && match_line(re, line, out.match)) found = true;
    tail.push_back(line);
    if (tail.size() > kTailLines) tail.pop_front();
    line.clear();
  };
  auto elapsed = [&] { return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(); };
  char buf[1 << 14];
  int status = 0;
  rusage ru{};
  bool reaped = false;
  bool output_open = true;
  double kill_at = -1;  // asked to end (SIGTERM): killed at this elapsed time if still running
  // A stop or the timeout asks the group to end first, as timeout(1) does, so that what it
  // started can clean up after itself (a store's data directory, a server it manages); the group
  // is killed after the grace if its leader is still running. True once it was killed.
  auto ended = [&] {
    if (kill_at < 0 && (stop_requested().load() || (timeout_s > 0 && elapsed() > timeout_s))) {
      (stop_requested().load() ? out.stopped : out.timed_out) = true;
      kill(-pid, SIGTERM);
      kill(-pid, SIGCONT);
      kill_at = elapsed() + kEndGraceS;
    }
    if (kill_at < 0 || elapsed() <= kill_at) return false;
    kill(-pid, SIGKILL);
    return true;
  };
  // Its output until the end (or until it is killed); then its exit, under the same rules: a
  // command that closed its output and runs on is not waited for past its timeout.
  while (output_open && !reaped) {
    pollfd p{fds[0], POLLIN, 0};
    int r = poll(&p, 1, 100);
    if (ended()) break;
    if (r > 0) {
      ssize_t n = read(fds[0], buf, sizeof buf);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) {  // the end of its output
        output_open = false;
        break;
      }
      for (ssize_t i = 0; i < n; ++i) {
        if (buf[i] == '\n')
          take_line();
        else if (line.size() < kLineMax)
          line += buf[i];
      }
      continue;
    }
    // Quiet for a while: it may have exited and left a process of its own holding the output open.
    if (r == 0 && wait4(pid, &status, WNOHANG, &ru) == pid) reaped = true;
  }
  out.wall_s = elapsed();
  if (!line.empty()) take_line();
  ::close(fds[0]);
  while (!reaped) {
    const pid_t w = wait4(pid, &status, WNOHANG, &ru);
    if (w == pid || (w < 0 && errno != EINTR)) break;
    if (ended()) {
      while (wait4(pid, &status, 0, &ru) < 0 && errno == EINTR) {}
      break;
    }
    poll(nullptr, 0, 10);
  }
  kill(-pid, SIGKILL);  // what it left running in its group
  out.cpu_s = static_cast<double>(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
              static_cast<double>(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
  if (WIFEXITED(status))
    out.exit_code = WEXITSTATUS(status);
  else if (WIFSIGNALED(status))
    out.signal = WTERMSIG(status);
  out.tail.assign(tail.begin(), tail.end());
  if (found) {
    char* end = nullptr;
    std::string text = out.match;
    while (!text.empty() && text.front() == ' ') text.erase(0, 1);
    out.value = std::strtod(text.c_str(), &end);
    out.matched = end != text.c_str() && std::isfinite(out.value);
  }
  return out;
}

}  // namespace mw
