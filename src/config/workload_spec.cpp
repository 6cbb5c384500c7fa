#include "config/workload_spec.h"

#include <algorithm>
#include <cmath>

#include "api/options.h"
#include "config/config.h"
#include "util/parse.h"
#include "util/text.h"
#include "workload/published.h"
#include "workload/trace.h"
#include "workload/traffic_model.h"

namespace mw {

const std::vector<OptionSpec>& workload_options() {
  using W = WorkloadOptions;
  static const std::vector<OptionSpec> opts = {
      opt(&W::mix, {.name = "mix",
                    .help = "run a weighted mix of abstract ops as one job, e.g. read:95,update:5 "
                            "(read, update, insert, delete, rmw, scan)"}),
      opt(&W::keys, {.name = "keys",
                     .help = "key distribution of the mix",
                     .list = true,
                     .choices = {"uniform", "sequential", "zipfian", "latest", "hotspot", "random"}}),
      opt(&W::keyspace, {.name = "keyspace",
                         .help = "keys loaded and drawn from",
                         .def = "100000",
                         .list = true,
                         .min = 1,
                         .max = 1099511627776.0}),
      opt(&W::zipf_theta, {.name = "zipf-theta",
                           .help = "skew of zipfian and latest keys, 0.01 to 3 (YCSB: 0.99)",
                           .min = 0.01,
                           .max = kMaxTheta}),
      opt(&W::hotspot, {.name = "hotspot",
                        .help = "hotspot keys: KEYS:OPS fractions (0.2:0.8: 20% of the keys get 80% of the ops)"}),
      opt(&W::value_size,
          {.name = "value-size", .help = "bytes per value: 100, 100-1000 (uniform) or 32:50,1024:40 (size:weight)"}),
      opt(&W::load, {.name = "load", .help = "write every key first, untimed (default: when the mix reads)"}),
      opt(&W::seed, {.name = "seed",
                     .help = "seed of the op, key and size draws (the same seed gives the same requests per client)",
                     .max = 1e18}),
      opt(&W::scan_length, {.name = "scan-length", .help = "a scan reads 1..N keys", .min = 1, .max = 100000}),
      opt(&W::hot_shift, {.name = "hot-shift",
                          .help = "zipfian and hotspot keys: the hot keys move every this long (10s; 10ms to 24h), "
                                  "the distribution's shape the same"}),
      opt(&W::ttl, {.name = "ttl",
                    .help = "how long a written key lives, for stores with expiry: 0 (for ever), 3600, 1h, 2d, "
                            "60-3600 (uniform) or 60:1,1h:3 (ttl:weight)",
                    .def = "0"}),
      opt(&W::workload, {.name = "workload",
                         .help = "a published workload: twitter:N, cluster N of Twitter's cache traces (its op "
                                 "mix, Zipf alpha and value size; --mix, --keys, --zipf-theta, --value-size win)"}),
      opt(&W::workload_model,
          {.name = "workload-model",
           .help = "a model file (mwbench model TRACE --json FILE): its op mix, Zipf alpha, value sizes and working "
                   "set as --mix, --keys zipfian --zipf-theta, --value-size and --keyspace (at most 10M keys); "
                   "those flags win; --rate model takes its mean rate"}),
  };
  return opts;
}

WorkloadOptions workload_options_of(const Job& job) {
  WorkloadOptions o;
  detail::fill_options(job, workload_options(), typeid(WorkloadOptions), &o);
  return o;
}

namespace {
// Why the job's writes cannot take a TTL, or "": the store keeps keys for ever, or a crash check
// reads back every acknowledged write (a key that expired would read as lost).
std::string ttl_refused(const Job& job, const AdapterSpec& spec) {
  if (!spec.expiry) return spec.name + "'s keys do not expire (a TTL needs a store with expiry)";
  if (job.has("crash") && job.str("crash") != "none")
    return "--crash reads back every acknowledged write, and a key that expired would read as lost";
  return {};
}
}  // namespace

// --trace: the workload of a trace's replay. The trace is read through once first (streamed), so
// an empty one, a malformed line, a timestamp going backwards or a truncated zstd frame stops
// before any op; its mix is the ops of the trace the store maps (the others are left out and
// counted), no load: a read of a key the trace did not write is a miss.
std::shared_ptr<const Workload> trace_workload(const Job& job, const AdapterSpec& spec) {
  if (spec.kv_ops.empty()) throw SetupError("--trace: " + spec.name + " is not a keyed store");
  const std::string fmt = job.str("trace-format");
  const TraceFormat f = fmt.empty() ? TraceFormat::Twitter : parse_trace_format(fmt);
  TraceReader reader(job.str("trace"), fmt.empty() ? nullptr : &f, job.flag("skip-bad"));
  std::array<uint64_t, kKvOpCount> seen{};
  TraceRecord r;
  uint64_t n = 0, ttls = 0, conds = 0;
  while (reader.next(r)) {
    ++n, ++seen[static_cast<int>(kv_op_of(r.op))], ttls += r.ttl > 0;
    conds += r.op == TraceOp::Add || r.op == TraceOp::Replace;
  }
  if (n == 0) throw SetupError("--trace: " + job.str("trace") + ": an empty trace, no requests in it");
  std::string mix;
  for (KvOp k : spec.kv_ops)
    if (seen[static_cast<int>(k)]) mix += (mix.empty() ? "" : ",") + std::string(kv_op_name(k)) + ":1";
  if (mix.empty()) throw SetupError("--trace: " + spec.name + " runs none of the trace's ops");
  auto w = std::make_shared<Workload>();
  w->mix = OpMix::parse(mix, "--trace");
  w->sizes = SizeDist::parse("1-" + std::to_string(kMaxTraceValue), "--trace");
  w->load = false;
  w->trace = true;
  w->trace_conds = spec.conditional_writes;
  if (ttls) {
    const std::string why = ttl_refused(job, spec);
    w->trace_ttls = why.empty();
    if (!why.empty()) w->note = "the trace's TTLs not applied: " + why;
  }
  if (conds && !spec.conditional_writes)
    w->note += (w->note.empty() ? "" : "; ") + std::string("the trace's add and replace write as set (") + spec.name +
               " has no conditional write)";
  return w;
}

namespace {
// --hot-shift's period in ns: 10ms to 24h.
int64_t hot_shift_ns(const std::string& v) {
  double s = -1;
  try {
    s = parse_duration(v, "hot-shift");
  } catch (const SetupError&) {}
  if (!(s >= 0.01 && s <= 86400))
    throw SetupError("--hot-shift: expected a time from 10ms to 24h (10s, 500ms), got '" + printable(v) + "'");
  return static_cast<int64_t>(std::llround(s * 1e9));
}
}  // namespace

namespace {

// A published workload's settings (--workload), where the job gives none; its source.
std::string apply_published(const Job& job, WorkloadOptions& o) {
  const PublishedWorkload p = published_workload(o.workload);
  if (!job.has("mix")) o.mix = p.mix;
  if (!job.has("keys")) o.keys = p.keys;
  if (!job.has("zipf-theta") && !p.zipf_theta.empty()) o.zipf_theta = std::stod(p.zipf_theta);
  if (!job.has("value-size")) o.value_size = p.value_size;
  if (!job.has("ttl")) o.ttl = p.ttl;
  return p.source;
}

// A model of a trace's settings (--workload-model), where the job gives none; its source.
// `ttl_measured`: the model's TTLs (longer ones than --ttl takes are clamped, not refused).
std::string apply_model(const Job& job, WorkloadOptions& o, std::string& ttl_measured) {
  if (!o.workload.empty()) throw SetupError("--workload-model: give --workload or --workload-model, not both");
  const TrafficModel m = load_model(o.workload_model);
  if (!job.has("mix")) o.mix = m.mix_text();
  if (!job.has("keys")) o.keys = m.alpha >= 0.01 ? "zipfian" : "uniform";
  if (!job.has("zipf-theta") && m.alpha >= 0.01) o.zipf_theta = m.alpha;
  if (!job.has("value-size") && !m.value_size.empty()) o.value_size = m.value_size;
  if (!job.has("keyspace")) o.keyspace = std::min(m.working_set, kMaxModelKeyspace);
  if (!job.has("ttl") && !m.ttl.empty()) ttl_measured = m.ttl;
  return "model " + printable(m.name) + " (" + o.workload_model + ": zipf alpha " + fmt(m.alpha, 3) + ", " +
         std::to_string(m.working_set) + " keys" +
         (m.working_set > kMaxModelKeyspace ? " capped at " + std::to_string(kMaxModelKeyspace) : "") + ")";
}

// Native ops of a keyed adapter take --value-size too: the shared grammar, or, when the adapter
// declares a range of its own, one number in it (redis: 0 to 512M).
void check_native_size(const AdapterSpec& spec, const std::string& value_size) {
  const OptionSpec* own = find_option(spec.options, "value-size");
  if (!own || own->max >= OptionSpec::kUnbounded) {
    SizeDist::parse(value_size, "--value-size");
    return;
  }
  int64_t v = -1;
  try {
    v = parse_size(value_size, "value-size");
  } catch (const SetupError&) {}
  if (v < 0 || static_cast<double>(v) < own->min || static_cast<double>(v) > own->max)
    throw SetupError("--value-size: value-size expects a whole number from " + range_text(*own) +
                     " (k, M, G suffixes allowed; a range or a size:weight list needs --mix), got '" + value_size +
                     "'");
}

// Every op of the mix is one the adapter maps; `mix_what` names where the mix came from.
void check_mapped(const OpMix& mix, const AdapterSpec& spec, const std::string& mix_what) {
  for (int i = 0; i < kKvOpCount; ++i) {
    const KvOp op = static_cast<KvOp>(i);
    if (!mix.has(op)) continue;
    bool mapped = false;
    std::string can;
    for (KvOp k : spec.kv_ops) mapped |= k == op, can += (can.empty() ? "" : ", ") + std::string(kv_op_name(k));
    if (!mapped)
      throw SetupError(mix_what + ": " + spec.name + " cannot run '" + std::string(kv_op_name(op)) + "'; it maps " +
                       can + (mix_what == "--mix" ? "" : " (give --mix to run another mix)"));
  }
}

KeyChooser key_chooser(const WorkloadOptions& o) {
  KeySpec keys;
  keys.dist = KeySpec::parse_dist(o.keys, "--keys");
  const uint64_t n = o.keyspace.value_or(100000);
  if (n < 1 || n > (uint64_t{1} << 40))
    throw SetupError("--keyspace: expected 1 to " + std::to_string(int64_t{1} << 40) + " keys, got " +
                     std::to_string(n));
  keys.keyspace = n;
  keys.theta = o.zipf_theta;
  keys.parse_hotspot(o.hotspot, "--hotspot");
  return KeyChooser(keys, o.seed);
}

}  // namespace

std::shared_ptr<const Workload> workload_of(const Job& job, const AdapterSpec& spec) {
  if (job.has("trace")) {
    if (job.has("hot-shift"))
      throw SetupError(
          "--hot-shift: a trace's replay uses the trace's own keys; give --hot-shift or --trace, not both");
    if (job.has("ttl"))
      throw SetupError("--ttl: a trace's replay uses the trace's own TTLs; give --ttl or --trace, not both");
    return trace_workload(job, spec);
  }
  if (spec.kv_ops.empty()) return nullptr;  // maps no abstract op (an option named mix is its own)
  WorkloadOptions o;
  detail::fill_options(job, workload_options(), typeid(WorkloadOptions), &o);
  std::string source, ttl_measured;
  if (!o.workload.empty()) source = apply_published(job, o);
  if (!o.workload_model.empty()) source = apply_model(job, o, ttl_measured);
  if (o.mix.empty()) {
    if (job.has("value-size")) check_native_size(spec, o.value_size);
    return nullptr;
  }
  auto w = std::make_shared<Workload>();
  // The mix's option: --mix, or the published workload's or model's whose mix it is.
  const std::string mix_what = job.has("mix")              ? "--mix"
                               : !o.workload_model.empty() ? "--workload-model " + o.workload_model
                               : !o.workload.empty()       ? "--workload " + o.workload
                                                           : "--mix";
  w->mix = OpMix::parse(o.mix, mix_what);
  check_mapped(w->mix, spec, mix_what);
  w->seed = o.seed;
  w->keys = key_chooser(o);
  w->sizes = SizeDist::parse(o.value_size, "--value-size");
  w->load = o.load.value_or(w->mix.reads());
  if (o.scan_length < 1 || o.scan_length > 100000)
    throw SetupError("--scan-length: expected 1 to 100000, got " + std::to_string(o.scan_length));
  w->scan_max = o.scan_length;
  if (!o.hot_shift.empty()) w->move_hot_keys(hot_shift_ns(o.hot_shift));
  w->source = source;
  w->ttls = ttl_measured.empty() ? parse_ttl(o.ttl) : parse_ttl(ttl_measured, true);
  if (const std::string why = ttl_refused(job, spec); w->ttls.max() > 0 && !why.empty()) {
    if (job.has("ttl")) throw SetupError("--ttl: " + why);
    w->ttls = parse_ttl("0");  // a published workload's TTL, where it cannot apply
    w->note = "its TTL not applied: " + why;
  }
  return w;
}

Verdict verify_workload(const Workload& w, uint64_t count, const std::function<bool(uint64_t, std::string&)>& get) {
  const uint64_t n = w.keys.spec().keyspace, samples = std::min<uint64_t>(n, 1000), step = n / samples;
  uint64_t bad = 0, missing = 0, first = 0;
  std::string v;
  for (uint64_t i = 0; i < samples; ++i) {
    const uint64_t k = i * step;
    if (!get(k, v)) {
      ++missing;
      continue;
    }
    if (check_value(k, v.data(), v.size()) != ValueCheck::Ok && !bad++) first = k;
  }
  std::string detail = std::to_string(count) + " records";
  bool ok = bad == 0;
  if (w.guaranteed()) {
    ok &= missing == 0 && count >= n;
    detail += ", at least " + std::to_string(n) + " expected";
  }
  detail += "; " + std::to_string(samples) + " keys read back";
  if (missing) detail += ", " + std::to_string(missing) + " missing";
  if (bad) detail += ", " + std::to_string(bad) + " holding a wrong value (key " + std::to_string(first) + ")";
  return {true, ok, detail};
}

}  // namespace mw
