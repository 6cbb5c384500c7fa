// The option tables of mwbench's commands: what `--help` prints and `mwbench help --man` turns
// into the manual page, so the two cannot drift apart.
#pragma once
#include <cxxopts.hpp>
#include <string>
#include <vector>

#include "api/adapter.h"

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
// A parse error of `o`'s command line; an unknown option lists the accepted ones.
std::string option_error(const cxxopts::Options& o, const cxxopts::exceptions::exception& e);

// The manual page (roff, man(7) macros) of this build: every command, the common options, one
// section per adapter with its ops and options, exit status, files and examples.
std::string man_page();

}  // namespace mw
