// `mwbench merge`: result files of copies started by other means (ssh, Kubernetes jobs) into
// one, exactly as MPI ranks are merged.
#include <cstdio>
#include <cxxopts.hpp>
#include <iostream>

#include "app/cli.h"
#include "report/report.h"
#include "results/merge.h"
#include "results/results.h"
#include "util/text.h"

namespace mw {

cxxopts::Options merge_options() {
  cxxopts::Options o("mwbench merge", "merge result files of runs that measured the same jobs at the same time");
  o.add_options()("files", "", cxxopts::value<std::vector<std::string>>())("json", "write the merged result to FILE",
                                                                           cxxopts::value<std::string>(), "FILE")(
      "q,quiet", "print only req/s per job")("v,verbose", "print every note under the table (mwbench run's -v)")(
      "h,help", "this help");
  o.parse_positional({"files"});
  o.positional_help("A.json B.json ...");
  return o;
}

int merge_command(int argc, char** argv) {
  cxxopts::Options o = merge_options();
  cxxopts::ParseResult r;
  if (int exit = 0; !parse_command(o, argc, argv, "mwbench merge", r, exit)) return exit;
  std::vector<std::string> files;
  if (r.count("files")) files = r["files"].as<std::vector<std::string>>();
  if (r.count("quiet") && r.count("verbose")) {
    std::fprintf(stderr, "mwbench merge: %s\n", kQuietAndVerbose);
    return 2;
  }
  if (files.size() < 2) {
    std::fprintf(stderr, "mwbench merge: give at least 2 result files (see mwbench merge --help)\n");
    return 2;
  }
  try {
    if (r.count("json")) check_output_targets({{"--json", r["json"].as<std::string>()}}, files);
    std::vector<RunResult> runs;
    std::string command = "mwbench merge";
    for (auto& f : files) {
      runs.push_back(load_result(f));
      command += " " + f;
    }
    check_distinct_runs(runs);
    Merged m = merge_runs(runs, command);
    // merge's own warnings are the merged run's too (its table's, its file's): -q names them apart
    if (r.count("quiet")) {
      for (auto& j : m.run.jobs)
        std::cout << printable(j.job.name) << " " << printable(j.target) << ": " << fmt(j.rps, 2)
                  << " requests per second" << (j.failed() ? "  FAILED" : "") << "\n";
      std::cout.flush();
      for (auto& w : m.warnings) std::fprintf(stderr, "warning: %s\n", printable(w.text).c_str());
    } else {
      std::cout << format_table(m.run, r.count("verbose") ? Detail::Full : Detail::Glance);
    }
    std::cout.flush();
    if (r.count("json")) write_file_atomic(r["json"].as<std::string>(), result_text(m.run));
    return exit_code(m.run);
  } catch (const SetupError& e) {
    std::fprintf(stderr, "mwbench merge: %s\n", printable(e.what()).c_str());
    return 2;
  }
}

}  // namespace mw
