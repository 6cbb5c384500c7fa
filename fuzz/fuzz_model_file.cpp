// libFuzzer target: the model file's parser (--workload-model FILE, `mwbench model --json`). Bad
// input must end as a SetupError of one line; a model it accepts must give a mix, a size list and
// a TTL list the workload parses, and write a file that reads back the same.
#include <cstddef>
#include <cstdint>
#include <string>

#include "util/status.h"
#include "workload/traffic_model.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size > 65536) return -1;
  const std::string text(reinterpret_cast<const char*>(data), size);
  try {
    const mw::TrafficModel m = mw::parse_model(text, "fuzz.json");
    mw::OpMix::parse(m.mix_text());
    if (!m.value_size.empty()) mw::SizeDist::parse(m.value_size);
    if (!(m.alpha >= 0 && m.alpha <= mw::kMaxTheta) || m.working_set < 1) __builtin_trap();
    const mw::TrafficModel back = mw::parse_model(mw::model_json(m), "back.json");
    if (back.mix_text() != m.mix_text() || back.value_size != m.value_size || back.alpha != m.alpha ||
        back.working_set != m.working_set || back.ttl != m.ttl || back.name != m.name)
      __builtin_trap();
  } catch (const mw::SetupError& e) {
    if (std::string(e.what()).find('\n') != std::string::npos) __builtin_trap();
  }
  return 0;
}
