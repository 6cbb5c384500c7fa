// Jobs from the command line and from TOML suites: one place that knows the common keys,
// checks adapter options, and expands lists into one job per value.
#pragma once
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "api/adapter.h"

namespace mw {

// A key and its values as the user gave them (one value, or a list).
struct Setting {
  std::string key;
  std::vector<std::string> values;
  std::string where;  // "file:line" or "--key"
};

// Common keys every adapter takes (n, clients, pipeline, duration, ...).
const std::vector<OptionSpec>& common_options();

// At most this many jobs in one run (lists multiply; the count is checked before any job is
// built), and at most this many job runs with --repeat.
constexpr size_t kMaxJobs = 10000;
// Suite files: at most this size and this nesting (tables, arrays, dotted keys), checked before
// the TOML parser sees the text.
constexpr size_t kMaxSuiteBytes = 4 << 20;
constexpr int kMaxSuiteDepth = 64;

// Builds the jobs of one declaration: `settings` holds adapter, ops and every other key.
// Throws SetupError naming `where` for an unknown key, a bad value, a value out of its
// range, an unknown op, or when `already` jobs plus these would pass kMaxJobs.
std::vector<Job> expand_jobs(const std::string& adapter, const std::vector<Setting>& settings,
                             const std::string& source, size_t already = 0);
// Throws SetupError when `jobs` run `repeat` times each would pass kMaxJobs.
void check_run_count(size_t jobs, int repeat);

struct Suite {
  std::string name, description, file;
  std::vector<Job> jobs;
};
// Loads a TOML suite (a regular file of at most kMaxSuiteBytes); `already`: jobs of suites
// loaded before it, for the kMaxJobs cap. Errors read "file:line: what was expected".
Suite load_suite(const std::string& file, size_t already = 0);
// The same from the file's text (`file` names it in errors): what load_suite does once read,
// size and nesting bounds included.
Suite parse_suite(std::string_view text, const std::string& file, size_t already = 0);

// Where suites named without a path are looked for, in this order: $MWBENCH_CONFIGS, ./configs,
// <the binary's dir>/../configs (a build tree), <the binary's dir>/../share/mwbench/configs (an
// installed one), the source tree's configs/. Without duplicates.
std::vector<std::string> suite_dirs();
// The file of a suite argument: a file that exists, or a path (with a '/'), as given; a bare name
// ("vm-sanity", "vm-sanity.toml") as NAME.toml in the first of suite_dirs() that has it. An unknown
// name throws SetupError naming the suites found and where it looked.
std::string find_suite(const std::string& arg);
inline constexpr const char* kDefaultSuite = "quick";

}  // namespace mw
