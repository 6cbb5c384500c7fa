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

namespace {

// The child: its own group (killed whole), output into the pipe, input from nothing. -1 when it
// could not be made.
pid_t spawn(const std::string& command, int out_fd) {
  const pid_t pid = fork();
  if (pid != 0) return pid;
  setpgid(0, 0);
  signal(SIGPIPE, SIG_DFL);
  for (int sig : {SIGINT, SIGTERM, SIGHUP}) signal(sig, SIG_DFL);
  int in = ::open("/dev/null", O_RDONLY);
  if (in >= 0) dup2(in, 0);
  dup2(out_fd, 1);
  dup2(out_fd, 2);
  execl("/bin/sh", "sh", "-c", command.c_str(), static_cast<char*>(nullptr));
  _exit(127);
}

// A command's process group while it runs: its output read a line at a time (the metric's first
// match kept, the last lines too); a stop or the timeout asks the group to end first, as
// timeout(1) does, so that what it started can clean up after itself (a store's data directory, a
// server it manages), and kills it after the grace if its leader is still running.
class Running {
 public:
  Running(CommandRun& out, pid_t pid, int fd, double timeout_s, const std::regex* re,
          std::chrono::steady_clock::time_point start)
      : out_(out), pid_(pid), fd_(fd), timeout_s_(timeout_s), re_(re), start_(start) {}

  // Its output until the end (or until it is killed).
  void read_output() {
    char buf[1 << 14];
    for (;;) {
      pollfd p{fd_, POLLIN, 0};
      const int r = poll(&p, 1, 100);
      if (ended()) break;
      if (r > 0) {
        const ssize_t n = read(fd_, buf, sizeof buf);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) break;  // the end of its output
        for (ssize_t i = 0; i < n; ++i) {
          if (buf[i] == '\n')
            take_line();
          else if (line_.size() < kLineMax)
            line_ += buf[i];
        }
        continue;
      }
      // Quiet for a while: it may have exited and left a process of its own holding the output open.
      if (r == 0 && wait4(pid_, &status_, WNOHANG, &ru_) == pid_) {
        reaped_ = true;
        break;
      }
    }
    out_.wall_s = elapsed();
    if (!line_.empty()) take_line();
    out_.tail.assign(tail_.begin(), tail_.end());
  }

  // Its exit, under the same rules: a command that closed its output and runs on is not waited
  // for past its timeout. Then what it left running in its group is killed.
  void reap() {
    while (!reaped_) {
      const pid_t w = wait4(pid_, &status_, WNOHANG, &ru_);
      if (w == pid_ || (w < 0 && errno != EINTR)) break;
      if (ended()) {
        while (wait4(pid_, &status_, 0, &ru_) < 0 && errno == EINTR) {}
        break;
      }
      poll(nullptr, 0, 10);
    }
    kill(-pid_, SIGKILL);
    out_.cpu_s = static_cast<double>(ru_.ru_utime.tv_sec + ru_.ru_stime.tv_sec) +
                 static_cast<double>(ru_.ru_utime.tv_usec + ru_.ru_stime.tv_usec) / 1e6;
    if (WIFEXITED(status_))
      out_.exit_code = WEXITSTATUS(status_);
    else if (WIFSIGNALED(status_))
      out_.signal = WTERMSIG(status_);
  }

  bool found() const { return found_; }

 private:
  double elapsed() const { return std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count(); }

  void take_line() {
    if (re_ && !found_ && match_line(*re_, line_, out_.match)) found_ = true;
    tail_.push_back(line_);
    if (tail_.size() > kTailLines) tail_.pop_front();
    line_.clear();
  }

  // True once the group was killed; asks it to end (SIGTERM) first on a stop or at the timeout.
  bool ended() {
    if (kill_at_ < 0 && (stop_requested().load() || (timeout_s_ > 0 && elapsed() > timeout_s_))) {
      (stop_requested().load() ? out_.stopped : out_.timed_out) = true;
      kill(-pid_, SIGTERM);
      kill(-pid_, SIGCONT);
      kill_at_ = elapsed() + kEndGraceS;
    }
    if (kill_at_ < 0 || elapsed() <= kill_at_) return false;
    kill(-pid_, SIGKILL);
    return true;
  }

  CommandRun& out_;
  const pid_t pid_;
  const int fd_;
  const double timeout_s_;
  const std::regex* re_;                               // null: no metric
  const std::chrono::steady_clock::time_point start_;  // before the fork: the wall time is the command's
  std::deque<std::string> tail_;
  std::string line_;
  bool found_ = false, reaped_ = false;
  int status_ = 0;
  rusage ru_{};
  double kill_at_ = -1;  // asked to end: killed at this elapsed time if still running
};

// The metric's group read as a number (leading spaces skipped).
void read_value(CommandRun& out) {
  char* end = nullptr;
  std::string text = out.match;
  while (!text.empty() && text.front() == ' ') text.erase(0, 1);
  out.value = std::strtod(text.c_str(), &end);
  out.matched = end != text.c_str() && std::isfinite(out.value);
}

}  // namespace

CommandRun run_command(const std::string& command, const std::string& pattern, double timeout_s) {
  CommandRun out;
  std::regex re;
  if (!pattern.empty()) re = compile(pattern);
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) return out;
  const auto start = std::chrono::steady_clock::now();
  const pid_t pid = spawn(command, fds[1]);
  if (pid < 0) {
    ::close(fds[0]), ::close(fds[1]);
    return out;
  }
  setpgid(pid, pid);  // (both sides set it: whichever runs first)
  ::close(fds[1]);
  out.started = true;
  Running child(out, pid, fds[0], timeout_s, pattern.empty() ? nullptr : &re, start);
  child.read_output();
  ::close(fds[0]);
  child.reap();
  if (child.found()) read_value(out);
  return out;
}

}  // namespace mw
