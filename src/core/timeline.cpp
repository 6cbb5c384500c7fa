#include "core/timeline.h"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <limits>

#include "core/episodes.h"
#include "util/clock.h"
#include "util/text.h"

namespace mw {

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kMinPeriodS = 0.1;     // a reading at most every 100 ms, whatever the interval
constexpr double kProbeTimeoutS = 1;    // a probe's reading within a second (or the job's --timeout)
constexpr size_t kFirstTries = 3;       // readings a probe may fail before it has answered once
constexpr size_t kTreeEvery = 10;       // a server's processes looked for again every 10 readings
constexpr size_t kMaxProbeEvents = 64;  // a probe's readings kept per interval (a server's names)

// The difference of a counter read twice, or NaN when either was not read or it went back (a
// restart).
double delta(int64_t a, int64_t b) { return a < 0 || b < a ? kNaN : static_cast<double>(b - a); }

// A name from outside (a probe's), kept short and printable.
std::string clean(const std::string& s) { return printable(s.substr(0, 80)); }

}  // namespace

size_t Timeline::intervals_per_reading(double interval_s) {
  if (!(interval_s > 0)) return 1;
  return std::max<size_t>(1, static_cast<size_t>(std::ceil(kMinPeriodS / interval_s - 1e-9)));
}

Timeline::Timeline(const Job& job, const std::vector<ServerProcess>& servers, const std::vector<std::string>& paths,
                   std::unique_ptr<EventProbe> probe, live::Phase* shown)
    : job_(job), per_reading_(intervals_per_reading(job.interval_s)), probe_(std::move(probe)), shown_(shown) {
  period_s_ = static_cast<double>(per_reading_) * job.interval_s;
  if (probe_) probe_source_ = clean(probe_->source());
  std::vector<std::string> where = paths;
  for (auto& s : servers) {
    servers_.push_back({s, process_tree(s.pid), {}});
    std::error_code ec;  // a local server's folder: its device is the one it writes to
    std::string cwd = std::filesystem::read_symlink("/proc/" + std::to_string(s.pid) + "/cwd", ec).string();
    if (!ec && !cwd.empty()) where.push_back(cwd);
  }
  for (auto& p : where) {
    DiskDevice d = disk_of(p);
    if (d.name.empty()) continue;
    if (std::none_of(devices_.begin(), devices_.end(), [&](const Device& x) { return x.name == d.name; }))
      devices_.push_back({d.name, {}});
  }
}

Timeline::~Timeline() { stop(); }

void Timeline::start(int64_t t0_ns) {
  t0_ = t0_ns;
  started_ = true;
  machine_ = std::thread([this] { machine_loop(); });
  if (probe_) prober_ = std::thread([this] { probe_loop(); });
}

void Timeline::stop() {
  {
    std::lock_guard lk(stop_m_);
    stopping_ = true;
  }
  stop_cv_.notify_all();
  if (machine_.joinable()) machine_.join();
  if (prober_.joinable()) prober_.join();
}

bool Timeline::wait_tick(size_t tick) {
  const auto due = std::chrono::steady_clock::time_point(
      std::chrono::nanoseconds(t0_ + static_cast<int64_t>(static_cast<double>(tick) * period_s_ * 1e9)));
  std::unique_lock lk(stop_m_);
  return !stop_cv_.wait_until(lk, due, [this] { return stopping_; });
}

void Timeline::put(const std::string& origin, const std::string& source, const std::string& name,
                   const std::string& unit, const std::string& what, size_t tick, double v) {
  std::lock_guard lk(m_);
  auto it = std::find_if(tracks_.begin(), tracks_.end(),
                         [&](const Track& t) { return t.meta.source == source && t.meta.name == name; });
  if (it == tracks_.end()) {
    if (origin == "server" && std::count_if(tracks_.begin(), tracks_.end(), [](const Track& t) {
                                return t.meta.origin == "server";
                              }) >= static_cast<std::ptrdiff_t>(kMaxProbeEvents))
      return;
    tracks_.push_back({{origin, source, name, unit, what, {}}, {}});
    it = tracks_.end() - 1;
  }
  it->ticks[tick] = v;
}

Timeline::Machine Timeline::read_machine() {
  Machine m;
  m.cpu = sample_cpu();
  m.psi = sample_psi();
  m.faults = major_faults();
  m.self = sample_tasks({getpid()});
  return m;
}

void Timeline::machine_loop() {
  Machine last = read_machine();
  for (auto& d : devices_) d.last = sample_disk(d.name);
  for (auto& s : servers_) s.last = sample_tasks(s.tree);
  int64_t last_ns = now_ns();
  for (size_t tick = 1; wait_tick(tick); ++tick) {
    // woken late (a busy machine): the ticks already due are one reading, put at the last of them
    if (const int64_t late = now_ns() - t0_; late > 0)
      tick = std::max(tick, static_cast<size_t>(static_cast<double>(late) / (period_s_ * 1e9)));
    const size_t at = tick - 1;  // the reading's number: intervals [at * per_reading_, ...)
    const Machine now = read_machine();
    // the shares are of the time between the two readings: on a busy machine this thread wakes late
    const int64_t read_ns = now_ns();
    const double ns = static_cast<double>(std::max<int64_t>(read_ns - last_ns, 1));
    last_ns = read_ns;
    std::vector<live::EventValue> shown;
    auto add = [&](const char* origin, const std::string& source, const std::string& name, const char* unit,
                   const std::string& what, double v) {
      put(origin, source, name, unit, what, at, v);
      if (shown_ && std::isfinite(v)) shown.push_back({origin, source, name, unit, v});
    };
    if (last.cpu.found && now.cpu.found && now.cpu.total > last.cpu.total)
      add("machine", "machine", kSteal, "share", "CPU steal (the hypervisor ran other guests)",
          static_cast<double>(now.cpu.steal - std::min(now.cpu.steal, last.cpu.steal)) /
              static_cast<double>(now.cpu.total - last.cpu.total));
    const struct {
      int64_t PsiSample::*field;
      const char *name, *what;
    } psi[] = {{&PsiSample::cpu_some, kPsiCpuSome, "CPU pressure (PSI: some task waiting for a CPU)"},
               {&PsiSample::io_some, "psi_io_some", "I/O pressure (PSI: some task waiting on I/O)"},
               {&PsiSample::io_full, "psi_io_full", "I/O pressure (PSI: every task waiting on I/O)"},
               {&PsiSample::memory_some, "psi_memory_some", "memory pressure (PSI: some task waiting on memory)"},
               {&PsiSample::memory_full, "psi_memory_full", "memory pressure (PSI: every task waiting on memory)"}};
    for (auto& p : psi)
      if (double d = delta(last.psi.*p.field, now.psi.*p.field); std::isfinite(d))
        add("machine", "machine", p.name, "share", p.what, d * 1e3 / ns);
    if (double d = delta(last.faults, now.faults); std::isfinite(d))
      add("machine", "machine", "major_faults", "count", "major page faults (the machine's)", d);
    for (auto& dev : devices_) {
      const DiskSample d = sample_disk(dev.name);
      if (d.found && dev.last.found) {
        add("machine", dev.name, "flushes", "count", dev.name + " cache flushes (the device side of fsync)",
            delta(static_cast<int64_t>(dev.last.flushes), static_cast<int64_t>(d.flushes)));
        add("machine", dev.name, "busy", "share", dev.name + " busy (time with I/O in flight)",
            std::max(0.0, d.busy_ms - dev.last.busy_ms) * 1e6 / ns);
      }
      dev.last = d;
    }
    if (now.self.wait_ns >= 0 && last.self.wait_ns >= 0)
      add("client", "mwbench", kCpuWait, "share", "mwbench's threads waiting for a CPU (run queue)",
          delta(last.self.wait_ns, now.self.wait_ns) / ns);
    for (auto& s : servers_) {
      if (tick % kTreeEvery == 0) s.tree = process_tree(s.proc.pid);
      const TaskSample t = sample_tasks(s.tree);
      const std::string& n = s.proc.name;
      if (t.found && s.last.found) {
        add("process", n, kProcessCpu, "share", n + " CPU (share of a core)",
            std::max(0.0, t.cpu_s - s.last.cpu_s) * 1e9 / ns);
        if (t.wait_ns >= 0 && s.last.wait_ns >= 0)
          add("process", n, kProcessCpuWait, "share", n + " waiting for a CPU (run queue): not scheduled",
              delta(s.last.wait_ns, t.wait_ns) / ns);
        add("process", n, "process_major_faults", "count", n + " major page faults",
            delta(static_cast<int64_t>(s.last.major_faults), static_cast<int64_t>(t.major_faults)));
      }
      if (t.found) add("process", n, kProcessStopped, "", n + " stopped (state T)", t.state == 'T' ? 1 : 0);
      s.last = t;
    }
    last = now;
    if (shown_) shown_->events(shown);
  }
}

void Timeline::probe_loop() {
  std::map<std::string, double> last;  // counters' last readings
  bool answered = false;
  size_t failures = 0;
  const double timeout_s = std::min(kProbeTimeoutS, job_.timeout_s);
  // tick 0: a first reading at once, the counters' base for the first interval
  for (size_t tick = 0; tick == 0 || wait_tick(tick); ++tick) {
    // a reading that took longer than a period: the ticks it overran are not read
    const int64_t due = t0_ + static_cast<int64_t>(static_cast<double>(tick) * period_s_ * 1e9);
    if (tick > 0 && now_ns() > due + static_cast<int64_t>(period_s_ * 1e9)) continue;
    const size_t at = tick - 1;  // tick 0's is the base alone: nothing is put at it
    std::vector<EventReading> got;
    std::string why;
    bool refused = false;
    try {
      got = probe_->sample(now_ns() + static_cast<int64_t>(timeout_s * 1e9));
    } catch (const ProbeRefused& e) {
      why = e.what(), refused = true;
    } catch (const std::exception& e) {
      why = e.what();
    }
    if (!why.empty()) {
      if (answered && tick > 0)
        put("server", probe_source_, kProbeUnanswered, "", probe_source_ + "'s events not answered", at, 1);
      if (refused || (!answered && ++failures >= kFirstTries)) {
        std::lock_guard lk(m_);
        warnings_.push_back(
            {WarningKind::ServerEvents, "server events not readable: " + printable(why.substr(0, 300))});
        return;
      }
      continue;
    }
    answered = true;
    if (tick > 0) put("server", probe_source_, kProbeUnanswered, "", probe_source_ + "'s events not answered", at, 0);
    std::vector<live::EventValue> shown;
    for (auto& r : got) {
      const std::string name = clean(r.name);
      double v = r.value;
      if (!std::isfinite(v)) continue;
      if (r.kind == EventReading::Kind::Counter) {
        auto it = last.find(name);
        const double was = it == last.end() ? kNaN : it->second;
        last[name] = v;
        if (!std::isfinite(was) || tick == 0) continue;  // its first reading: no difference yet
        v = v >= was ? v - was : kNaN;                   // gone back: the server restarted
      }
      if (tick == 0) continue;
      const std::string unit = r.kind == EventReading::Kind::Counter && r.unit.empty() ? "count" : clean(r.unit);
      put("server", probe_source_, name, unit, clean(r.what), at, v);
      if (shown_ && std::isfinite(v)) shown.push_back({"server", probe_source_, name, unit, v});
    }
    if (shown_ && tick > 0) shown_->events(shown);
  }
}

std::vector<EventTrack> Timeline::tracks(size_t intervals) const {
  std::lock_guard lk(m_);
  std::vector<EventTrack> out;
  for (auto& t : tracks_) {
    EventTrack e = t.meta;
    e.values.assign(intervals, kNaN);
    for (auto& [reading, v] : t.ticks)
      for (size_t i = 0; i < per_reading_; ++i) {
        const size_t k = reading * per_reading_ + i;
        if (k < intervals) e.values[k] = e.unit == "count" ? v / static_cast<double>(per_reading_) : v;
      }
    out.push_back(std::move(e));
  }
  return out;
}

std::vector<Warning> Timeline::warnings() const {
  std::lock_guard lk(m_);
  return warnings_;
}

}  // namespace mw
