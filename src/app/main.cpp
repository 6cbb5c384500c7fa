// mwbench: run the same N-operation loop through adapters and print figures that can be trusted.
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <cxxopts.hpp>
#include <filesystem>
#include <iostream>
#include <utility>

#include "adapters/registry.h"
#include "api/options.h"
#include "app/cli.h"
#include "cluster/mpi.h"
#include "cluster/mpi_run.h"
#include "config/capabilities.h"
#include "config/config.h"
#include "core/driver.h"
#include "core/metrics_server.h"
#include "core/rounds.h"
#include "core/runner.h"
#include "durability/durability.h"
#include "report/gate.h"
#include "report/hdrlog.h"
#include "report/report.h"
#include "results/merge.h"
#include "results/results.h"
#include "results/slo.h"
#include "results/tables.h"
#include "services/services.h"
#include "util/redact.h"
#include "util/text.h"

using namespace mw;

namespace {

constexpr int kUsage = 2;
constexpr int kGateFailed = 3;
constexpr double kDefaultMaxRegression = 0.10;  // run --baseline without a threshold

// How many times the baseline ran each job (its most repeated one).
int repeats_of(const RunResult& base) {
  size_t k = 1;
  for (auto& j : base.jobs) k = std::max(k, j.repeats.size());
  return static_cast<int>(std::min<size_t>(k, 1000));
}

// SIGINT, SIGTERM and SIGHUP: stop, print and write what was measured, stop the servers,
// exit 128+signal. A second one: stop the managed servers now and exit at once (their
// supervisors remove the temp dirs).
void on_stop_signal(int sig) {
  int none = 0;
  stop_signal().compare_exchange_strong(none, sig);
  if (stop_requested().exchange(true)) {
    stop_services_now(SIGTERM);
    _exit(128 + sig);
  }
}

void usage(FILE* to) {
  std::fprintf(to, "mwbench %s: %s\n\nusage:\n", MWBENCH_VERSION, kTagline);
  // One column of summaries, wide enough for the longest adapter's name; a longer usage has its
  // summary on the next line, in that column.
  size_t name_w = 0;
  for (auto& a : adapters()) name_w = std::max(name_w, a.name.size());
  const size_t col = std::max<size_t>(24, name_w + std::strlen(" [options]"));
  auto row = [&](const std::string& left, const std::string& summary) {
    if (left.size() > col)
      std::fprintf(to, "  mwbench %s\n  %*s", left.c_str(), static_cast<int>(col + 8), "");
    else
      std::fprintf(to, "  mwbench %-*s", static_cast<int>(col), left.c_str());
    std::fprintf(to, " %s\n", summary.c_str());
  };
  for (auto& c : command_docs()) row(c.usage, c.summary);
  for (auto& a : adapters()) row(a.name + std::string(name_w - a.name.size(), ' ') + " [options]", a.summary);
  std::fprintf(to,
               "\n`mwbench <command> --help` lists its options; `mwbench help --man` writes the manual page,\n"
               "`mwbench help --schema` the result file's JSON Schema.\n");
}

struct Output {
  std::string json_file, html_file, results_dir = "results", format = "table", hdr_log;
  bool quiet = false, verbose = false, save = true;
  int repeat = 1;
  std::shared_ptr<MetricsServer> metrics;  // --metrics-listen: serves until the command returns
};

void add_output_options(cxxopts::Options& o) {
  o.add_options("output")("json", "also write the result JSON to FILE", cxxopts::value<std::string>(), "FILE")(
      "html", "also write the HTML report of the run to FILE", cxxopts::value<std::string>(), "FILE")(
      "csv", "print CSV instead of the table")("markdown", "print a Markdown table")(
      "q,quiet",
      "print only req/s per job, and what went wrong (failures, a missed SLO) or what --find-max found; "
      "no progress line, warning or profile")(
      "v,verbose",
      "print every note under the table: the resource profile, episodes, faults, workload and protocol "
      "figures, the --find-max steps, the durability notes, the decision's diagnostics and the machine "
      "(by default: at most one line a job, what went wrong or what limited it)")(
      "results-dir", "where every run's JSON is written", cxxopts::value<std::string>()->default_value("results"),
      "DIR")("no-save", "do not write the run into the results directory")(
      "hdr-log", "also write each job's latency per --interval as an HdrHistogram interval log (V2, compressed)",
      cxxopts::value<std::string>(),
      "FILE")("repeat", "run each job K times, interleaved; report the median and min-max",
              cxxopts::value<int>()->default_value("1"),
              "K")("metrics-listen",
                   "serve the running jobs' counters (ops, errors by kind, rate, latency) for Prometheus "
                   "at http://ADDR:PORT/metrics while the run lasts (port 0: any free one)",
                   cxxopts::value<std::string>(), "ADDR:PORT")(
      "metrics-any", "let --metrics-listen take an address other machines reach")("h,help", "this help");
}

// The baseline gate's thresholds: `compare` and `run --baseline`.
void add_gate_options(cxxopts::Options& o, const std::string& cmd) {
  std::string against = cmd == "compare" ? "the first file" : "the baseline";
  o.add_options("gate")("max-regression",
                        "exit 3 when a job's req/s is significantly lower than in " + against + " by more than P",
                        cxxopts::value<std::string>(),
                        "P%")("max-latency-regression",
                              "exit 3 when a job's p99 is significantly higher than in " + against + " by more than P",
                              cxxopts::value<std::string>(), "P%");
}

GateOptions read_gate_options(const cxxopts::ParseResult& r) {
  GateOptions g;
  for (const char* name : {"max-regression", "max-latency-regression"})
    if (r.count(name)) {
      const bool rps = std::string(name) == "max-regression";  // req/s falls by less than 100%
      double t = parse_threshold(r[name].as<std::string>(), std::string("--") + name, rps ? 1 : 1e9);
      (std::string(name) == "max-regression" ? g.max_regression : g.max_latency_regression) = t;
    }
  return g;
}

// `inputs`: the files the command reads (suites, a baseline): never an output.
Output read_output(const cxxopts::ParseResult& r, const std::vector<std::string>& inputs = {}) {
  Output o;
  if (r.count("json")) o.json_file = r["json"].as<std::string>();
  if (r.count("html")) o.html_file = r["html"].as<std::string>();
  if (r.count("hdr-log")) o.hdr_log = r["hdr-log"].as<std::string>();
  std::vector<std::pair<std::string, std::string>> targets;
  if (r.count("json")) targets.emplace_back("--json", o.json_file);
  if (r.count("html")) targets.emplace_back("--html", o.html_file);
  if (r.count("hdr-log")) targets.emplace_back("--hdr-log", o.hdr_log);
  check_output_targets(targets, inputs);
  if (r.count("csv")) o.format = "csv";
  if (r.count("markdown")) o.format = "markdown";
  o.quiet = r.count("quiet") > 0;
  o.verbose = r.count("verbose") > 0;
  if (o.quiet && o.verbose) throw SetupError(kQuietAndVerbose);
  o.results_dir = r["results-dir"].as<std::string>();
  o.save = r.count("no-save") == 0;
  o.repeat = r["repeat"].as<int>();
  if (o.repeat < 1 || o.repeat > 1000) throw SetupError("--repeat must be between 1 and 1000");
  if (r.count("metrics-any") && !r.count("metrics-listen")) throw SetupError("--metrics-any needs --metrics-listen");
  if (r.count("metrics-listen")) {  // bound here, before anything runs: a port in use is exit 2
    o.metrics = std::make_shared<MetricsServer>(r["metrics-listen"].as<std::string>(), r.count("metrics-any") > 0);
    std::fprintf(stderr, "metrics: %s\n", o.metrics->url().c_str());
  }
  return o;
}

int report(const RunResult& run, const Output& out) {
  int code = exit_code(run);
  try {  // what was measured is written even if printing it fails
    const Detail detail = out.verbose ? Detail::Full : Detail::Glance;
    if (out.format == "csv")
      std::cout << format_csv(run);
    else if (out.format == "markdown")
      std::cout << format_markdown(run, detail);
    else if (out.quiet) {
      for (auto& j : run.jobs)
        std::cout << printable(j.job.name) << " " << printable(j.target) << ": " << fmt(j.rps, 2)
                  << " requests per second" << (j.failed() ? "  FAILED" : "") << "\n";
      for (auto& n : quiet_notes(run)) std::cout << n << "\n";
      if (run.decide)
        for (auto& line : decision_lines(*run.decide, true)) std::cout << printable(line) << "\n";
    } else {
      std::cout << format_table(run, detail);
    }
    if (!run.gate.empty()) std::cout << "\n" << run.gate;
    std::cout.flush();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "mwbench: cannot print the results: %s\n", printable(e.what()).c_str());
    code = std::max(code, kUsage);
  }
  try {
    std::string saved = out.save ? write_result_file(run, out.results_dir) : "";
    if (out.save) std::fprintf(stderr, "results: %s\n", saved.c_str());
    if (!out.json_file.empty()) write_file_atomic(out.json_file, result_text(run));
    if (!out.html_file.empty()) {  // the report of the file as written, as `report` would draw it
      std::vector<RunResult> shown{run};
      shown[0].label = std::filesystem::path(saved.empty() ? run.suite + ".json" : saved).filename().string();
      write_file_atomic(out.html_file, render_html(shown));
      std::fprintf(stderr, "report: %s\n", out.html_file.c_str());
    }
    if (!out.hdr_log.empty()) write_file_atomic(out.hdr_log, hdr_log_text(run));
  } catch (const std::exception& e) {
    std::fprintf(stderr, "mwbench: %s\n", printable(e.what()).c_str());
    code = std::max(code, kUsage);
  }
  if (code == 1) std::fprintf(stderr, "mwbench: SOME OPERATIONS FAILED: see the errors column; exit 1\n");
  bool slo_missed = std::any_of(run.jobs.begin(), run.jobs.end(), [](const JobResult& j) { return !j.slo.passed; });
  if (code == kGateFailed && slo_missed) std::fprintf(stderr, "mwbench: SLO MISSED: see the cells marked !; exit 3\n");
  if (code == kGateFailed && run.gate_failed && run.decide)
    std::fprintf(stderr, "mwbench: DECISION GATE FAILED: a verdict is slower or a question was not shown; exit 3\n");
  else if (code == kGateFailed && run.gate_failed)
    std::fprintf(stderr, "mwbench: BASELINE GATE FAILED: see the rows marked REGRESSION; exit 3\n");
  return code;
}

}  // namespace

// The option tables `--help` prints and `mwbench help --man` documents (cli.h).
cxxopts::Options mw::adapter_options(const AdapterSpec& spec) {
  cxxopts::Options o("mwbench " + spec.name, spec.summary);
  auto add = [&](const std::string& group, const OptionSpec& opt, const std::string& alias) {
    std::string help = opt.help;
    if (!opt.choices.empty()) {
      help += " (";
      for (size_t i = 0; i < opt.choices.size(); ++i) help += (i ? ", " : "") + opt.choices[i];
      help += ")";
    }
    if (opt.kind == OptionSpec::Kind::Int || opt.kind == OptionSpec::Kind::Num) help += " (" + range_text(opt) + ")";
    if (opt.list) help += "; comma list allowed";
    if (!opt.def.empty()) help += " [default: " + opt.def + "]";
    for (auto& [other, name] : spec.aliases)
      if (name == opt.name) help += " (also --" + other + ")";
    std::string names = alias.empty() ? opt.name : alias + "," + opt.name;
    if (opt.kind == OptionSpec::Kind::Bool)
      o.add_options(group)(names, help, cxxopts::value<std::string>()->implicit_value("true"));
    else if (opt.repeat)
      o.add_options(group)(names, help + "; may be repeated", cxxopts::value<std::vector<std::string>>(), "V");
    else
      o.add_options(group)(names, help, cxxopts::value<std::string>(), "V");
  };
  for (auto& c : common_options()) {
    std::string alias = c.name == "n" ? "" : c.name == "clients" ? "c" : c.name == "pipeline" ? "P" : "";
    OptionSpec shown = c;
    if (c.name == "ops" && !spec.ops.empty()) {
      shown.help = "ops to run: ";
      for (size_t i = 0; i < spec.ops.size(); ++i) shown.help += (i ? ", " : "") + spec.ops[i].name;
      shown.def = spec.default_ops;
    }
    add("common", shown, alias);
  }
  for (auto& a : spec.options) add(spec.name, a, "");
  add_output_options(o);
  const bool own_expect =
      std::any_of(spec.options.begin(), spec.options.end(), [](const OptionSpec& x) { return x.name == "expect"; });
  add_decide_options(o, DecideFor::Adapter, !own_expect);
  return o;
}

cxxopts::Options mw::run_options() {
  cxxopts::Options o("mwbench run", "run TOML suites of jobs");
  add_output_options(o);
  add_decide_options(o, DecideFor::Run);
  o.add_options("gate")(
      "slo", "objectives every job must meet besides its own slo (p99<2ms,rps>10000,errors=0); exit 3 when missed",
      cxxopts::value<std::string>(), "SLO")(
      "baseline",
      "judge every job against this result file (a verdict per job; exit 3 on a regression beyond "
      "--max-regression, 10% when no threshold is given); repeats as often as the baseline did unless --repeat. "
      "With --decide: the job the others are judged against (its letter A, B, ... or its name; the first by default)",
      cxxopts::value<std::string>(), "BASE.json|JOB");
  add_gate_options(o, "run");
  o.add_options()("suites", "", cxxopts::value<std::vector<std::string>>());
  o.parse_positional({"suites"});
  o.positional_help("[SUITE ...]");
  return o;
}

cxxopts::Options mw::files_options(const std::string& cmd) {
  std::string what = cmd == "compare" ? "compare result files side by side" : "charts of result files";
  cxxopts::Options o("mwbench " + cmd, what);
  o.add_options()("files", "", cxxopts::value<std::vector<std::string>>())("h,help", "this help");
  if (cmd == "compare") add_gate_options(o, "compare");
  if (cmd == "report")
    o.add_options()("html", "write one self-contained HTML file", cxxopts::value<std::string>(), "FILE")(
        "svg", "write the charts alone into DIR", cxxopts::value<std::string>(), "DIR");
  o.parse_positional({"files"});
  o.positional_help("RESULT.json ...");
  return o;
}

std::string mw::option_error(const cxxopts::Options& o, const cxxopts::exceptions::exception& e) {
  std::string text = e.what();
  if (!dynamic_cast<const cxxopts::exceptions::no_such_option*>(&e)) return text;
  std::vector<std::string> names;
  for (const std::string& g : o.groups())
    for (const auto& opt : o.group_help(g).options)
      if (!opt.l.empty() && !opt.desc.empty())  // a positional's (files, suites, a trace) is ""
        names.push_back("--" + opt.l.front());
      else if (opt.l.empty() && !opt.s.empty())
        names.push_back("-" + opt.s);
  std::sort(names.begin(), names.end());
  names.erase(std::unique(names.begin(), names.end()), names.end());
  std::string list;
  for (const std::string& n : names) list += (list.empty() ? "" : ", ") + n;
  return text + "; accepted: " + list;
}

bool mw::parse_command(cxxopts::Options& o, int argc, char** argv, const std::string& prog, cxxopts::ParseResult& r,
                       int& exit, const std::vector<std::string>& groups) {
  try {
    r = o.parse(argc, argv);
  } catch (const cxxopts::exceptions::exception& e) {
    std::fprintf(stderr, "%s: %s (see %s --help)\n", prog.c_str(), option_error(o, e).c_str(), prog.c_str());
    exit = kUsage;
    return false;
  }
  if (!r.count("help")) return true;
  std::cout << (groups.empty() ? o.help() : o.help(groups));
  exit = 0;
  return false;
}

namespace {

std::string command_line(int argc, char** argv) { return redact_command_line({argv, argv + argc}); }

// --decide and its options, checked against the jobs: nullopt when not asked.
std::optional<DecideOptions> decide_for(const cxxopts::ParseResult& r, const std::vector<Job>& jobs,
                                        const Output& out) {
  if (!decide_asked(r)) return std::nullopt;
  if (mpi::started()) throw SetupError("--decide runs rounds in one process: run it without mpirun");
  check_decide_jobs(jobs, r.count("repeat") > 0 && out.repeat > 1);
  if (out.metrics) throw SetupError("--metrics-listen serves one run's counters: it does not combine with --decide");
  std::vector<std::string> names;
  for (const Job& j : jobs) names.push_back(j.name);
  DecideOptions o = read_decide_options(r, false);
  if (r.count("baseline")) o.baseline = r["baseline"].as<std::string>();
  plan_decision(names, o);  // one alternative, a margin outside (0, 100%), an unknown --expect name: exit 2 now
  return o;
}

int run_adapter(const AdapterSpec& spec, int argc, char** argv) {
  std::string prog = "mwbench " + spec.name;
  cxxopts::Options o = adapter_options(spec);
  // "--keepalive false" as well as "--keepalive=false": join a boolean flag with its value. An
  // adapter command takes no other argument, so a word after a boolean flag that is not an option is
  // taken as its value too, and a wrong one is refused naming the flag ("--sync: sync expects true
  // or false, got 'maybe'"), not as an unexpected argument.
  std::vector<std::string> args;
  for (int i = 0; i < argc; ++i) {
    std::string a = argv[i];
    for (auto& [alias, name] : spec.aliases) {  // fio's --depth is our --pipeline, ...
      if (a == "--" + alias)
        a = "--" + name;
      else if (a.rfind("--" + alias + "=", 0) == 0)
        a = "--" + name + a.substr(alias.size() + 2);
    }
    bool is_bool = false;
    for (auto* opts : {&common_options(), &spec.options})
      for (auto& opt : *opts) is_bool |= opt.kind == OptionSpec::Kind::Bool && a == "--" + opt.name;
    if (is_bool && i + 1 < argc && argv[i + 1][0] && argv[i + 1][0] != '-') a += "=" + std::string(argv[++i]);
    args.push_back(a);
  }
  std::vector<char*> joined;
  for (auto& a : args) joined.push_back(a.data());
  cxxopts::ParseResult r;
  if (int exit = 0; !parse_command(o, static_cast<int>(joined.size()), joined.data(), prog, r, exit,
                                   {"common", spec.name, "output", "decide"}))
    return exit;
  if (!r.unmatched().empty()) {
    std::fprintf(stderr, "%s: unexpected argument '%s' (see %s --help)\n", prog.c_str(), r.unmatched()[0].c_str(),
                 prog.c_str());
    return kUsage;
  }
  std::vector<Setting> settings;
  auto collect = [&](const OptionSpec& opt) {
    if (!r.count(opt.name)) return;
    if (opt.name == "expect" && r.count("decide")) return;  // the decision's question (a --crash job cannot decide)
    if (opt.repeat) {
      std::string lines;
      for (auto& v : r[opt.name].as<std::vector<std::string>>()) lines += (lines.empty() ? "" : "\n") + v;
      settings.push_back({opt.name, {lines}, "--" + opt.name});
      return;
    }
    std::string v = r[opt.name].as<std::string>();
    std::string flag = (opt.name.size() == 1 ? "-" : "--") + opt.name;
    settings.push_back({opt.name, opt.list ? split_list(v) : std::vector<std::string>{v}, flag});
  };
  for (auto& c : common_options()) collect(c);
  for (auto& a : spec.options) collect(a);
  std::vector<Job> jobs;
  try {
    jobs = expand_jobs(spec.name, settings, "cli");
  } catch (const SetupError& e) {
    std::fprintf(stderr, "%s: %s\n", prog.c_str(), e.what());
    return kUsage;
  }
  Output out;
  std::optional<DecideOptions> decide;
  try {
    out = read_output(r);
    check_run_count(jobs.size(), out.repeat);
    check_ranks(jobs, out.repeat);
    check_durability_options(jobs);
    decide = decide_for(r, jobs, out);
  } catch (const SetupError& e) {
    std::fprintf(stderr, "%s: %s\n", prog.c_str(), printable(e.what()).c_str());
    return kUsage;
  }
  RunOptions ro{"cli-" + spec.name, command_line(argc, argv), !out.quiet, out.repeat};
  return report(decide ? run_decision(jobs, ro, *decide) : run_everywhere(jobs, ro), out);
}

int run_suites(int argc, char** argv) {
  cxxopts::Options o = run_options();
  cxxopts::ParseResult r;
  if (int exit = 0; !parse_command(o, argc, argv, "mwbench run", r, exit, {"output", "gate", "decide"})) return exit;
  std::vector<std::string> files;
  if (r.count("suites")) files = r["suites"].as<std::vector<std::string>>();
  if (files.empty()) files.push_back(kDefaultSuite);
  std::vector<Job> jobs;
  std::string name;
  std::vector<std::string> inputs;  // the suite files read: a suite's name is not a file
  try {
    for (auto& f : files) {
      inputs.push_back(find_suite(f));
      Suite s = load_suite(inputs.back(), jobs.size());
      name += (name.empty() ? "" : "+") + s.name;
      jobs.insert(jobs.end(), s.jobs.begin(), s.jobs.end());
    }
  } catch (const SetupError& e) {
    std::fprintf(stderr, "mwbench run: %s\n", e.what());
    return kUsage;
  }
  Output out;
  std::optional<RunResult> baseline;  // the file, loaded
  std::optional<DecideOptions> decide;
  GateOptions gate_opts;
  try {
    const bool deciding = decide_asked(r);  // --baseline then names a job, not a file
    if (r.count("baseline") && !deciding) inputs.push_back(r["baseline"].as<std::string>());
    out = read_output(r, inputs);
    if (r.count("slo")) {
      std::string slo = r["slo"].as<std::string>();
      try {
        parse_slo(slo);
      } catch (const SetupError& e) {
        throw SetupError(std::string("--slo: ") + e.what());
      }
      for (Job& j : jobs) j.slo = j.slo.empty() ? slo : j.slo + "," + slo;
    }
    gate_opts = read_gate_options(r);
    if (deciding && gate_opts.any())
      throw SetupError("--max-regression and --max-latency-regression judge a file: with --decide use --gate");
    if (deciding) {
      decide = decide_for(r, jobs, out);
    } else if (r.count("baseline")) {
      baseline = load_result(r["baseline"].as<std::string>());
      if (!gate_opts.any()) gate_opts.max_regression = kDefaultMaxRegression;
      if (!r.count("repeat")) out.repeat = repeats_of(*baseline);
    } else if (gate_opts.any()) {
      throw SetupError("--max-regression and --max-latency-regression need --baseline BASE.json");
    }
    check_run_count(jobs.size(), out.repeat);
    check_ranks(jobs, out.repeat);
    check_durability_options(jobs);
  } catch (const SetupError& e) {
    std::fprintf(stderr, "mwbench run: %s\n", printable(e.what()).c_str());
    return kUsage;
  }
  RunOptions ro{name, command_line(argc, argv), !out.quiet, out.repeat};
  RunResult run = decide ? run_decision(jobs, ro, *decide) : run_everywhere(jobs, ro);
  if (baseline && !run.interrupted) {  // failed ops (1) and set-up errors (2) keep their exit code
    std::string label = std::exchange(run.label, "this run");
    GateResult g = gate(*baseline, run, gate_opts);
    run.label = std::move(label);
    run.gate = g.text;
    run.gate_failed = g.failed;
  }
  return report(run, out);
}

int compare_or_report(const std::string& cmd, int argc, char** argv) {
  cxxopts::Options o = files_options(cmd);
  cxxopts::ParseResult r;
  if (int exit = 0; !parse_command(o, argc, argv, "mwbench " + cmd, r, exit)) return exit;
  std::vector<std::string> files;
  if (r.count("files")) files = r["files"].as<std::vector<std::string>>();
  size_t need = cmd == "compare" ? 2 : 1;
  if (files.size() < need) {
    std::fprintf(stderr, "mwbench %s: give at least %zu result file%s (see mwbench %s --help)\n", cmd.c_str(), need,
                 need > 1 ? "s" : "", cmd.c_str());
    return kUsage;
  }
  try {
    std::vector<RunResult> runs;
    for (auto& f : files) runs.push_back(load_result(f));
    if (cmd == "compare") {
      GateOptions gate_opts = read_gate_options(r);
      std::cout << format_compare(runs);
      bool failed = false;
      for (size_t i = 1; gate_opts.any() && i < runs.size(); ++i) {
        GateResult g = gate(runs[0], runs[i], gate_opts);
        std::cout << "\n" << g.text;
        failed |= g.failed;
      }
      return failed ? kGateFailed : 0;
    }
    if (!r.count("html") && !r.count("svg")) throw SetupError("give --html FILE and/or --svg DIR");
    if (r.count("html")) check_output_targets({{"--html", r["html"].as<std::string>()}}, files);
    if (r.count("html")) {
      std::string f = r["html"].as<std::string>();
      write_file_atomic(f, render_html(runs));
      std::fprintf(stderr, "report: %s\n", f.c_str());
    }
    if (r.count("svg")) {
      std::string dir = r["svg"].as<std::string>();
      std::error_code ec;
      std::filesystem::create_directories(dir, ec);
      for (auto& [name, svg] : render_svgs(runs)) write_file_atomic(dir + "/" + name, svg);
      std::fprintf(stderr, "charts: %s/\n", dir.c_str());
    }
  } catch (const SetupError& e) {
    std::fprintf(stderr, "mwbench %s: %s\n", cmd.c_str(), printable(e.what()).c_str());
    return kUsage;
  }
  return 0;
}

int list() {
  Job probe;
  int w = 0;
  for (auto& a : adapters()) w = std::max(w, static_cast<int>(a.name.size()));
  const std::string pad(static_cast<size_t>(w) + 1, ' ');
  for (auto& a : adapters()) {
    probe.adapter = a.name;
    std::string why = a.unavailable ? a.unavailable(probe) : "";
    std::printf("%-*s %s\n", w, a.name.c_str(), a.summary.c_str());
    std::string ops;
    for (auto& op : a.ops) ops += (ops.empty() ? "" : ", ") + op.name;
    std::printf("%sops: %s\n", pad.c_str(), ops.c_str());
    std::printf("%sthis machine: %s\n", pad.c_str(), why.empty() ? "ready" : ("cannot run: " + why).c_str());
    if (a.machine) std::printf("%s%s\n", pad.c_str(), a.machine().c_str());
    std::printf("%s%s\n", pad.c_str(), capabilities_text(a).c_str());
  }
  for (auto& [name, package] : adapters_not_built())
    std::printf("%-*s not built: %s was missing at configure time (scripts/setup installs it)\n", w, name.c_str(),
                package.c_str());
  return 0;
}

int internal_error(const std::string& what) {
  std::fprintf(stderr, "mwbench: internal error: %s\n", printable(what).c_str());
  try {
    stop_shared_services();
  } catch (...) {}
  return kUsage;
}

}  // namespace

static int dispatch(int argc, char** argv) {
  if (argc < 2) {
    usage(stderr);
    return kUsage;
  }
  std::string cmd = argv[1];
  if (cmd == "help" && argc == 3 && std::string(argv[2]) == "--man") {
    std::cout << man_page() << std::flush;
    return std::cout ? 0 : kUsage;
  }
  if (cmd == "help" && argc == 3 && std::string(argv[2]) == "--schema") {
    std::cout << result_schema().dump(2) << "\n" << std::flush;
    return std::cout ? 0 : kUsage;
  }
  if (cmd == "-h" || cmd == "--help" || cmd == "help") {
    usage(stdout);
    return 0;
  }
  if (cmd == "--version" || cmd == "version") {
    std::printf("mwbench %s (%s build)\n", MWBENCH_VERSION, MWBENCH_BUILD_TYPE);
    return 0;
  }
  // One last handler: whatever escapes still stops the servers mwbench started, in one line.
  try {
    if (cmd == "run") return run_suites(argc - 1, argv + 1);
    if (cmd == "list") return list();
    if (cmd == "compare" || cmd == "report") return compare_or_report(cmd, argc - 1, argv + 1);
    if (cmd == "merge") return merge_command(argc - 1, argv + 1);
    if (cmd == "decide") return decide_command(argc - 1, argv + 1);
    if (cmd == "model") return model_command(argc - 1, argv + 1);
    if (const AdapterSpec* a = find_adapter(cmd)) return run_adapter(*a, argc - 1, argv + 1);
    for (auto& [name, package] : adapters_not_built())
      if (name == cmd) {
        std::fprintf(stderr,
                     "mwbench: the %s adapter was not built: %s was missing at configure time (install it "
                     "and rebuild; scripts/setup installs every package)\n",
                     name.c_str(), package.c_str());
        return 2;
      }
  } catch (const std::exception& e) {
    return internal_error(e.what());
  } catch (...) {
    return internal_error("unknown exception");
  }
  std::fprintf(stderr, "mwbench: unknown command '%s'\n\n", cmd.c_str());
  usage(stderr);
  return kUsage;
}

namespace {

// Passwords on mwbench's own command line: every user of the machine reads command lines
// (ps, /proc/PID/cmdline). Each argument is overwritten in place with its redacted form (as
// `mysql -pSECRET` does), so that the process list shows what the result file's `command` shows;
// argv then points at copies, which the rest of mwbench reads. Returns the options that held a
// secret, for the warning (a short race remains: the list showed them until now).
std::vector<std::string> hide_command_line_secrets(int argc, char** argv) {
  const std::vector<std::string> args(argv, argv + argc), shown = redact_args(args);
  std::vector<std::string> names;
  if (shown == args) return names;
  static std::vector<std::string> copies;
  copies = args;
  for (size_t i = 0; i < args.size(); ++i) {
    char* const mine = argv[i];
    argv[i] = copies[i].data();
    if (shown[i] == args[i]) continue;
    std::fill(mine, mine + args[i].size(), '\0');
    std::copy_n(shown[i].data(), std::min(args[i].size(), shown[i].size()), mine);  // a prefix of it: no secret
    // The option that held it: this argument's (--key=value), or the one before (--key value).
    std::string name = args[i].rfind('-', 0) == 0                ? args[i].substr(0, args[i].find('='))
                       : i > 0 && args[i - 1].rfind('-', 0) == 0 ? args[i - 1]
                                                                 : "an argument";
    if (std::find(names.begin(), names.end(), name) == names.end()) names.push_back(name);
  }
  return names;
}

}  // namespace

int main(int argc, char** argv) {
  const std::vector<std::string> secret_args = hide_command_line_secrets(argc, argv);
  install_registered_adapters();
  signal(SIGPIPE, SIG_IGN);
  struct sigaction sa {};
  sa.sa_handler = on_stop_signal;
  for (int sig : {SIGINT, SIGTERM, SIGHUP}) sigaction(sig, &sa, nullptr);
  // Under mpirun: ranks other than 0 run what rank 0 sends them, and end here.
  if (int code = mpi_enter(argc, argv); code >= 0) return code;
  if (!secret_args.empty()) {
    std::string list;
    for (auto& n : secret_args) list += (list.empty() ? "" : ", ") + n;
    std::fprintf(stderr,
                 "mwbench: warning: a secret on the command line (%s): every user of this machine can read "
                 "command lines in the process list; give it as env:VAR or file:PATH instead (or in a suite file; "
                 "see README, Passwords)\n",
                 list.c_str());
  }
  return mpi_leave(dispatch(argc, argv));
}
