// `mwbench model TRACE [--json OUT]` (issue 43): a workload model fitted to a trace, read once
// as a stream; --json writes it as the model file that --workload-model runs.
#include <cstdio>
#include <cxxopts.hpp>
#include <filesystem>
#include <iostream>

#include "app/cli.h"
#include "results/writer.h"
#include "util/parse.h"
#include "util/status.h"
#include "util/text.h"
#include "workload/trace.h"
#include "workload/traffic_model.h"

namespace mw {

cxxopts::Options model_options() {
  cxxopts::Options o("mwbench model", "fit a workload model to a trace: op mix, key popularity, sizes, rate, TTLs");
  o.add_options()("trace", "", cxxopts::value<std::string>())(
      "json", "write the model file to OUT (never over a file that is there, unless --force)",
      cxxopts::value<std::string>(), "OUT")("force", "let --json replace a file that is there")(
      "trace-format", "the trace's format: twitter, monitor or csv (default: detected)", cxxopts::value<std::string>(),
      "F")("skip-bad", "count and show malformed lines instead of stopping at the first")(
      "name", "the model's name (default: the trace's file name)", cxxopts::value<std::string>(), "NAME")(
      "max-keys",
      "distinct keys counted one by one (16 to " + std::to_string(kMaxModelKeys) +
          "); past it the keys are sampled by hash, and the summary says so",
      cxxopts::value<std::string>()->default_value(std::to_string(kMaxModelKeys)), "N")("h,help", "this help");
  o.parse_positional({"trace"});
  o.positional_help("TRACE");
  return o;
}

int model_command(int argc, char** argv) {
  cxxopts::Options o = model_options();
  cxxopts::ParseResult r;
  if (int exit = 0; !parse_command(o, argc, argv, "mwbench model", r, exit)) return exit;
  if (!r.count("trace")) {
    std::fprintf(stderr, "mwbench model: give a trace file (see mwbench model --help)\n");
    return 2;
  }
  try {
    const std::string path = r["trace"].as<std::string>();
    uint64_t max_keys = 0;
    try {
      const int64_t v = parse_size(r["max-keys"].as<std::string>(), "max-keys");
      max_keys = v >= 16 && static_cast<uint64_t>(v) <= kMaxModelKeys ? static_cast<uint64_t>(v) : 0;
    } catch (const SetupError&) {}
    if (!max_keys)
      throw SetupError("--max-keys: expected a whole number from 16 to " + std::to_string(kMaxModelKeys) + ", got '" +
                       printable(r["max-keys"].as<std::string>()) + "'");
    std::string out;
    if (r.count("json")) {
      out = r["json"].as<std::string>();
      check_output_targets({{"--json", out}}, {path});
      if (!r.count("force") && std::filesystem::exists(out))
        throw SetupError("--json: " + out + " exists: give --force to replace it, or another file");
    }
    TraceFormat f{};
    const bool given = r.count("trace-format") > 0;
    if (given) f = parse_trace_format(r["trace-format"].as<std::string>());
    TraceReader reader(path, given ? &f : nullptr, r.count("skip-bad") > 0);
    ModelFit fit(max_keys);
    TraceRecord rec;
    while (reader.next(rec)) fit.add(rec);
    if (fit.requests() == 0) throw SetupError(path + ": an empty trace, no requests in it");
    const std::string name =
        r.count("name") ? r["name"].as<std::string>() : std::filesystem::path(path).filename().string();
    if (name.empty() || name.size() > 200) throw SetupError("--name: expected 1 to 200 bytes");
    TrafficModel m = fit.finish(name, trace_format_name(reader.format()));
    m.skipped = reader.skipped();
    for (auto& line : model_summary(m)) std::cout << line << "\n";
    if (reader.skipped())
      std::cout << "skipped " << reader.skipped() << " malformed lines, the first: " << printable(reader.first_bad())
                << "\n";
    std::cout.flush();
    if (!out.empty()) {
      if (r.count("force"))
        write_file_atomic(out, model_json(m));
      else
        write_file_new(out, model_json(m));
    }
    return 0;
  } catch (const SetupError& e) {
    std::fprintf(stderr, "mwbench model: %s\n", printable(e.what()).c_str());
    return 2;
  }
}

}  // namespace mw
