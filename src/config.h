// Jobs from the command line and from TOML suites: one place that knows the common keys,
// checks adapter options, and expands lists into one job per value.
#pragma once
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "adapter.h"

namespace mw {

// A key and its values as the user gave them (one value, or a list).
struct Setting {
  std::string key;
  std::vector<std::string> values;
  std::string where;  // "file:line" or "--key"
};

// Common keys every adapter takes (n, clients, pipeline, duration, ...).
const std::vector<OptionSpec>& common_options();

// Builds the jobs of one declaration: `settings` holds adapter, ops and every other key.
// Throws SetupError naming `where` for an unknown key, a bad value or an unknown op.
std::vector<Job> expand_jobs(const std::string& adapter, const std::vector<Setting>& settings,
                             const std::string& source);

struct Suite {
  std::string name, description, file;
  std::vector<Job> jobs;
};
// Loads a TOML suite. Errors read "file:line: what was expected".
Suite load_suite(const std::string& file);
// The same from the file's text (`file` names it in errors): what load_suite does once read.
Suite parse_suite(std::string_view text, const std::string& file);

// configs/quick.toml, found next to the binary, in the source tree or in $MWBENCH_CONFIGS.
std::string default_suite_path();

}  // namespace mw
