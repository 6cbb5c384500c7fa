// The field tables of a job's parts: histograms, warnings and notes, protocol metrics, the
// resource profile, a crash's durability, a capacity search, a queue's ledger, the time series,
// the SLO and the durability contract.
#include <algorithm>
#include <cmath>
#include <limits>
#include <tuple>

#include "queue/queue.h"
#include "results/table_parts.h"
#include "results/writer.h"

namespace mw::tables {

using fields::boolean;
using fields::choice;
using fields::count;
using fields::figure;
using fields::Merging;
using fields::text;
using fields::whole;

// ---- histograms ------------------------------------------------------------------------------

json latency_json(const Histogram& h) {
  return {{"min", h.min()},          {"mean", h.mean()},           {"p50", h.percentile(50)}, {"p90", h.percentile(90)},
          {"p99", h.percentile(99)}, {"p999", h.percentile(99.9)}, {"max", h.max()},          {"count", h.count()}};
}

// Sparse buckets, and the exact min, max and sum: enough to merge histograms exactly.
json histogram_json(const Histogram& h) {
  json b = json::array();
  for (auto& [v, c] : h.buckets()) b.push_back({v, c});
  json o = {{"layout", kHistogramLayout},
            {"unit", "ns"},
            {"significant_figures", 3},
            {"buckets", b},
            {"min", h.min()},
            {"max", h.max()}};
  if (h.sum() <= UINT64_MAX) o["sum"] = static_cast<uint64_t>(h.sum());
  return o;
}

void define_histograms(json& defs) {
  if (defs.contains("latency")) return;
  const json ns = {{"type", "number"}, {"minimum", 0}, {"maximum", Reader::kMaxFigure}};
  json props = json::object();
  for (const char* k : {"min", "mean", "p50", "p90", "p99", "p999", "max"}) props[k] = ns;
  props["count"] = {{"type", "integer"}, {"minimum", 0}, {"maximum", Reader::kMaxFigure}};
  defs["latency"] = {{"type", "object"},
                     {"description", "a latency's summary, in ns: min, mean, percentiles, max and how many"},
                     {"properties", props},
                     {"required", {"min", "mean", "p50", "p90", "p99", "p999", "max", "count"}},
                     {"additionalProperties", false}};
  const json value = {{"type", "integer"}, {"minimum", 0}, {"maximum", Histogram::kMaxValue}};
  const json n = {{"type", "integer"}, {"minimum", 0}, {"maximum", Reader::kMaxFigure}};
  defs["histogram"] = {
      {"type", "object"},
      {"description",
       "a log-linear histogram (HdrHistogram's layout, 3 significant figures, 1 ns to 1 h) as sparse [value, count] "
       "buckets with its exact min, max and sum: histograms of several runs add up exactly"},
      {"properties",
       {{"layout", {{"const", kHistogramLayout}}},
        {"unit", {{"const", "ns"}}},
        {"significant_figures", {{"const", 3}}},
        {"buckets",
         {{"type", "array"},
          {"items", {{"type", "array"}, {"prefixItems", {value, n}}, {"minItems", 2}, {"maxItems", 2}}}}},
        {"min", value},
        {"max", value},
        {"sum", {{"type", "integer"}, {"minimum", 0}}}}},
      {"required", {"buckets"}},
      {"additionalProperties", false}};
}

namespace {

struct Summary {
  double min = 0, mean = 0, max = 0;
};

Summary summary(const Reader& rd, const json& v, const std::string& w) {
  rd.object(v, w);
  Summary l;
  l.min = rd.figure(rd.need(v, "min", w), Reader::at(w, "min"));
  l.mean = rd.figure(rd.need(v, "mean", w), Reader::at(w, "mean"));
  for (const char* k : {"p50", "p90", "p99", "p999"}) rd.figure(rd.need(v, k, w), Reader::at(w, k));
  l.max = rd.figure(rd.need(v, "max", w), Reader::at(w, "max"));
  rd.count(rd.need(v, "count", w), Reader::at(w, "count"));
  return l;
}

std::vector<std::pair<int64_t, uint64_t>> buckets(const Reader& rd, const json& v, const std::string& w) {
  rd.object(v, w);
  const std::string bw = Reader::at(w, "buckets");
  const json& b = rd.array(rd.need(v, "buckets", w), bw);
  std::vector<std::pair<int64_t, uint64_t>> out;
  out.reserve(b.size());
  uint64_t total = 0;
  for (size_t i = 0; i < b.size(); ++i) {
    auto iw = [&] { return Reader::item(bw, i); };  // built only to name a failure
    if (!b[i].is_array() || b[i].size() != 2)
      rd.fail(iw(), "expected [value, count], got " + (b[i].is_array() ? "an array of " + std::to_string(b[i].size())
                                                                       : std::string(b[i].type_name())));
    int64_t value = rd.whole(
        b[i][0], [&] { return iw() + "[0]"; }, 0, Histogram::kMaxValue);
    uint64_t n = rd.count(b[i][1], [&] { return iw() + "[1]"; });
    total += n;
    if (static_cast<double>(total) > Reader::kMaxFigure) rd.fail(bw, "counts add up to more than 1e15");
    out.emplace_back(value, n);
  }
  return out;
}

}  // namespace

void check_summary(const Reader& rd, const json& v, const std::string& where) { summary(rd, v, where); }

std::shared_ptr<Histogram> exact(const Reader& rd, const json& v, const std::string& hkey, const std::string& skey,
                                 const std::string& w) {
  std::optional<Summary> s;
  if (v.contains(skey)) s = summary(rd, v[skey], Reader::at(w, skey));
  if (!v.contains(hkey)) return nullptr;
  const std::string hw = Reader::at(w, hkey);
  std::vector<std::pair<int64_t, uint64_t>> b = buckets(rd, v[hkey], hw);
  rd.count_histogram(hw, kMaxHistograms);
  const json& o = v[hkey];
  uint64_t n = 0;
  for (auto& x : b) n += x.second;
  const bool whole_figures = o.contains("min") && o.contains("max") && o.contains("sum");
  if (n == 0 && !whole_figures) return std::make_shared<Histogram>();
  if (!s && !whole_figures) rd.fail(hw, "missing \"min\", \"max\" and \"sum\" (and no " + skey + " beside it)");
  int64_t min = o.contains("min") ? rd.whole(o["min"], Reader::at(hw, "min"), 0, Histogram::kMaxValue)
                                  : static_cast<int64_t>(s->min);
  int64_t max = o.contains("max") ? rd.whole(o["max"], Reader::at(hw, "max"), min, Histogram::kMaxValue)
                                  : std::max(min, static_cast<int64_t>(s->max));
  unsigned __int128 sum = 0;
  if (o.contains("sum")) {
    if (!o["sum"].is_number_unsigned() && !(o["sum"].is_number_integer() && o["sum"].get<int64_t>() >= 0))
      rd.fail(Reader::at(hw, "sum"), "expected a whole number of at least 0");
    sum = o["sum"].get<uint64_t>();
  } else {
    // NOLINTNEXTLINE(bugprone-incorrect-roundings): never negative, and it may pass what llround holds
    sum = static_cast<unsigned __int128>(s->mean * static_cast<double>(n) + 0.5);
  }
  return std::make_shared<Histogram>(Histogram::restore(b, min, max, sum));
}

// ---- kinds of warnings and notes -------------------------------------------------------------

json kinds_schema(const char* what, const std::vector<const char*>& names) {
  return {{"type", "array"},
          {"items", {{"type", "string"}, {"enum", names}}},
          {"description", std::string("what each ") + what + " is about, one a " + what +
                              ", in order (a reader reads a kind it does not know as other)"}};
}

std::vector<const char*> warning_kind_list() {
  std::vector<const char*> out;
  for (int k = 0; k < kWarningKinds; ++k) out.push_back(warning_kind_name(static_cast<WarningKind>(k)));
  return out;
}

std::vector<const char*> note_kind_list() {
  std::vector<const char*> out;
  for (int k = 0; k < kNoteKinds; ++k) out.push_back(note_kind_name(static_cast<NoteKind>(k)));
  return out;
}

// ---- protocol metrics ------------------------------------------------------------------------

// [{name, value, unit, merge}], or the {name: text} of files from before metrics were typed:
// there a whole number is a count, a number and one word a fact with its unit ("84 bytes"),
// and anything else (a line of several figures) is dropped.
Metrics legacy_metrics(const Reader& rd, const json& v, const std::string& w) {
  Metrics out;
  for (auto& [k, x] : v.items()) {
    std::string t = rd.string(x, w + "." + printable(k));
    Metric m{k, 0, "", Metric::Merge::Same};
    size_t used = 0;
    try {
      m.value = std::stod(t, &used);
    } catch (const std::exception&) {
      continue;
    }
    std::string rest = used < t.size() ? t.substr(used) : "";
    if (rest.empty() && t.find_first_not_of("0123456789") == std::string::npos)
      m.merge = Metric::Merge::Sum;
    else if (rest.size() < 2 || rest[0] != ' ' || rest.find(' ', 1) != std::string::npos)
      continue;
    else
      m.unit = rest.substr(1);
    if (std::isfinite(m.value) && m.value >= 0 && m.value <= Reader::kMaxFigure) out.push_back(std::move(m));
  }
  return out;
}

Codec<Metrics> metrics_codec() {
  Codec<Metrics> c;
  c.schema = {
      {"type", {"array", "object"}},
      {"description", "the adapter's protocol figures; files written before they were typed hold {name: text} instead"},
      {"items",
       {{"type", "object"},
        {"properties",
         {{"name", {{"type", "string"}}},
          {"value", {{"type", "number"}, {"minimum", 0}, {"maximum", Reader::kMaxFigure}}},
          {"unit", {{"type", "string"}}},
          {"merge",
           {{"enum", {"sum", "same"}},
            {"description",
             "how merged runs combine it: sum (counts, rates) or same (kept when every part agrees)"}}}}},
        {"required", {"name", "value"}},
        {"additionalProperties", false}}},
      {"additionalProperties", {{"type", "string"}}}};
  c.put = [](const Metrics& ms, const Up&, size_t) {
    json out = json::array();
    for (auto& x : ms) {
      json o = {{"name", x.name}, {"value", std::isfinite(x.value) ? x.value : 0.0}, {"merge", merge_name(x.merge)}};
      if (!x.unit.empty()) o["unit"] = x.unit;
      out.push_back(std::move(o));
    }
    return out;
  };
  c.get = [](const Reader& rd, const json& v, const std::string& w, Metrics& out, const Up&, size_t) {
    if (v.is_object()) {
      out = legacy_metrics(rd, v, w);
      return;
    }
    out.clear();
    for (size_t i = 0; i < rd.array(v, w).size(); ++i) {
      const std::string mw = Reader::item(w, i);
      const json& o = rd.object(v[i], mw);
      Metric m;
      m.name = rd.string(rd.need(o, "name", mw), Reader::at(mw, "name"));
      m.value = rd.figure(rd.need(o, "value", mw), Reader::at(mw, "value"));
      if (o.contains("unit")) m.unit = rd.string(o["unit"], Reader::at(mw, "unit"));
      if (o.contains("merge") && !parse_merge(rd.string(o["merge"], Reader::at(mw, "merge")), &m.merge))
        rd.fail(Reader::at(mw, "merge"), "expected \"sum\" or \"same\"");
      out.push_back(std::move(m));
    }
  };
  c.redact = [](Metrics& ms, const fields::Redactor& r) {
    for (Metric& m : ms) r.text(m.name);
  };
  return c;
}

// ---- the resource profile --------------------------------------------------------------------

namespace {

// The figures of a process (mwbench itself, a server) over the timed phase: its own, and per op
// and as a share of the phase (worked out from the profile's ops and time). `proc(s)` is the
// process, `prof(s, self)` the profile it belongs to.
template <class S, class P, class Q>
void process_fields(std::vector<Field<S>>& f, P proc, Q prof, bool merged) {
  using F = Fields<S>;
  const auto per_op = [proc, prof](double (*fig)(const ProcessProfile&), double scale) {
    return [proc, prof, fig, scale](const S& s, const Up& self) { return prof(s, self).per_op(fig(proc(s)) * scale); };
  };
  f.push_back(F::field(
                  "name", [proc](auto& s) -> auto& { return proc(s).name; }, text())
                  .need());
  f.push_back(F::field(
                  "how", [proc](auto& s) -> auto& { return proc(s).how; }, text())
                  .need()
                  .doc("self, managed (a server mwbench started), or how it was found"));
  f.push_back(F::field(
                  "user_s", [proc](auto& s) -> auto& { return proc(s).user_s; }, figure())
                  .doc("CPU seconds"));
  f.push_back(F::field(
      "sys_s", [proc](auto& s) -> auto& { return proc(s).sys_s; }, figure()));
  f.push_back(F::template made<double>("cpu_us_per_op", per_op([](const ProcessProfile& x) { return x.cpu_s(); }, 1e6),
                                       figure()));
  f.push_back(F::template made<double>("user_us_per_op", per_op([](const ProcessProfile& x) { return x.user_s; }, 1e6),
                                       figure()));
  f.push_back(F::template made<double>("sys_us_per_op", per_op([](const ProcessProfile& x) { return x.sys_s; }, 1e6),
                                       figure()));
  f.push_back(F::template made<double>(
      "cores_used", [proc, prof](const S& s, const Up& self) { return prof(s, self).share(proc(s).cpu_s()); },
      figure()));
  // Written since profiles were read back; before, its share of the phase alone.
  Field<S> busiest = F::field(
      "busiest_thread_s", [proc](auto& s) -> auto& { return proc(s).busiest_thread_s; }, figure());
  busiest.always = true;
  busiest.read = [proc, prof](const Reader& rd, const json& o, const std::string& w, S& s, const Up& self) {
    if (o.contains("busiest_thread_s"))
      proc(s).busiest_thread_s = rd.figure(o["busiest_thread_s"], Reader::at(w, "busiest_thread_s"));
    else if (o.contains("busiest_thread_share"))
      proc(s).busiest_thread_s =
          rd.figure(o["busiest_thread_share"], Reader::at(w, "busiest_thread_share")) * prof(s, self).wall_s;
  };
  f.push_back(std::move(busiest));
  f.push_back(F::template made<double>(
      "busiest_thread_share",
      [proc, prof](const S& s, const Up& self) { return prof(s, self).share(proc(s).busiest_thread_s); }, figure()));
  f.back().read = nullptr;  // read with busiest_thread_s
  f.push_back(F::field(
      "peak_rss_bytes", [proc](auto& s) -> auto& { return proc(s).peak_rss_bytes; }, count()));
  f.push_back(F::field(
      "ctx_voluntary", [proc](auto& s) -> auto& { return proc(s).ctx_voluntary; }, count()));
  f.push_back(F::field(
      "ctx_involuntary", [proc](auto& s) -> auto& { return proc(s).ctx_involuntary; }, count()));
  f.push_back(F::field(
      "processes", [proc](auto& s) -> auto& { return proc(s).processes; }, whole<int>(0, Reader::kMaxClients)));
  if (!merged) return;
  // mwbench's own, merged: what each process counted of itself adds up; its busiest thread and
  // its peak memory are the largest of any part's.
  auto rule = [&](const char* key, auto fn) {
    for (Field<S>& x : f)
      if (x.key == key) x.merge = fn;
  };
  auto sum = [proc](double ProcessProfile::*m) {
    return [proc, m](S& into, const S& part, const fields::Merging&) { proc(into).*m += proc(part).*m; };
  };
  auto sum_n = [proc](uint64_t ProcessProfile::*m) {
    return [proc, m](S& into, const S& part, const fields::Merging&) { proc(into).*m += proc(part).*m; };
  };
  rule("name", [proc](S& into, const S& part, const fields::Merging& m) {
    if (m.part == 0) proc(into).name = proc(part).name, proc(into).how = proc(part).how;
  });
  rule("user_s", sum(&ProcessProfile::user_s));
  rule("sys_s", sum(&ProcessProfile::sys_s));
  rule("busiest_thread_s", [proc](S& into, const S& part, const fields::Merging&) {
    proc(into).busiest_thread_s = std::max(proc(into).busiest_thread_s, proc(part).busiest_thread_s);
  });
  rule("peak_rss_bytes", [proc](S& into, const S& part, const fields::Merging&) {
    proc(into).peak_rss_bytes = std::max(proc(into).peak_rss_bytes, proc(part).peak_rss_bytes);
  });
  rule("ctx_voluntary", sum_n(&ProcessProfile::ctx_voluntary));
  rule("ctx_involuntary", sum_n(&ProcessProfile::ctx_involuntary));
  rule("processes",
       [proc](S& into, const S& part, const fields::Merging&) { proc(into).processes += proc(part).processes; });
}

const Table<ProcessProfile>& process_table() {
  static const Table<ProcessProfile> table = [] {
    Table<ProcessProfile> t{.name = "process",
                            .doc = "a server's figures over the timed phase (its threads and children)"};
    process_fields<ProcessProfile>(
        t.fields, [](auto& x) -> auto& { return x; },
        [](const ProcessProfile&, const Up& self) -> const Profile& { return self.up->as<Profile>(); }, false);
    return t;
  }();
  return table;
}

// mwbench itself: a process, and its driver threads' wait for a CPU.
const Table<Profile>& self_table() {
  static const Table<Profile> table = [] {
    using F = Fields<Profile>;
    Table<Profile> t{.name = "profile_self", .doc = "mwbench's own figures over the timed phase"};
    process_fields<Profile>(
        t.fields, [](auto& p) -> auto& { return p.self; },
        [](const Profile& p, const Up&) -> const Profile& { return p; }, true);
    t.fields.push_back(F::made<double>(
        "share_of_cores",
        [](const Profile& p, const Up&) { return p.cores > 0 ? p.share(p.self.cpu_s()) / p.cores : 0; }, figure()));
    // since the run-queue wait was read
    t.fields.push_back(F::field("cpu_wait_s", &Profile::cpu_wait_s, figure())
                           .when([](const Profile& p) { return p.cpu_wait_s >= 0; })
                           .doc("the driver threads' time runnable but waiting for a CPU, summed over them"));
    t.fields.push_back(F::made<double>(
        "cpu_wait_share", [](const Profile& p, const Up&) { return p.cpu_wait_share(); }, figure()));
    t.fields.back().written = [](const Profile& p) { return p.cpu_wait_s >= 0; };
    // since the busiest thread's run-queue wait was read
    static const Table<Profile> runnable = [] {
      Table<Profile> r{"runnable_thread", "the driver thread runnable longest: its time on a CPU and waiting for one"};
      r.fields.push_back(F::field("cpu_s", &Profile::runnable_cpu_s, figure()).need());
      r.fields.push_back(F::field("cpu_wait_s", &Profile::runnable_wait_s, figure()).need());
      r.fields.push_back(F::made<double>(
          "cpu_share", [](const Profile& p, const Up&) { return p.share(p.runnable_cpu_s); }, figure()));
      r.fields.push_back(F::made<double>(
          "cpu_wait_share", [](const Profile& p, const Up&) { return p.share(p.runnable_wait_s); }, figure()));
      return r;
    }();
    t.fields.push_back(F::field(
                           "runnable_thread", [](auto& p) -> auto& { return p; }, fields::object(runnable))
                           .when([](const Profile& p) { return p.runnable_wait_s >= 0; }));
    return t;
  }();
  return table;
}

const Table<DiskProfile>& disk_table() {
  static const Table<DiskProfile> table = [] {
    using F = Fields<DiskProfile>;
    Table<DiskProfile> t{.name = "disk_profile",
                         .doc = "the block device behind a path the job used: every process's I/O on it counts"};
    auto figures = [](const DiskProfile& d) { return d.missing.empty(); };
    auto per_op = [](uint64_t (*fig)(const DiskProfile&)) {
      return [fig](const DiskProfile& d, const Up& self) {
        return self.up->as<Profile>().per_op(static_cast<double>(fig(d)));
      };
    };
    t.fields.push_back(F::field("path", &DiskProfile::path, text()).need());
    t.fields.push_back(F::field("device", &DiskProfile::device, text()).need());
    t.fields.push_back(F::field("missing", &DiskProfile::missing, text())
                           .when([](const DiskProfile& d) { return !d.missing.empty(); })
                           .doc("why there are no figures (a path on tmpfs has no block device)"));
    for (auto [key, m] : {std::pair{"reads", &DiskProfile::reads},
                          {"writes", &DiskProfile::writes},
                          {"read_bytes", &DiskProfile::read_bytes},
                          {"write_bytes", &DiskProfile::write_bytes},
                          {"flushes", &DiskProfile::flushes}})
      t.fields.push_back(F::field(key, m, count()).when(figures));
    t.fields.push_back(F::field("flush_ms", &DiskProfile::flush_ms, figure()).when(figures));
    t.fields.push_back(F::field("busy_ms", &DiskProfile::busy_ms, figure()).when(figures));
    const std::pair<const char*, uint64_t (*)(const DiskProfile&)> ops[] = {
        {"reads_per_op", [](const DiskProfile& d) { return d.reads; }},
        {"writes_per_op", [](const DiskProfile& d) { return d.writes; }},
        {"bytes_per_op", [](const DiskProfile& d) { return d.read_bytes + d.write_bytes; }},
        {"flushes_per_op", [](const DiskProfile& d) { return d.flushes; }}};
    for (auto [key, fig] : ops) {
      t.fields.push_back(F::made<double>(key, per_op(fig), figure()));
      t.fields.back().written = figures;
    }
    t.fields.push_back(F::made<double>(
        "ms_per_flush",
        [](const DiskProfile& d, const Up&) {
          const double f = static_cast<double>(d.flushes);
          return f > 0 ? d.flush_ms / f : 0;
        },
        figure()));
    t.fields.back().written = figures;
    return t;
  }();
  return table;
}

// mwbench's own sockets (TCP_INFO), or its clients' lock waits: counted or not, and the figures.
const Table<Profile>& net_table() {
  static const Table<Profile> table = [] {
    using F = Fields<Profile>;
    Table<Profile> t{.name = "net",
                     .doc = "mwbench's own TCP sockets' bytes (TCP_INFO); none counted when it used no socket"};
    auto counted = [](const Profile& p) { return p.net_counted; };
    t.fields.push_back(F::field("counted", &Profile::net_counted, boolean()).need().any());
    t.fields.push_back(F::field("bytes_sent", &Profile::bytes_sent, count()).when(counted).sum());
    t.fields.push_back(F::field("bytes_received", &Profile::bytes_received, count()).when(counted).sum());
    t.fields.push_back(F::made<double>(
        "sent_per_op", [](const Profile& p, const Up&) { return p.per_op(static_cast<double>(p.bytes_sent)); },
        figure()));
    t.fields.back().written = counted;
    t.fields.push_back(F::made<double>(
        "received_per_op", [](const Profile& p, const Up&) { return p.per_op(static_cast<double>(p.bytes_received)); },
        figure()));
    t.fields.back().written = counted;
    return t;
  }();
  return table;
}

const Table<Profile>& locks_table() {
  static const Table<Profile> table = [] {
    using F = Fields<Profile>;
    Table<Profile> t{.name = "lock_waits",
                     .doc = "the clients' waits on the store's own locks (SQLite's busy retries)"};
    auto counted = [](const Profile& p) { return p.locks_counted; };
    t.fields.push_back(F::field("counted", &Profile::locks_counted, boolean()).need().any());
    t.fields.push_back(F::field("retries", &Profile::lock_retries, count()).when(counted).sum());
    t.fields.push_back(F::field("waited_s", &Profile::lock_wait_s, figure()).when(counted).sum());
    t.fields.push_back(F::made<double>(
        "retries_per_op", [](const Profile& p, const Up&) { return p.per_op(static_cast<double>(p.lock_retries)); },
        figure()));
    t.fields.back().written = counted;
    return t;
  }();
  return table;
}

}  // namespace

// The timed phase's resources: totals, per op, and the verdict. What the file gives per op or as
// a share is worked out from them again when written. Merged runs: what each process counted of
// itself adds up, the longest phase and the worst steal stand; what is per machine (cores,
// servers, devices) and the verdict are merge.cpp's (merge_profiles).
}  // namespace mw::tables

const mw::fields::Table<mw::Profile>& mw::profile_table() {
  using namespace tables;
  static const Table<Profile> table = [] {
    using F = Fields<Profile>;
    using fields::object;
    Table<Profile> t{.name = "profile",
                     .doc = "where the job's time went: the resources of its timed phase and what limited it"};
    auto& f = t.fields;
    f.push_back(F::field("limited_by", &Profile::limited_by, text())
                    .need()
                    .doc("server CPU, client CPU, client starved, in-process CPU, machine CPU, lock waits, disk "
                         "flushes, the rate you asked for, or not determined"));
    f.push_back(F::field("evidence", &Profile::evidence, text()).need().doc("the figures that say so"));
    f.push_back(
        F::field("suspect", &Profile::suspect, boolean()).doc("the client was the limit: the figure measures mwbench"));
    f.push_back(F::field("wall_s", &Profile::wall_s, figure()).max().doc("the timed phase's length"));
    f.push_back(F::field("ops", &Profile::ops, count()).sum().doc("ops of the phase, succeeded or failed"));
    f.push_back(F::field("cores", &Profile::cores, whole<int>(0, Reader::kMaxClients))
                    .doc("the cores mwbench may run on (its affinity mask)"));
    f.push_back(F::field("threads", &Profile::threads, whole<int>(0, Reader::kMaxClients)).sum());
    f.push_back(F::field("clients", &Profile::clients, whole<int>(0, Reader::kMaxClients)).sum());
    f.push_back(F::field("polled", &Profile::polled, boolean())
                    .any()
                    .doc("its event loops polled busily (--poll): mwbench's CPU is no evidence"));
    f.push_back(F::field("steal_share", &Profile::steal_share, figure())
                    .when([](const Profile& p) { return p.steal_share >= 0; })
                    .max()
                    .doc("the share of the machine's CPU time the hypervisor gave other guests"));
    f.push_back(F::field(
                    "mwbench", [](auto& p) -> auto& { return p; }, object(self_table()))
                    .nested());
    f.push_back(F::field("servers", &Profile::servers, fields::array(object(process_table()))));
    f.push_back(F::field("disks", &Profile::disks, fields::array(object(disk_table()))));
    f.push_back(F::field(
                    "net", [](auto& p) -> auto& { return p; }, object(net_table()))
                    .nested());
    f.push_back(F::field(
                    "lock_waits", [](auto& p) -> auto& { return p; }, object(locks_table()))
                    .nested());
    return t;
  }();
  return table;
}

namespace mw::tables {

// ---- a crash's durability --------------------------------------------------------------------

const Table<DurabilityResult>& durability_table() {
  static const Table<DurabilityResult> table = [] {
    using F = Fields<DurabilityResult>;
    using D = DurabilityResult;
    Table<D> t{.name = "durability",
               .doc =
                   "a crash job (--crash): what happened to the measured phase's writes; acked + in_doubt + never_sent "
                   "= ops, lost and corrupt are among acked"};
    auto& f = t.fields;
    for (auto [key, m] : {std::pair{"ops", &D::ops},
                          {"acked", &D::acked},
                          {"lost", &D::lost},
                          {"in_doubt", &D::in_doubt},
                          {"in_doubt_kept", &D::in_doubt_present},
                          {"never_sent", &D::never_sent},
                          {"corrupt", &D::corrupt}})
      f.push_back(F::field(key, m, count()).need());
    f.push_back(F::field("recovery_s", &D::recovery_s, figure()).need().doc("from the kill to the first answer"));
    f.push_back(F::field("crash_at", &D::crash_at, figure()).need().doc("a share of -n or of --duration"));
    f.push_back(F::field("victim", &D::victim, text()).need().doc("the process killed"));
    f.push_back(F::field("setting", &D::setting, text()).doc("the job's side-by-side settings"));
    f.push_back(F::field("crash", &D::crash, choice(crash_names)).doc("kill, power or torn (kill when missing)"));
    f.push_back(F::field("model", &D::model, text())
                    .when([](const D& d) { return !d.model.empty(); })
                    .doc("a power cut's page-cache model"));
    f.push_back(F::field("unrecoverable", &D::unrecoverable, boolean())
                    .when([](const D& d) { return d.unrecoverable; })
                    .doc("--crash torn: the store did not open or answer on what survived"));
    f.push_back(F::field("level", &D::level, text())
                    .when([](const D& d) { return !d.level.empty(); })
                    .doc("its durability settings as set"));
    f.push_back(F::field("loss_window_s", &D::loss_window_s, figure())
                    .when([](const D& d) { return d.lost > 0; })
                    .doc("from the oldest lost write's acknowledgement to the crash"));
    f.push_back(F::field("expect", &D::expect, choice(expectation_names)).need());
    f.push_back(F::field("note", &D::note, text()).need().doc("where safety depends on fsync"));
    f.push_back(F::field("detail", &D::detail, text())
                    .need()
                    .free_text()
                    .doc("the first lost or corrupt write, or why the writes were not read back"));
    // Written as failed(): a failure the figures do not explain is a restart that failed.
    f.push_back(F::custom(
        "failed", {{"type", "boolean"}, {"description", "the crash check failed the job"}},
        [](const D& d, const Up&) { return json(d.failed()); },
        [](const Reader& rd, const json& o, const std::string& w, D& d, const Up&) {
          d.restart_failed = rd.boolean(o["failed"], Reader::at(w, "failed")) && !d.failed();
        }));
    f.back().required = true;
    f.push_back(F::field("checked", &D::checked, boolean())
                    .doc("false: interrupted, or the restart failed, before the writes were read back"));
    t.after = [](const Reader&, const json&, const std::string&, D& d, const Up&) { d.ran = true; };
    return t;
  }();
  return table;
}

// ---- a capacity search -----------------------------------------------------------------------

namespace {

const Table<CapacityStep>& step_table() {
  static const Table<CapacityStep> table = [] {
    using F = Fields<CapacityStep>;
    using C = CapacityStep;
    Table<C> t{.name = "capacity_step", .doc = "one measured step of the capacity search; latencies in ns, corrected"};
    auto& f = t.fields;
    f.push_back(F::field("kind", &C::kind, choice(step_kind_names)).need());
    f.push_back(F::field("verdict", &C::verdict, choice(step_verdict_names)).need().doc("\"\" for the probe"));
    f.push_back(F::field("why", &C::why, text()).need().doc("what failed or why the client was the limit"));
    f.push_back(F::field("offered", &C::offered, figure()).need().doc("ops/s asked for; 0 for the probe"));
    f.push_back(F::field("achieved", &C::achieved, figure()).need());
    f.push_back(F::field("p50", &C::p50_ns, figure()).need());
    f.push_back(F::field("p99", &C::p99_ns, figure()).need());
    f.push_back(F::field("p999", &C::p999_ns, figure()).need());
    f.push_back(F::field("errors", &C::errors, count()).need().doc("failed plus not-run ops"));
    f.push_back(F::field("lag_p99", &C::lag_p99_ns, figure()).need().doc("the generator's send lag"));
    f.push_back(F::field("cpu", &C::cpu, figure()).need().doc("mwbench's own CPU over the step, in cores"));
    f.push_back(F::field("loop_busy", &C::loop_busy, figure()));  // written since the busy check
    // written since mwbench's own stalls are measured: the three together (cpu_wait_s null: unknown)
    Field<C> stalls = F::field("stall_s", &C::stall_s, figure());
    stalls.read = [](const Reader& rd, const json& o, const std::string& w, C& s, const Up&) {
      s.stall_s = rd.figure(o["stall_s"], Reader::at(w, "stall_s"));
      s.stall_max_s = rd.figure(rd.need(o, "stall_max_s", w), Reader::at(w, "stall_max_s"));
      if (!rd.need(o, "cpu_wait_s", w).is_null())
        s.cpu_wait_s = rd.figure(o["cpu_wait_s"], Reader::at(w, "cpu_wait_s"));
    };
    f.push_back(std::move(stalls));
    f.push_back(F::field("stall_max_s", &C::stall_max_s, figure()));
    f.back().read = nullptr;
    f.push_back(F::field("cpu_wait_s", &C::cpu_wait_s, fields::figure_or_null()));
    f.back().read = nullptr;
    for (auto [key, m] : {std::pair{"backlog_first", &C::backlog_first},  // since queues were searched
                          {"backlog_last", &C::backlog_last},
                          {"warmup_s", &C::warmup_s},  // since the search was timed
                          {"setup_s", &C::setup_s}})
      f.push_back(F::field(key, m, figure()));
    return t;
  }();
  return table;
}

// What the search found beyond its rate: the repeats at it, and the lowest rate that failed.
const Table<Capacity>& repeats_table() {
  static const Table<Capacity> table = [] {
    using F = Fields<Capacity>;
    Table<Capacity> t{.name = "capacity_repeats",
                      .doc = "the repeats at max_rps: how many, how many passed, achieved min-max"};
    t.fields.push_back(F::field("count", &Capacity::repeats, whole<int>(0, INT_MAX)).need());
    t.fields.push_back(F::field("passed", &Capacity::repeats_passed, whole<int>(0, INT_MAX)).need());
    t.fields.push_back(F::field("min", &Capacity::repeat_min, figure()).need());
    t.fields.push_back(F::field("max", &Capacity::repeat_max, figure()).need());
    return t;
  }();
  return table;
}

const Table<Capacity>& first_fail_table() {
  static const Table<Capacity> table = [] {
    using F = Fields<Capacity>;
    Table<Capacity> t{.name = "capacity_first_fail",
                      .doc = "the lowest offered rate that failed (0: none did) and why"};
    t.fields.push_back(F::field("offered", &Capacity::first_fail, figure()).need());
    t.fields.push_back(F::field("why", &Capacity::fail_why, text()).need());
    return t;
  }();
  return table;
}

}  // namespace

const Table<Capacity>& capacity_table() {
  static const Table<Capacity> table = [] {
    using F = Fields<Capacity>;
    using fields::object;
    Table<Capacity> t{.name = "capacity",
                      .doc = "--find-max: the highest open-loop rate that met the SLO, and every step"};
    auto& f = t.fields;
    f.push_back(F::field("slo", &Capacity::slo, text()).need());
    f.push_back(F::field("verdict", &Capacity::verdict, choice(capacity_verdict_names)).need());
    f.push_back(F::field("advice", &Capacity::advice, text()).need().doc("client-bound: what to do"));
    f.push_back(F::field("max_rps", &Capacity::max_rps, figure()).need());
    f.push_back(F::field("precision", &Capacity::precision, figure()).need());
    f.push_back(F::field("step_s", &Capacity::step_s, figure()).need());
    f.push_back(F::field("lag_bound_ns", &Capacity::lag_bound_ns, figure()).need());
    f.push_back(F::field("elapsed_s", &Capacity::elapsed_s, figure()));  // since the search was timed
    f.push_back(F::field(
                    "repeats", [](auto& c) -> auto& { return c; }, object(repeats_table()))
                    .need());
    // written since a found rate is confirmed (a step down after a missed repeat); before, the
    // found rate, repeated, was confirmed when every repeat passed
    Field<Capacity> confirmed = F::field("confirmed", &Capacity::confirmed, fields::boolean());
    confirmed.always = true;
    confirmed.read = [](const Reader& rd, const json& o, const std::string& w, Capacity& c, const Up&) {
      if (o.contains("confirmed")) {
        c.confirmed = rd.boolean(o["confirmed"], Reader::at(w, "confirmed"));
        c.searched_rps = rd.figure(rd.need(o, "searched_rps", w), Reader::at(w, "searched_rps"));
        c.step_downs = static_cast<int>(rd.whole(rd.need(o, "step_downs", w), Reader::at(w, "step_downs"), 0, INT_MAX));
      } else {
        c.confirmed = c.verdict == CapacityVerdict::Found && c.repeats > 0 && c.repeats_passed == c.repeats;
        c.searched_rps = c.max_rps;
      }
    };
    f.push_back(std::move(confirmed));
    f.push_back(F::field("searched_rps", &Capacity::searched_rps, figure())
                    .doc("the highest rate that passed once in the search"));
    f.back().read = nullptr;
    f.push_back(F::field("step_downs", &Capacity::step_downs, whole<int>(0, INT_MAX))
                    .doc("rates whose repeat failed, before max_rps"));
    f.back().read = nullptr;
    f.push_back(F::field(
                    "first_fail", [](auto& c) -> auto& { return c; }, object(first_fail_table()))
                    .need());
    f.push_back(F::made<std::string>(
        "latency_unit", [](const Capacity&, const Up&) { return std::string("ns"); }, text()));
    f.push_back(F::field("steps", &Capacity::steps, fields::array(object(step_table()))).need());
    return t;
  }();
  return table;
}

// ---- a queue's ledger ------------------------------------------------------------------------

const Table<queue::Figures>& queue_table() {
  static const Table<queue::Figures> table = [] {
    using F = Fields<queue::Figures>;
    using Q = queue::Figures;
    Table<Q> t{.name = "queue",
               .doc = "a queue op: what the ledger found, the produce -> consume latency and the backlog"};
    auto& f = t.fields;
    for (auto [key, m] : {std::pair{"prefilled", &Q::prefilled},
                          {"produced", &Q::produced},
                          {"consumed", &Q::consumed},
                          {"drained", &Q::drained},
                          {"duplicates", &Q::duplicates},
                          {"redelivered", &Q::redelivered},
                          {"lost", &Q::lost},
                          {"undrained", &Q::undrained},
                          {"unexpected", &Q::unexpected},
                          {"corrupt", &Q::corrupt}})
      f.push_back(F::field(key, m, count()));
    f.push_back(F::field("stranded", &Q::stranded, count())
                    .doc("kept by the server after the drain, passed by its consumers: never handed out")
                    .when([](const Q& q) { return q.stranded > 0; }));
    f.push_back(
        F::field("checksum_produced", &Q::sum_produced, fields::word()).doc("of the ids: equal when exactly once"));
    f.push_back(F::field("checksum_consumed", &Q::sum_consumed, fields::word()));
    Codec<std::vector<int64_t>> backlog;
    backlog.schema = {{"type", "array"}, {"items", {{"type", "integer"}}}};
    backlog.put = [](const std::vector<int64_t>& v, const Up&, size_t) { return json(v); };
    backlog.get = [](const Reader& rd, const json& j, const std::string& w, std::vector<int64_t>& v, const Up&,
                     size_t) {
      rd.array(j, w);
      for (size_t i = 0; i < j.size(); ++i) {
        if (!j[i].is_number_integer()) rd.fail(Reader::item(w, i), "not a whole number");
        v.push_back(j[i].get<int64_t>());
      }
    };
    f.push_back(F::field("backlog", &Q::backlog, backlog).doc("per second: produced - consumed"));
    f.push_back(F::field("message_size", &Q::message_size, text())
                    .when([](const Q& q) { return !q.message_size.empty(); })
                    .doc("--message-size, as read"));
    f.push_back(F::made<bool>(
        "exactly_once", [](const Q& q, const Up&) { return q.exactly_once(); }, boolean()));
    histogram_pair<Q>(
        f, "roundtrip_latency_ns", "roundtrip_histogram", [](auto& q) -> auto& { return q.roundtrip; },
        "the produce -> consume latency");
    for (auto& x : f) x.merge = nullptr;  // a queue's figures are one run's
    return t;
  }();
  return table;
}

// ---- the time series -------------------------------------------------------------------------

namespace {

// One interval: its counts, p50, p99 and max (series.h rebuilds buckets that give those back).
const Table<SeriesInterval>& interval_table() {
  static const Table<SeriesInterval> table = [] {
    using F = Fields<SeriesInterval>;
    using I = SeriesInterval;
    Table<I> t{.name = "interval", .doc = "one interval of the series: its start, counts, req/s and latency (ns)"};
    auto& f = t.fields;
    f.push_back(F::made<double>(
        "t_s",
        [](const I&, const Up& self) {
          return static_cast<double>(self.index) * self.up->as<JobResult>().series_interval_s;
        },
        figure(), true));
    f.push_back(F::made<double>(
        "rps", [](const I&, const Up& self) { return series_rps(self.up->as<JobResult>(), self.index); }, figure(),
        true));
    f.push_back(F::field("ok", &I::ok, count()).need());
    f.push_back(F::field("failed", &I::failed, count()).need());
    Field<I> p50 = F::made<int64_t>(
        "p50", [](const I& iv, const Up&) { return iv.percentile(50); }, whole<int64_t>(0, Reader::kMaxFigure), true);
    p50.schema = {{"type", "number"}, {"minimum", 0}, {"maximum", Reader::kMaxFigure}};
    p50.read = [](const Reader& rd, const json& o, const std::string& w, I& iv, const Up&) {
      int64_t ns[3] = {};
      const char* keys[3] = {"p50", "p99", "max"};
      for (int k = 0; k < 3; ++k)
        ns[k] = static_cast<int64_t>(std::min<double>(rd.figure(rd.need(o, keys[k], w), Reader::at(w, keys[k])),
                                                      static_cast<double>(CompactLayout::kMaxValue)));
      iv = SeriesInterval::from_percentiles(iv.ok, iv.failed, ns[0], ns[1], ns[2]);
    };
    f.push_back(std::move(p50));
    Field<I> p99 = f.back();
    p99.key = "p99";
    p99.put = [](const I& iv, const Up&) { return json(iv.percentile(99)); };
    p99.read = nullptr;
    f.push_back(std::move(p99));
    Field<I> max = f.back();
    max.key = "max";
    max.put = [](const I& iv, const Up&) { return json(iv.max); };
    f.push_back(std::move(max));
    return t;
  }();
  return table;
}

}  // namespace

// --reconnect-every: the opens of new connections in the measured phase, apart from the ops.
const Table<JobResult>& connect_table() {
  static const Table<JobResult> table = [] {
    using F = Fields<JobResult>;
    using J = JobResult;
    Table<J> t{.name = "connect",
               .doc =
                   "--reconnect-every: each client's new connections of the measured phase (one before its first op, "
                   "then one every N ops), each open timed apart from the ops' latency"};
    auto& f = t.fields;
    f.push_back(F::field(
                    "every", [](auto& j) -> auto& { return j.job.reconnect_every; }, count())
                    .need()
                    .first()
                    .doc("ops per connection (--reconnect-every)"));
    f.push_back(F::field(
                    "rate", [](auto& j) -> auto& { return j.job.connect_rate; }, figure())
                    .when([](const J& j) { return j.job.connect_rate > 0; })
                    .first()
                    .doc("--connect-rate: new connections per second at most, across a process's clients"));
    f.push_back(F::made<uint64_t>(
        "count", [](const J& j, const Up&) { return j.connect ? j.connect->count() : 0; }, count()));
    histogram_pair<J>(
        f, "latency_ns", "histogram", [](auto& j) -> auto& { return j.connect; },
        "the time of each open (connect, handshake, log-in), not in any op's latency",
        [](const J& j) { return j.connect != nullptr; });
    // Over TLS: the opens whose handshake was full and those that resumed a session, apart.
    const auto tls = [](const J& j) { return j.connect_full != nullptr || j.connect_resumed != nullptr; };
    auto tls_count = [&](const char* key, std::shared_ptr<Histogram> J::*h, const char* doc) {
      Field<J> c = F::made<uint64_t>(
          key, [h](const J& j, const Up&) { return j.*h ? (j.*h)->count() : 0; }, count());
      c.written = tls;
      c.schema = fields::described(c.schema, doc);
      f.push_back(std::move(c));
    };
    tls_count("tls_full", &J::connect_full, "over TLS: the opens whose handshake was full (a new session)");
    tls_count("tls_resumed", &J::connect_resumed,
              "over TLS: the opens whose handshake resumed an earlier session (--tls-resume)");
    histogram_pair<J>(
        f, "tls_full_latency_ns", "tls_full_histogram", [](auto& j) -> auto& { return j.connect_full; },
        "the opens with a full TLS handshake");
    histogram_pair<J>(
        f, "tls_resumed_latency_ns", "tls_resumed_histogram", [](auto& j) -> auto& { return j.connect_resumed; },
        "the opens whose TLS handshake resumed a session");
    f.push_back(F::field("rate_wait_s", &J::connect_wait_s, figure())
                    .when([](const J& j) { return j.job.connect_rate > 0; })
                    .sum()
                    .doc("--connect-rate: the clients' waits for their turn before their opens, summed (s)"));
    return t;
  }();
  return table;
}

// The series as written: per interval of interval_s its counts, p50, p99 and max.
const Table<JobResult>& series_table() {
  static const Table<JobResult> table = [] {
    using F = Fields<JobResult>;
    Table<JobResult> t{.name = "series", .doc = "the measured phase per interval (--interval)"};
    t.fields.push_back(F::field("interval_s", &JobResult::series_interval_s, figure()).need());
    t.fields.push_back(F::made<std::string>(
        "latency_unit", [](const JobResult&, const Up&) { return std::string("ns"); }, text()));
    t.fields.push_back(
        F::field("intervals", &JobResult::series, fields::array(fields::object(interval_table()))).need());
    t.fields.push_back(F::field("events", &JobResult::events, events_codec())
                           .when([](const JobResult& j) { return !j.events.empty(); })
                           .doc("the timeline: the events read in each interval"));
    t.after = [](const Reader&, const json&, const std::string&, JobResult& j, const Up&) {
      if (j.series_interval_s > 0) j.job.interval_s = j.series_interval_s;
    };
    return t;
  }();
  return table;
}

// ---- the SLO and the contract ----------------------------------------------------------------

const Table<SloOutcome>& slo_table() {
  static const Table<SloOutcome> table = [] {
    using F = Fields<SloOutcome>;
    static const Table<SloViolation> violation = [] {
      Table<SloViolation> v{"slo_violation",
                            "an objective missed: the figure, and what it was against what was wanted"};
      v.fields.push_back(Fields<SloViolation>::field("metric", &SloViolation::metric, text()).need());
      v.fields.push_back(Fields<SloViolation>::field("text", &SloViolation::text, text()).need());
      return v;
    }();
    Table<SloOutcome> t{.name = "slo", .doc = "the job's objectives (--slo) against its figures"};
    t.fields.push_back(F::field("spec", &SloOutcome::spec, text()).need());
    t.fields.push_back(F::custom(
        "passed",
        {{"anyOf", {{{"type", "boolean"}}, {{"const", nullptr}}}}, {"description", "null: the job did not run"}},
        [](const SloOutcome& s, const Up&) { return s.checked ? json(s.passed) : json(nullptr); },
        [](const Reader& rd, const json& o, const std::string& w, SloOutcome& s, const Up&) {
          s.checked = !o["passed"].is_null();
          if (s.checked) s.passed = rd.boolean(o["passed"], Reader::at(w, "passed"));
        }));
    t.fields.back().required = true;
    t.fields.push_back(F::field("violations", &SloOutcome::violations, fields::array(fields::object(violation))));
    return t;
  }();
  return table;
}

// A job's durability contract: its kind in contract.h's vocabulary, the interval of a periodic one.
Codec<std::optional<Contract>> contract_codec() {
  Codec<std::optional<Contract>> c;
  json kinds = json::array();
  for (auto k : {ContractKind::Memory, ContractKind::OsBuffer, ContractKind::PeriodicFsync, ContractKind::FsyncPerAck,
                 ContractKind::Replicated})
    kinds.push_back(contract_name(k));
  c.schema = {{"type", "object"},
              {"description", "what an acknowledged write meant under the job's settings"},
              {"properties",
               {{"kind", {{"enum", kinds}}},
                {"label", {{"type", "string"}, {"description", "the kind and a periodic sync's interval"}}},
                {"detail", {{"type", "string"}, {"description", "the setting that gives it"}}},
                {"interval_s", {{"type", "number"}, {"minimum", 0}, {"maximum", Reader::kMaxFigure}}}}},
              {"required", {"kind"}},
              {"additionalProperties", false}};
  c.put = [](const std::optional<Contract>& x, const Up&, size_t) {
    json o = {{"kind", contract_name(x->kind)}, {"label", contract_label(*x)}, {"detail", x->detail}};
    if (x->kind == ContractKind::PeriodicFsync) o["interval_s"] = x->interval_s;
    return o;
  };
  c.get = [](const Reader& rd, const json& v, const std::string& w, std::optional<Contract>& out, const Up&, size_t) {
    const json& o = rd.object(v, w);
    const std::string kind = rd.string(rd.need(o, "kind", w), Reader::at(w, "kind"));
    std::optional<ContractKind> k = parse_contract(kind);
    if (!k) rd.fail(Reader::at(w, "kind"), "'" + printable(kind.substr(0, 40)) + "' is not a durability contract");
    Contract x{*k, 0, o.contains("detail") ? rd.string(o["detail"], Reader::at(w, "detail")) : ""};
    if (*k == ContractKind::PeriodicFsync)
      x.interval_s = rd.figure(rd.need(o, "interval_s", w), Reader::at(w, "interval_s"));
    out = x;
  };
  return c;
}

}  // namespace mw::tables

namespace mw::tables {

// ---- the timeline: events and episodes -------------------------------------------------------

// The timeline's events (series.events): a value per interval of the series (null: not read),
// never more values than intervals.
Codec<std::vector<EventTrack>> events_codec() {
  static const Table<EventTrack> track = [] {
    using F = Fields<EventTrack>;
    Table<EventTrack> t{.name = "event", .doc = "one event read over the intervals of the series"};
    t.fields.push_back(F::field("origin", &EventTrack::origin, text()).need().doc("machine, process, server, client"));
    t.fields.push_back(F::field("source", &EventTrack::source, text()).need().free_text());
    t.fields.push_back(F::field("name", &EventTrack::name, text()).need().free_text());
    t.fields.push_back(F::field("unit", &EventTrack::unit, text()).need());
    t.fields.push_back(F::field("what", &EventTrack::what, text()).need().free_text());
    t.fields.push_back(F::custom(
        "values",
        {{"type", "array"},
         {"items",
          {{"anyOf",
            {{{"type", "number"}, {"minimum", -Reader::kMaxFigure}, {"maximum", Reader::kMaxFigure}},
             {{"const", nullptr}}}}}},
         {"description", "a value per interval (null: not read)"}},
        [](const EventTrack& e, const Up&) {
          json values = json::array();
          for (double v : e.values) values.push_back(std::isfinite(v) ? json(v) : json(nullptr));
          return values;
        },
        [](const Reader& rd, const json& o, const std::string& w, EventTrack& e, const Up& self) {
          const size_t intervals = self.up->as<JobResult>().series.size();
          const std::string vw = Reader::at(w, "values");
          const json& vs = rd.array(o["values"], vw);
          if (vs.size() > intervals)
            rd.fail(vw, std::to_string(vs.size()) + " values for " + std::to_string(intervals) + " intervals");
          e.values.assign(intervals, std::numeric_limits<double>::quiet_NaN());
          for (size_t k = 0; k < vs.size(); ++k) {
            if (vs[k].is_null()) continue;
            const std::string kw = Reader::item(vw, k);
            if (!vs[k].is_number()) rd.fail(kw, std::string("expected a number or null, got ") + vs[k].type_name());
            const double x = vs[k].get<double>();
            if (!std::isfinite(x) || std::abs(x) > Reader::kMaxFigure)
              rd.fail(kw, vs[k].dump() + " is out of range (-1e15 to 1e15)");
            e.values[k] = x;
          }
        }));
    t.fields.back().required = true;
    return t;
  }();
  return fields::array(fields::object(track));
}

const Table<Episode>& episode_table() {
  static const Table<Episode> table = [] {
    using F = Fields<Episode>;
    static const Table<EpisodeCause> cause = [] {
      using C = Fields<EpisodeCause>;
      Table<EpisodeCause> c{"episode_cause", "an event that coincides with the episode, and why it is named"};
      c.fields.push_back(C::field("source", &EpisodeCause::source, text()).need().free_text());
      c.fields.push_back(C::field("event", &EpisodeCause::event, text()).need().free_text());
      c.fields.push_back(C::field("evidence", &EpisodeCause::evidence, text()).need().free_text());
      c.fields.push_back(C::field("score", &EpisodeCause::score, figure()).doc("the rank"));
      return c;
    }();
    Table<Episode> t{.name = "episode",
                     .doc = "a stretch of the series where p99 or throughput left the run's own norm"};
    auto& f = t.fields;
    f.push_back(F::field("start_s", &Episode::start_s, figure()).need());
    f.push_back(F::field("end_s", &Episode::end_s, figure()).need());
    f.push_back(F::custom(
        "left",
        {{"type", "array"}, {"items", {{"enum", {"p99", "throughput"}}}}, {"description", "what left the norm"}},
        [](const Episode& e, const Up&) {
          json left = json::array();
          if (e.p99) left.push_back("p99");
          if (e.throughput) left.push_back("throughput");
          return left;
        },
        [](const Reader& rd, const json& o, const std::string& w, Episode& e, const Up&) {
          for (const std::string& l : rd.strings(o["left"], Reader::at(w, "left"))) {
            if (l == "p99")
              e.p99 = true;
            else if (l == "throughput")
              e.throughput = true;
            else
              rd.fail(Reader::at(w, "left"), "'" + printable(l.substr(0, 40)) + "' is not p99 or throughput");
          }
        }));
    f.back().required = true;
    f.push_back(F::field("p99_ns", &Episode::p99_ns, figure()).need().doc("its worst interval's p99"));
    f.push_back(F::field("median_p99_ns", &Episode::norm_p99_ns, figure()).need());
    f.push_back(F::field("rps", &Episode::rps, figure()).need().doc("its lowest interval's throughput"));
    f.push_back(F::field("median_rps", &Episode::norm_rps, figure()).need());
    f.push_back(F::field("what", &Episode::what, text()).need().free_text());
    f.push_back(F::field("unexplained", &Episode::unexplained, text())
                    .when([](const Episode& e) { return !e.unexplained.empty(); })
                    .free_text()
                    .doc("no event coincides: said as such"));
    f.push_back(F::field("causes", &Episode::causes, fields::array(fields::object(cause))).need());
    return t;
  }();
  return table;
}

// ---- a fault's figures -----------------------------------------------------------------------

// NOLINTNEXTLINE(readability-function-size): a table, one entry per field
const Table<FaultResult>& fault_table() {
  static const Table<FaultResult> table = [] {
    using F = Fields<FaultResult>;
    using R = FaultResult;
    Table<R> t{.name = "fault",
               .doc = "one fault of a --fault job: what the clients saw (times in s from the measured phase's start)"};
    auto& f = t.fields;
    f.push_back(F::field("fault", &R::fault, text()).need().doc("as given: restart@40%/1s"));
    f.push_back(F::field("kind", &R::kind, text()).need());
    f.push_back(F::field("delay_s", &R::delay_s, figure())
                    .when([](const R& x) { return x.delay_s > 0; })
                    .doc("slow: the delay added to each chunk relayed, each way"));
    f.push_back(F::field("error", &R::error, text()).need().doc("the action failed: why"));
    f.push_back(
        F::field("promoted", &R::promoted, text())
            .when([](const R& x) { return !x.promoted.empty(); })
            .doc("kill-primary, switchover, kill-node: the node primary (the leader) once the clients were back"));
    f.push_back(F::field("node", &R::node, text())
                    .when([](const R& x) { return !x.node.empty(); })
                    .doc("kill-node: the node killed, and why it was chosen"));
    f.push_back(F::field("lost_note", &R::lost_note, text()).need());
    // A queue's messages across its faults, from the job's ledger; absent: not counted here.
    for (const auto& item :
         {std::tuple{"messages_lost", &R::messages_lost, "acknowledged to the producer, never consumed"},
          std::tuple{"messages_duplicated", &R::messages_duplicated, "consumed again, not marked as a redelivery"},
          std::tuple{"messages_reordered", &R::messages_reordered,
                     "consumed after a later message of the same producer"}}) {
      // Copies, not structured bindings: a lambda may not capture those before C++20 in clang 14.
      const char* key = std::get<0>(item);
      const auto member = std::get<1>(item);
      const char* what = std::get<2>(item);
      json schema = count().schema;
      schema["description"] = std::string("a queue's messages across the job's faults, from its ledger: ") + what;
      f.push_back(F::custom(
          key, schema, [member](const R& x, const Up&) { return json(x.*member); },
          [member, key](const Reader& rd, const json& o, const std::string& w, R& x, const Up&) {
            x.*member = static_cast<int64_t>(rd.count(o[key], Reader::at(w, key)));
          }));
      f.back().written = [member](const R& x) { return x.*member >= 0; };
    }
    f.push_back(F::field("queue_note", &R::queue_note, text())
                    .when([](const R& x) { return !x.queue_note.empty(); })
                    .doc("a queue's messages: why not counted on this fault, or what was not drained"));
    f.push_back(F::field("queue_contract", &R::queue_contract, text())
                    .when([](const R& x) { return !x.queue_contract.empty(); })
                    .doc("a queue: what an acknowledgement promised (a loss under replicated fails the job)"));
    f.push_back(F::field("at_s", &R::at_s, figure()).need());
    f.push_back(F::field("done_s", &R::done_s, figure()).need());
    f.push_back(F::field("window_start_s", &R::window_start_s, figure()).need());
    f.push_back(F::field("window_end_s", &R::window_end_s, figure()).need());
    f.push_back(F::made<double>(
        "window_s", [](const R& x, const Up&) { return x.window_s(); }, figure()));
    f.push_back(F::field("back", &R::back, boolean()).need().doc("a success came after the fault"));
    f.push_back(F::field("in_doubt", &R::in_doubt, count()).need());
    f.push_back(F::field("ops_after", &R::ops_after, count()).need());
    f.push_back(F::field("rate_before", &R::rate_before, figure()).need());
    f.push_back(F::field("p99_before_ns", &R::p99_before_ns, figure()).need());
    f.push_back(F::field("p99_during_ns", &R::p99_during_ns, figure()).need());
    f.push_back(F::field("p99_after_ns", &R::p99_after_ns, figure()).need());
    f.push_back(F::field("back_90_s", &R::back_90_s, fields::figure_or_null())
                    .need()
                    .doc("from the fault until throughput is back to 90%; null: never"));
    f.push_back(F::custom(
        "acked_lost",
        {{"anyOf", {count().schema, {{"const", nullptr}}}},
         {"description", "acknowledged writes lost; null: not read back (lost_note says why)"}},
        [](const R& x, const Up&) { return x.lost >= 0 ? json(x.lost) : json(nullptr); },
        [](const Reader& rd, const json& o, const std::string& w, R& x, const Up&) {
          if (!o["acked_lost"].is_null())
            x.lost = static_cast<int64_t>(rd.count(o["acked_lost"], Reader::at(w, "acked_lost")));
        }));
    f.back().required = true;
    json statuses = json::array();
    for (int k = 0; k < kStatusCount; ++k) statuses.push_back(status_name(static_cast<Status>(k)));
    f.push_back(F::custom(
        "failed",
        {{"type", "object"},
         {"propertyNames", {{"enum", statuses}}},
         {"additionalProperties", count().schema},
         {"description", "ops that failed in the window, by status"}},
        [](const R& x, const Up&) { return json(x.failed); },
        [](const Reader& rd, const json& o, const std::string& w, R& x, const Up&) {
          const std::string kw = Reader::at(w, "failed");
          for (auto& [status, c] : rd.object(o["failed"], kw).items()) {
            bool known = false;
            for (int k = 0; k < kStatusCount; ++k) known |= status == status_name(static_cast<Status>(k));
            if (!known) rd.fail(kw, "'" + printable(status.substr(0, 40)) + "' is not a status");
            x.failed[status] = rd.count(c, kw + "." + status);
          }
        }));
    f.back().required = true;
    t.after = [](const Reader& rd, const json&, const std::string& w, R& x, const Up&) {
      if (x.window_end_s < x.window_start_s) rd.fail(Reader::at(w, "window_end_s"), "before window_start_s");
    };
    return t;
  }();
  return table;
}

}  // namespace mw::tables
