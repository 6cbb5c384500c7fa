// Client's defaults kept out of line (adapter.h says why), and a keyed crash check's reads.
#include "api/adapter.h"

namespace mw {

OpResult Client::run_request(const Request& r) { return run(r.seq); }

const OptionSpec* find_option(const std::vector<OptionSpec>& options, std::string_view name) {
  for (const OptionSpec& o : options)
    if (o.name == name) return &o;
  return nullptr;
}

std::vector<Held> held_values(std::span<const uint64_t> keys, const std::function<bool(uint64_t, std::string&)>& get) {
  std::vector<Held> out;
  out.reserve(keys.size());
  std::string v;
  for (uint64_t k : keys) {
    Held h;
    uint32_t version = 0;
    if (get(k, v)) {
      h.kind = check_value(k, v.data(), v.size(), &version) == ValueCheck::Ok ? Held::Kind::Value : Held::Kind::Corrupt;
      if (v.size() >= kVersionedValue) h.version = version;
    }
    out.push_back(h);
  }
  return out;
}

}  // namespace mw
