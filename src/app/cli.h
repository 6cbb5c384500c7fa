// The option tables of mwbench's commands: what `--help` prints and `mwbench help --man` turns
// into the manual page, so the two cannot drift apart.
#pragma once
#include <cxxopts.hpp>
#include <string>
#include <vector>

#include "api/adapter.h"
#include "core/rounds.h"

namespace mw {

inline constexpr const char* kTagline = "which queue, cache, database or disk should this system sit on?";

// A command other than the adapters': its usage line and summary (`mwbench --help`) and what the
// manual says about it.
struct CommandDoc {
  std::string usage, summary, detail;
};
const std::vector<CommandDoc>& command_docs();

cxxopts::Options adapter_options(const AdapterSpec& spec);  // common, the adapter's own, output
cxxopts::Options run_options();                             // output, gate
cxxopts::Options files_options(const std::string& cmd);     // compare, report
cxxopts::Options merge_options();
cxxopts::Options model_options();
int model_command(int argc, char** argv);  // mwbench model TRACE [--json OUT]
// The decision options (decide_cli.cpp): --decide and its group for run and the adapter commands
// (the adapters' --baseline is in it, run's is the gate's), or `mwbench decide`'s own.
enum class DecideFor { Run, Adapter, Commands };
// expect: false for an adapter that takes --expect itself (a crash job's durable|any): with
// --decide its --expect is read as the question.
void add_decide_options(cxxopts::Options& o, DecideFor f, bool expect = true);
cxxopts::Options decide_options();
// Whether --decide was given; throws SetupError naming an option of its group given without it.
bool decide_asked(const cxxopts::ParseResult& r);
// The group's values, checked (--drop-caches is tried at once: exit 2 when not root).
DecideOptions read_decide_options(const cxxopts::ParseResult& r, bool commands);
// Throws SetupError for jobs that cannot be alternatives (--find-max, --crash) or --repeat.
void check_decide_jobs(const std::vector<Job>& jobs, bool repeated);
int decide_command(int argc, char** argv);

// -q with -v (run, the adapters, merge): exit 2.
inline constexpr const char* kQuietAndVerbose = "-q and -v: give one (-q prints less than the table, -v more)";

// A parse error of `o`'s command line; an unknown option lists the accepted ones.
std::string option_error(const cxxopts::Options& o, const cxxopts::exceptions::exception& e);

// Parses the command line of `prog` ("mwbench merge") into `r`. False when the command is over
// already, `exit` then its status: 0 after --help (printed, of `groups`; all when empty), 2
// after a usage error (said in one line on stderr, naming `prog` and its --help).
bool parse_command(cxxopts::Options& o, int argc, char** argv, const std::string& prog, cxxopts::ParseResult& r,
                   int& exit, const std::vector<std::string>& groups = {});

// The manual page (roff, man(7) macros) of this build: every command, the common options, one
// section per adapter with its ops and options, exit status, files and examples.
std::string man_page();

}  // namespace mw
