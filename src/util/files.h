// Files and names of a job's own: test files, databases, queue names, the filesystem behind a path.
#pragma once
#include <string>
#include <utility>

namespace mw {

// Filesystem type and device behind a path, from /proc/self/mountinfo.
std::pair<std::string, std::string> filesystem_of(const std::string& path);
// Why `dir` cannot hold a test file ("directory X does not exist", "... is not writable (...)"),
// or "" when it can. Really creates a file: access() says yes to root everywhere.
std::string unusable_dir(const std::string& dir);
// A name no other job of this or another mwbench process uses: "<stem>-<pid>-<n>", n counting up
// in this process. Test files, databases, gearman functions and queue tables are named with it.
std::string unique_name(const std::string& stem = "mwbench", char sep = '-');
// `dir` without trailing slashes ("/" stays).
std::string trim_dir(std::string dir);
// "<dir>/<unique_name(stem)><ext>": the path of a job's own test file in `dir`.
std::string temp_file(const std::string& dir, const std::string& ext, const std::string& stem = "mwbench");
}  // namespace mw
