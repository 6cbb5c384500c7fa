// Episodes found over a finished series and matched to the timeline's events (core/episodes.h),
// on series made here; and the timeline's events and episodes written and read back. The runs on
// real servers are in test_timeline.cpp.
#include <doctest/doctest.h>

#include <cmath>
#include <limits>
#include <nlohmann/json.hpp>

#include "core/episodes.h"
#include "core/timeline.h"
#include "report/report.h"
#include "results/notes.h"
#include "results/results.h"
#include "results/writer.h"
#include "services/resources.h"
#include "tests/helpers.h"

using namespace mw;

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// An interval of `ok` ops whose p99 is `p99_ms` (p50 a tenth of it).
SeriesInterval iv(uint64_t ok, double p99_ms) {
  const auto p99 = static_cast<int64_t>(p99_ms * 1e6);
  return SeriesInterval::from_percentiles(ok, 0, p99 / 10, p99, p99);
}

// A job of `n` intervals of 0.1 s, 1,000 ops each at p99 1 ms.
JobResult steady(size_t n) {
  JobResult j = test::done_result("redis", "set", "redis set", 10000);
  j.series_interval_s = 0.1;
  j.elapsed_s = 0.1 * static_cast<double>(n);
  for (size_t k = 0; k < n; ++k) j.series.push_back(iv(1000, 1));
  return j;
}

EventTrack flat(const char* origin, const char* source, const char* name, const char* unit, size_t n, double v = 0) {
  return {origin, source, name, unit, std::string(source) + " " + name, std::vector<double>(n, v)};
}

bool names(const Episode& e, const std::string& event) {
  for (auto& c : e.causes)
    if (c.event == event) return true;
  return false;
}

}  // namespace

TEST_CASE("episodes: a quiet run has none; a run too short to have a norm is not judged") {
  JobResult j = steady(40);
  for (size_t k = 0; k < 40; ++k) j.series[k] = iv(900 + 20 * (k % 7), 1 + 0.2 * static_cast<double>(k % 5));
  find_episodes(j);
  CHECK(j.episodes_judged);
  CHECK(j.episodes.empty());

  JobResult short_run = steady(5);
  short_run.series[2] = iv(0, 0);
  find_episodes(short_run);
  CHECK_FALSE(short_run.episodes_judged);
  CHECK(short_run.episodes.empty());
}

TEST_CASE("episodes: p99 at 3x the median interval's for 0.5 s is one episode, with the event that coincides") {
  JobResult j = steady(40);
  for (size_t k = 20; k < 25; ++k) j.series[k] = iv(1000, 20);
  EventTrack forks = flat("server", "redis-server", "total_forks", "count", 40);
  forks.what = "forks of redis-server (an RDB snapshot or an AOF rewrite)";
  forks.values[20] = 1;
  EventTrack psi = flat("machine", "machine", "psi_cpu_some", "share", 40, 0.3);
  for (size_t k = 0; k < 40; k += 3) psi.values[k] = 0.35;  // noise within its norm
  EventTrack unread = flat("machine", "vda", "flushes", "count", 40, kNaN);
  j.events = {psi, forks, unread};
  find_episodes(j);
  REQUIRE(j.episodes.size() == 1);
  const Episode& e = j.episodes[0];
  CHECK(e.start_s == doctest::Approx(2.0));
  CHECK(e.end_s == doctest::Approx(2.5));
  CHECK(e.p99);
  CHECK_FALSE(e.throughput);
  CHECK(e.p99_ns == doctest::Approx(20e6).epsilon(0.02));
  CHECK(e.norm_p99_ns == doctest::Approx(1e6).epsilon(0.02));
  CHECK(e.what.find("p99 20 ms (median interval 1.0 ms)") == 0);
  REQUIRE(e.causes.size() == 1);  // PSI stayed in its norm; the device was not read
  CHECK(e.causes[0].source == "redis-server");
  CHECK(e.causes[0].event == "total_forks");
  CHECK(e.causes[0].evidence.find("forks of redis-server") == 0);
  CHECK(e.unexplained.empty());
}

TEST_CASE("episodes: the floors: blips shorter than 0.25 s in a row, or under 2 ms above the median, is no episode") {
  JobResult j = steady(40);
  j.series[10] = iv(1000, 50);  // two intervals of 0.1 s
  j.series[11] = iv(1000, 50);
  for (size_t k : {14, 16, 18}) j.series[k] = iv(1000, 50);      // blips one interval apart: none 0.25 s in a row
  for (size_t k = 20; k < 30; ++k) j.series[k] = iv(1000, 2.5);  // 2.5x, and 1.5 ms above
  find_episodes(j);
  CHECK(j.episodes_judged);
  CHECK(j.episodes.empty());
  // the same intervals a second long each: one interval is long enough
  JobResult slow = steady(40);
  slow.series_interval_s = 1, slow.elapsed_s = 40;
  slow.series[10] = iv(1000, 50);
  find_episodes(slow);
  REQUIRE(slow.episodes.size() == 1);
  CHECK(slow.episodes[0].start_s == doctest::Approx(10));
  CHECK(slow.episodes[0].end_s == doctest::Approx(11));
}

TEST_CASE("episodes: merged across a gap of one interval, not two; throughput at 0.7x of the median") {
  JobResult j = steady(60);
  for (size_t k : {10, 11, 12, 14}) j.series[k] = iv(500, 1);          // one gap: one episode
  for (size_t k : {30, 31, 32, 35, 36, 37}) j.series[k] = iv(600, 1);  // two: two episodes
  j.series[45] = iv(750, 1);                                           // 0.75x: within the norm
  j.series[46] = iv(750, 1);
  j.series[47] = iv(750, 1);
  find_episodes(j);
  REQUIRE(j.episodes.size() == 3);
  CHECK(j.episodes[0].start_s == doctest::Approx(1.0));
  CHECK(j.episodes[0].end_s == doctest::Approx(1.5));
  CHECK(j.episodes[0].throughput);
  CHECK_FALSE(j.episodes[0].p99);
  CHECK(j.episodes[0].what == "throughput -50% (5,000 req/s, median interval 10,000)");
  CHECK(j.episodes[1].start_s == doctest::Approx(3.0));
  CHECK(j.episodes[2].start_s == doctest::Approx(3.5));
  CHECK(j.episodes[0].unexplained == "no events were read (--server-events off)");
}

TEST_CASE("episodes: a server that answered nothing and did not run, stopped; a stall with no event said as such") {
  JobResult j = steady(40);
  for (size_t k = 15; k < 30; ++k) j.series[k] = iv(0, 0);
  j.series[30] = iv(1000, 1500);
  EventTrack cpu = flat("process", "redis-server", kProcessCpu, "share", 40, 0.6);
  EventTrack stopped = flat("process", "redis-server", kProcessStopped, "", 40, 0);
  for (size_t k = 15; k < 30; ++k) cpu.values[k] = 0, stopped.values[k] = 1;
  EventTrack unanswered = flat("server", "redis-server", kProbeUnanswered, "", 40, 0);
  for (size_t k = 15; k < 30; ++k) unanswered.values[k] = 1;
  j.events = {cpu, stopped, unanswered};
  find_episodes(j);
  REQUIRE(j.episodes.size() == 1);
  const Episode& e = j.episodes[0];
  CHECK(e.start_s == doctest::Approx(1.5));
  CHECK(e.end_s == doctest::Approx(3.1));
  CHECK(e.throughput);
  CHECK(e.p99);
  CHECK(e.what.find("no op completed for 1.5 s") != std::string::npos);
  REQUIRE(e.causes.size() >= 2);
  CHECK(e.causes[0].event == "stopped");
  CHECK(e.causes[0].evidence.find("redis-server stopped answering and did not run: it answered nothing for 1.5 s "
                                  "and used 0 ms of CPU") == 0);
  CHECK(e.causes[0].evidence.find("state T") != std::string::npos);
  CHECK(names(e, "no answer"));
  CHECK_FALSE(names(e, kProcessCpu));  // its drop is the stop's evidence, not a cause of its own

  // the same stall with the server's CPU and state unseen (a remote server), and nothing else read
  JobResult remote = steady(40);
  for (size_t k = 15; k < 30; ++k) remote.series[k] = iv(0, 0);
  remote.events = {flat("machine", "machine", "psi_cpu_some", "share", 40, 0.2)};
  find_episodes(remote);
  REQUIRE(remote.episodes.size() == 1);
  CHECK(remote.episodes[0].causes.empty());
  CHECK(remote.episodes[0].unexplained == "no event read moved with it; nothing was answered for 1.5 s");
}

TEST_CASE("episodes: a client that waited for a CPU is named only by its own figures") {
  JobResult j = steady(40);
  for (size_t k = 20; k < 26; ++k) j.series[k] = iv(400, 9);
  EventTrack wait = flat("client", "mwbench", "cpu_wait", "share", 40, 0.05);
  EventTrack server = flat("process", "redis-server", "process_cpu_wait", "share", 40, 0.05);
  for (size_t k = 20; k < 26; ++k) server.values[k] = 0.7;
  j.events = {wait, server};
  find_episodes(j);
  REQUIRE(j.episodes.size() == 1);
  REQUIRE(j.episodes[0].causes.size() == 1);
  CHECK(j.episodes[0].causes[0].event == "process_cpu_wait");
  CHECK(j.episodes[0].causes[0].evidence.find("70% at its peak (median 5.0% otherwise)") != std::string::npos);
}

TEST_CASE("episodes: a wait for a CPU of a few ms in an interval is named before a server's CPU that rose a little") {
  // A loaded machine (a compiler beside the run): p99 7 ms for 0.6 s over a norm of 1 ms, the
  // client's threads waiting 4 ms of the 100 ms intervals (0.3 ms otherwise), the server's CPU
  // from 10% to 21% of a core. The wait is the cause; it is under a tenth of the interval.
  JobResult j = steady(40);
  for (size_t k = 19; k < 25; ++k) j.series[k] = iv(200, 7);
  EventTrack wait = flat("client", "mwbench", "cpu_wait", "share", 40, 0.003);
  EventTrack cpu = flat("process", "redis-server", "process_cpu", "share", 40, 0.1);
  for (size_t k = 0; k < 40; k += 4) wait.values[k] = 0.006, cpu.values[k] = 0.11;  // noise within the norm
  for (size_t k = 19; k < 25; ++k) wait.values[k] = 0.04;
  for (size_t k = 20; k < 23; ++k) cpu.values[k] = 0.21;
  j.events = {cpu, wait};
  find_episodes(j);
  REQUIRE(j.episodes.size() == 1);
  REQUIRE_FALSE(j.episodes[0].causes.empty());
  CHECK(j.episodes[0].causes[0].event == "cpu_wait");
  CHECK(j.episodes[0].causes[0].evidence.find("4.0% at its peak (median 0.3% otherwise)") != std::string::npos);

  // a wait of 1 ms above its norm: under the p99 floor's 2 ms, not named
  JobResult small = j;
  for (size_t k = 19; k < 25; ++k) small.events[1].values[k] = 0.013;
  find_episodes(small);
  REQUIRE(small.episodes.size() == 1);
  CHECK_FALSE(names(small.episodes[0], "cpu_wait"));
  CHECK(names(small.episodes[0], "process_cpu"));
}

TEST_CASE("episodes: the events and episodes are written and read back; the notes show at most 3 a job") {
  JobResult j = steady(80);
  for (size_t start : {10, 25, 40, 55, 70})
    for (size_t k = start; k < start + 4; ++k) j.series[k] = iv(1000, 30);
  EventTrack saves = flat("server", "redis-server", "rdb_bgsave_in_progress", "", 80, 0);
  saves.what = "an RDB snapshot in progress";
  saves.values[11] = saves.values[26] = 1;
  saves.values[3] = kNaN;
  j.events = {saves};
  find_episodes(j);
  REQUIRE(j.episodes.size() == 5);
  CHECK(names(j.episodes[0], "rdb_bgsave_in_progress"));
  CHECK(j.episodes[0].causes[0].evidence ==
        "an RDB snapshot in progress: in 1 of 6 intervals (never in the other intervals)");
  RunResult run;
  run.jobs = {j};
  make_notes(run);
  std::vector<std::string> lines;
  for (auto& n : run.jobs[0].notes)
    if (n.kind == NoteKind::Episode) lines.push_back(n.text);
  REQUIRE(lines.size() == 4);
  CHECK(lines[0] ==
        "episode: redis set: 1.0-1.4 s: p99 30 ms (median interval 1.0 ms): an RDB snapshot in "
        "progress: in 1 of 6 intervals (never in the other intervals)");
  CHECK(lines[3] == "episode: redis set: and 2 more (the JSON's jobs[].episodes has them all)");

  const nlohmann::json doc = to_json(run);
  const nlohmann::json& o = doc["jobs"][0];
  CHECK(o["episodes"].size() == 5);
  CHECK(o["episodes"][0]["left"] == nlohmann::json::array({"p99"}));
  CHECK(o["series"]["events"][0]["values"][3].is_null());
  RunResult back = parse_result_json(doc, "back");
  const JobResult& b = back.jobs[0];
  CHECK(b.episodes_judged);
  REQUIRE(b.episodes.size() == 5);
  CHECK(b.episodes[0].what == j.episodes[0].what);
  CHECK(b.episodes[0].p99);
  CHECK(b.episodes[0].causes[0].evidence == j.episodes[0].causes[0].evidence);
  CHECK(b.episodes[0].causes[0].score == doctest::Approx(j.episodes[0].causes[0].score));
  REQUIRE(b.events.size() == 1);
  CHECK(b.events[0].origin == "server");
  CHECK(b.events[0].values.size() == 80);
  CHECK(std::isnan(b.events[0].values[3]));
  CHECK(b.events[0].values[11] == 1);
  CHECK(b.notes == run.jobs[0].notes);
  // the HTML report's series charts: each episode shaded with its words, the events named marked
  const std::string html = render_html({back});
  size_t shaded = 0;
  for (size_t at = html.find("<rect class=\"episode\""); at != std::string::npos;
       at = html.find("<rect class=\"episode\"", at + 1))
    ++shaded;
  CHECK(shaded >= 5);
  CHECK(html.find("1.0-1.4 s: p99 30 ms (median interval 1.0 ms): an RDB snapshot in progress") != std::string::npos);
  CHECK(html.find("<path class=\"event\"") != std::string::npos);

  // a quiet run's empty list is read back as judged; a file without one as not judged
  JobResult quiet = steady(40);
  find_episodes(quiet);
  run.jobs = {quiet};
  nlohmann::json q = to_json(run);
  CHECK(q["jobs"][0]["episodes"].is_array());
  CHECK(parse_result_json(q, "quiet").jobs[0].episodes_judged);
  q["jobs"][0].erase("episodes");
  CHECK_FALSE(parse_result_json(q, "before").jobs[0].episodes_judged);

  // bad input: one clear line naming the field
  nlohmann::json bad = doc;
  bad["jobs"][0]["series"]["events"][0]["values"][2] = "x";
  CHECK_THROWS_WITH_AS(parse_result_json(bad, "bad.json"),
                       "bad.json: jobs[0].series.events[0].values[2]: expected a number or null, got string",
                       SetupError);
  bad = doc;
  bad["jobs"][0]["episodes"][1]["left"] = {"latency"};
  CHECK_THROWS_WITH_AS(parse_result_json(bad, "bad.json"),
                       "bad.json: jobs[0].episodes[1].left: 'latency' is not p99 or throughput", SetupError);
}

TEST_CASE("timeline: PSI's totals, a process's state and its wait for a CPU from /proc") {
  CHECK(parse_psi_total("some avg10=0.00 avg60=0.00 avg300=0.00 total=123\nfull avg10=0.00 total=45\n", "some") == 123);
  CHECK(parse_psi_total("some avg10=0.00 avg60=0.00 avg300=0.00 total=123\nfull avg10=0.00 total=45\n", "full") == 45);
  CHECK(parse_psi_total("some avg10=0.00\n", "some") == -1);
  CHECK(parse_psi_total("", "some") == -1);
  const TaskSample self = sample_tasks({getpid()});
  CHECK(self.found);
  CHECK(self.state == 'R');
  CHECK(self.cpu_s >= 0);
  CHECK(sample_tasks({-1}).found == false);
  CHECK(Timeline::intervals_per_reading(1) == 1);
  CHECK(Timeline::intervals_per_reading(0.1) == 1);
  CHECK(Timeline::intervals_per_reading(0.05) == 2);
  CHECK(Timeline::intervals_per_reading(0.01) == 10);
}
