// Decisions on the command line (issue 41): the --decide options of `run` and the adapter
// commands, and `mwbench decide 'CMD A' 'CMD B' ...` for any commands, mwbench's or a peer tool's.
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <typeinfo>

#include "api/stop.h"
#include "app/cli.h"
#include "core/command.h"
#include "core/rounds.h"
#include "report/report.h"
#include "results/results.h"
#include "util/text.h"

namespace mw {

namespace {

constexpr int kUsage = 2;

double parse_margin(const std::string& text) {
  std::string t = text;
  if (!t.empty() && t.back() == '%') t.pop_back();
  char* end = nullptr;
  errno = 0;
  const double v = std::strtod(t.c_str(), &end);
  if (t.empty() || *end || errno == ERANGE || !(v > 0 && v < 100))
    throw SetupError("--margin expects a percentage above 0% and below 100% (5%), got '" + text + "'");
  return v / 100;
}

double parse_ratio(const std::string& text, const std::string& option) {
  char* end = nullptr;
  const double v = std::strtod(text.c_str(), &end);
  if (text.empty() || *end || !std::isfinite(v) || v <= 0 || v > 1000)
    throw SetupError(option + " expects a ratio above 0 and up to 1000 (0.9: at most 10% worse), got '" + text + "'");
  return v;
}

}  // namespace

void add_decide_options(cxxopts::Options& o, DecideFor f, bool expect) {
  const bool commands = f == DecideFor::Commands;
  const std::string what = commands ? "command" : "job";
  const std::string group = "decide";
  if (!commands)
    o.add_options(group)("decide",
                         "run the jobs in paired rounds (each once a round, in a balanced random order) until each is "
                         "decided against the baseline (the first job, or --baseline): faster, slower, equivalent, "
                         "different-within-margin or undecided");
  if (expect)
    o.add_options(group)("expect",
                         "a one-sided question: NAME>=RATIO or NAME<=RATIO (B>=1.05: B at least 5% better); NAME "
                         "is a " +
                             what + "'s letter (A, B, ...) or its name; may be repeated",
                         cxxopts::value<std::vector<std::string>>(), "Q");
  o.add_options(group)("margin", "the difference that matters: faster or slower beyond it, equivalent within it",
                       cxxopts::value<std::string>()->default_value("5%"), "P%")(
      "max-rounds", "the most rounds (the first look is after round 6)", cxxopts::value<int>()->default_value("30"),
      "N")("max-time", "begin no round that would end past this (10m)", cxxopts::value<std::string>(), "DURATION")(
      "noninferior", "every " + what + " at least RATIO of the baseline (0.9: at most 10% worse)",
      cxxopts::value<std::string>(), "RATIO")(
      "gate", "exit 3 when a verdict is slower, or a question of --expect or --noninferior was not shown to hold")(
      "order-seed", "the random seed of the round orders (default: the clock)", cxxopts::value<uint64_t>(), "N");
  if (f != DecideFor::Run)  // run's --baseline is the gate's, which names a job with --decide
    o.add_options(group)("baseline",
                         "the " + what + " the others are judged against (its letter A, B, ... or its " +
                             (commands ? "command" : "name") + "): the first by default",
                         cxxopts::value<std::string>(), "NAME");
  if (commands)
    o.add_options(group)(
        "metric",
        "a regular expression whose first group is each run's figure, read from the command's output (stdout "
        "and stderr) line by line, the first match; without it, the command's wall time",
        cxxopts::value<std::string>(),
        "REGEX")("higher-is-better", "the figure is better when higher (req/s); without it, lower is better (a time)")(
        "timeout", "a run that lasts longer is ended (SIGTERM to its group, SIGKILL 5 s later) and counted failed",
        cxxopts::value<std::string>()->default_value("10m"), "DURATION");
  else
    o.add_options(group)("metric",
                         "what is compared: rps (higher is better), p99 or cpu (CPU per op of mwbench and the "
                         "servers it manages; lower is better)",
                         cxxopts::value<std::string>()->default_value("rps"), "rps|p99|cpu")(
        "drop-caches", "drop the page cache before each run (needs root: /proc/sys/vm/drop_caches)");
}

bool decide_asked(const cxxopts::ParseResult& r) {
  if (r.count("decide")) return true;
  if (r.count("expect")) try {
      r["expect"].as<std::vector<std::string>>();  // the decision's (an adapter's own --expect is a string)
      throw SetupError("--expect needs --decide");
    } catch (const std::bad_cast&) {}
  for (const char* k : {"max-rounds", "max-time", "noninferior", "gate", "order-seed", "drop-caches"})
    if (r.count(k)) throw SetupError(std::string("--") + k + " needs --decide");
  if (r.count("margin") || (r.count("metric") && r["metric"].as<std::string>() != "rps"))
    throw SetupError(std::string("--") + (r.count("margin") ? "margin" : "metric") + " needs --decide");
  return false;
}

DecideOptions read_decide_options(const cxxopts::ParseResult& r, bool commands) {
  DecideOptions o;
  o.settings.margin = parse_margin(r["margin"].as<std::string>());
  o.settings.max_rounds = r["max-rounds"].as<int>();
  if (r.count("max-time")) {
    o.max_time_s = parse_duration(r["max-time"].as<std::string>(), "--max-time");
    if (!(o.max_time_s > 0))
      throw SetupError("--max-time expects a duration above 0 (10m), got '" + r["max-time"].as<std::string>() + "'");
  }
  if (r.count("expect")) {
    try {
      o.expect = r["expect"].as<std::vector<std::string>>();
    } catch (const std::bad_cast&) {  // an adapter's own --expect (a crash job's): with --decide, the question
      o.expect = {r["expect"].as<std::string>()};
    }
  }
  if (r.count("noninferior")) o.noninferior = parse_ratio(r["noninferior"].as<std::string>(), "--noninferior");
  o.gate = r.count("gate") > 0;
  if (r.count("order-seed")) o.seed = r["order-seed"].as<uint64_t>();
  if (commands) {
    if (r.count("baseline")) o.baseline = r["baseline"].as<std::string>();
    o.metric = r.count("metric") ? "regex" : "wall";
    if (r.count("metric")) {
      o.pattern = r["metric"].as<std::string>();
      check_metric_pattern(o.pattern);
    }
    o.higher_is_better = r.count("higher-is-better") > 0;
    if (o.higher_is_better && !r.count("metric"))
      throw SetupError("--higher-is-better needs --metric: a wall time is better when lower");
    return o;
  }
  o.metric = r["metric"].as<std::string>();
  if (o.metric != "rps" && o.metric != "p99" && o.metric != "cpu")
    throw SetupError("--metric expects rps, p99 or cpu, got '" + o.metric + "'");
  o.higher_is_better = o.metric == "rps";
  o.drop_caches = r.count("drop-caches") > 0;
  if (o.drop_caches) drop_page_cache();  // refused here, before anything runs, when it may not
  return o;
}

void check_decide_jobs(const std::vector<Job>& jobs, bool repeated) {
  if (repeated) throw SetupError("--decide runs its own rounds (--max-rounds): drop --repeat");
  for (const Job& j : jobs) {
    if (!j.find_max.empty())
      throw SetupError(j.name + ": --find-max searches a rate: it cannot be an alternative of --decide");
    if (j.has("crash") && j.str("crash") != "none")
      throw SetupError(j.name + ": a --crash job is judged by what it lost: it cannot be an alternative of --decide");
  }
}

cxxopts::Options decide_options() {
  cxxopts::Options o("mwbench decide", "decide between commands: paired rounds, a ratio with its interval, a verdict");
  add_decide_options(o, DecideFor::Commands);
  o.add_options("output")("json", "also write the result JSON to FILE", cxxopts::value<std::string>(), "FILE")(
      "html", "also write the HTML report (the forest plot of the ratios) to FILE", cxxopts::value<std::string>(),
      "FILE")("q,quiet", "print only the verdict lines")(
      "results-dir", "where every run's JSON is written", cxxopts::value<std::string>()->default_value("results"),
      "DIR")("no-save", "do not write the result into the results directory")("h,help", "this help");
  o.add_options()("commands", "", cxxopts::value<std::vector<std::string>>());
  o.parse_positional({"commands"});
  o.positional_help("'CMD A' 'CMD B' ...");
  return o;
}

namespace {

// What the command line asks of a decision: the commands, the decision's options, where its
// result goes. Throws SetupError (a usage error) on a bad value.
struct DecideCall {
  std::vector<std::string> commands;
  DecideOptions opts;
  std::string json_file, html_file;
  double timeout_s = 0;
  std::shared_ptr<DecideResult> d;
};

DecideCall read_decide_call(const cxxopts::ParseResult& r) {
  DecideCall c;
  if (r.count("commands")) c.commands = r["commands"].as<std::vector<std::string>>();
  c.opts = read_decide_options(r, true);
  c.timeout_s = parse_duration(r["timeout"].as<std::string>(), "--timeout");
  for (const std::string& cmd : c.commands)
    if (cmd.find_first_not_of(" \t") == std::string::npos)
      throw SetupError("an empty command: give each as one argument ('CMD A' 'CMD B')");
  std::vector<std::string> shown;
  for (const std::string& cmd : c.commands) shown.push_back(redact_text(cmd));
  c.d = std::make_shared<DecideResult>(plan_decision(shown, c.opts));
  std::vector<std::pair<std::string, std::string>> targets;
  if (r.count("json")) targets.emplace_back("--json", c.json_file = r["json"].as<std::string>());
  if (r.count("html")) targets.emplace_back("--html", c.html_file = r["html"].as<std::string>());
  check_output_targets(targets, {});
  for (auto& a : c.d->alternatives) a.reset = "none: the command as given";
  return c;
}

// What went wrong across the rounds: a run failed; the metric was nowhere in a run's output.
struct RoundTrouble {
  bool failed = false, unreadable = false;
};

// One run of alternative `a`'s command and the figure read from it (--metric), or why none.
RoundRun run_alternative(const DecideCall& c, int a, RoundTrouble& trouble) {
  RoundRun out;
  const std::string& cmd = c.commands[static_cast<size_t>(a)];
  const CommandRun run = run_command(cmd, c.opts.pattern, c.timeout_s);
  out.run.wall_s = run.wall_s;
  out.run.cpu_self = run.cpu_s;
  if (!run.ok()) {
    out.run.why = run.why();
    trouble.failed |= !run.stopped;
    return out;
  }
  if (c.opts.metric == "wall") {
    out.run.value = run.wall_s, out.run.ok = true;
    return out;
  }
  if (!run.matched) {
    std::string tail;
    for (auto& l : run.tail) tail += "\n  | " + printable(redact_text(l));
    const std::string label = c.d->alternatives[static_cast<size_t>(a)].label;
    out.run.why = run.match.empty() ? "the metric matched nothing in its output"
                                    : "the metric's group read '" + run.match + "', not a number";
    trouble.unreadable = true;
    out.fatal = label + " (" + redact_text(cmd) + "): " + out.run.why + " (--metric " + c.opts.pattern +
                "); its last lines:" + (tail.empty() ? std::string("\n  | (no output)") : tail);
    return out;
  }
  out.run.value = run.value, out.run.ok = run.value > 0;
  if (!out.run.ok) out.run.why = "the metric read " + run.match + ": a ratio needs figures above 0";
  return out;
}

// The verdict lines on stdout, what failed on stderr (a failed decision's detail each line escaped
// on its own: the command's last output lines under it), and the exit code they make.
int report_decision(const DecideResult& d, const RunResult& run, const RoundTrouble& trouble, int gate, bool quiet) {
  for (const std::string& line : decision_lines(d, quiet)) std::cout << printable(line) << "\n";
  if (!run.gate.empty()) std::cout << printable(run.gate.substr(0, run.gate.size() - 1)) << "\n";
  std::cout.flush();
  if (d.stopped == "failed") {
    const std::string& rest = d.stop_detail;
    for (size_t at = 0, line = 0; at <= rest.size(); ++line) {
      const size_t end = std::min(rest.find('\n', at), rest.size());
      std::fprintf(stderr, "%s%s\n", line ? "" : "mwbench decide: ", printable(rest.substr(at, end - at)).c_str());
      at = end + 1;
    }
  }
  int code = 0;
  if (trouble.unreadable) {
    code = kUsage;
  } else if (trouble.failed) {
    std::fprintf(
        stderr, "mwbench decide: SOME RUNS FAILED: a failed run is never data (its round is counted failed); exit 1\n");
    code = 1;
  } else if (gate == 3) {
    std::fprintf(stderr,
                 "mwbench decide: DECISION GATE FAILED: a verdict is slower or a question was not shown; exit 3\n");
    code = 3;
  }
  if (run.interrupted) code = 128 + (run.signal ? run.signal : 2);
  return code;
}

// The result into the results directory, --json and --html; a write that fails is a usage error.
int save_decision(const RunResult& run, const cxxopts::ParseResult& r, const DecideCall& c, int code) {
  try {
    const std::string saved = r.count("no-save") ? "" : write_result_file(run, r["results-dir"].as<std::string>());
    if (!saved.empty()) std::fprintf(stderr, "results: %s\n", saved.c_str());
    if (!c.json_file.empty()) write_file_atomic(c.json_file, result_text(run));
    if (!c.html_file.empty()) {
      std::vector<RunResult> shown{run};
      shown[0].label = std::filesystem::path(saved.empty() ? std::string("decide.json") : saved).filename().string();
      write_file_atomic(c.html_file, render_html(shown));
      std::fprintf(stderr, "report: %s\n", c.html_file.c_str());
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "mwbench decide: %s\n", printable(e.what()).c_str());
    code = std::max(code, kUsage);
  }
  return code;
}

}  // namespace

int decide_command(int argc, char** argv) {
  cxxopts::Options o = decide_options();
  cxxopts::ParseResult r;
  if (int exit = 0; !parse_command(o, argc, argv, "mwbench decide", r, exit, {"decide", "output"})) return exit;
  DecideCall c;
  try {
    c = read_decide_call(r);
  } catch (const SetupError& e) {
    std::fprintf(stderr, "mwbench decide: %s\n", printable(e.what()).c_str());
    return kUsage;
  }
  DecideResult& d = *c.d;
  RunResult run = start_run(RunOptions{"decide", redact_command_line({argv, argv + argc}), false, 1});
  RoundTrouble trouble;
  const bool tty = !r.count("quiet") && isatty(STDERR_FILENO);
  run_rounds(
      d, [&](int a) { return run_alternative(c, a, trouble); },
      [&](const DecideResult& now) { show_progress(now, tty); });
  show_progress(d, false);
  run.decide = c.d;
  run.interrupted = stop_requested().load();
  run.signal = stop_signal().load();
  const int gate = decision_exit_code(d, c.opts.gate);
  if (c.opts.gate) {
    run.gate_failed = gate == 3;
    run.gate = decision_gate_text(d);
  }
  redact_result(run);
  const int code = report_decision(d, run, trouble, gate, r.count("quiet") > 0);
  return save_decision(run, r, c, code);
}

}  // namespace mw
