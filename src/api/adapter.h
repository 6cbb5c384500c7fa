// The boundary between the driver and an adapter. An adapter owns one protocol and nothing
// else: it never reads the clock for results, never prints, never formats.
#pragma once
#include <algorithm>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <typeinfo>
#include <utility>
#include <vector>

#include "api/contract.h"
#include "api/crash.h"
#include "api/events.h"
#include "api/job.h"
#include "api/warning.h"
#include "util/metric.h"
#include "util/status.h"
#include "workload/workload.h"

namespace mw {

namespace queue {
struct Figures;  // queue.h
}
class PageCacheMount;  // pagecache/mount.h

// How a client's connection was made, for its connect figures (--reconnect-every).
enum class Handshake : uint8_t {
  None,     // no TLS
  Full,     // a TLS handshake that made a new session
  Resumed,  // a TLS handshake that resumed an earlier session (--tls-resume)
};

// One client: a connection, a DB handle, a file.
class Client {
 public:
  virtual ~Client() = default;
  // Its connection's handshake, as it was made (None: no connection, or no TLS).
  virtual Handshake handshake() const { return Handshake::None; }
  // One operation, blocking. Blocking clients get a thread each.
  virtual OpResult run(uint64_t seq) = 0;
  // Clients that keep many requests in flight (fio's queue/commit/getevents shape) return a
  // pollable fd and implement submit/flush/reap; the driver runs them from an event loop.
  virtual int fd() const { return -1; }
  virtual void submit(uint64_t /*seq*/) {}
  virtual void flush() {}  // sends what is queued
  // Replies complete so far, without blocking; the driver calls it when fd() is readable.
  virtual size_t reap(std::span<Completion> /*out*/) { return 0; }
  // A request of the job's workload (--mix): the core drew its op, key and value size. Adapters
  // that map abstract ops (AdapterSpec::kv_ops) implement these; a read of a missing key returns
  // Status::NotFound (a miss, or lost data when the request says the key must exist), a value
  // that fails check_value() Status::Mismatch. The default (run(r.seq)) is out of line
  // (adapter.cpp): every workload adapter overrides it, and a body in sight made GCC guess it on
  // the blocking loop's call (a compare with its address and a branch per op, always wrong).
  virtual OpResult run_request(const Request& r);
  virtual void submit_request(const Request& r) { submit(r.seq); }
  // True while writes are still queued (the driver then also polls for writability).
  virtual bool wants_write() const { return false; }
  // False once the client cannot go on (connection lost and not re-established): the driver
  // stops it and counts its remaining ops as not run.
  virtual bool alive() const { return true; }
  // Called by the driver when a request has waited longer than the job's timeout; the client
  // drops its connection and returns every request in flight (failed) from the next reap.
  virtual void abort(std::string_view /*why*/) {}

  // When the op the driver runs or submits now was due: the open loop sets it to the op's slot in
  // the schedule before run/submit and back to 0 after; 0 means now (a closed loop, a prefill).
  // A queue's producer stamps its message with it, so the round trip counts from when the
  // message was due, as the latency columns count from when the op was due (coordinated
  // omission corrected): a producer held up does not hide its delay.
  void set_due(int64_t ns) { due_ns_ = ns; }
  int64_t due_ns() const { return due_ns_; }

 private:
  int64_t due_ns_ = 0;
};

struct Counts {
  uint64_t ok = 0, failed = 0, not_run = 0;
  uint64_t warmup_ok = 0;  // successful ops of the warm-up phase (they changed the target too)
};

struct Verdict {
  bool checked = false;  // false: this adapter has no end check for the op
  bool ok = true;
  std::string detail;
};

// Crash-and-restart (--crash kill, src/durability/durability.h). The driver records which writes (seqs of
// the measured phase) were sent and which were acknowledged; an adapter that manages its server
// (or, for an embedded store, the process that writes) offers the rest: kill it while writes are
// in flight, restart it on the same store, and read every recorded write back.
enum class WriteState : uint8_t { Present, Missing, Corrupt };  // corrupt: present, wrong bytes

// A keyed store's crash check (KeyedReadBack): a key one write put or deleted (a native op's
// seq may touch several: a batch; a workload's request one), and what a key holds after the
// restart. A value names the write that put it by the version it carries (workload.h's
// write_version(seq); 0: the load's), so an older write that survived is told from the newer one
// that was lost (durability.h's resolve_keyed).
struct KeyWrite {
  uint64_t seq = 0;
  uint64_t key = 0;
  bool del = false;
};
struct Held {
  enum class Kind : uint8_t { Absent, Value, Corrupt } kind = Kind::Absent;
  // Value: the version in it; none when the store's values carry no version (too short for one):
  // its writes then each have a key of their own (Crashable::distinct_writes says how many).
  std::optional<uint32_t> version;
};

// What each key holds, read with `get` (false: absent) and checked as a workload's value (a value
// of another key or a bad checksum: Corrupt); its version when it is long enough to carry one.
std::vector<Held> held_values(std::span<const uint64_t> keys, const std::function<bool(uint64_t, std::string&)>& get);
// The writes a keyed check tells apart (Crashable::distinct_writes): every one when each value
// carries its version (the sizes' smallest is kVersionedValue bytes or more), else `keyspace` (a
// workload's: 0, its updates write its keys again).
inline uint64_t distinct_by_value(const SizeDist& sizes, uint64_t keyspace) {
  return sizes.min() >= kVersionedValue ? UINT64_MAX : keyspace;
}

// A keyed store's crash check (Crashable::keyed): instead of check(), the core reads each key the
// writes touched once (held) and tells each write's state from the versions and the order of
// acknowledgements (durability.h's resolve_keyed).
class KeyedReadBack {
 public:
  virtual ~KeyedReadBack() = default;
  // The keys native op `seq` wrote; none for a workload's requests, whose keys are the core's own.
  virtual void keys_of(uint64_t /*seq*/, std::vector<KeyWrite>& /*out*/) const {}
  // What each key holds, in the order of `keys`; throws SetupError when the store cannot be read.
  virtual std::vector<Held> held(std::span<const uint64_t> keys) = 0;
};

// --fault kill-primary and switchover (Crashable::replication): a replicated set-up, a primary and
// the replicas one of which takes over. The read-back (held, check) reads the primary.
class Replication {
 public:
  virtual ~Replication() = default;
  // SIGKILL to the node that is primary now; returns once it is gone (it stays down).
  virtual void kill_primary() = 0;
  // The set-up's manager asked to fail the primary over while it runs (a planned failover: Redis's
  // SENTINEL FAILOVER); returns once it agreed. An external set-up takes it too.
  virtual void switchover() = 0;
  // The node that is primary now ("replica 1 (127.0.0.1:6380)"), "" when none can be told.
  virtual std::string primary() = 0;
};

// --fault kill-node (Abilities::cluster): a cluster of peers, a broker whose streams elect leaders.
// Not a Crashable: its nodes are neither killed all nor restarted.
class Cluster {
 public:
  virtual ~Cluster() = default;
  virtual std::string victim() const = 0;  // what kill_node() hits: "the nats cluster's stream leader"
  // SIGKILL to the node the adapter chose (the one whose loss the clients feel, e.g. a stream's
  // leader); returns once it is gone (it stays down), naming it and why it was chosen ("node-1
  // (127.0.0.1:4222), the stream's leader").
  virtual std::string kill_node() = 0;
  // The leader now, "" when none can be told.
  virtual std::string leader() = 0;
};

// The crash hooks (Abilities::crash) of a server the adapter manages or, for an embedded store, of
// the process that writes: --crash, and --fault kill, restart and stop.
class Crashable {
 public:
  virtual ~Crashable() = default;
  virtual std::string victim() const = 0;  // what kill() ends: "redis-server", "gearmand"
  virtual void kill() = 0;                 // SIGKILL; returns once the process is gone
  // Starts it again on the same store (directory, files, settings) and returns once it answers;
  // throws SetupError (with the reason) when it cannot, within a bounded time.
  virtual void restart() = 0;
  // The state of each write after the restart, in the order of `seqs` (a store without keyed()).
  virtual std::vector<WriteState> check(std::span<const uint64_t> /*seqs*/) { return {}; }
  // --fault stop: SIGSTOP (true) or SIGCONT (false) to the server's processes; false when it
  // cannot be paused.
  virtual bool pause(bool /*on*/) { return false; }
  // Where the row's safety depends on fsync ("appendfsync always: fsync before each reply").
  virtual std::string note() const { return {}; }
  // How many writes in a row the check tells apart: UINT64_MAX, each write its own record or a
  // value that names its write (a keyed store's version). Writes that cycle over a key space whose
  // values carry no version: the key space (a later write of a key holds the same value, so an
  // older one that survived would hide a lost newer one).
  virtual uint64_t distinct_writes() const { return UINT64_MAX; }

  // What the hooks' store or set-up is besides, each null when it is not: a keyed store's
  // read-back (instead of check()), a replicated set-up's failover. The implementation says which
  // (reads_keys, replicates), usually as it is made.
  KeyedReadBack* keyed() const { return read_back_; }
  Replication* replication() const { return replication_; }

  // --crash power: the page-cache layer the store's files sit on (durability.h's power_layer);
  // the driver cuts its power between kill() and restart(). Null: the store is not on one.
  void set_pagecache(PageCacheMount* m) { pagecache_ = m; }
  PageCacheMount* pagecache() const { return pagecache_; }

 protected:
  void reads_keys(KeyedReadBack* k) { read_back_ = k; }
  void replicates(Replication* r) { replication_ = r; }

 private:
  PageCacheMount* pagecache_ = nullptr;
  KeyedReadBack* read_back_ = nullptr;
  Replication* replication_ = nullptr;
};

// Name/value facts about the target: server name and version, settings, the path used.
using Info = std::map<std::string, std::string>;

// The workload the runner built from a job's options (--mix): one per job, shared by the runner,
// the driver and the adapter. Null: the job runs a native op.
using WorkloadPtr = std::shared_ptr<const Workload>;

// Waits of the job's clients on the store's own locks (SQLite's busy handler: each retry after
// SQLITE_BUSY, and the time it slept), counted since the adapter was made: the profile reads them
// at the timed phase's edges.
struct LockWaits {
  uint64_t retries = 0;
  double waited_s = 0;
};

// What one adapter can do for one job besides the life cycle, asked once per job after prepare()
// (Adapter::abilities) and handed by the core to what uses each part: the crash and fault plans,
// the profile, the timeline, the queue's end figures. Each part is null (none) when the adapter,
// or this job's op or set-up, cannot.
struct Abilities {
  // Crash-and-restart hooks (--crash; --fault kill, restart, stop), with their keyed read-back and
  // replicated set-up's failover when the store has them.
  Crashable* crash = nullptr;
  // --fault kill-node: a cluster of peers (no crash hooks of its own).
  Cluster* cluster = nullptr;
  // What an acknowledgement of this job's writes means under its settings (contract.h); none for
  // adapters that keep nothing (null, http) or ops that write nothing. Known from the options
  // before prepare(), from what the server said after it.
  std::optional<Contract> contract = std::nullopt;
  // A queue op's figures (the ledger's counts, produce -> consume latency, backlog), filled by
  // verify() (queue.h's QueueAdapter gives them).
  const queue::Figures* queue = nullptr;
  // The clients' lock waits so far, read by the profile at the measured phase's edges.
  std::function<LockWaits()> lock_waits = nullptr;
  // Makes a probe of the server's own events (events.h) on a connection of its own, which the
  // core's timeline reads once per interval on a thread of its own; made for a measured phase
  // with --server-events (it may throw: the job's warning says why; it may return null: none).
  std::function<std::unique_ptr<EventProbe>()> events = nullptr;
};

// One configured target for one job. Created per job by the registry's factory. Its virtuals are the
// life cycle every adapter has (prepare, open, verify, describe, metrics, teardown); what only some
// can do (crash hooks, a contract, queue figures, lock waits, server events) is one abilities()
// call, and what one family of set-ups adds (a keyed read-back, a replicated set-up, a cluster) an
// interface of its own, reached from there.
class Adapter {
 public:
  virtual ~Adapter() = default;
  virtual void prepare(const Job&) {}  // create db/table, preload, start a server; untimed
  virtual std::unique_ptr<Client> open(const Job&, int client) = 0;
  virtual Verdict verify(const Job&, const Counts&) { return {}; }
  virtual Info describe() { return {}; }  // server/library version, settings
  // Protocol-level figures of the job (document length, connect times, HTTP status counts):
  // numbers with units (metric.h), shown under the table and kept in the JSON. Called after
  // verify(), with the measured time.
  virtual Metrics metrics(double /*elapsed_s*/) { return {}; }
  // A capacity search (--find-max) runs its steps on clients opened once: between two phases,
  // while no client runs, the metrics of what the clients saw since the last call (or since
  // they opened; `c`: the successful ops in that time), and they count anew. The search calls it
  // at each measured phase's start (the warm-up's are dropped) and end, and the job's row keeps
  // its own step's. nullopt (the default): metrics() after the job describe it.
  virtual std::optional<Metrics> take_metrics(double /*elapsed_s*/, const Counts& /*c*/) { return std::nullopt; }
  virtual std::string target() const = 0;  // "127.0.0.1:6379", "/dev/shm", ...
  // What makes this job's figures suspect (O_DIRECT on tmpfs, ...), each of its kind (warning.h);
  // known after prepare().
  virtual std::vector<Warning> warnings() const { return {}; }
  virtual std::vector<std::string> paths() const { return {}; }  // filesystem paths used
  // Names of the sides an op may report (OpResult::side), e.g. {"read", "write"}; the driver
  // keeps counts, bytes and latency per side. Empty: one side.
  virtual std::vector<std::string> sides() const { return {}; }
  virtual void teardown() {}
  // What it can do for the job besides (crash hooks, contract, queue figures, lock waits, server
  // events): asked once per job, after prepare(), whose set-up the hooks act on. Asked before it
  // (a test of the options), its contract is what the options imply and the hooks are null.
  virtual Abilities abilities(const Job&) { return {}; }
};

// An adapter option, given as --name on the command line or `name = ...` in a suite.
// Values are checked against `kind`, `choices` and [min, max] before any job runs.
struct OptionSpec {
  enum class Kind { Str, Int, Num, Bool };
  std::string name = {};  // "path", "value-size"
  std::string help = {};
  std::string def = {};  // default shown in help; "" when none (options.h: from the typed struct)
  // A comma list / TOML array runs one job per value. The adapter's first list option is its
  // side-by-side axis (sqlite's path, gearman's queue): it varies fastest, so its values stand
  // in adjacent rows.
  bool list = false;
  Kind kind = Kind::Str;
  // repeat: may be given several times (--header); the values are joined with newlines.
  std::vector<std::string> choices = {};
  bool repeat = false;
  // Int and Num: the accepted range, inclusive (whole numbers for Int; 0 to 0.999 for a Num
  // is fine). Every number an adapter takes declares one (a test checks it), so no value can
  // reach an adapter's arithmetic unchecked.
  double min = 0;
  double max = kUnbounded;
  static constexpr double kUnbounded = 1e300;
  // The ops that use it (empty: every op). A list of its values expands only their jobs: the
  // job of another op runs once, without it.
  std::vector<std::string> used_by = {};
  // Where a checked value goes in the adapter's typed options struct: set by opt() (options.h),
  // with the struct's type; null for the options the core reads itself.
  std::function<void(void*, const std::string&)> store = nullptr;
  const std::type_info* owner = nullptr;
  // secret: may hold a password (a password, a conninfo, a URL with credentials, a header): also
  // taken as env:VAR or file:PATH (resolve_secret in options.h), which keep it out of the process
  // list, where every user of the machine reads command lines.
  bool secret = false;
};

// The option named `name` in `options`, or null.
const OptionSpec* find_option(const std::vector<OptionSpec>& options, std::string_view name);

// One op of an adapter: its name on the command line and its value in the adapter's enum.
struct OpSpec {
  std::string name;
  int id = 0;
  const std::type_info* type = nullptr;
  template <class E>
  requires std::is_enum_v<E> OpSpec(std::string n, E e)
      : name(std::move(n)), id(static_cast<int>(e)), type(&typeid(E)) {}
};

// The op of a job that runs the shared workload (--mix) instead of a native op.
inline constexpr const char* kMixOp = "mix";

// What an adapter's ops are about: a keyed store maps the abstract ops of the shared workload
// (read update insert delete rmw scan), a queue the queue ops (produce consume roundtrip); raw
// adapters (disk I/O, ab-style HTTP) keep their own ops alone.
enum class Family : uint8_t { KeyedStore, Queue, Raw };

// Where an adapter's target is. External: a server other machines can reach, named by an option
// (AdapterSpec::target_option; without it the adapter starts its own or works on local files).
// Local: this machine's files, or a server it always starts itself. None: nothing outside the
// process (null measures the driver alone).
enum class TargetKind : uint8_t { External, Local, None };

struct AdapterSpec {
  std::string name;
  std::string summary;
  std::vector<OpSpec> ops;
  std::string default_ops;  // what `mwbench <adapter>` runs with no --ops
  std::vector<OptionSpec> options;
  // Why this machine cannot run it (a missing server binary), or "" when it can.
  std::function<std::string(const Job&)> unavailable;
  // Makes the job's adapter, handed the workload the runner built (adapters never rebuild it).
  std::function<std::unique_ptr<Adapter>(const Job&, WorkloadPtr)> make;
  // What `mwbench list` adds about this machine (server binary, queue types); may be empty.
  std::function<std::string()> machine = nullptr;
  // Other names users of the peer tool type: {"pattern", "ops"}, {"depth", "pipeline"} (fio).
  std::map<std::string, std::string> aliases = {};
  // The abstract ops of the shared workload this adapter maps (--mix); empty: none.
  std::vector<KvOp> kv_ops = {};
  // Its store expires keys: a write's Request::ttl (--ttl, a preset's or a trace's) is sent with it.
  bool expiry = false;
  // Its store writes on a condition (Request::cond): a trace's add only a key not there, its
  // replace only a key there, its set whether it is there or not; a write whose condition failed
  // is Status::NotFound ("not stored"). False: a trace's add and replace write as its set does
  // (the workload's description says so).
  bool conditional_writes = false;
  // Capabilities, checked when jobs are expanded. max_in_flight: requests one client can keep
  // in flight (-P); 0 means no limit of the adapter's own (blocking clients run one at a time,
  // and the driver says so). in_flight_note says why there is a limit.
  int max_in_flight = 0;
  std::string in_flight_note = {};
  // The families of its ops (redis: a keyed store and a queue). A Queue adapter takes the queue
  // ops' options (src/queue/queue.h); a KeyedStore maps kv_ops.
  std::vector<Family> families = {Family::Raw};
  TargetKind target = TargetKind::Local;
  std::string target_option = {};  // External: the option naming the target ("host", "url", "server")
  // Measures the driver alone (null): shown beside the stores as their baseline, never ranked.
  bool baseline = false;
  // Keys of describe() that name a client library and hold its version ("hiredis"): the run's
  // context lists them once. (A server's name and version are describe()'s "server" and
  // "version", whatever the adapter.)
  std::vector<std::string> libraries = {};
  // The crash kinds it supports (--crash KIND, src/durability/durability.h): kill, power (its
  // store's directory on the page-cache layer, durability.h's power_layer), torn (the same layer,
  // and a torn last write). Empty: none, and it takes no crash options.
  std::vector<CrashKind> crash_kinds = {};
  // The ops whose acknowledged writes a crash check reads back (--crash needs one of them);
  // kMixOp ("mix"): a --mix's writes (a keyed Crashable's, durability.h's resolve_keyed).
  std::vector<std::string> crash_ops = {};
  // The fault kinds it can inject during the measured phase (--fault, api/fault.h): "kill",
  // "restart", "stop" on the server it starts (through Abilities::crash: its kill, restart and pause);
  // "slow", "cut" through mwbench's TCP proxy (services/proxy.h), for an adapter whose clients
  // reach the server it starts by the Service's port() and an external one by --host and --port,
  // and reconnect (Job::reconnect_backoff_s) for cut. Empty: none.
  std::vector<std::string> fault_kinds = {};
  // Its clients hold a connection: open() connects (returns connected) and destroying the Client
  // closes it, so the core can close and open a client again (--reconnect-every, --connect-rate;
  // core/renewal.h). False: open() makes no connection of its own (a handle on a store in this
  // process, a file), and those options are refused with `connects_note` (why, in words) when
  // given, else a sentence of the core's.
  bool connects = false;
  std::string connects_note = {};
  // Its options that change what an acknowledged write means (Abilities::contract): "persistence".
  std::vector<std::string> durability_settings = {};
  // What an op's latency is, by op, when it is a figure the store rules under the table read
  // (report/guidance.cpp): "fdatasync" or "fsync" (one small write and that sync), "round trip"
  // (one request and its reply over the network, nothing served).
  std::map<std::string, LatencyKind> latency_is = {};
  // What a run's set-up does to the target's state before it is measured: a decision's rounds
  // (core/rounds.h) run every job whole, set-up included, so this is the state reset between its
  // runs ("a fresh store directory", "flush_all on the server it starts"). Empty: kDefaultReset.
  std::string reset = {};

  bool has(Family f) const { return std::find(families.begin(), families.end(), f) != families.end(); }
  bool maps(KvOp op) const { return std::find(kv_ops.begin(), kv_ops.end(), op) != kv_ops.end(); }
};

// What a decision says of an adapter that declares no reset.
inline constexpr const char* kDefaultReset =
    "its set-up alone (the adapter declares no reset: what an earlier run left on the target stays)";

// The adapters of this program, by name. The list is adapters/registry.cpp's, installed once by
// the program's main() (install_adapters) so that the core finds adapters without linking to them.
void install_adapters(std::vector<AdapterSpec> list);
const std::vector<AdapterSpec>& adapters();
const AdapterSpec* find_adapter(const std::string& name);

}  // namespace mw
