// The echo adapter: the loopback round trip, and what it means for a client that waits for
// each reply (the "stores:" lines under the table).
#include <doctest/doctest.h>

#include "core/runner.h"
#include "report/report.h"
#include "tests/helpers.h"

using namespace mw;

TEST_CASE("echo: every byte comes back, on each client's own connection; its round trip is a ceiling") {
  Job j = test::make_job("echo", "tcp", 3000, 3);
  j.opts["size"] = "100";
  JobResult r = run_one(j);
  CHECK(r.message == "");
  CHECK(r.ops_ok == 3000);
  CHECK(r.ops_failed == 0);
  CHECK(r.bytes == 3000 * 100);
  CHECK(r.target == "127.0.0.1 (loopback)");
  REQUIRE(r.profile.taken);
  CHECK(r.profile.net_counted);  // mwbench's own sockets: both ends are in this process
  CHECK(r.profile.bytes_sent >= 3000 * 100);
  std::vector<std::string> g = guidance_lines("echo tcp", r);
  REQUIRE(g.size() == 2);
  CHECK(g[0].find("stores: echo tcp: round trip p50 ") == 0);
  CHECK(g[1].find("  a client that waits for each reply (no pipelining) makes at most ") == 0);
  CHECK(g[1].find(" requests per second over this path (1 / p50), whatever its server") != std::string::npos);
}
