// The list of adapters: made by CMake from adapters/*/adapter.cmake (build/adapters/registry_list.cpp,
// cmake/adapters.cmake), in their ORDER. Adding an adapter touches only its folder; this file keeps
// what is not a list: each spec completed, installed, and what the build left out.
#include "adapters/registry.h"

#include "config/capabilities.h"

namespace mw {

std::vector<AdapterSpec> registered_adapters() {
  std::vector<AdapterSpec> l = built_adapter_specs();
  for (AdapterSpec& a : l) a = complete_spec(std::move(a));  // what its capabilities imply
  return l;
}

void install_registered_adapters() { install_adapters(registered_adapters()); }

std::vector<std::pair<std::string, std::string>> adapters_not_built() {
  std::vector<std::pair<std::string, std::string>> off;
  std::string list = MWBENCH_ADAPTERS_OFF;  // "name=package,name=package" from CMake
  size_t at = 0;
  while (at < list.size()) {
    size_t end = list.find(',', at);
    if (end == std::string::npos) end = list.size();
    std::string item = list.substr(at, end - at);
    size_t eq = item.find('=');
    if (eq != std::string::npos) off.emplace_back(item.substr(0, eq), item.substr(eq + 1));
    at = end + 1;
  }
  return off;
}

}  // namespace mw
