// One run of an external command for `mwbench decide`: `/bin/sh -c CMD` in a process group of its
// own, its output (stdout and stderr together) read as it comes, its wall time from the fork to
// its exit, its CPU time (user + system of it and the children it waited for), and a figure read
// from its output by a regular expression. A command that outlives its timeout, or a run that is
// stopped (Ctrl-C), has its whole group sent SIGTERM, and SIGKILL kEndGraceS later if it is still
// running (what it started gets to clean up, as under timeout(1)).
#pragma once
#include <string>
#include <vector>

namespace mw {

struct CommandRun {
  bool started = false;
  int exit_code = -1;  // -1: killed by a signal, or not started
  int signal = 0;      // the signal that ended it (0: none)
  bool timed_out = false;
  bool stopped = false;  // mwbench was asked to stop (the group was ended)
  double wall_s = 0;
  double cpu_s = 0;
  std::vector<std::string> tail;  // its last output lines (at most kTailLines, each cut at kLineMax)
  // The metric: the first group that took part in the first match of `pattern` on a line of the
  // output ("" pattern: none asked), and the number it reads as.
  bool matched = false;
  std::string match;
  double value = 0;
  bool ok() const { return started && exit_code == 0 && !timed_out && !stopped; }
  std::string why() const;  // not ok: "exit 1", "killed by signal 9", "timed out after 600 s", ...
};
constexpr size_t kTailLines = 10;
constexpr size_t kLineMax = 4096;
constexpr double kEndGraceS = 5;

// Throws SetupError naming --metric when `pattern` is not a regular expression with a group.
void check_metric_pattern(const std::string& pattern);
CommandRun run_command(const std::string& command, const std::string& pattern, double timeout_s);

}  // namespace mw
