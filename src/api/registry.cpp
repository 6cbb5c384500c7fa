// The installed adapter list (adapters/registry.cpp builds it; main() installs it).
#include "api/adapter.h"

namespace mw {
namespace {

std::vector<AdapterSpec>& installed() {
  static std::vector<AdapterSpec> list;
  return list;
}

}  // namespace

void install_adapters(std::vector<AdapterSpec> list) { installed() = std::move(list); }

const std::vector<AdapterSpec>& adapters() { return installed(); }

const AdapterSpec* find_adapter(const std::string& name) {
  for (const auto& a : installed())
    if (a.name == name) return &a;
  return nullptr;
}

}  // namespace mw
