// The resource profile of a job's timed phase and its "limited by" verdict, on real stores:
// SQLite with synchronous=full flushes the disk behind its path, a managed redis-server spends
// CPU per op, a --rate run is limited by the rate asked for; and the verdict's rules alone.
#include <doctest/doctest.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>

#include <string>

#include "helpers.h"
#include "probe.h"
#include "report.h"
#include "resources.h"
#include "runner.h"

using namespace mw;

namespace {

const DiskProfile* disk(const JobResult& r) { return r.profile.disks.empty() ? nullptr : &r.profile.disks[0]; }

Profile busy(double wall, double self_thread, double server_thread) {
  Profile p;
  p.taken = true;
  p.wall_s = wall, p.ops = 1000, p.cores = 2, p.threads = 1;
  p.self.name = "mwbench", p.self.user_s = self_thread, p.self.busiest_thread_s = self_thread;
  ProcessProfile s;
  s.name = "redis-server", s.user_s = server_thread, s.busiest_thread_s = server_thread;
  p.servers.push_back(s);
  return p;
}

}  // namespace

TEST_CASE("profile: the verdict's rules") {
  Job j = test::make_job("redis", "set", 1000);
  Profile p = busy(1.0, 0.3, 0.97);
  judge(p, j, 1000, false);
  CHECK(p.limited_by == "server CPU");
  CHECK(p.evidence == "redis-server at 97% of one core");
  p = busy(1.0, 0.95, 0.4);
  judge(p, j, 1000, false);
  CHECK(p.limited_by == "client CPU");
  CHECK(p.suspect);
  p = busy(1.0, 0.95, 0.4);
  p.polled = true;  // a busy poll's CPU says nothing
  judge(p, j, 1000, false);
  CHECK(p.limited_by == "not determined");
  p = busy(0.1, 0.1, 0.1);  // too short for 10 ms ticks
  judge(p, j, 1000, false);
  CHECK(p.limited_by == "not determined");
  CHECK(p.evidence == "the timed phase (100 ms) is too short");
  p.disks.push_back({"/var/tmp", "vda", "", 0, 1000, 0, 4096000, 1000, 60});  // flush counts are exact
  judge(p, j, 1000, false);
  CHECK(p.limited_by == "disk flushes");
  p = busy(1.0, 0.2, 0.2);
  p.disks.push_back({"/var/tmp", "vda", "", 0, 1000, 0, 4096000, 1000, 610});
  judge(p, j, 1000, false);
  CHECK(p.limited_by == "disk flushes");
  CHECK(p.evidence == "vda: 1.0 flush per op at 0.61 ms: a ceiling of about 1,639/s");
  j.rate = 1000;
  judge(p, j, 999, false);
  CHECK(p.limited_by == "the rate you asked for");
}

TEST_CASE("profile: the lock-wait rule (SQLite's busy retries)") {
  Job j = test::make_job("sqlite", "insert", 1000, 4);
  Profile p = busy(0.8, 0.2, 0);
  p.servers.clear();
  p.clients = 4, p.locks_counted = true, p.lock_retries = 83, p.lock_wait_s = 0.7;  // under one client asleep
  judge(p, j, 1000, true);
  CHECK(p.limited_by == "not determined");
  CHECK(p.evidence == "nothing saturated: mwbench 25% of a core, 83 busy retries");
  p.lock_wait_s = 1.6;
  judge(p, j, 1000, true);
  CHECK(p.limited_by == "lock waits");
  CHECK(p.evidence == "83 busy retries, 1.60 s asleep on the store's locks in a 0.80 s phase: 2.0 of the 4 clients "
                      "asleep on average");
  p.disks.push_back({"/var/tmp", "vda", "", 0, 1000, 0, 4096000, 1000, 60});  // the lock is held over a flush
  judge(p, j, 1000, true);
  CHECK(p.limited_by == "disk flushes");
}

TEST_CASE("profile: sqlite's clients on one database wait on its lock; one client never does") {
  Job j = test::make_job("sqlite", "insert", 3000, 8);
  j.opts["path"] = "/dev/shm";
  j.opts["synchronous"] = "off";
  j.opts["rows"] = "10";
  JobResult r = run_one(j);
  REQUIRE(r.state == JobResult::State::Done);
  CHECK(r.ops_failed == 0);
  REQUIRE(r.profile.locks_counted);
  CAPTURE(r.profile.evidence);
  CHECK(r.profile.clients == 8);
  CHECK(r.profile.lock_retries > 0);
  CHECK(r.profile.lock_wait_s >= 0.001 * static_cast<double>(r.profile.lock_retries));  // 1 ms at least each
  CHECK(r.profile.limited_by == "lock waits");
  j = test::make_job("sqlite", "insert", 300, 1);
  j.opts = {{"path", "/dev/shm"}, {"synchronous", "off"}, {"rows", "10"}};
  r = run_one(j);
  REQUIRE(r.profile.locks_counted);
  CHECK(r.profile.lock_retries == 0);
  CHECK(r.profile.lock_wait_s == 0);
}

TEST_CASE("profile: the device behind a path, or why there is none") {
  CHECK(disk_of("/dev/shm").why_not == "tmpfs: no block device");
  struct stat st{};
  REQUIRE(stat("/var/tmp", &st) == 0);
  if (major(st.st_dev) == 0) return;  // /var/tmp on an overlay or tmpfs: nothing to check here
  DiskDevice d = disk_of("/var/tmp/not-made-yet/file");  // the folder it would be in
  CHECK(d.why_not == "");
  CHECK(sample_disk(d.name).found);
}

TEST_CASE("profile: sqlite with synchronous=full flushes its disk at every insert; on tmpfs none") {
  test::TempDir d;
  Job j = test::make_job("sqlite", "insert", 60);
  j.opts["path"] = d.path;
  j.opts["synchronous"] = "full";
  j.opts["rows"] = "10";
  JobResult r = run_one(j);
  REQUIRE(r.state == JobResult::State::Done);
  REQUIRE(r.profile.taken);
  REQUIRE(disk(r));
  CAPTURE(r.profile.evidence);
  if (disk(r)->missing.empty() && sample_disk(disk(r)->device).flushes > 0) {  // a device that counts flushes
    CHECK(r.profile.per_op(static_cast<double>(disk(r)->flushes)) >= 0.9);
    CHECK(r.profile.limited_by == "disk flushes");
  }
  CHECK(r.profile.self.cpu_s() > 0);
  CHECK_FALSE(r.profile.net_counted);
  j.opts["path"] = "/dev/shm";
  r = run_one(j);
  REQUIRE(disk(r));
  CHECK(disk(r)->missing == "tmpfs: no block device");
  CHECK(r.profile.limited_by != "disk flushes");
  bool said = false;
  RunResult run;
  run.jobs = {r};
  for (auto& l : summary_notes(run))
    said |= l.find("/dev/shm: no disk figures (tmpfs: no block device)") != std::string::npos;
  CHECK(said);
}

TEST_CASE("profile: a managed redis-server's CPU per op; a --rate run is limited by the rate") {
  Job j = test::make_job("redis", "set", 20000, 10);
  j.pipeline = 8;
  JobResult r = run_one(j);
  REQUIRE(r.state == JobResult::State::Done);
  REQUIRE(r.profile.servers.size() == 1);
  CHECK(r.profile.servers[0].name == "redis-server");
  CHECK(r.profile.servers[0].how == "managed");
  CHECK(r.profile.per_op(r.profile.servers[0].cpu_s()) > 0);
  CHECK(r.profile.servers[0].peak_rss_bytes > 1000000);
  CHECK(r.profile.bytes_sent >= 20000 * 30);  // SET key value: some 30 bytes each at least
  CHECK(r.profile.bytes_received >= 20000 * 5);  // +OK\r\n
  j = test::make_job("null", "nop", 1500);  // 0.5 s: a late last op on a loaded machine costs under 5%
  j.rate = 3000;
  r = run_one(j);
  CHECK(r.profile.limited_by == "the rate you asked for");
  CHECK(r.profile.servers.empty());
}
