// The one list of adapters (registry.cpp) and what this build left out.
#pragma once
#include <string>
#include <utility>
#include <vector>

#include "api/adapter.h"

namespace mw {

// Every adapter this build has, its spec completed with what its capabilities imply.
std::vector<AdapterSpec> registered_adapters();
// Installs registered_adapters() for find_adapter() (main() and the test and fuzz runners call it).
void install_registered_adapters();
// Adapters this build left out because a library was missing at configure time:
// {name, Debian package}.
std::vector<std::pair<std::string, std::string>> adapters_not_built();

}  // namespace mw
