// Crash-and-restart verdicts (--crash kill, --crash power): the options every crashable adapter
// takes, and the driver's side of a crash job: when to kill, which writes were acknowledged, and
// the counts after the restart. A process kill is not a power cut: the page cache survives
// SIGKILL. --crash power puts the store on mwbench's FUSE page-cache layer (src/pagecache/) and
// drops every byte not fsynced between the kill and the restart.
#pragma once
#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "api/adapter.h"
#include "pagecache/mount.h"
#include "results/result.h"

namespace mw {

// An acknowledged write: its seq, when the reply came (steady clock, ns), for the loss window, and
// when it was sent (a keyed store's check: a write acknowledged before another was sent is older).
struct Ack {
  uint64_t seq = 0;
  int64_t at_ns = 0;
  int64_t sent_ns = 0;
};

// A keyed store's check (Crashable::keyed): each write's state from what its keys hold after the
// restart. `writes`: every key each write sent touched; `held`: what each of those keys holds;
// `ack`: the acknowledged writes, sorted by seq. A key holding a value names the write that put it
// by its version: that write is Present, and so is every write of the key not provably older than
// it (a later value overwrote it, or the two raced). A write provably older than another was
// acknowledged before the other was sent; a value put before the phase (the load's, a warm-up's)
// is older than every write of it. So an acknowledged write is lost (Missing) when its key holds an
// older write's value, or nothing while no delete of the key could have come after it. A corrupt
// value makes every write of its key Corrupt; a write of several keys takes its worst key's state.
// A value without a version (Held::version empty) is every put of its key's, no delete's.
std::unordered_map<uint64_t, WriteState> resolve_keyed(const std::vector<KeyWrite>& writes,
                                                       const std::unordered_map<uint64_t, Held>& held,
                                                       const std::vector<Ack>& ack);

// The durability options, typed (options.h); defaults are the struct's.
struct DurabilityOptions {
  CrashKind crash = CrashKind::None;      // api/crash.h
  std::string crash_at = "50%";           // of -n, or of --duration
  Expectation expect = Expectation::Any;  // durable: a lost acknowledged write fails the job (exit 1)
};
// Options of every adapter that declares crash kinds (capabilities.h: --crash offers its kinds).
const std::vector<OptionSpec>& durability_options();
DurabilityOptions durability_options_of(const Job& job);
// --crash-at as a fraction in (0, 1]: "50%", "0.5". Throws SetupError naming the option.
double parse_crash_at(const std::string& v);
// Seconds of acknowledged writes lost: from the oldest lost write's acknowledgement to the crash
// (steady-clock ns); 0 when the crash came first.
double loss_window_s(int64_t oldest_lost_ack_ns, int64_t crash_ns);
// --crash power: a page-cache layer mounted in `base` (the store's directory goes on its path());
// null for other crash kinds. Throws SetupError (one line) when FUSE cannot be used.
std::unique_ptr<PageCacheMount> power_layer(const Job& job, const std::string& base);
// Makes what the set-up wrote under the layer durable (an fsync of every file), so the preload
// survives the power cut. Throws SetupError naming the file that cannot be synced.
void sync_layer(const PageCacheMount& m);

// Before the first job: each job's --crash-at parses, and --crash-at or --expect durable come with
// --crash. Throws SetupError naming the job's source (file:line, or the option on the command line).
void check_durability_options(const std::vector<Job>& jobs);

// The job's durability settings as set (AdapterSpec::durability_settings): one is its value,
// "aof-everysec"; several are "journal-mode=wal synchronous=off"; "" when none is set.
std::string durability_level(const Job& job);

// Why the job's writes cannot each be checked after the restart with `distinct` writes told
// apart (Crashable::distinct_writes; 0: a workload's, none), naming the options to change; ""
// when they can.
std::string unverifiable(const Job& job, uint64_t distinct);

// One crash job's plan, run by the driver around its measured phase: a monitor kills the victim
// when the clients have done crash_at of -n (or crash_at of --duration has passed) and halts the
// phase; after the phase the victim is restarted and every recorded write checked.
class CrashPlan {
 public:
  // Inactive (no --crash) or armed; throws SetupError when the job asks for a crash the
  // adapter's `abilities` (asked once for the job) cannot do.
  CrashPlan(const Job& job, const Abilities& abilities);
  ~CrashPlan();
  bool active() const { return crash_ != nullptr; }
  // The phase's halt flag: set once the victim is killed.
  const std::atomic<bool>* halt() const { return &halt_; }
  // Starts the monitor over the clients' `done` counters (one per client, summed). By duration:
  // crash_at of it from `started`, the measured phase's start (now_ns), once the driver sets it
  // (0 until then): what comes between the arming and the phase (opening the series, the
  // profile's first look at the servers' /proc files, starting the threads) is not the phase's.
  void arm(std::vector<const std::atomic<uint64_t>*> done, uint64_t n, double duration_s,
           const std::atomic<int64_t>* started);
  // After the phase: kills the victim if it was not (crash-at 100%, the run ended first),
  // restarts it, checks every write. `sent`: per client, the seqs [begin, begin + count) it
  // sent; `acked`: the writes acknowledged, with when. A restart that fails (restart_failed, with the reason)
  // or a stop requested meanwhile leaves the counts of what was sent and acknowledged, unchecked.
  // `writes`: a workload's, each key a request wrote (Crashable::keyed stores; null for native
  // ops): the ops of its mix that wrote nothing (reads, scans) are not counted.
  DurabilityResult finish(const std::vector<std::pair<uint64_t, uint64_t>>& sent,
                          const std::vector<const std::vector<Ack>*>& acked, uint64_t ops,
                          const std::vector<KeyWrite>* writes = nullptr);
  // The same counts without a restart or a check (the run was interrupted first): `why` says so.
  DurabilityResult unchecked(const std::vector<std::pair<uint64_t, uint64_t>>& sent,
                             const std::vector<const std::vector<Ack>*>& acked, uint64_t ops, const std::string& why,
                             const std::vector<KeyWrite>* writes = nullptr);

 private:
  void kill_once();
  void stop_monitor();
  std::vector<WriteState> check_keyed(KeyedReadBack& keyed, const std::vector<uint64_t>& seqs,
                                      const std::vector<Ack>& ack, const std::vector<KeyWrite>* writes);
  DurabilityResult unrecoverable(DurabilityResult d, const std::vector<Ack>& ack, const std::string& why);

  Crashable* crash_ = nullptr;
  PageCacheMount* layer_ = nullptr;  // --crash power
  DurabilityOptions o_;
  std::string setting_, level_;
  double at_ = 0.5;
  std::atomic<bool> halt_{false}, quit_{false};
  std::atomic<int64_t> killed_at_{0};
  std::thread monitor_;
};

}  // namespace mw
