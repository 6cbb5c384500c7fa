#include "config/config.h"

#include "api/options.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <toml++/toml.h>
#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>

#include "config/workload_spec.h"
#include "durability/durability.h"
#include "pagecache/mount.h"
#include "queue/queue.h"
#include "results/slo.h"
#include "util/text.h"
#include "workload/rate_shape.h"
#include "workload/traffic_model.h"

namespace mw {

using Kind = OptionSpec::Kind;

namespace {
constexpr int64_t kMaxOps = 1'000'000'000'000;  // a trillion: more than any run finishes
constexpr double kMaxDuration = 30 * 86400;     // --duration and time warm-ups: 30 days
constexpr double kMaxTimeout = 86400;           // per request: a day
constexpr double kMinTime = 1e-3;               // 1ms: shorter is below the clock's use
}  // namespace

// NOLINTNEXTLINE(readability-function-size): a table, one entry per option
const std::vector<OptionSpec>& common_options() {
  static const std::vector<OptionSpec> opts = {
      {"ops", "operations to run, one job each", "", true},
      {"n", "operations per job (split across clients)", "10000", false, Kind::Int, {}, false, 1, kMaxOps},
      {"clients", "concurrent clients (a list runs one job per value)", "1", true, Kind::Int, {}, false, 1, 10000},
      {"pipeline", "requests in flight per client", "1", true, Kind::Int, {}, false, 1, 65536},
      {"threads",
       "threads for pollable clients (blocking clients get one each)",
       "1",
       false,
       Kind::Int,
       {},
       false,
       1,
       1024},
      {"duration", "run for this long instead of n ops (10s, 2m; 1ms to 720h)", "", false},
      {"warmup", "untimed warm-up: ops (1000) or time (2s); up to 10^12 ops or 720h", "0", false},
      {"rate",
       "open loop: ops/s across all clients (latency from each op's intended start), or a shape: "
       "ramp:1k..20k/60s, steps:1k,2k,4k/10s, sine:10k+-5k/60s, spike:10k,+40k@30s/5s; model: "
       "--workload-model's mean rate",
       "0", false},
      {"arrivals", "open loop: uniform (evenly spaced) or poisson (exponential gaps at the rate of the moment)",
       "uniform", false},
      {"trace",
       "keyed stores: replay this trace (Twitter cache-trace CSV, plain or zstd; Redis MONITOR output; CSV "
       "time,op,key,value_size) at its own timing",
       "", false},
      {"trace-format",
       "--trace's format: twitter, monitor or csv (default: detected)",
       "",
       false,
       Kind::Str,
       {"twitter", "monitor", "csv"}},
      {"speed", "--trace: 1 its own timing, 2 twice as fast (any factor), or max (as fast as the clients go)", "1",
       false},
      {"skip-bad", "--trace: count and show malformed lines instead of stopping at the first", "false", false,
       Kind::Bool},
      {"timeout", "per-request timeout (1ms to 24h)", "5s", false},
      {"poll",
       "event loops: poll for replies before sleeping: off, auto (up to 100us while replies arrive in "
       "the window, with a core to spare) or a time (1us to 10ms, always)",
       "auto", false},
      {"name", "job name shown in tables", "", false},
      {"interval", "time series interval: ops and latency per interval in the JSON (10ms to 1h)", "1s", false},
      {"server-events",
       "read the machine's and the server's events per interval (100 ms at least) beside the series, to explain "
       "its episodes; off: none read (episodes are still found, with no causes); a list runs one job per value",
       "on",
       true,
       Kind::Str,
       {"on", "off"}},
      {"slo", "objectives, exit 3 when missed: p99<2ms,rps>10000,errors=0 (also min mean p50 p90 p999 max, mbps)", "",
       false},
      {"find-max",
       "search the highest open-loop rate that meets this SLO (the --slo grammar, with a latency bound: "
       "p99<1ms,errors=0); exit 3 when no rate does, 2 when the client is the limit",
       "", false},
      {"find-precision", "--find-max ends when its bracket is this narrow (5%, or 0.05; above 0, at most 50%)", "5%",
       false},
      {"step-duration", "--find-max: each step's measured time, after a warm-up of a fifth of it (100ms to 1h)", "5s",
       false},
      {"fault",
       "inject a fault during the measured phase, KIND@AT[/FOR]: kill@50%, restart@40%, restart@4s/2s, stop@40%/1.5s, "
       "and through a TCP proxy slow@40%/5s:+5ms, cut@40%/2s (needs --duration; repeatable; docs/guide/faults.md)",
       "",
       false,
       Kind::Str,
       {},
       true},
      {"reconnect-backoff",
       "a client whose connection is lost reconnects after 10ms, then twice as long each try, up to this (0 to 1m; "
       "--fault: 1s unless given; 0: a lost client stops)",
       "", false},
      {"reconnect-every",
       "clients that hold a connection close it and open a new one every N ops (1: a connection per request, as "
       "CGI, PHP and serverless clients); each open is timed apart (the result's connect), not in the op's latency",
       "",
       false,
       Kind::Int,
       {},
       false,
       1,
       kMaxOps},
      {"connect-rate",
       "--reconnect-every: at most this many new connections per second across the clients of a process "
       "(0.01 to 10^6); a client waits for its turn before it reconnects, the wait reported apart",
       "",
       false,
       Kind::Num,
       {},
       false,
       0.01,
       1e6},
      {"find-repeat",
       "--find-max: measure the found rate again this many times (min-max reported)",
       "3",
       false,
       Kind::Int,
       {},
       false,
       1,
       100},
  };
  return opts;
}

namespace {

// A time option: a duration from `lo` to `hi` seconds.
double time_in(const std::string& key, const std::string& v, double lo, double hi, const std::string& what) {
  double d = -1;
  try {
    d = parse_duration(v, key);
  } catch (const SetupError&) {}
  if (!(d >= lo && d <= hi)) throw SetupError(key + " expects " + what + ", got '" + v + "'");
  return d;
}

// --find-max: the --slo grammar, and a latency bound (a rate is searched under a latency).
std::string checked_find_max(const std::string& v) {
  std::vector<SloTerm> terms = parse_slo(v);
  if (std::none_of(terms.begin(), terms.end(), [](const SloTerm& t) { return slo_latency_bound(t) > 0; }))
    throw SetupError("'" + printable(v) +
                     "' has no latency bound; the search needs one, as in p99<1ms (min, mean, "
                     "p50, p90, p99, p999 or max with < or <=)");
  return v;
}

// --find-precision: a fraction (0.05) or a share (5%), above 0 and at most 50%.
double precision(const std::string& v) {
  char* end = nullptr;
  double x = std::strtod(v.c_str(), &end);
  if (end != v.c_str() && std::string(end) == "%")
    x /= 100;
  else if (end == v.c_str() || *end)
    x = -1;
  if (!(x > 0 && x <= 0.5))
    throw SetupError("find-precision expects a share above 0 and at most 50% (5%, 0.05), got '" + printable(v) + "'");
  return x;
}

// --rate: a shape's mean over its span, the shape itself beside it (rate_shape.h); --arrivals.
void apply_rate(Job& j, const std::string& key, const std::string& v) {
  if (key == "arrivals") {
    if (parse_arrivals(v) == Arrivals::Uniform)
      j.opts.erase(kArrivalsKey);
    else
      j.opts[kArrivalsKey] = v;
    return;
  }
  const RateShape shape = parse_rate_shape(v);
  j.rate = shape.mean_rate();
  if (shape.constant())
    j.opts.erase(kRateShapeKey);
  else
    j.opts[kRateShapeKey] = v;
}

void check_speed(const std::string& v) {
  const double x = v == "max" ? 1 : std::strtod(v.c_str(), nullptr);
  if (!(x >= 0.001 && x <= 1000) || (v != "max" && v.find_first_not_of("0123456789.") != std::string::npos))
    throw SetupError("expected a factor from 0.001 to 1000 (1, 2, 0.5) or max, got '" + printable(v) + "'");
}

// --slo and --find-max, checked now: a bad one is a set-up error before any job runs ("--slo:
// ..." on the command line, "file:line: slo: ..." in a suite).
void apply_slo(Job& j, const std::string& key, const std::string& v, const std::string& where) {
  try {
    if (key == "slo") {
      parse_slo(v);
      j.slo = v;
    } else {
      j.find_max = checked_find_max(v);
    }
  } catch (const SetupError& e) {
    throw SetupError(where.rfind("--", 0) == 0 ? e.what() : key + ": " + e.what());
  }
}

// --warmup: a count of ops, or a time when it ends in a unit (not a size suffix).
void apply_warmup(Job& j, const std::string& key, const std::string& v) {
  const std::string what = "a count of ops from 0 to " + std::to_string(kMaxOps) + " or a time from 0 to 720h (2s)";
  const bool has_unit = !v.empty() && std::isalpha(static_cast<unsigned char>(v.back())) && v.back() != 'k' &&
                        v.back() != 'K' && v.back() != 'M' && v.back() != 'G';
  if (has_unit) {
    j.warmup_s = time_in(key, v, 0, kMaxDuration, what);
    return;
  }
  int64_t ops = -1;
  try {
    ops = parse_size(v, key);
  } catch (const SetupError&) {}
  if (ops < 0 || ops > kMaxOps) throw SetupError(key + " expects " + what + ", got '" + v + "'");
  j.warmup_ops = static_cast<uint64_t>(ops);
}

// Values reach here checked against the option's kind and range (check_value).
void apply_common(Job& j, const std::string& key, const std::string& v, const std::string& where) {
  try {
    if (key == "n")
      j.n = static_cast<uint64_t>(parse_size(v, "n"));
    else if (key == "clients")
      j.clients = static_cast<int>(parse_size(v, "clients"));
    else if (key == "pipeline")
      j.pipeline = static_cast<int>(parse_size(v, "pipeline"));
    else if (key == "threads")
      j.threads = static_cast<int>(parse_size(v, "threads"));
    else if (key == "duration")
      j.duration_s = time_in(key, v, kMinTime, kMaxDuration, "a time from 1ms to 720h (10s, 500ms, 2m)");
    else if (key == "rate" || key == "arrivals")
      apply_rate(j, key, v);
    else if (key == "trace" || key == "trace-format" || key == "skip-bad") {
      j.opts[key] = v;  // the workload reads them (workload_spec.cpp), the driver replays
    } else if (key == "speed") {
      check_speed(v);
      j.opts[key] = v;
    } else if (key == "timeout")
      j.timeout_s = time_in(key, v, kMinTime, kMaxTimeout, "a time from 1ms to 24h (5s, 500ms)");
    else if (key == "name")
      j.name = v;
    else if (key == "poll")
      j.poll = parse_poll(v);
    else if (key == "interval")
      j.interval_s = time_in(key, v, 0.01, 3600, "a time from 10ms to 1h (1s, 250ms)");
    else if (key == "server-events")
      j.server_events = v == "on";
    else if (key == "slo" || key == "find-max")
      apply_slo(j, key, v, where);
    else if (key == "find-precision")
      j.find_precision = precision(v);
    else if (key == "step-duration")
      j.step_s = time_in(key, v, 0.1, 3600, "a time from 100ms to 1h (5s, 300ms)");
    else if (key == "fault")
      j.faults = parse_faults(v);
    else if (key == "reconnect-backoff")
      j.reconnect_backoff_s = time_in(key, v, 0, 60, "a time from 0 to 1m (1s, 200ms)");
    else if (key == "reconnect-every")
      j.reconnect_every = static_cast<uint64_t>(parse_size(v, key));
    else if (key == "connect-rate")
      j.connect_rate = std::strtod(v.c_str(), nullptr);
    else if (key == "find-repeat")
      j.find_repeat = static_cast<int>(parse_size(v, key));
    else if (key == "warmup")
      apply_warmup(j, key, v);
  } catch (const SetupError& e) {
    throw SetupError(where + ": " + e.what());
  }
}

// --crash kills (or cuts the power of) a server mwbench starts or a store on this machine, and
// reads back the writes of the adapter's crash ops: an external server (--host, --url), another
// op, or for power a machine without a usable /dev/fuse is refused before any job runs.
void check_crash(const AdapterSpec& spec, const std::vector<Setting>& settings, const std::vector<Job>& jobs) {
  auto crash = std::find_if(settings.begin(), settings.end(), [](const Setting& s) { return s.key == "crash"; });
  if (crash == settings.end()) return;
  for (const Job& j : jobs) {
    const CrashKind kind = durability_options_of(j).crash;
    if (kind == CrashKind::None) continue;
    if (!spec.target_option.empty() && j.has(spec.target_option))
      throw SetupError(crash->where + ": --crash " + crash_name(kind) +
                       (cuts_power(kind) ? " needs the store on this machine, under the page-cache layer: "
                                         : " kills the server mwbench starts: ") +
                       "drop --" + spec.target_option + " (mwbench starts the server)");
    if (!spec.crash_ops.empty() &&
        std::find(spec.crash_ops.begin(), spec.crash_ops.end(), j.op) == spec.crash_ops.end()) {
      std::string ops;  // kMixOp in crash_ops: a --mix's writes are read back too
      bool mix = false;
      for (const std::string& o : spec.crash_ops)
        if (o == kMixOp)
          mix = true;
        else
          ops += (ops.empty() ? "" : ", ") + o;
      if (mix) ops += " or a --mix";
      throw SetupError(crash->where + ": " + spec.name + " " + j.op + " cannot be crashed: the crash check reads " +
                       "back the writes of " + ops + " (give --ops " + spec.crash_ops.front() + ")");
    }
    if (cuts_power(kind))
      if (std::string why = pagecache_unavailable(); !why.empty())
        throw SetupError(crash->where + ": --crash " + crash_name(kind) + ": " + why);
  }
}

// --fault: a duration run, every fault inside it, each kind one the adapter can do on the server
// mwbench starts; checked before any job runs. A lost connection is reconnected (1 s at most
// between tries unless --reconnect-backoff says).
void check_faults(const AdapterSpec& spec, const std::vector<Setting>& settings, std::vector<Job>& jobs) {
  auto given = [&](const char* key) {
    return std::find_if(settings.begin(), settings.end(), [&](const Setting& s) { return s.key == key; });
  };
  auto fault = given("fault");
  if (fault == settings.end()) return;
  for (const char* clash : {"crash", "find-max"})
    if (given(clash) != settings.end()) throw SetupError(fault->where + ": give --fault or --" + clash + ", not both");
  for (Job& j : jobs) {
    if (j.faults.empty()) continue;
    if (j.duration_s <= 0)
      throw SetupError(fault->where + ": --fault needs --duration (the faults fall at times of the measured phase)");
    if (given("reconnect-backoff") == settings.end()) j.reconnect_backoff_s = kDefaultReconnectBackoff;
    for (const FaultSpec& f : j.faults) {
      const std::string name = fault_kind_name(f.kind);
      if (through_proxy(f.kind) && spec.target != TargetKind::External)
        throw SetupError(fault->where + ": " + printable(f.text) + ": " + name +
                         " needs a TCP server to put mwbench's proxy before, and " + spec.name + " has none");
      if (std::find(spec.fault_kinds.begin(), spec.fault_kinds.end(), name) == spec.fault_kinds.end()) {
        std::string can;
        for (const std::string& k : spec.fault_kinds) can += (can.empty() ? "" : ", ") + k;
        throw SetupError(fault->where + ": " + printable(f.text) + ": " + spec.name + " cannot " +
                         (can.empty() ? "take faults" : "do " + name + " (it can: " + can + ")"));
      }
      const bool external = !spec.target_option.empty() && j.has(spec.target_option);
      const bool host_port = spec.target_option == "host" && find_option(spec.options, "port");
      if (external && !through_proxy(f.kind))
        throw SetupError(fault->where + ": " + printable(f.text) + " signals the server mwbench starts: " + "drop --" +
                         spec.target_option + " (an external server cannot be signalled)");
      if (external && !host_port)  // the proxy is put before a host and port (core/runner.cpp)
        throw SetupError(fault->where + ": " + printable(f.text) + " goes through a proxy to a host and port: drop --" +
                         spec.target_option + " (mwbench then starts the server)");
      if (f.at_s(j.duration_s) >= j.duration_s)
        throw SetupError(fault->where + ": " + printable(f.text) + " falls at " + fmt(f.at_s(j.duration_s), 3) +
                         " s, after the run's end (--duration " + fmt(j.duration_s, 3) + " s)");
      if (f.at_s(j.duration_s) + f.for_s >= j.duration_s)  // nothing after it would be measured
        throw SetupError(fault->where + ": " + printable(f.text) + " lasts until " +
                         fmt(f.at_s(j.duration_s) + f.for_s, 3) + " s, past the run's end (--duration " +
                         fmt(j.duration_s, 3) + " s): give a shorter FOR or an earlier AT");
    }
  }
}

// --reconnect-every and --connect-rate: the core closes and opens clients again, which only an
// adapter whose clients hold a connection declares (AdapterSpec::connects); a queue's producers and
// consumers keep theirs (a consumer's subscription would go with it). --connect-rate paces the
// reconnects, so it needs --reconnect-every.
void check_connections(const AdapterSpec& spec, const std::vector<Setting>& settings, const std::vector<Job>& jobs) {
  auto given = [&](const char* key) {
    return std::find_if(settings.begin(), settings.end(), [&](const Setting& s) { return s.key == key; });
  };
  auto every = given("reconnect-every"), rate = given("connect-rate");
  if (every == settings.end() && rate == settings.end()) return;
  const Setting& first = every != settings.end() ? *every : *rate;
  // where it was given: "--reconnect-every" on the command line, "suite.toml:12: --reconnect-every" in a suite
  const std::string at = first.where.rfind("--", 0) == 0 ? first.where : first.where + ": --" + first.key;
  if (every == settings.end()) throw SetupError(at + ": it paces the reconnects of --reconnect-every: give both");
  if (!spec.connects)
    throw SetupError(at + ": " +
                     (spec.connects_note.empty() ? spec.name + "'s clients hold no connection to close and open again"
                                                 : spec.name + " " + spec.connects_note));
  for (const Job& j : jobs)
    if (is_queue_op(j.op))
      throw SetupError(at + ": " + spec.name + " " + j.op +
                       " is a queue's op: its producers and consumers keep their connections (a consumer's "
                       "subscription would end with one)");
}

}  // namespace

namespace {
// --rate model: the mean rate of the job's --workload-model.
std::string model_rate(const std::vector<Setting>& settings, const std::string& where) {
  auto m = std::find_if(settings.begin(), settings.end(), [](const Setting& s) { return s.key == "workload-model"; });
  if (m == settings.end() || m->values.size() != 1)
    throw SetupError(where + ": rate model takes the mean rate of --workload-model FILE; give one");
  const TrafficModel model = load_model(m->values[0]);
  if (!(model.rate > 0)) throw SetupError(where + ": rate model: " + m->values[0] + " has no rate");
  return fmt_g(model.rate);
}
}  // namespace

namespace {

const AdapterSpec& adapter_named(const std::string& adapter, const std::string& source) {
  const AdapterSpec* spec = find_adapter(adapter);
  if (spec) return *spec;
  std::string names;
  for (auto& a : adapters()) names += (names.empty() ? "" : ", ") + a.name;
  throw SetupError(source + ": unknown adapter '" + adapter + "'; expected one of " + names);
}

// The adapter's side-by-side axis: its first list option that is not the workload's (the
// workload's lists are labelled, not the target).
std::string side_axis_of(const AdapterSpec& spec) {
  for (auto& o : spec.options) {
    const bool shared = std::any_of(workload_options().begin(), workload_options().end(),
                                    [&](const OptionSpec& w) { return w.name == o.name; });
    if (o.list && !shared) return o.name;
  }
  return "";
}

// What the settings give, checked: one value of each option in the base job, the lists apart,
// the ops named.
struct Given {
  Job base;
  std::vector<Setting> lists;
  std::vector<std::string> ops;
};

// The option a setting names (its alias resolved, several values of a repeated one joined), or a
// set-up error listing the options there are. `common`: one of every adapter's.
const OptionSpec& option_of(const AdapterSpec& spec, Setting& s, bool& common) {
  if (auto alias = spec.aliases.find(s.key); alias != spec.aliases.end()) s.key = alias->second;
  const OptionSpec* o = find_option(common_options(), s.key);
  common = o != nullptr;
  if (!o) o = find_option(spec.options, s.key);
  if (!o) {
    std::string keys;
    for (auto& c : common_options()) keys += (keys.empty() ? "" : ", ") + c.name;
    for (auto& c : spec.options) keys += ", " + c.name;
    throw SetupError(s.where + ": unknown option '" + s.key + "' for " + spec.name + "; expected one of " + keys);
  }
  if (o->repeat && s.values.size() > 1) {  // several values of one option, one per line
    std::string joined;
    for (auto& x : s.values) joined += (joined.empty() ? "" : "\n") + x;
    s.values = {joined};
  }
  if (s.values.empty()) throw SetupError(s.where + ": " + s.key + " needs a value");
  if (s.values.size() > 1 && !o->list) throw SetupError(s.where + ": " + s.key + " takes one value, not a list");
  return *o;
}

void check_ops(const AdapterSpec& spec, const Setting& s) {
  for (auto& v : s.values)
    if (std::none_of(spec.ops.begin(), spec.ops.end(), [&](const OpSpec& op) { return op.name == v; })) {
      std::string all;
      for (auto& x : spec.ops) all += (all.empty() ? "" : ", ") + x.name;
      throw SetupError(s.where + ": " + spec.name + " has no op '" + v + "'; expected one of " + all);
    }
}

// A value as the job takes it: a secret resolved (env:VAR, file:PATH), --rate model made the
// model's mean rate, then checked against the option's kind and range (a queue's --message-size
// against its grammar too), before anything runs.
void resolve_values(const AdapterSpec& spec, const OptionSpec& o, Setting& s, const std::vector<Setting>& settings) {
  for (auto& v : s.values) v = resolve_secret(o, v, s.where);
  if (s.key == "rate")
    for (auto& v : s.values)
      if (v == "model") v = model_rate(settings, s.where);
  for (auto& v : s.values) check_option_value(o, v, s.where);
  if (s.key != "message-size" || !spec.has(Family::Queue)) return;
  for (auto& v : s.values) {
    try {
      queue::message_sizes(v);
    } catch (const SetupError& e) {  // the CLI's message names the option; a suite's, where it was given too
      if (s.where.rfind("--", 0) == 0) throw;
      throw SetupError(s.where + ": " + e.what());
    }
  }
}

Given read_settings(const AdapterSpec& spec, const std::vector<Setting>& settings, const std::string& source) {
  Given g;
  g.base.adapter = spec.name;
  g.base.source = source;
  for (Setting s : settings) {
    bool common = false;
    const OptionSpec& o = option_of(spec, s, common);
    if (s.key == "ops") {
      check_ops(spec, s);
      g.ops = s.values;
      continue;
    }
    resolve_values(spec, o, s, settings);
    if (s.values.size() > 1 || o.list)
      g.lists.push_back(s);
    else if (common)
      apply_common(g.base, s.key, s.values[0], s.where);
    else
      g.base.opts[s.key] = s.values[0];
  }
  return g;
}

std::vector<Setting>::const_iterator given_in(const std::vector<Setting>& settings, const char* key) {
  return std::find_if(settings.begin(), settings.end(), [&](const Setting& s) { return s.key == key; });
}

// Options that cannot go together: -n and --duration; --find-max and what the search sets; a
// search of a queue op that has no consumers.
void check_clashes(const AdapterSpec& spec, const std::vector<Setting>& settings, const std::vector<std::string>& ops) {
  const auto end = settings.end();
  if (auto n = given_in(settings, "n"), d = given_in(settings, "duration"); n != end && d != end)
    throw SetupError(d->where +
                     ": give -n or --duration, not both (a --duration run ends by time: -n would be "
                     "ignored)");
  const auto f = given_in(settings, "find-max");
  if (f == end) return;
  for (const char* clash : {"rate", "crash", "duration"})  // the search sets the rate and the time of each step
    if (auto c = given_in(settings, clash); c != end)
      throw SetupError(c->where + ": --find-max searches the open-loop rate in steps of --step-duration: give --" +
                       std::string(clash) + " or --find-max, not both");
  if (!spec.has(Family::Queue)) return;
  for (const std::string& op : ops.empty() ? split_list(spec.default_ops) : ops)
    if (is_queue_op(op) && op != "roundtrip")
      throw SetupError(f->where + ": --find-max searches a queue's roundtrip (producers at the offered rate, " +
                       "consumers flat out, the backlog judged): " + spec.name + " " + op +
                       " has no consumers to keep up; give --ops roundtrip");
}

// The setting that makes the job a workload's (--mix, or a published workload's --workload, or
// --workload-model), or settings.end(). An adapter's own --mix (disk's % reads) is a setting like
// any other, not the workload's.
std::vector<Setting>::const_iterator workload_setting(const AdapterSpec& spec, const std::vector<Setting>& settings) {
  for (const char* key : {"mix", "workload", "workload-model"}) {
    const OptionSpec* o = find_option(spec.options, key);
    if (!o || !o->owner || *o->owner != typeid(WorkloadOptions)) continue;
    if (auto at = given_in(settings, key); at != settings.end()) return at;
  }
  return settings.end();
}

// The ops' axis: the ops given or the adapter's default; a workload or a trace's replay is one
// job, the mix its op.
Setting ops_axis(const AdapterSpec& spec, const std::vector<Setting>& settings, const std::vector<std::string>& ops,
                 std::vector<Setting>::const_iterator mix) {
  Setting axis{"ops", ops.empty() ? split_list(spec.default_ops) : ops, "ops"};
  if (auto t = given_in(settings, "trace"); t != settings.end()) {
    if (!ops.empty()) throw SetupError(t->where + ": give --ops or --trace, not both");
    if (mix != settings.end()) throw SetupError(t->where + ": give --" + mix->key + " or --trace, not both");
    axis.values = {kMixOp};
  }
  if (mix != settings.end()) {
    if (!ops.empty()) throw SetupError(mix->where + ": give --ops or --" + mix->key + ", not both");
    axis.values = {kMixOp};
  }
  return axis;
}

// Counted before they are built: a few long lists would otherwise take gigabytes before anything runs.
void check_job_count(const std::vector<Setting>& axes, const std::string& source, size_t already) {
  double count = 1;
  std::string product;
  for (const Setting& ax : axes) {
    count *= static_cast<double>(ax.values.size());
    if (ax.values.size() > 1)
      product += (product.empty() ? "" : " x ") + std::to_string(ax.values.size()) + " " + ax.key;
  }
  if (product.empty()) product = "1";
  if (already > 0) product = std::to_string(already) + " earlier + " + product;
  count += static_cast<double>(already);
  if (count > static_cast<double>(kMaxJobs))
    throw SetupError(source + ": the lists expand to " +
                     (count >= 1e15 ? std::string("more than 10^15") : std::to_string(static_cast<uint64_t>(count))) +
                     " jobs (" + product + "); a run may have at most " + std::to_string(kMaxJobs) + " jobs");
}

// A job per combination of the axes' values, the first axis outermost; an op that does not use an
// option runs once, without it; a list's value joins the job's label (not the ops', the side axis'
// or a name's).
std::vector<Job> cross(const Job& base, const std::vector<Setting>& axes, const AdapterSpec& spec,
                       const std::string& side_axis) {
  std::vector<Job> jobs{base};
  for (const Setting& ax : axes) {
    std::vector<Job> next;
    const OptionSpec* o = find_option(spec.options, ax.key);
    for (const Job& j : jobs) {
      if (o && !o->used_by.empty() && std::find(o->used_by.begin(), o->used_by.end(), j.op) == o->used_by.end()) {
        next.push_back(j);
        continue;
      }
      for (const std::string& v : ax.values) {
        Job k = j;
        if (ax.key == "ops")
          k.op = v;
        else if (find_option(common_options(), ax.key))
          apply_common(k, ax.key, v, ax.where);
        else
          k.opts[ax.key] = v;
        if (ax.values.size() > 1 && ax.key != "ops" && ax.key != side_axis && ax.key != "name")
          k.label += " " + ax.key + "=" + redact(ax.key, v);
        next.push_back(std::move(k));
      }
    }
    jobs = std::move(next);
  }
  return jobs;
}

// Each job checked against the adapter's capabilities and its workload built once (a bad one is an
// error before anything runs), then named: a named job adds its op only when the ops differ.
void finish_jobs(std::vector<Job>& jobs, const AdapterSpec& spec, const std::vector<Setting>& settings,
                 const std::string& source, std::vector<Setting>::const_iterator mix) {
  auto pipeline = std::find_if(settings.begin(), settings.end(), [&](const Setting& s) {
    auto a = spec.aliases.find(s.key);
    return (a != spec.aliases.end() ? a->second : s.key) == "pipeline";
  });
  const bool several_ops = std::any_of(jobs.begin(), jobs.end(), [&](const Job& o) { return o.op != jobs.front().op; });
  for (Job& j : jobs) {
    if (spec.max_in_flight > 0 && j.pipeline > spec.max_in_flight)
      throw SetupError((pipeline != settings.end() ? pipeline->where : source) + ": -P " + std::to_string(j.pipeline) +
                       ": " + spec.name + " keeps at most " + std::to_string(spec.max_in_flight) +
                       " request(s) in flight per client" +
                       (spec.in_flight_note.empty() ? "" : " (" + spec.in_flight_note + ")"));
    try {
      workload_of(j, spec);
    } catch (const SetupError& e) {  // in a suite, where the mix was given; the CLI's message names the option
      std::string at = mix != settings.end() ? mix->where : source;
      if (at.rfind("--", 0) == 0 || at == "cli") throw;
      throw SetupError(at + ": " + e.what());
    }
    if (j.name.empty())
      j.name = spec.name + " " + j.op + j.label;
    else
      j.name += (several_ops ? " " + j.op : std::string()) + j.label;
  }
}

}  // namespace

std::vector<Job> expand_jobs(const std::string& adapter, const std::vector<Setting>& settings,
                             const std::string& source, size_t already) {
  const AdapterSpec& spec = adapter_named(adapter, source);
  Given g = read_settings(spec, settings, source);
  check_clashes(spec, settings, g.ops);
  const auto mix = workload_setting(spec, settings);
  // The axes: ops outermost, then the other lists, the adapter's side-by-side axis last (fastest).
  const std::string side_axis = side_axis_of(spec);
  std::vector<Setting> axes{ops_axis(spec, settings, g.ops, mix)};
  for (auto& l : g.lists)
    if (l.key != side_axis) axes.push_back(l);
  for (auto& l : g.lists)
    if (l.key == side_axis) axes.push_back(l);
  check_job_count(axes, source, already);
  std::vector<Job> jobs = cross(g.base, axes, spec, side_axis);
  check_crash(spec, settings, jobs);
  check_faults(spec, settings, jobs);
  check_connections(spec, settings, jobs);
  finish_jobs(jobs, spec, settings, source, mix);
  return jobs;
}

void check_run_count(size_t jobs, int repeat) {
  if (static_cast<double>(jobs) * repeat > static_cast<double>(kMaxJobs))
    throw SetupError("--repeat " + std::to_string(repeat) + " x " + std::to_string(jobs) +
                     " jobs = " + std::to_string(static_cast<uint64_t>(jobs) * static_cast<uint64_t>(repeat)) +
                     " job runs; at most " + std::to_string(kMaxJobs) + " in one run");
}

namespace {

std::string where(const std::string& file, const toml::node& n) {
  return file + ":" + std::to_string(n.source().begin.line);
}

std::string scalar(const toml::node& n, const std::string& at, const std::string& key) {
  if (auto s = n.as_string()) return s->get();
  if (auto i = n.as_integer()) return std::to_string(i->get());
  if (auto b = n.as_boolean()) return b->get() ? "true" : "false";
  if (auto f = n.as_floating_point()) {  // the shortest exact text: 1e6 -> "1000000", 1e30 -> "1e+30", nan
    char buf[64];
    double d = f->get();
    auto r = std::abs(d) < 1e15 && d == std::floor(d)
                 ? std::to_chars(buf, buf + sizeof buf, d, std::chars_format::fixed)
                 : std::to_chars(buf, buf + sizeof buf, d);
    return std::string(buf, r.ptr);
  }
  throw SetupError(at + ": " + key + " expects a string, number or boolean");
}

std::vector<Setting> settings_of(const toml::table& t, const std::string& file) {
  std::vector<Setting> out;
  for (auto&& [k, v] : t) {
    std::string key(k.str());
    std::replace(key.begin(), key.end(), '_', '-');
    if (key == "op") key = "ops";
    if (key == "adapter") continue;
    Setting s{key, {}, where(file, v)};
    if (auto arr = v.as_array()) {
      for (auto& e : *arr) s.values.push_back(scalar(e, where(file, e), key));
      if (s.values.empty()) throw SetupError(s.where + ": " + key + " is an empty list");

    } else if (v.is_table()) {
      throw SetupError(s.where + ": " + key + " expects a value or a list, not a table");
    } else {
      s.values.push_back(scalar(v, s.where, key));
    }
    out.push_back(std::move(s));
  }
  return out;
}

// The suite's text: a regular file (a FIFO, directory or device is refused without blocking
// on it) of at most kMaxSuiteBytes.
std::string read_suite(const std::string& file) {
  int fd = ::open(file.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) throw SetupError(file + ": cannot read the suite file: " + std::strerror(errno));
  struct stat st {};
  const char* kind = nullptr;
  if (fstat(fd, &st) != 0)
    kind = "cannot be examined";
  else if (S_ISDIR(st.st_mode))
    kind = "is a directory";
  else if (S_ISFIFO(st.st_mode))
    kind = "is a FIFO";
  else if (S_ISCHR(st.st_mode) || S_ISBLK(st.st_mode))
    kind = "is a device";
  else if (S_ISSOCK(st.st_mode))
    kind = "is a socket";
  else if (!S_ISREG(st.st_mode))
    kind = "is not a regular file";
  std::string text;
  if (!kind && static_cast<uint64_t>(st.st_size) <= kMaxSuiteBytes) {
    text.resize(kMaxSuiteBytes + 1);
    size_t got = 0;
    while (got < text.size()) {
      ssize_t r = ::read(fd, text.data() + got, text.size() - got);
      if (r < 0 && errno == EINTR) continue;
      if (r <= 0) break;
      got += static_cast<size_t>(r);
    }
    text.resize(got);
  }
  ::close(fd);
  if (kind) throw SetupError(file + ": " + kind + "; a suite is a TOML file");
  if (static_cast<uint64_t>(st.st_size) > kMaxSuiteBytes || text.size() > kMaxSuiteBytes)
    throw SetupError(file + ": " + std::to_string(std::max<uint64_t>(st.st_size, text.size())) +
                     " bytes; a suite file may have at most " + std::to_string(kMaxSuiteBytes >> 20) + " MiB");
  return text;
}

// Throws when the text nests deeper than kMaxSuiteDepth, counting open brackets and braces and
// the parts of dotted keys and table headers, outside strings and comments. (The parser
// recurses once per level: 100,000 levels overflow its stack.)
void check_nesting(std::string_view t, const std::string& file) {
  int line = 1, depth = 0, dots = 0, header_depth = 0;
  bool line_start = true, header = false;
  auto check = [&](int levels) {
    if (levels > kMaxSuiteDepth)
      throw SetupError(file + ":" + std::to_string(line) + ": nested " + std::to_string(levels) +
                       " levels deep (tables, arrays, dotted keys); a suite may nest at most " +
                       std::to_string(kMaxSuiteDepth));
  };
  size_t i = 0;
  while (i < t.size()) {
    char c = t[i];
    if (c == '\n') {
      ++line, ++i, dots = 0, line_start = true;
      continue;
    }
    if (c == ' ' || c == '\t' || c == '\r') {
      ++i;
      continue;
    }
    if (c == '#') {
      while (i < t.size() && t[i] != '\n') ++i;
      continue;
    }
    bool was_start = line_start;
    line_start = false;
    if (c == '"' || c == '\'') {
      std::string_view close = t.substr(i, 3) == std::string(3, c) ? t.substr(i, 3) : t.substr(i, 1);
      bool multi = close.size() == 3;
      for (i += close.size(); i < t.size(); ++i) {
        if (t[i] == '\n') {
          if (!multi) break;  // unterminated: the parser says so
          ++line;
        } else if (c == '"' && t[i] == '\\') {
          if (i + 1 < t.size() && t[i + 1] == '\n') ++line;
          ++i;
        } else if (t.substr(i, close.size()) == close) {
          i += close.size();
          break;
        }
      }
      continue;
    }
    ++i;
    if (c == '[' && was_start && depth == 0) {  // [table] or [[array.of.tables]]
      if (i < t.size() && t[i] == '[') ++i;
      header = true, dots = 0;
    } else if (c == ']' && header) {
      if (i < t.size() && t[i] == ']') ++i;
      header = false, header_depth = dots + 1, dots = 0;
      check(header_depth);
    } else if (c == '[' || c == '{') {
      check(header_depth + ++depth + 1);
      dots = 0;
    } else if (c == ']' || c == '}') {
      depth = std::max(0, depth - 1), dots = 0;
    } else if (c == '.') {
      check(header_depth + depth + ++dots + 1);
    } else if (c == '=' || c == ',') {
      dots = 0;
    }
  }
}

// The option a suite key names for an adapter (fio's depth is pipeline), or nullptr.
const OptionSpec* find_key(const AdapterSpec* spec, const std::string& key) {
  std::string name = key;
  if (spec)
    if (auto alias = spec->aliases.find(key); alias != spec->aliases.end()) name = alias->second;
  if (const OptionSpec* o = find_option(common_options(), name)) return o;
  return spec ? find_option(spec->options, name) : nullptr;
}

}  // namespace

Suite load_suite(const std::string& file, size_t already) { return parse_suite(read_suite(file), file, already); }

Suite parse_suite(std::string_view text, const std::string& file, size_t already) {
  Suite suite;
  suite.file = file;
  suite.name = std::filesystem::path(file).stem().string();
  if (text.size() > kMaxSuiteBytes)
    throw SetupError(file + ": " + std::to_string(text.size()) + " bytes; a suite file may have at most " +
                     std::to_string(kMaxSuiteBytes >> 20) + " MiB");
  check_nesting(text, file);
  toml::table root;
  try {
    root = toml::parse(text, file);
  } catch (const toml::parse_error& e) {
    throw SetupError(file + ":" + std::to_string(e.source().begin.line) + ": " + std::string(e.description()));
  }
  for (auto&& [k, v] : root) {
    std::string key(k.str());
    if (key != "suite" && key != "defaults" && key != "job")
      throw SetupError(where(file, v) + ": unknown section '" + key + "'; expected [suite], [defaults] or [[job]]");
  }
  if (auto s = root["suite"].as_table()) {
    for (auto&& [k, v] : *s) {
      std::string key(k.str());
      if (key == "name")
        suite.name = scalar(v, where(file, v), key);
      else if (key == "description")
        suite.description = scalar(v, where(file, v), key);
      else
        throw SetupError(where(file, v) + ": unknown key '" + key + "' in [suite]; expected name or description");
    }
  }
  std::vector<Setting> defaults;
  if (auto d = root["defaults"].as_table()) defaults = settings_of(*d, file);
  auto jobs = root["job"].as_array();
  if (!jobs || jobs->empty()) throw SetupError(file + ":1: no [[job]] tables: a suite needs at least one job");
  std::vector<const AdapterSpec*> used;
  for (auto& node : *jobs)
    if (auto t = node.as_table())
      if (auto a = (*t)["adapter"].value<std::string>()) used.push_back(find_adapter(*a));
  for (auto& d : defaults) {  // a default no job can take is a typo, not a no-op
    bool known = std::any_of(used.begin(), used.end(), [&](const AdapterSpec* a) { return find_key(a, d.key); });
    if (!known && !used.empty() && std::find(used.begin(), used.end(), nullptr) == used.end()) {
      std::string adapters;
      for (auto* a : used)
        if (adapters.find(a->name) == std::string::npos) adapters += (adapters.empty() ? "" : ", ") + a->name;
      throw SetupError(d.where + ": unknown key '" + d.key +
                       "' in [defaults]: neither a common option nor an option of " + adapters);
    }
  }
  for (auto& node : *jobs) {
    auto t = node.as_table();
    if (!t) throw SetupError(where(file, node) + ": job must be a table ([[job]])");
    auto adapter = (*t)["adapter"].value<std::string>();
    if (!adapter) throw SetupError(where(file, node) + ": job has no adapter = \"...\"");
    std::vector<Setting> own = settings_of(*t, file);
    std::vector<Setting> all;
    const AdapterSpec* spec = find_adapter(*adapter);
    auto sets = [&](const std::string& key) {
      return std::any_of(own.begin(), own.end(), [&](const Setting& s) { return s.key == key; });
    };
    for (auto& d : defaults) {  // defaults apply where the job does not set the key and the adapter has it
      const OptionSpec* o = find_key(spec, d.key);
      bool set = std::any_of(own.begin(), own.end(), [&](const Setting& s) { return find_key(spec, s.key) == o; });
      // A job's duration replaces the defaults' n, and its n the defaults' duration.
      set = set || (d.key == "n" && sets("duration")) || (d.key == "duration" && sets("n"));
      if (o && !set) all.push_back(d);
    }
    all.insert(all.end(), own.begin(), own.end());
    std::string at = where(file, *(*t)["adapter"].node());
    for (Job& j : expand_jobs(*adapter, all, at, already + suite.jobs.size())) suite.jobs.push_back(std::move(j));
  }
  return suite;
}

std::vector<std::string> suite_dirs() {
  namespace fs = std::filesystem;
  std::vector<fs::path> tries;
  if (const char* d = std::getenv("MWBENCH_CONFIGS"); d && *d) tries.push_back(d);
  tries.push_back("configs");
  std::error_code ec;
  fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (!ec) {
    tries.push_back(exe.parent_path() / "../configs");
    tries.push_back(exe.parent_path() / "../share/mwbench/configs");
  }
  tries.push_back(fs::path(MWBENCH_SOURCE_DIR) / "configs");
  std::vector<std::string> dirs;
  for (auto& p : tries) {
    std::string d = fs::weakly_canonical(fs::absolute(p, ec), ec).string();
    if (ec) d = p.string();
    if (std::find(dirs.begin(), dirs.end(), d) == dirs.end()) dirs.push_back(d);
  }
  return dirs;
}

std::string find_suite(const std::string& arg) {
  namespace fs = std::filesystem;
  std::error_code ec;
  // A path, or a FILE.toml that stands here (a FIFO or a directory named like a suite is the
  // loader's to refuse, with what it is). A bare name (no '/', no .toml) is a suite's name first:
  // `run vm-sanity` beside a file called vm-sanity (a result saved there, say) still runs the
  // suite; the file is read only when no suite has that name.
  const bool toml = arg.ends_with(".toml");
  const bool stands = fs::exists(fs::symlink_status(arg, ec)) && (toml || !fs::is_directory(arg, ec));
  if (arg.find('/') != std::string::npos || (toml && stands)) return arg;
  std::string name = arg.size() > 5 && toml ? arg.substr(0, arg.size() - 5) : arg;
  std::vector<std::string> dirs = suite_dirs(), found;
  for (auto& d : dirs)
    if (fs::is_regular_file(fs::path(d) / (name + ".toml"), ec)) return (fs::path(d) / (name + ".toml")).string();
  if (stands) return arg;
  for (auto& d : dirs)
    for (auto it = fs::directory_iterator(d, ec); !ec && it != fs::directory_iterator(); it.increment(ec))
      if (it->path().extension() == ".toml") found.push_back(it->path().stem().string());
  std::sort(found.begin(), found.end());
  found.erase(std::unique(found.begin(), found.end()), found.end());
  std::string names, where;
  for (auto& f : found) names += (names.empty() ? "" : ", ") + f;
  for (auto& d : dirs) where += (where.empty() ? "" : ", ") + d;
  throw SetupError(printable("no suite '" + arg + "': not a file, and no " + name + ".toml in " + where +
                             "; suites found: " + (names.empty() ? "none" : names)));
}

}  // namespace mw
