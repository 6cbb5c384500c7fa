// Issue 24 class 15: an unreachable server is one classification for every adapter: a set-up
// error (exit 2) in one line naming where, never a job of failed ops (exit 1).
#include <doctest/doctest.h>

#include <algorithm>
#include <string>

#include "core/runner.h"
#include "services/services.h"
#include "tests/helpers.h"
#include "util/parse.h"

using namespace mw;
using namespace mw::test;

TEST_CASE("unreachable: every adapter with an external target: a closed port is exit 2, one line naming it") {
  const int port = free_port();  // nothing listens there
  const std::string where = "127.0.0.1:" + std::to_string(port);
  int tried = 0;
  for (const AdapterSpec& spec : adapters()) {
    if (spec.target != TargetKind::External) continue;
    CAPTURE(spec.name);
    const bool has_port =
        std::any_of(spec.options.begin(), spec.options.end(), [](const OptionSpec& o) { return o.name == "port"; });
    Job j = make_job(spec.name, split_list(spec.default_ops).front(), 10);
    j.timeout_s = 2;
    if (spec.target_option == "url") {
      j.opts["url"] = "http://" + where + "/mwbench";
    } else if (has_port) {
      j.opts[spec.target_option] = "127.0.0.1";
      j.opts["port"] = std::to_string(port);
    } else {
      j.opts[spec.target_option] = where;
    }
    for (const OptionSpec& o : spec.options)  // an external database's name, where one is needed
      if (o.name == "database") j.opts["database"] = "mwbench";
    RunResult run;
    run.jobs.push_back(run_one(j));
    const JobResult& r = run.jobs.front();
    CAPTURE(r.message);
    CHECK(exit_code(run) == 2);
    CHECK(r.state == JobResult::State::SetupFailed);
    CHECK(r.message.find('\n') == std::string::npos);
    CHECK(r.message.find(where) != std::string::npos);
    ++tried;
  }
  CHECK(tried >= 2);
}
