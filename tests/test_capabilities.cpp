// AdapterSpec's capabilities are data the core reads: no adapter's name in src/, the options a
// spec's capabilities imply, and the checks of a spec that contradicts itself.
#include <doctest/doctest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <regex>
#include <stdexcept>

#include "api/adapter.h"
#include "api/options.h"
#include "config/capabilities.h"
#include "config/workload_spec.h"

namespace mw {
namespace {

bool offers(const AdapterSpec& s, const std::string& option) {
  return std::any_of(s.options.begin(), s.options.end(), [&](const OptionSpec& o) { return o.name == option; });
}

const OptionSpec& option_of(const AdapterSpec& s, const std::string& name) {
  auto it = std::find_if(s.options.begin(), s.options.end(), [&](const OptionSpec& o) { return o.name == name; });
  REQUIRE(it != s.options.end());
  return *it;
}

}  // namespace

TEST_CASE("capabilities: no registered adapter's name is a string literal in src/") {
  namespace fs = std::filesystem;
  std::vector<std::string> found;
  for (const auto& e : fs::recursive_directory_iterator(fs::path(MWBENCH_SOURCE_DIR) / "src")) {
    if (!e.is_regular_file() || (e.path().extension() != ".cpp" && e.path().extension() != ".h")) continue;
    std::ifstream in(e.path());
    std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    for (const AdapterSpec& a : adapters())
      if (text.find("\"" + a.name + "\"") != std::string::npos)
        found.push_back(e.path().lexically_relative(MWBENCH_SOURCE_DIR).string() + ": \"" + a.name + "\"");
  }
  std::string all;
  for (auto& f : found) all += f + "\n";
  CHECK_MESSAGE(found.empty(), "adapter names in the core (make them capabilities in AdapterSpec):\n" << all);
  CHECK(adapters().size() >= 9);  // the grep looked for something
}

// What an adapter is (a queue, a keyed store) is its spec's families, read by the core; never a
// test of its C++ type (capacity.cpp asked dynamic_cast<QueueAdapter*> whether a job was a queue's).
TEST_CASE("capabilities: no dynamic_cast to an adapter type in src/") {
  namespace fs = std::filesystem;
  const std::regex cast(R"(dynamic_cast\s*<\s*(const\s+)?[\w:]*Adapter\b)");
  std::vector<std::string> found;
  for (const auto& e : fs::recursive_directory_iterator(fs::path(MWBENCH_SOURCE_DIR) / "src")) {
    if (!e.is_regular_file() || (e.path().extension() != ".cpp" && e.path().extension() != ".h")) continue;
    std::ifstream in(e.path());
    int line_no = 0;
    for (std::string line; std::getline(in, line);)
      if (++line_no; std::regex_search(line, cast))
        found.push_back(e.path().lexically_relative(MWBENCH_SOURCE_DIR).string() + ":" + std::to_string(line_no));
  }
  std::string all;
  for (auto& f : found) all += f + "\n";
  CHECK_MESSAGE(found.empty(), "casts to an adapter type (decide by AdapterSpec::families):\n" << all);
  CHECK(std::regex_search("auto* q = dynamic_cast<QueueAdapter*>(&a);", cast));  // the pattern finds one
}

TEST_CASE("capabilities: the options a spec's capabilities imply") {
  for (const AdapterSpec& a : adapters()) {
    CAPTURE(a.name);
    CHECK(offers(a, "scan-length") == a.maps(KvOp::Scan));  // never offered where nothing scans
    if (!a.kv_ops.empty()) CHECK(offers(a, "keyspace"));
    CHECK(offers(a, "consumers") == a.has(Family::Queue));
    CHECK(offers(a, "crash-at") == !a.crash_kinds.empty());
    if (!a.crash_kinds.empty()) {
      std::vector<std::string> want = {"none"};
      for (CrashKind k : a.crash_kinds) want.push_back(crash_name(k));
      CHECK(option_of(a, "crash").choices == want);
    }
    if (a.target == TargetKind::External) CHECK(offers(a, a.target_option));
  }
  const AdapterSpec* mc = find_adapter("memcached");
  REQUIRE(mc);
  CHECK(mc->target == TargetKind::External);
  CHECK(mc->target_option == "host");
  const AdapterSpec* disk = find_adapter("disk");
  REQUIRE(disk);  // its --mix is its own (% reads), not the workload's
  CHECK(disk->kv_ops.empty());
  CHECK(*option_of(*disk, "mix").owner != typeid(WorkloadOptions));
}

TEST_CASE("capabilities: a spec that contradicts itself is refused") {
  auto spec = [] {
    AdapterSpec s;
    s.name = "x";
    s.options = {{.name = "host"}, {.name = "sync"}};
    return s;
  };
  AdapterSpec ok = spec();
  ok.target = TargetKind::External, ok.target_option = "host", ok.crash_kinds = {CrashKind::Kill};
  ok.durability_settings = {"sync"};
  CHECK_NOTHROW(complete_spec(ok));
  AdapterSpec no_option = spec();
  no_option.target = TargetKind::External;
  CHECK_THROWS_AS(complete_spec(no_option), std::logic_error);
  AdapterSpec wrong_option = spec();
  wrong_option.target = TargetKind::External, wrong_option.target_option = "url";
  CHECK_THROWS_AS(complete_spec(wrong_option), std::logic_error);
  AdapterSpec unknown_setting = spec();
  unknown_setting.crash_kinds = {CrashKind::Kill}, unknown_setting.durability_settings = {"fsync"};
  CHECK_THROWS_AS(complete_spec(unknown_setting), std::logic_error);
  AdapterSpec kv_raw = spec();
  kv_raw.kv_ops = {KvOp::Read};
  CHECK_THROWS_AS(complete_spec(kv_raw), std::logic_error);
  kv_raw.families = {Family::KeyedStore};
  AdapterSpec conds = kv_raw;  // a trace's add and replace are updates
  conds.conditional_writes = true;
  CHECK_THROWS_AS(complete_spec(conds), std::logic_error);
  conds.kv_ops = {KvOp::Read, KvOp::Update};
  CHECK_NOTHROW(complete_spec(conds));
  AdapterSpec done = complete_spec(kv_raw);
  CHECK(offers(done, "mix"));
  CHECK_FALSE(offers(done, "scan-length"));
}

}  // namespace mw
