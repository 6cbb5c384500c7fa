#include "core/probe.h"

#include <sched.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <thread>
#include <tuple>
#include <utility>

#include "util/clock.h"
#include "util/text.h"

namespace mw {

namespace {

constexpr double kBusy = 0.9;          // a core (or a share of cores) at 90% or more is saturated
constexpr double kMinCpuWall = 0.25;   // CPU counts in 10 ms ticks: shorter phases judge no CPU
constexpr double kRateMet = 0.95;      // --rate: the achieved rate within 5% of the asked one
constexpr double kRunnable = 0.9;      // a driver thread runnable (on a CPU or waiting) 90% of the phase
constexpr double kStarvedWait = 0.25;  // ... a quarter of it or more waiting for a CPU: starved

double wall_now() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }

int allowed_cores() {
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof set, &set) == 0) return CPU_COUNT(&set);
  return static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
}

// The port of a loopback target ("127.0.0.1:6379", "http://localhost:5984/db"), or 0.
int loopback_port(const std::string& target) {
  for (const char* host : {"127.0.0.1:", "localhost:", "[::1]:"}) {
    size_t at = target.find(host);
    if (at == std::string::npos) continue;
    int port = std::atoi(target.c_str() + at + std::char_traits<char>::length(host));
    if (port > 0 && port < 65536) return port;
  }
  return 0;
}

std::string pct(double share) { return fmt(share * 100, 0) + "%"; }

}  // namespace

ProcessProfile difference(const ProcSample& a, const ProcSample& b, const std::string& how) {
  ProcessProfile p;
  p.name = b.name;
  p.how = how;
  p.user_s = std::max(0.0, b.user_s - a.user_s);
  p.sys_s = std::max(0.0, b.sys_s - a.sys_s);
  for (auto& [tid, s] : b.thread_cpu_s) {
    auto it = a.thread_cpu_s.find(tid);
    p.busiest_thread_s = std::max(p.busiest_thread_s, s - (it == a.thread_cpu_s.end() ? 0 : it->second));
  }
  // The process's and its threads' counts are read from separate files, each in whole clock
  // ticks, so a thread's difference can pass its process's by a tick or two: it never used more.
  p.busiest_thread_s = std::min(p.busiest_thread_s, p.cpu_s());
  p.peak_rss_bytes = b.peak_rss_bytes;
  p.ctx_voluntary = b.ctx_voluntary >= a.ctx_voluntary ? b.ctx_voluntary - a.ctx_voluntary : 0;
  p.ctx_involuntary = b.ctx_involuntary >= a.ctx_involuntary ? b.ctx_involuntary - a.ctx_involuntary : 0;
  p.processes = b.processes;
  return p;
}

ProfileProbe::ProfileProbe(const Adapter& adapter, bool in_process, Listener* known,
                           std::function<LockWaits()> lock_waits)
    : lock_waits_(std::move(lock_waits)),
      paths_(adapter.paths()),
      target_(adapter.target()),
      in_process_(in_process),
      known_(known) {}

void ProfileProbe::start() {
  for (auto& s : claimed_servers()) servers_.push_back({s, "managed", sample_process(s.pid), {}});
  if (int port = servers_.empty() ? loopback_port(target_) : 0; port > 0) {
    Listener found = known_ && known_->port == port ? *known_ : Listener{};
    ProcSample s = found.pid > 0 ? sample_process(found.pid) : ProcSample{};
    if (found.port == 0 || (found.pid > 0 && !s.found)) {  // not looked for, or gone since
      found = {port, listener_of(port)};
      if (found.pid > 0) s = sample_process(found.pid);
      if (known_) *known_ = found;
    }
    if (found.pid > 0)
      servers_.push_back({{s.name, found.pid, port}, "listening on port " + std::to_string(port), s, {}});
  }
  for (auto& p : paths_) {
    DiskDevice d = disk_of(p);
    disks_.push_back({d, d.name.empty() ? DiskSample{} : sample_disk(d.name), {}});
  }
  net_ = sample_net();
  cpu_ = sample_cpu();
  if (lock_waits_) locks_ = lock_waits_();
  self_ = sample_self();
  t0_ = wall_now();
}

void ProfileProbe::stop() {
  t1_ = wall_now();
  self_end_ = sample_self();
  net_end_ = sample_net();
  cpu_end_ = sample_cpu();
  if (lock_waits_) locks_end_ = lock_waits_();
  for (auto& s : servers_) s.at_end = sample_process(s.proc.pid);
  for (auto& d : disks_)
    if (!d.device.name.empty()) d.at_end = sample_disk(d.device.name);
}

std::vector<ServerProcess> ProfileProbe::servers() const {
  std::vector<ServerProcess> out;
  for (auto& s : servers_) out.push_back(s.proc);
  return out;
}

Profile ProfileProbe::finish(const Job& job, const Run& run) const {
  Profile p;
  p.taken = true;
  p.polled = run.polled;
  p.wall_s = t1_ - t0_;
  p.ops = run.ops;
  p.cores = allowed_cores();
  p.threads = run.threads;
  p.clients = run.clients;
  if (locks_ && locks_end_) {
    p.locks_counted = true;
    p.lock_retries = locks_end_->retries - std::min(locks_end_->retries, locks_->retries);
    p.lock_wait_s = std::max(0.0, locks_end_->waited_s - locks_->waited_s);
  }
  p.self = difference(self_, self_end_, "self");
  p.self.busiest_thread_s = std::max(p.self.busiest_thread_s, run.busiest_worker_s);
  p.cpu_wait_s = run.cpu_wait_s;
  p.runnable_cpu_s = run.runnable_cpu_s, p.runnable_wait_s = run.runnable_wait_s;
  if (cpu_.found && cpu_end_.found && cpu_end_.total > cpu_.total)
    p.steal_share = static_cast<double>(cpu_end_.steal - std::min(cpu_end_.steal, cpu_.steal)) /
                    static_cast<double>(cpu_end_.total - cpu_.total);
  std::tie(p.bytes_sent, p.bytes_received) = net_delta(net_, net_end_);
  p.net_counted = !net_.sockets.empty() || !net_end_.sockets.empty();
  for (auto& s : servers_)
    if (s.at_end.found)  // gone (a crash job's victim): its figures would be wrong
      p.servers.push_back(difference(s.at_start, s.at_end, s.how));
  for (size_t i = 0; i < disks_.size(); ++i) {
    const Disk& k = disks_[i];
    DiskProfile d{paths_[i], k.device.name, k.device.why_not};
    const DiskSample &a = k.at_start, &b = k.at_end;
    if (d.missing.empty() && a.found && b.found) {
      d.reads = b.reads - a.reads, d.writes = b.writes - a.writes;
      d.read_bytes = b.read_bytes - a.read_bytes, d.write_bytes = b.write_bytes - a.write_bytes;
      d.flushes = b.flushes - a.flushes, d.flush_ms = b.flush_ms - a.flush_ms, d.busy_ms = b.busy_ms - a.busy_ms;
    } else if (d.missing.empty()) {
      d.missing = d.device + ": gone from /proc/diskstats";
    }
    p.disks.push_back(d);
  }
  judge(p, job, run.rps, in_process_ && servers_.empty());
  return p;
}

namespace {

struct Judged {
  std::string limited_by, evidence;
};

std::string server_busy(const Profile& p, const ProcessProfile& s) {
  const int cores = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  if (p.share(s.busiest_thread_s) >= kBusy) return s.name + " at " + pct(p.share(s.busiest_thread_s)) + " of one core";
  if (p.share(s.cpu_s()) >= kBusy * cores)
    return s.name + " at " + pct(p.share(s.cpu_s()) / cores) + " of the machine's " + std::to_string(cores) + " cores";
  return "";
}

// mwbench saturated: its busiest thread, or all of it over the cores its threads can use.
std::string client_busy(const Profile& p) {
  const int usable = std::max(1, std::min(p.cores, p.threads));
  if (p.share(p.self.busiest_thread_s) >= kBusy)
    return "mwbench's busiest thread at " + pct(p.share(p.self.busiest_thread_s)) + " of one core";
  if (p.share(p.self.cpu_s()) >= kBusy * usable)
    return "mwbench at " + pct(p.share(p.self.cpu_s()) / usable) + " of its " + std::to_string(usable) + " cores";
  return "";
}

// The device flushing half the phase, or every op waiting on a flush of its own (CPU not saturated).
std::string flush_bound(const Profile& p) {
  for (auto& d : p.disks) {
    if (!d.missing.empty() || d.flushes == 0 || p.ops == 0) continue;
    const double per_op = p.per_op(static_cast<double>(d.flushes)), ms = d.flush_ms / static_cast<double>(d.flushes);
    std::string s = d.device + ": " + fmt(per_op, 1) + " flush per op at " + fmt(ms, 2) + " ms";
    if (per_op >= 0.5 && d.flush_ms >= 0.5 * p.wall_s * 1000)
      return ms > 0 ? s + ": a ceiling of about " + grouped(1000 / (ms * per_op)) + "/s" : s;
    if (per_op >= 0.9)
      return s + ", the device busy " + pct(d.busy_ms / (p.wall_s * 1000)) +
             " of the phase: each op waits on its syncs (the file system's commit, then the flush)";
  }
  return "";
}

// The clients slept on the store's locks (SQLite's busy retries) at least as long as the phase
// lasted: on average one of them or more was asleep waiting for a lock all along.
std::string lock_bound(const Profile& p) {
  if (!p.locks_counted || p.lock_retries == 0 || p.wall_s <= 0 || p.lock_wait_s < p.wall_s) return "";
  return grouped(static_cast<double>(p.lock_retries)) + " busy retries, " + fmt(p.lock_wait_s, 2) +
         " s asleep on the store's locks in a " + fmt(p.wall_s, 2) + " s phase: " + fmt(p.lock_wait_s / p.wall_s, 1) +
         " of the " + std::to_string(p.clients) + " clients asleep on average";
}

// A driver thread runnable (on a CPU or waiting for one) 90% of the phase or more, a quarter of it
// or more waiting: it always had work and never waited on the target, but the CPU it could run on
// was shared (a CPU hog beside it, or more runnable threads than cores): the client was the limit.
std::string client_starved(const Profile& p) {
  if (p.runnable_wait_s < 0 || p.share(p.runnable_cpu_s + p.runnable_wait_s) < kRunnable ||
      p.share(p.runnable_wait_s) < kStarvedWait)
    return "";
  return std::string(p.threads > 1 ? "mwbench's busiest driver thread" : "mwbench") + " ran " +
         pct(p.share(p.runnable_cpu_s)) + " of the phase and waited " + pct(p.share(p.runnable_wait_s)) +
         " for a CPU: runnable all along, client-bound, sharing its core (a CPU hog beside it, or too few cores)";
}

std::string summary(const Profile& p) {
  std::string s = "mwbench " + pct(p.share(p.self.cpu_s())) + " of a core";
  for (auto& v : p.servers) s += ", " + v.name + " " + pct(p.share(v.cpu_s()));
  for (auto& d : p.disks)
    if (d.missing.empty())
      s += ", " + d.device + " " + fmt(p.per_op(static_cast<double>(d.flushes)), 2) + " flushes per op";
  if (p.lock_retries > 0) s += ", " + std::to_string(p.lock_retries) + " busy retries";
  if (p.cpu_wait_s >= 0) s += ", mwbench waited for a CPU " + pct(p.cpu_wait_share()) + " of the phase";
  return s;
}

Judged verdict(const Profile& p, const Job& job, double rps, bool in_process) {
  if (job.rate > 0 && rps >= kRateMet * job.rate && !job.find_max.empty())  // a search's row: its step's rate
    return {"the offered rate", "the search's step offered " + grouped(job.rate) + "/s and achieved " + grouped(rps) +
                                    "/s; what bounds the search is under 'max at SLO'"};
  if (job.rate > 0 && rps >= kRateMet * job.rate)
    return {"the rate you asked for", "--rate " + grouped(job.rate) + "/s, achieved " + grouped(rps) + "/s"};
  // CPU counts in 10 ms ticks: a short phase judges no CPU; the device's flush counts are exact.
  const bool cpu_judged = p.wall_s >= kMinCpuWall;
  std::string client = p.polled || !cpu_judged ? "" : client_busy(p);  // a busy poll burns CPU by design
  std::string server;
  bool server_thread = false;  // the server named: its busiest thread at a full core
  for (auto& s : p.servers)
    if (server.empty() && cpu_judged) server = server_busy(p, s), server_thread = p.share(s.busiest_thread_s) >= kBusy;
  // the client's other limit: runnable all along but kept off its CPU (its CPU share no evidence)
  std::string starved = p.polled || !cpu_judged || !client.empty() ? "" : client_starved(p);
  const std::string also = client.empty() ? starved : client;
  // a server thread at a full core is the limit whatever the client did: it cannot serve faster
  if (!server.empty() && server_thread) return {"server CPU", server + (also.empty() ? "" : "; also: " + also)};
  if (!server.empty() && !also.empty()) return {"machine CPU", also + " and " + server};
  if (!server.empty()) return {"server CPU", server};
  if (!client.empty() && in_process) return {"in-process CPU", client + " (the store runs inside mwbench)"};
  if (!client.empty()) return {"client CPU", client + ": add --threads or a load machine"};
  if (std::string f = flush_bound(p); !f.empty()) return {"disk flushes", f};  // a lock held over a flush
  if (std::string l = lock_bound(p); !l.empty()) return {"lock waits", l};
  // after them: a thread that waits on a flush or a lock each op, then for a CPU as it wakes on a
  // loaded machine, is named by what it waited on first
  if (!starved.empty()) return {"client starved", starved + ": free a core for it or add a load machine"};
  if (!cpu_judged) return {"not determined", "the timed phase (" + fmt(p.wall_s * 1000, 0) + " ms) is too short"};
  double all = p.self.cpu_s();
  for (auto& s : p.servers) all += s.cpu_s();
  const int cores = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  if (p.share(all) >= kBusy * cores)
    return {"machine CPU", "mwbench and its servers at " + pct(p.share(all) / cores) + " of the machine's " +
                               std::to_string(cores) + " cores"};
  return {"not determined", "nothing saturated: " + summary(p)};
}

}  // namespace

void judge(Profile& p, const Job& job, double rps, bool in_process) {
  Judged j = verdict(p, job, rps, in_process);
  p.limited_by = j.limited_by;
  p.evidence = j.evidence;
  p.suspect = p.limited_by == "client CPU" || p.limited_by == "client starved";
}

}  // namespace mw
