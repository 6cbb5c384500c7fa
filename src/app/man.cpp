// `mwbench help --man`: the manual page, written from the option tables `--help` prints (cli.h),
// the adapters' specs and the command table, so the page documents exactly this build.
#include <string>
#include <vector>

#include "adapters/registry.h"
#include "app/cli.h"
#include "config/capabilities.h"
#include "config/config.h"
#include "util/text.h"

namespace mw {

const std::vector<CommandDoc>& command_docs() {
  static const std::vector<CommandDoc> docs = {
      {"run [SUITE ...]", "run suites (default: quick)",
       "Runs the jobs of one or more suites in order, starting and stopping the servers they need, and "
       "prints one table and under it at most one line a job: what went wrong, else what limited it (-v: every "
       "note, the resource profile and the machine). A SUITE is a TOML file, or the name of an installed one: "
       "`mwbench run vm-sanity` reads vm-sanity.toml from the first suite directory that has it (see FILES). With no "
       "SUITE, quick. "
       "Jobs whose server is not installed are skipped, and the table says why."},
      {"list", "adapters, their ops, and what this machine can run",
       "Lists every adapter of this build with its ops, whether this machine can run it (server binaries, "
       "queue types), its capabilities, and the adapters this build left out."},
      {"compare A.json B.json", "side-by-side req/s, p99 and ratios of result files",
       "Prints the jobs of two or more result files side by side with their ratios; with a threshold, "
       "a gate that exits 3 when a job is significantly slower than in the first file."},
      {"decide 'CMD A' 'CMD B' ...", "decide between commands: a ratio with its interval and a verdict",
       "Runs the commands in paired rounds (each once a round, in a balanced random order) until each is decided "
       "against the first (or --baseline): faster or slower beyond --margin, equivalent within it, "
       "different-within-margin, or undecided with the rounds it would take. The figure is each run's wall time, or "
       "the first group of --metric's regular expression in the command's output. A command that fails is counted "
       "failed, never as data (exit 1); a --metric that matches nothing stops with exit 2, naming the command and "
       "showing its last lines; --gate exits 3 on a slower verdict or a question not shown. The same rounds decide "
       "between jobs with run --decide and an adapter's list with --decide."},
      {"merge A.json B.json", "one result of runs that measured at the same time",
       "Merges result files of copies of one run started on several machines at the same time (by ssh or "
       "a scheduler), exactly as MPI ranks are merged."},
      {"model TRACE [--json OUT]", "fit a workload model to a trace (--workload-model runs it)",
       "Reads a trace (the formats of --trace, plain or zstd) once as a stream and fits a model of it: the op mix "
       "(per trace op and as the workload's read, update, delete and rmw), the keys' Zipf alpha by maximum "
       "likelihood over their frequency ranks with its fit quality (R^2 of log count against log rank), the value "
       "and key sizes as SIZE:WEIGHT lists of up to 16 quantile buckets, the mean rate and the index of dispersion "
       "of the per-second counts, the working set, the share of one-hit wonders and the TTLs of the writes. Prints "
       "a summary; --json writes the model file (never over a file that is there, unless --force), which any keyed "
       "store runs with --workload-model FILE. Past --max-keys distinct keys the keys are sampled by their hash, and "
       "the summary says so. An empty trace or a malformed line: exit 2."},
      {"report R.json... --html FILE [--svg DIR]", "charts",
       "Writes one self-contained HTML file of charts and tables of result files, or the charts alone as SVG."},
      {"help [--man]", "this list; --man: the manual page (roff)",
       "Prints the list of commands; with --man, this manual page in roff: man -l <(mwbench help --man)."},
      {"version", "the version and build type", "Prints the version and the build type."},
  };
  return docs;
}

namespace {

std::string bold(const std::string& s) { return "\\fB" + roff_text(s) + "\\fR"; }
std::string italic(const std::string& s) { return "\\fI" + roff_text(s) + "\\fR"; }

// One option as a tagged paragraph: its flags in bold, its argument in italics, then its help.
void put_option(std::string& out, const cxxopts::HelpOptionDetails& o) {
  if (o.desc.empty()) return;  // the positional arguments' slots
  std::string flags = o.s.empty() ? "" : bold("-" + o.s);
  for (auto& l : o.l) flags += (flags.empty() ? "" : ", ") + bold("--" + l);
  if (o.is_boolean) {           // a flag: no value
  } else if (o.has_implicit) {  // a boolean option: --keep, --keep=false
    flags += "[=" + italic(o.arg_help.empty() ? "BOOL" : o.arg_help) + "]";
  } else {
    flags += " " + italic(o.arg_help.empty() ? "V" : o.arg_help);
  }
  std::string help = o.desc;
  if (o.has_default && !o.is_boolean && !o.default_value.empty()) help += " [default: " + o.default_value + "]";
  out += ".TP\n" + flags + "\n" + roff_text(help) + "\n";
}

void put_group(std::string& out, const cxxopts::Options& o, const std::string& group) {
  for (auto& g : o.groups())  // an adapter without options of its own has no group
    if (g == group)
      for (const auto& opt : o.group_help(group).options) put_option(out, opt);
}

void put_paragraph(std::string& out, const std::string& text) { out += ".PP\n" + roff_text(text) + "\n"; }

void put_header(std::string& out) {
  out += ".TH MWBENCH 1 \"\" \"mwbench " + roff_text(MWBENCH_VERSION) + "\" \"User Commands\"\n";
  out += ".SH NAME\nmwbench \\- " + roff_text(kTagline) + "\n";
  out += ".SH SYNOPSIS\n";
  for (auto& c : command_docs()) out += ".B mwbench\n" + roff_text(c.usage) + "\n.br\n";
  out += ".B mwbench\n" + italic("ADAPTER") + " [" + italic("OPTIONS") + "]\n";
  out += ".SH DESCRIPTION\n";
  out += roff_text(
             "mwbench runs the same N-operation loop through adapters (queues, caches, databases, disks, "
             "HTTP servers, and a null adapter that measures the driver itself), checks every reply, and "
             "prints time, req/s and latency tables whose figures add up: req/s is the number of operations "
             "that succeeded divided by the measured wall time; failed operations are counted by kind, "
             "shown, and make the exit status non-zero.") +
         "\n";
  put_paragraph(out,
                "Every run also writes its result as JSON into the results directory, atomically and never over "
                "an earlier file. Servers a job needs are started on free loopback ports in a temporary "
                "directory and stopped afterwards.");
}

void put_commands(std::string& out) {
  out += ".SH COMMANDS\n";
  for (auto& c : command_docs()) {
    out += ".SS \"mwbench " + roff_text(c.usage) + "\"\n" + roff_text(c.detail) + "\n";
    std::string name = c.usage.substr(0, c.usage.find(' '));
    if (name == "run") {
      put_paragraph(out, "Takes the OUTPUT OPTIONS and these:");
      put_group(out, run_options(), "gate");
    } else if (name == "compare" || name == "report") {
      cxxopts::Options o = files_options(name);
      for (auto& g : o.groups()) put_group(out, o, g);
    } else if (name == "merge") {
      put_group(out, merge_options(), "");
    } else if (name == "model") {
      put_group(out, model_options(), "");
    } else if (name == "decide") {
      cxxopts::Options o = decide_options();
      put_group(out, o, "decide");
      put_group(out, o, "output");
    }
  }
  out += ".SS \"mwbench " + italic("ADAPTER") + " [" + italic("OPTIONS") + "]\"\n";
  out += roff_text(
             "Runs one job per op (and per value of each list option) on one adapter: the COMMON "
             "OPTIONS, the adapter's own (see ADAPTERS) and the OUTPUT OPTIONS.") +
         "\n";
}

void put_adapter(std::string& out, const AdapterSpec& a) {
  out += ".SS \"mwbench " + roff_text(a.name) + "\"\n" + roff_text(a.summary) + "\n";
  std::string ops;
  for (auto& op : a.ops) ops += (ops.empty() ? "" : ", ") + op.name;
  put_paragraph(out, "Ops: " + ops + " (default: " + a.default_ops + ").");
  put_paragraph(out, capabilities_text(a));
  put_paragraph(out, "Before each run (each of a decision's rounds runs every job whole): " +
                         (a.reset.empty() ? std::string(kDefaultReset) : a.reset) + ".");
  put_group(out, adapter_options(a), a.name);
}

void put_adapters(std::string& out) {
  AdapterSpec none;  // the common options as every adapter takes them
  out += ".SH COMMON OPTIONS\n";
  put_group(out, adapter_options(none), "common");
  out += ".SH OUTPUT OPTIONS\n";
  put_paragraph(out, "For run and every adapter:");
  put_group(out, run_options(), "output");
  out += ".SH DECISION OPTIONS\n";
  put_paragraph(out,
                "For run and every adapter: --decide runs the jobs (the suite's, or one per value of an adapter's "
                "list) as the alternatives of a decision, the first (or --baseline) the baseline.");
  put_group(out, adapter_options(none), "decide");
  out += ".SH ADAPTERS\n";
  for (const AdapterSpec& a : adapters()) put_adapter(out, a);
  for (auto& [name, package] : adapters_not_built())
    put_paragraph(out, "Not in this build: " + name + " (" + package + " was missing at configure time).");
}

void put_exit_status(std::string& out) {
  out += ".SH EXIT STATUS\n";
  const std::vector<std::pair<std::string, std::string>> codes = {
      {"0", "every operation succeeded and every verification passed"},
      {"1", "some operations failed or a verification failed"},
      {"2", "a usage or set-up error (a bad option, a missing server, an unknown suite)"},
      {"3",
       "an SLO was missed, a baseline gate failed, or a decision's --gate failed (a verdict slower, a question "
       "not shown)"},
      {"128+signal",
       "interrupted: 130 for SIGINT (Ctrl-C), 143 for SIGTERM, 129 for SIGHUP; what was "
       "measured so far is printed and written"},
  };
  for (auto& [code, what] : codes) out += ".TP\n" + bold(code) + "\n" + roff_text(what) + "\n";
}

void put_files(std::string& out) {
  out += ".SH ENVIRONMENT\n.TP\n" + bold("MWBENCH_CONFIGS") + "\n" +
         roff_text("a directory searched first for suites given by name") + "\n";
  out += ".SH FILES\n";
  const std::vector<std::pair<std::string, std::string>> files = {
      {"./configs/", "suites, searched after $MWBENCH_CONFIGS"},
      {"BINDIR/../configs/", "suites beside a build tree's binary"},
      {"BINDIR/../share/mwbench/configs/", "the installed suites (/usr/share/mwbench/configs/ for the package)"},
      {"results/", "where every run's JSON is written (--results-dir, --no-save)"},
      {"BINDIR/../share/doc/mwbench/",
       "README.md and docs/: the guide (docs/guide/), the exit codes and the result file's fields (docs/reference/), "
       "the measurements (docs/measurements/); /usr/share/doc/mwbench/ for the package"},
  };
  for (auto& [path, what] : files) out += ".TP\n" + italic(path) + "\n" + roff_text(what) + "\n";
}

void put_examples(std::string& out) {
  std::vector<std::pair<std::string, std::string>> ex = {
      {"mwbench run vm-sanity", "Is this machine as fast as it should be (about 15 seconds)?"},
      {"mwbench run vm-sanity --repeat 5 --json my-vm.json", "A baseline of a machine you trust."},
      {"mwbench run vm-sanity --baseline my-vm.json", "A verdict per job against it; exit 3 on a regression."},
      {"mwbench list", "What this machine can run."},
      {"mwbench compare a.json b.json --max-regression 10%", "Two result files side by side, gated."},
      {"mwbench redis --ops get -c 1,50 --decide", "Is 50 clients faster than 1, and by how much?"},
      {"mwbench decide 'redis-benchmark -q -t get' 'mwbench redis --ops get -q --no-save' --metric '([0-9.]+) requests "
       "per second' --higher-is-better",
       "mwbench beside a peer tool, decided."},
      {"mwbench report results/*.json --html report.html", "Charts of results."},
  };
  for (const AdapterSpec& a : adapters())  // one adapter that keeps requests in flight, from the specs
    if (a.target == TargetKind::External && a.max_in_flight == 0 && !a.baseline) {
      ex.push_back({"mwbench " + a.name + " -n 100000 -c 50 -P 16", "50 clients with 16 requests in flight each."});
      break;
    }
  out += ".SH EXAMPLES\n";
  for (auto& [cmd, what] : ex) out += ".TP\n" + bold(cmd) + "\n" + roff_text(what) + "\n";
  out += ".SH SEE ALSO\n" + bold("redis-benchmark") + "(1), " + bold("fio") + "(1), " + bold("ab") + "(1)\n";
}

}  // namespace

std::string man_page() {
  std::string out;
  put_header(out);
  put_commands(out);
  put_adapters(out);
  put_exit_status(out);
  put_files(out);
  put_examples(out);
  return out;
}

}  // namespace mw
