// A job's timeline while its measured phase runs: once per interval of its series (or per 100 ms
// when the interval is shorter), the machine's events (steal, PSI, major faults, its devices'
// flushes and busy time), mwbench's own wait for a CPU, a local server's process (its CPU, its
// wait for a CPU, stopped or not) and the server's own events through the adapter's probe
// (api/events.h). Two threads of its own: one reads /proc and /sys, the other the probe (its own
// connection, a deadline per reading), so a server that hangs holds up neither the load nor the
// machine's events. Nothing of it is on the timed path.
#pragma once
#include <atomic>
#include <condition_variable>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "api/adapter.h"
#include "core/live.h"
#include "results/episodes.h"
#include "services/resources.h"
#include "services/services.h"

namespace mw {

class Timeline {
 public:
  // `servers`: the job's local servers (managed, or found by their port: the profile's); `paths`:
  // the files and folders it touches (their devices are read); `probe`: the adapter's, or null;
  // `shown`: --metrics-listen's phase (its events become gauges), or null.
  Timeline(const Job& job, const std::vector<ServerProcess>& servers, const std::vector<std::string>& paths,
           std::unique_ptr<EventProbe> probe, live::Phase* shown);
  ~Timeline();
  Timeline(const Timeline&) = delete;
  Timeline& operator=(const Timeline&) = delete;

  void start(int64_t t0_ns);  // the measured phase's start (now_ns()): interval k ends at t0 + (k+1) interval
  void stop();                // the phase ended: the threads join (the probe within its deadline)
  // Every event over `intervals` intervals of the series (NaN where not read).
  std::vector<EventTrack> tracks(size_t intervals) const;
  // "server events not readable: <why>", once, when the probe never answered.
  std::vector<Warning> warnings() const;

  // How many intervals one reading covers: 1, or more when the interval is under 100 ms.
  static size_t intervals_per_reading(double interval_s);

 private:
  struct Track {
    EventTrack meta;                 // its values stay empty: `ticks` holds them
    std::map<size_t, double> ticks;  // reading number -> value (a count, a share, a level)
  };
  struct Device {
    std::string name;
    DiskSample last;
  };
  struct Server {
    ServerProcess proc;
    std::vector<pid_t> tree;
    TaskSample last;
  };
  struct Machine {
    CpuSample cpu;
    PsiSample psi;
    int64_t faults = -1;
    TaskSample self;
  };

  void machine_loop();
  void probe_loop();
  bool wait_tick(size_t tick);  // false once stopped
  void put(const std::string& origin, const std::string& source, const std::string& name, const std::string& unit,
           const std::string& what, size_t tick, double v);
  Machine read_machine();

  Job job_;
  double period_s_;
  size_t per_reading_;
  std::vector<Server> servers_;
  std::vector<Device> devices_;
  std::unique_ptr<EventProbe> probe_;
  std::string probe_source_;
  live::Phase* shown_;
  int64_t t0_ = 0;
  bool started_ = false;
  std::mutex stop_m_;
  std::condition_variable stop_cv_;
  bool stopping_ = false;
  mutable std::mutex m_;  // tracks_, warnings_
  std::vector<Track> tracks_;
  std::vector<Warning> warnings_;
  std::thread machine_, prober_;
};

}  // namespace mw
