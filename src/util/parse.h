// Numbers, sizes, durations and lists as users write them, with errors that name the option.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace mw {

// Parses "10s", "500ms", "2m", "1.5" (seconds). Throws SetupError naming `what`.
double parse_duration(const std::string& s, const std::string& what);
// Parses "4096", "4k", "1M", "2G" (powers of 1024). Throws SetupError naming `what`.
int64_t parse_size(const std::string& s, const std::string& what);
std::vector<std::string> split_list(const std::string& s, char sep = ',');
// The leading number of `s` (strtod); *used: how many characters it took (0: none).
double parse_number(const std::string& s, size_t* used);

}  // namespace mw
