// The one reader of result files: bounded (size, depth), validated field by field into the
// typed model. Whatever is wrong is one SetupError naming the file and the field.
#include "results/results.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <limits>
#include <nlohmann/json.hpp>

#include "queue/queue.h"
#include "results/decision_json.h"
#include "results/notes.h"
#include "results/writer.h"
#include "util/histogram.h"
#include "util/status.h"
#include "util/text.h"

namespace mw {

namespace {
constexpr const char* kStateNames[] = {"done", "interrupted", "setup-failed", "skipped"};

// The enum value a file names: the index of its name in the enum's table of names.
template <class E, size_t N>
std::optional<E> named(const char* const (&names)[N], std::string_view name) {
  for (size_t k = 0; k < N; ++k)
    if (name == names[k]) return static_cast<E>(k);
  return std::nullopt;
}
}  // namespace

const char* state_name(JobResult::State s) { return kStateNames[static_cast<int>(s)]; }

std::optional<JobResult::State> parse_state(std::string_view name) {
  return named<JobResult::State>(kStateNames, name);
}

namespace {
constexpr const char* kWarningKindNames[kWarningKinds] = {
    "other",     "debug-build",      "cpu-scaling",      "shared-cores",   "rank-lost",    "merge",
    "adapter",   "pipeline-ignored", "load-failed",      "warmup-failed",  "client-bound", "steal",
    "unsettled", "teardown",         "not-simultaneous", "not-the-device", "page-cache",   "over-server-limit",
    "too-short", "not-confirmed",    "behind-schedule",  "server-events"};

// Files written before warnings had kinds: each kind by the words its warning started with then.
// The one place that reads a warning's text; the rest of mwbench reads its kind.
WarningKind legacy_warning_kind(std::string_view text) {
  static const std::pair<std::string_view, WarningKind> starts[] = {
      {"server and client share", WarningKind::SharedCores},
      {"mwbench was built as", WarningKind::DebugBuild},
      {"CPU frequency scaling", WarningKind::CpuScaling},
      {"limited by the client: ", WarningKind::ClientBound},
      {"the hypervisor took ", WarningKind::Steal},
      {"teardown: ", WarningKind::Teardown},
      {"warm-up: ", WarningKind::WarmupFailed},
      {"load: ", WarningKind::LoadFailed},
      {"-P ", WarningKind::PipelineIgnored},
  };
  for (auto [start, kind] : starts)
    if (text.substr(0, start.size()) == start) return kind;
  if (text.substr(0, 5) == "rank " && text.find(" stopped answering") != std::string_view::npos)
    return WarningKind::RankLost;
  if (text.find("the run never settled") != std::string_view::npos) return WarningKind::Unsettled;
  return WarningKind::Other;
}
}  // namespace

const char* warning_kind_name(WarningKind k) { return kWarningKindNames[static_cast<int>(k)]; }

std::optional<WarningKind> parse_warning_kind(std::string_view name) {
  return named<WarningKind>(kWarningKindNames, name);
}

namespace {
constexpr const char* kNoteKindNames[kNoteKinds] = {
    "other",      "skipped", "setup-error", "interrupted", "failed",  "error-sample", "verify-failed", "capacity",
    "slo-missed", "slo-met", "side",        "workload",    "per-op",  "metrics",      "contract",      "profile",
    "stores",     "repeats", "durability",  "crash-model", "episode", "fault"};
}  // namespace

const char* note_kind_name(NoteKind k) { return kNoteKindNames[static_cast<int>(k)]; }

std::optional<NoteKind> parse_note_kind(std::string_view name) { return named<NoteKind>(kNoteKindNames, name); }

using nlohmann::json;

bool ran(const JobResult& j) { return j.state == JobResult::State::Done || j.state == JobResult::State::Interrupted; }

bool unverified(const JobResult& j) {
  bool bad = j.verify.checked && !j.verify.ok;
  for (auto& r : j.repeats) bad |= r.verify.checked && !r.verify.ok;
  return bad;
}

std::string failure_mark(const JobResult& j) {
  if (!j.failed()) return "";
  bool ops_bad = !ran(j) || j.ops_failed || j.ops_not_run;
  for (auto& k : j.repeats) ops_bad |= k.ops_failed || k.ops_not_run || !ran(k);
  return ops_bad || !unverified(j) ? "FAILED" : "unverified";
}

bool managed_server(const JobResult& j) {
  auto managed = j.server.find("managed");
  return managed != j.server.end() && managed->second == "yes";
}

double latency_at(const JobResult& j, double p) {
  return j.latency ? static_cast<double>(j.latency->percentile(p)) : 0;
}

namespace {

constexpr double kMaxFigure = 1e15;       // counts, req/s, seconds, nanoseconds, bytes
constexpr int64_t kMaxClients = 1000000;  // clients, pipeline, cores

class Reader {
 public:
  explicit Reader(const std::string& label) : label_(printable(label)) {}

  [[noreturn]] void fail(const std::string& where, const std::string& what) const {
    throw SetupError(label_ + ": " + (where.empty() ? "" : where + ": ") + what);
  }

  static std::string at(const std::string& where, const std::string& key) {
    return where.empty() ? key : where + "." + key;
  }

  const json& need(const json& o, const char* key, const std::string& where) const {
    auto it = o.find(key);
    if (it == o.end()) fail(where.empty() ? "" : where, std::string("missing \"") + key + "\"");
    return *it;
  }

  const json& object(const json& v, const std::string& where) const {
    if (!v.is_object()) fail(where, std::string("expected an object, got ") + v.type_name());
    return v;
  }
  const json& array(const json& v, const std::string& where) const {
    if (!v.is_array()) fail(where, std::string("expected an array, got ") + v.type_name());
    return v;
  }
  std::string string(const json& v, const std::string& where) const {
    if (!v.is_string()) fail(where, std::string("expected a string, got ") + v.type_name());
    return v.get<std::string>();
  }
  bool boolean(const json& v, const std::string& where) const {
    if (!v.is_boolean()) fail(where, std::string("expected true or false, got ") + v.type_name());
    return v.get<bool>();
  }
  // A whole number in [lo, hi].
  // `where` is only read on failure (buckets pass a callable that builds it then).
  template <class Where>
  int64_t whole(const json& v, const Where& where, int64_t lo, int64_t hi) const {
    auto range = [&] { return std::to_string(lo) + " to " + std::to_string(hi); };
    auto w = [&] { return std::string(where_text(where)); };
    if (v.is_number_unsigned()) {
      uint64_t u = v.get<uint64_t>();
      if (u > static_cast<uint64_t>(hi) || static_cast<int64_t>(u) < lo)
        fail(w(), std::to_string(u) + " is out of range (" + range() + ")");
      return static_cast<int64_t>(u);
    }
    if (v.is_number_integer()) {
      int64_t i = v.get<int64_t>();
      if (i < lo) fail(w(), std::to_string(i) + (i < 0 ? " is negative" : " is out of range") + " (" + range() + ")");
      if (i > hi) fail(w(), std::to_string(i) + " is out of range (" + range() + ")");
      return i;
    }
    fail(w(), std::string("expected a whole number (") + range() + "), got " +
                  (v.is_number() ? "a fraction or an overflow" : v.type_name()));
  }
  static const std::string& where_text(const std::string& w) { return w; }
  template <class F>
  static std::string where_text(const F& f) {
    return f();
  }
  template <class Where>
  uint64_t count(const json& v, const Where& where) const {
    return static_cast<uint64_t>(whole(v, where, 0, static_cast<int64_t>(kMaxFigure)));
  }
  // A non-negative finite figure up to kMaxFigure.
  double figure(const json& v, const std::string& where) const {
    if (!v.is_number()) fail(where, std::string("expected a number, got ") + v.type_name());
    double d = v.get<double>();
    if (!std::isfinite(d) || d < 0 || d > kMaxFigure) fail(where, v.dump() + " is out of range (0 to 1e15)");
    return d;
  }
  std::vector<std::string> strings(const json& v, const std::string& where) const {
    std::vector<std::string> out;
    for (size_t i = 0; i < array(v, where).size(); ++i)
      out.push_back(string(v[i], where + "[" + std::to_string(i) + "]"));
    return out;
  }
  // An object's "warnings" (texts) with their "warning_kinds" (one a warning, in order). A kind
  // this mwbench does not know (a newer one's) is read as "other"; a file without kinds gets
  // them from the warnings' words (legacy_warning_kind).
  std::vector<Warning> warnings(const json& o, const std::string& w) const {
    std::vector<Warning> out;
    if (!o.contains("warnings")) return out;
    for (std::string& text : strings(o["warnings"], at(w, "warnings")))
      out.push_back({legacy_warning_kind(text), std::move(text)});
    if (!o.contains("warning_kinds")) return out;
    const std::string kw = at(w, "warning_kinds");
    const json& kinds = array(o["warning_kinds"], kw);
    if (kinds.size() != out.size())
      fail(kw, std::to_string(kinds.size()) + " kinds for " + std::to_string(out.size()) + " warnings");
    for (size_t i = 0; i < kinds.size(); ++i)
      out[i].kind =
          parse_warning_kind(string(kinds[i], kw + "[" + std::to_string(i) + "]")).value_or(WarningKind::Other);
    return out;
  }

  // An object's "notes" (texts) with their "note_kinds" (one a note, in order); a kind this
  // mwbench does not know (a newer one's) is read as "other". nullopt: the object has no notes
  // (a file written before notes were: the caller makes them from the figures).
  std::optional<std::vector<Note>> notes(const json& o, const std::string& w) const {
    if (!o.contains("notes")) return std::nullopt;
    std::vector<Note> out;
    for (std::string& text : strings(o["notes"], at(w, "notes"))) out.push_back({NoteKind::Other, std::move(text)});
    const std::string kw = at(w, "note_kinds");
    const json& kinds = array(need(o, "note_kinds", w), kw);
    if (kinds.size() != out.size())
      fail(kw, std::to_string(kinds.size()) + " kinds for " + std::to_string(out.size()) + " notes");
    for (size_t i = 0; i < kinds.size(); ++i)
      out[i].kind = parse_note_kind(string(kinds[i], kw + "[" + std::to_string(i) + "]")).value_or(NoteKind::Other);
    return out;
  }

  // A latency summary (jobs[].latency_ns and the like), every figure checked; what rebuilds a
  // histogram of a file that predates its exact min, max and sum is kept.
  struct Summary {
    double min = 0, mean = 0, max = 0;
  };
  Summary latency(const json& v, const std::string& w) const {
    object(v, w);
    Summary l;
    l.min = figure(need(v, "min", w), at(w, "min"));
    l.mean = figure(need(v, "mean", w), at(w, "mean"));
    for (const char* k : {"p50", "p90", "p99", "p999"}) figure(need(v, k, w), at(w, k));
    l.max = figure(need(v, "max", w), at(w, "max"));
    count(need(v, "count", w), at(w, "count"));
    return l;
  }

  std::vector<std::pair<int64_t, uint64_t>> histogram(const json& v, const std::string& w) const {
    object(v, w);
    std::string bw = at(w, "buckets");
    const json& b = array(need(v, "buckets", w), bw);
    std::vector<std::pair<int64_t, uint64_t>> out;
    out.reserve(b.size());
    uint64_t total = 0;
    for (size_t i = 0; i < b.size(); ++i) {
      auto iw = [&] { return bw + "[" + std::to_string(i) + "]"; };  // built only to name a failure
      if (!b[i].is_array() || b[i].size() != 2)
        fail(iw(), "expected [value, count], got " + (b[i].is_array() ? "an array of " + std::to_string(b[i].size())
                                                                      : std::string(b[i].type_name())));
      int64_t value = whole(
          b[i][0], [&] { return iw() + "[0]"; }, 0, Histogram::kMaxValue);
      uint64_t n = count(b[i][1], [&] { return iw() + "[1]"; });
      total += n;
      if (static_cast<double>(total) > kMaxFigure) fail(bw, "counts add up to more than 1e15");
      out.emplace_back(value, n);
    }
    return out;
  }

  // Any unsigned 64-bit word (the queue's checksums of ids).
  uint64_t word(const json& v, const std::string& where) const {
    if (v.is_number_unsigned()) return v.get<uint64_t>();
    if (v.is_number_integer() && v.get<int64_t>() >= 0) return static_cast<uint64_t>(v.get<int64_t>());
    fail(where, std::string("expected a whole number of at least 0, got ") + v.type_name());
  }

  OpFigures op(const json& v, const std::string& w, const std::string& name) const {
    object(v, w);
    OpFigures o;
    o.op = name;
    o.ops_ok = count(need(v, "ops_ok", w), at(w, "ops_ok"));
    o.ops_failed = count(need(v, "ops_failed", w), at(w, "ops_failed"));
    if (v.contains("misses")) o.misses = count(v["misses"], at(w, "misses"));
    if (o.misses > o.ops_ok) fail(at(w, "misses"), "is above ops_ok (a miss is a completed op)");
    figure(need(v, "rps", w), at(w, "rps"));  // ops_ok over the job's elapsed_s
    o.latency = exact(v, "histogram", "latency_ns", w);
    if (!o.latency) o.latency = std::make_shared<Histogram>();
    return o;
  }

  // The histogram at v[hkey] rebuilt whole, with its exact min, max and sum, or those of the
  // latency summary v[skey] beside it in files that predate them; nullptr when there is none
  // (the summary alone, when there, is checked).
  std::shared_ptr<Histogram> exact(const json& v, const char* hkey, const char* skey, const std::string& w) const {
    std::optional<Summary> s;
    if (v.contains(skey)) s = latency(v[skey], at(w, skey));
    if (!v.contains(hkey)) return nullptr;
    std::string hw = at(w, hkey);
    std::vector<std::pair<int64_t, uint64_t>> buckets = histogram(v[hkey], hw);
    if (++histograms_ > kMaxResultHistograms)
      fail(hw, "more than " + std::to_string(kMaxResultHistograms) + " histograms: not a file mwbench wrote");
    const json& o = v[hkey];
    uint64_t n = 0;
    for (auto& b : buckets) n += b.second;
    bool exact = o.contains("min") && o.contains("max") && o.contains("sum");
    if (n == 0 && !exact) return std::make_shared<Histogram>();
    if (!s && !exact) fail(hw, std::string("missing \"min\", \"max\" and \"sum\" (and no ") + skey + " beside it)");
    int64_t min =
        o.contains("min") ? whole(o["min"], at(hw, "min"), 0, Histogram::kMaxValue) : static_cast<int64_t>(s->min);
    int64_t max = o.contains("max") ? whole(o["max"], at(hw, "max"), min, Histogram::kMaxValue)
                                    : std::max(min, static_cast<int64_t>(s->max));
    unsigned __int128 sum = 0;
    if (o.contains("sum")) {
      if (!o["sum"].is_number_unsigned() && !(o["sum"].is_number_integer() && o["sum"].get<int64_t>() >= 0))
        fail(at(hw, "sum"), "expected a whole number of at least 0");
      sum = o["sum"].get<uint64_t>();
    } else {
      sum = static_cast<unsigned __int128>(s->mean * static_cast<double>(n) + 0.5);
    }
    return std::make_shared<Histogram>(Histogram::restore(buckets, min, max, sum));
  }

  std::map<std::string, std::string> texts(const json& v, const std::string& w) const {
    std::map<std::string, std::string> out;
    for (auto& [k, x] : object(v, w).items()) out[k] = string(x, w + "." + printable(k));
    return out;
  }

  // [{name, value, unit, merge}], or the {name: text} of files from before metrics were typed:
  // there a whole number is a count, a number and one word a fact with its unit ("84 bytes"),
  // and anything else (a line of several figures) is dropped.
  Metrics metrics(const json& v, const std::string& w) const {
    Metrics out;
    if (v.is_object()) {
      for (auto& [k, x] : v.items()) {
        std::string text = string(x, w + "." + printable(k));
        Metric m{k, 0, "", Metric::Merge::Same};
        size_t used = 0;
        try {
          m.value = std::stod(text, &used);
        } catch (const std::exception&) {
          continue;
        }
        std::string rest = used < text.size() ? text.substr(used) : "";
        if (rest.empty() && text.find_first_not_of("0123456789") == std::string::npos)
          m.merge = Metric::Merge::Sum;
        else if (rest.size() < 2 || rest[0] != ' ' || rest.find(' ', 1) != std::string::npos)
          continue;
        else
          m.unit = rest.substr(1);
        if (std::isfinite(m.value) && m.value >= 0 && m.value <= kMaxFigure) out.push_back(std::move(m));
      }
      return out;
    }
    for (size_t i = 0; i < array(v, w).size(); ++i) {
      std::string mw = w + "[" + std::to_string(i) + "]";
      const json& o = object(v[i], mw);
      Metric m;
      m.name = string(need(o, "name", mw), at(mw, "name"));
      m.value = figure(need(o, "value", mw), at(mw, "value"));
      if (o.contains("unit")) m.unit = string(o["unit"], at(mw, "unit"));
      if (o.contains("merge") && !parse_merge(string(o["merge"], at(mw, "merge")), &m.merge))
        fail(at(mw, "merge"), "expected \"sum\" or \"same\"");
      out.push_back(std::move(m));
    }
    return out;
  }

  // A disk job's sides (jobs[].read, jobs[].write), in the file's order.
  std::vector<SideResult> sides(const json& v, const std::string& w) const {
    std::vector<SideResult> out;
    for (auto& [k, p] : object(v, w).items()) {
      std::string pw = w + "." + printable(k);
      object(p, pw);
      SideResult side;
      side.name = k;
      side.ops_ok = count(need(p, "ops_ok", pw), at(pw, "ops_ok"));
      if (p.contains("bytes")) side.bytes = count(p["bytes"], at(pw, "bytes"));
      side.latency = exact(p, "histogram", "latency_ns", pw);
      if (!side.latency) fail(pw, "missing \"histogram\"");
      out.push_back(std::move(side));
    }
    return out;
  }

  // A queue op's ledger (queue.h): its counts, checksums, backlog and produce -> consume latency.
  std::shared_ptr<const queue::Figures> queue_figures(const json& v, const std::string& w) const {
    const json& o = object(v, w);
    auto q = std::make_shared<queue::Figures>();
    for (auto [key, field] : {std::pair{"prefilled", &q->prefilled},
                              {"produced", &q->produced},
                              {"consumed", &q->consumed},
                              {"drained", &q->drained},
                              {"duplicates", &q->duplicates},
                              {"redelivered", &q->redelivered},
                              {"lost", &q->lost},
                              {"undrained", &q->undrained},
                              {"unexpected", &q->unexpected},
                              {"corrupt", &q->corrupt}})
      if (o.contains(key)) *field = count(o[key], at(w, key));
    if (o.contains("checksum_produced")) q->sum_produced = word(o["checksum_produced"], at(w, "checksum_produced"));
    if (o.contains("checksum_consumed")) q->sum_consumed = word(o["checksum_consumed"], at(w, "checksum_consumed"));
    if (o.contains("backlog")) {
      std::string bw = at(w, "backlog");
      const json& bl = array(o["backlog"], bw);
      for (size_t i = 0; i < bl.size(); ++i) {
        if (!bl[i].is_number_integer()) fail(bw + "[" + std::to_string(i) + "]", "not a whole number");
        q->backlog.push_back(bl[i].get<int64_t>());
      }
    }
    if (o.contains("message_size")) q->message_size = string(o["message_size"], at(w, "message_size"));
    q->roundtrip = exact(o, "roundtrip_histogram", "roundtrip_latency_ns", w);
    return q;
  }

  // What a job holds beyond its headline figures: counts by status, histograms of failed and
  // uncorrected ops, the per-second and per-interval series, sides, server and protocol facts.
  void details(const json& v, const std::string& w, JobResult& j) const {
    if (v.contains("source")) j.job.source = string(v["source"], at(w, "source"));
    if (v.contains("workload")) j.workload = string(v["workload"], at(w, "workload"));
    if (v.contains("server")) j.server = texts(v["server"], at(w, "server"));
    if (v.contains("metrics")) j.metrics = metrics(v["metrics"], at(w, "metrics"));
    if (v.contains("paths")) j.paths = strings(v["paths"], at(w, "paths"));
    if (v.contains("error_samples")) j.error_samples = strings(v["error_samples"], at(w, "error_samples"));
    if (v.contains("errors")) {
      std::string ew = at(w, "errors");
      for (auto& [k, n] : object(v["errors"], ew).items()) {
        int known = 0;
        for (int s = 1; s < kStatusCount; ++s)
          if (k == status_name(static_cast<Status>(s))) known = s;
        if (!known) fail(ew + "." + printable(k), "not a status mwbench counts");
        j.errors[known] = count(n, ew + "." + printable(k));
      }
    }
    if (v.contains("warmup_ops_ok")) j.warmup_ok = count(v["warmup_ops_ok"], at(w, "warmup_ops_ok"));
    if (v.contains("bytes")) j.bytes = count(v["bytes"], at(w, "bytes"));
    if (v.contains("misses")) j.misses = count(v["misses"], at(w, "misses"));
    if (v.contains("per_second")) {
      std::string sw = at(w, "per_second");
      const json& ps = array(v["per_second"], sw);
      for (size_t i = 0; i < ps.size(); ++i) j.per_second.push_back(count(ps[i], sw + "[" + std::to_string(i) + "]"));
    }
    if (v.contains("series")) series(v["series"], at(w, "series"), j);
    if (v.contains("episodes")) {
      j.episodes = episodes(v["episodes"], at(w, "episodes"));
      j.episodes_judged = true;
    }
    if (v.contains("queue")) j.queue = queue_figures(v["queue"], at(w, "queue"));
    j.latency_failed = exact(v, "histogram_failed", "latency_failed_ns", w);
    j.latency_uncorrected = exact(v, "histogram_uncorrected", "latency_uncorrected_ns", w);
    if (v.contains("sides")) j.sides = sides(v["sides"], at(w, "sides"));
  }

  // The series as written: per interval its counts, p50, p99 and max (series.h rebuilds buckets
  // that give those back).
  void series(const json& v, const std::string& w, JobResult& j) const {
    object(v, w);
    j.series_interval_s = figure(need(v, "interval_s", w), at(w, "interval_s"));
    if (j.series_interval_s > 0) j.job.interval_s = j.series_interval_s;
    std::string iw = at(w, "intervals");
    const json& ivs = array(need(v, "intervals", w), iw);
    for (size_t i = 0; i < ivs.size(); ++i) {
      std::string pw = iw + "[" + std::to_string(i) + "]";
      const json& o = object(ivs[i], pw);
      figure(need(o, "t_s", pw), at(pw, "t_s"));  // the interval's start: i * interval_s
      figure(need(o, "rps", pw), at(pw, "rps"));  // ok over its length
      uint64_t ok = count(need(o, "ok", pw), at(pw, "ok"));
      uint64_t failed = count(need(o, "failed", pw), at(pw, "failed"));
      int64_t ns[3] = {};
      const char* keys[3] = {"p50", "p99", "max"};
      for (int k = 0; k < 3; ++k)
        ns[k] = static_cast<int64_t>(std::min<double>(figure(need(o, keys[k], pw), at(pw, keys[k])),
                                                      static_cast<double>(CompactLayout::kMaxValue)));
      j.series.push_back(SeriesInterval::from_percentiles(ok, failed, ns[0], ns[1], ns[2]));
    }
    if (v.contains("events")) j.events = events(v["events"], at(w, "events"), j.series.size());
  }

  // The timeline's events: a value per interval of the series (null: not read), never more.
  std::vector<EventTrack> events(const json& v, const std::string& w, size_t intervals) const {
    std::vector<EventTrack> out;
    for (size_t i = 0; i < array(v, w).size(); ++i) {
      const std::string tw = w + "[" + std::to_string(i) + "]";
      const json& o = object(v[i], tw);
      EventTrack t;
      for (auto [key, field] : {std::pair{"origin", &t.origin},
                                {"source", &t.source},
                                {"name", &t.name},
                                {"unit", &t.unit},
                                {"what", &t.what}})
        *field = string(need(o, key, tw), at(tw, key));
      const std::string vw = at(tw, "values");
      const json& vs = array(need(o, "values", tw), vw);
      if (vs.size() > intervals)
        fail(vw, std::to_string(vs.size()) + " values for " + std::to_string(intervals) + " intervals");
      t.values.assign(intervals, std::numeric_limits<double>::quiet_NaN());
      for (size_t k = 0; k < vs.size(); ++k) {
        if (vs[k].is_null()) continue;
        const std::string kw = vw + "[" + std::to_string(k) + "]";
        if (!vs[k].is_number()) fail(kw, std::string("expected a number or null, got ") + vs[k].type_name());
        const double x = vs[k].get<double>();
        if (!std::isfinite(x) || std::abs(x) > kMaxFigure) fail(kw, vs[k].dump() + " is out of range (-1e15 to 1e15)");
        t.values[k] = x;
      }
      out.push_back(std::move(t));
    }
    return out;
  }

  // The episodes found over the series, each with its causes.
  std::vector<Episode> episodes(const json& v, const std::string& w) const {
    std::vector<Episode> out;
    for (size_t i = 0; i < array(v, w).size(); ++i) {
      const std::string ew = w + "[" + std::to_string(i) + "]";
      const json& o = object(v[i], ew);
      Episode e;
      for (auto [key, field] : {std::pair{"start_s", &e.start_s},
                                {"end_s", &e.end_s},
                                {"p99_ns", &e.p99_ns},
                                {"median_p99_ns", &e.norm_p99_ns},
                                {"rps", &e.rps},
                                {"median_rps", &e.norm_rps}})
        *field = figure(need(o, key, ew), at(ew, key));
      for (const std::string& l : strings(need(o, "left", ew), at(ew, "left"))) {
        if (l == "p99")
          e.p99 = true;
        else if (l == "throughput")
          e.throughput = true;
        else
          fail(at(ew, "left"), "'" + printable(l.substr(0, 40)) + "' is not p99 or throughput");
      }
      e.what = string(need(o, "what", ew), at(ew, "what"));
      if (o.contains("unexplained")) e.unexplained = string(o["unexplained"], at(ew, "unexplained"));
      const std::string cw = at(ew, "causes");
      const json& cs = array(need(o, "causes", ew), cw);
      for (size_t c = 0; c < cs.size(); ++c) {
        const std::string xw = cw + "[" + std::to_string(c) + "]";
        const json& x = object(cs[c], xw);
        EpisodeCause k;
        for (auto [key, field] : {std::pair{"source", &k.source}, {"event", &k.event}, {"evidence", &k.evidence}})
          *field = string(need(x, key, xw), at(xw, key));
        if (x.contains("score")) k.score = figure(x["score"], at(xw, "score"));
        e.causes.push_back(std::move(k));
      }
      out.push_back(std::move(e));
    }
    return out;
  }

  // A job's parameters into the Job they came from: the common ones into its fields, the rest
  // (the adapter's options) as the strings they were.
  void params(const json& v, const std::string& pw, Job& job) const {
    for (auto& [k, p] : object(v, pw).items()) {
      std::string kw = pw + "." + printable(k);
      if (p.is_structured()) fail(kw, std::string("expected a string, number or true/false, got ") + p.type_name());
      if (k == "clients")
        job.clients = static_cast<int>(whole(p, kw, 1, kMaxClients));
      else if (k == "pipeline")
        job.pipeline = static_cast<int>(whole(p, kw, 1, kMaxClients));
      else if (k == "threads")
        job.threads = static_cast<int>(whole(p, kw, 0, kMaxClients));
      else if (k == "n")
        job.n = count(p, kw);
      else if (k == "warmup_ops")
        job.warmup_ops = count(p, kw);
      else if (k == "duration_s")
        job.duration_s = figure(p, kw);
      else if (k == "warmup_s")
        job.warmup_s = figure(p, kw);
      else if (k == "rate")
        job.rate = figure(p, kw);
      else if (k == "timeout_s")
        job.timeout_s = figure(p, kw);
      else if (k == "poll")
        job.poll = poll(string(p, kw), kw);
      else if (k == "find_max")
        job.find_max = string(p, kw);
      else if (k == "server_events")
        job.server_events = string(p, kw) != "off";
      else
        job.opts[k] = p.is_string() ? p.get<std::string>() : p.dump();
    }
  }

  PollPolicy poll(const std::string& text, const std::string& w) const {
    try {
      return parse_poll(text);
    } catch (const SetupError&) {
      fail(w, "'" + printable(text.substr(0, 40)) + "' is not off, auto or a time from 1us to 10ms");
    }
  }

  // The job's objectives and what its figures did against them (null: the job did not run).
  SloOutcome slo(const json& v, const std::string& w) const {
    const json& o = object(v, w);
    SloOutcome s;
    s.spec = string(need(o, "spec", w), at(w, "spec"));
    const json& passed = need(o, "passed", w);
    s.checked = !passed.is_null();
    if (s.checked) s.passed = boolean(passed, at(w, "passed"));
    if (o.contains("violations")) {
      std::string vw = at(w, "violations");
      for (size_t i = 0; i < array(o["violations"], vw).size(); ++i) {
        std::string xw = vw + "[" + std::to_string(i) + "]";
        const json& x = object(o["violations"][i], xw);
        s.violations.push_back(
            {string(need(x, "metric", xw), at(xw, "metric")), string(need(x, "text", xw), at(xw, "text"))});
      }
    }
    return s;
  }

  std::vector<RankContext> ranks(const json& v, const std::string& w) const {
    std::vector<RankContext> out;
    for (size_t i = 0; i < array(v, w).size(); ++i) {
      std::string rw = w + "[" + std::to_string(i) + "]";
      const json& o = object(v[i], rw);
      RankContext k;
      k.rank = static_cast<int>(whole(need(o, "rank", rw), at(rw, "rank"), 0, kMaxClients));
      for (auto [key, field] : {std::pair{"host", &k.host},
                                {"cpu", &k.cpu},
                                {"kernel", &k.kernel},
                                {"started_at", &k.started_at},
                                {"source", &k.source}})
        *field = string(need(o, key, rw), at(rw, key));
      k.cores = static_cast<int>(whole(need(o, "cores", rw), at(rw, "cores"), 0, kMaxClients));
      k.memory_bytes = count(need(o, "memory_bytes", rw), at(rw, "memory_bytes"));
      std::string cw = at(rw, "clients");
      const json& cs = array(need(o, "clients", rw), cw);
      for (size_t c = 0; c < cs.size(); ++c)
        k.clients.push_back(whole(cs[c], cw + "[" + std::to_string(c) + "]", 0, kMaxClients));
      k.warnings = warnings(o, rw);
      out.push_back(std::move(k));
    }
    return out;
  }

  JobResult job(const json& v, const std::string& w, bool nested) const {
    object(v, w);
    JobResult j;
    j.job.name = string(need(v, "name", w), at(w, "name"));
    j.job.adapter = string(need(v, "adapter", w), at(w, "adapter"));
    j.job.op = string(need(v, "op", w), at(w, "op"));
    j.target = string(need(v, "target", w), at(w, "target"));
    const std::string state = string(need(v, "state", w), at(w, "state"));
    std::optional<JobResult::State> s = parse_state(state);
    if (!s)
      fail(at(w, "state"),
           "\"" + printable(state.substr(0, 40)) + "\" is not done, interrupted, setup-failed or skipped");
    j.state = *s;
    if (v.contains("message")) j.message = string(v["message"], at(w, "message"));
    params(need(v, "params", w), at(w, "params"), j.job);
    j.ops_ok = count(need(v, "ops_ok", w), at(w, "ops_ok"));
    j.ops_failed = count(need(v, "ops_failed", w), at(w, "ops_failed"));
    j.ops_not_run = count(need(v, "ops_not_run", w), at(w, "ops_not_run"));
    if (v.contains("ops_not_sent")) j.ops_not_sent = count(v["ops_not_sent"], at(w, "ops_not_sent"));
    j.elapsed_s = figure(need(v, "elapsed_s", w), at(w, "elapsed_s"));
    j.rps = figure(need(v, "rps", w), at(w, "rps"));
    std::optional<double> lo, hi;  // --repeat: the range, written from the repeats
    if (v.contains("rps_min")) lo = figure(v["rps_min"], at(w, "rps_min"));
    if (v.contains("rps_max")) hi = figure(v["rps_max"], at(w, "rps_max"));
    if (lo && hi && *lo > *hi) fail(at(w, "rps_min"), "is above rps_max");
    j.latency = exact(v, "histogram", "latency_ns", w);
    std::string vw = at(w, "verify");
    const json& ver = object(need(v, "verify", w), vw);
    j.verify.checked = boolean(need(ver, "checked", vw), at(vw, "checked"));
    j.verify.ok = boolean(need(ver, "ok", vw), at(vw, "ok"));
    j.verify.detail = string(need(ver, "detail", vw), at(vw, "detail"));
    j.warnings = warnings(v, w);
    if (v.contains("contract")) j.contract = contract(v["contract"], at(w, "contract"));
    if (v.contains("profile")) j.profile = profile(v["profile"], at(w, "profile"));
    if (v.contains("stores")) {  // made of the job's figures (store_guidance): checked, then made again from them
      const std::string sw = at(w, "stores");
      const json& g = object(v["stores"], sw);
      string(need(g, "figure", sw), at(sw, "figure"));
      strings(need(g, "rules", sw), at(sw, "rules"));
    }
    if (v.contains("per_op")) {
      std::string ow = at(w, "per_op");
      for (auto& [name, o] : object(v["per_op"], ow).items())
        j.per_op.push_back(op(o, ow + "." + printable(name), name));
    }
    if (v.contains("slo")) j.slo = slo(v["slo"], at(w, "slo"));
    if (!j.slo.spec.empty()) j.job.slo = j.slo.spec;
    details(v, w, j);
    if (v.contains("durability")) j.durability = durability(v["durability"], at(w, "durability"));
    if (v.contains("faults")) {
      const std::string fw = at(w, "faults");
      const json& fs = array(v["faults"], fw);
      for (size_t i = 0; i < fs.size(); ++i) j.faults.push_back(fault(fs[i], fw + "[" + std::to_string(i) + "]"));
    }
    if (v.contains("capacity"))
      j.capacity = std::make_shared<const Capacity>(capacity(v["capacity"], at(w, "capacity")));
    if (v.contains("repeats") && !nested) {  // (a repeat's own repeats are not read)
      std::string rw = at(w, "repeats");
      const json& rs = array(v["repeats"], rw);
      for (size_t i = 0; i < rs.size(); ++i) j.repeats.push_back(job(rs[i], rw + "[" + std::to_string(i) + "]", true));
    }
    // the notes as written; a file of before notes gets them from its figures, here alone (a
    // repeat's are not shown: it has none)
    if (std::optional<std::vector<Note>> n = notes(v, w))
      j.notes = std::move(*n);
    else if (!nested)
      j.notes = job_notes(j);
    // the warnings of its figures as a whole (too short, not confirmed): a file holds those that
    // apply since they were made with the run; one of before gets them from its figures, here alone
    if (!nested && std::none_of(j.warnings.begin(), j.warnings.end(), of_figures))
      for (Warning& x : figure_warnings(j)) j.warnings.push_back(std::move(x));
    return j;
  }

  // The timed phase's resources (jobs[].profile): the figures as taken, and the verdict. What
  // the file gives per op or as a share is worked out from them again when written.
  Profile profile(const json& v, const std::string& w) const {
    const json& o = object(v, w);
    Profile p;
    p.taken = true;
    p.limited_by = string(need(o, "limited_by", w), at(w, "limited_by"));
    p.evidence = string(need(o, "evidence", w), at(w, "evidence"));
    if (o.contains("suspect")) p.suspect = boolean(o["suspect"], at(w, "suspect"));
    if (o.contains("wall_s")) p.wall_s = figure(o["wall_s"], at(w, "wall_s"));
    if (o.contains("ops")) p.ops = count(o["ops"], at(w, "ops"));
    for (auto [key, field] : {std::pair{"cores", &p.cores}, {"threads", &p.threads}, {"clients", &p.clients}})
      if (o.contains(key)) *field = static_cast<int>(whole(o[key], at(w, key), 0, kMaxClients));
    if (o.contains("polled")) p.polled = boolean(o["polled"], at(w, "polled"));
    if (o.contains("steal_share"))
      p.steal_share = figure(o["steal_share"], at(w, "steal_share"));  // since steal was read
    if (o.contains("mwbench")) {
      p.self = process(o["mwbench"], at(w, "mwbench"), p);
      if (o["mwbench"].contains("cpu_wait_s"))  // since the run-queue wait was read
        p.cpu_wait_s = figure(o["mwbench"]["cpu_wait_s"], at(at(w, "mwbench"), "cpu_wait_s"));
      if (o["mwbench"].contains("runnable_thread")) {  // since the busiest thread's run-queue wait was read
        const std::string rw = at(at(w, "mwbench"), "runnable_thread");
        const json& t = object(o["mwbench"]["runnable_thread"], rw);
        p.runnable_cpu_s = figure(need(t, "cpu_s", rw), at(rw, "cpu_s"));
        p.runnable_wait_s = figure(need(t, "cpu_wait_s", rw), at(rw, "cpu_wait_s"));
      }
    }
    if (o.contains("servers")) {
      const std::string sw = at(w, "servers");
      for (size_t i = 0; i < array(o["servers"], sw).size(); ++i)
        p.servers.push_back(process(o["servers"][i], sw + "[" + std::to_string(i) + "]", p));
    }
    if (o.contains("disks")) {
      const std::string dw = at(w, "disks");
      for (size_t i = 0; i < array(o["disks"], dw).size(); ++i) {
        const std::string iw = dw + "[" + std::to_string(i) + "]";
        const json& d = object(o["disks"][i], iw);
        DiskProfile x;
        x.path = string(need(d, "path", iw), at(iw, "path"));
        x.device = string(need(d, "device", iw), at(iw, "device"));
        if (d.contains("missing")) x.missing = string(d["missing"], at(iw, "missing"));
        for (auto [key, field] : {std::pair{"reads", &x.reads},
                                  {"writes", &x.writes},
                                  {"read_bytes", &x.read_bytes},
                                  {"write_bytes", &x.write_bytes},
                                  {"flushes", &x.flushes}})
          if (d.contains(key)) *field = count(d[key], at(iw, key));
        if (d.contains("flush_ms")) x.flush_ms = figure(d["flush_ms"], at(iw, "flush_ms"));
        if (d.contains("busy_ms")) x.busy_ms = figure(d["busy_ms"], at(iw, "busy_ms"));
        p.disks.push_back(std::move(x));
      }
    }
    if (o.contains("net")) {
      const std::string nw = at(w, "net");
      const json& n = object(o["net"], nw);
      p.net_counted = boolean(need(n, "counted", nw), at(nw, "counted"));
      if (n.contains("bytes_sent")) p.bytes_sent = count(n["bytes_sent"], at(nw, "bytes_sent"));
      if (n.contains("bytes_received")) p.bytes_received = count(n["bytes_received"], at(nw, "bytes_received"));
    }
    if (o.contains("lock_waits")) {  // written since the lock-waits rule
      const std::string lw = at(w, "lock_waits");
      const json& l = object(o["lock_waits"], lw);
      p.locks_counted = boolean(need(l, "counted", lw), at(lw, "counted"));
      if (l.contains("retries")) p.lock_retries = count(l["retries"], at(lw, "retries"));
      if (l.contains("waited_s")) p.lock_wait_s = figure(l["waited_s"], at(lw, "waited_s"));
    }
    return p;
  }

  // One process of a profile (mwbench itself, or a server). The busiest thread's CPU time is
  // written since profiles were read back; before, its share of the phase alone.
  ProcessProfile process(const json& v, const std::string& w, const Profile& p) const {
    const json& o = object(v, w);
    ProcessProfile x;
    x.name = string(need(o, "name", w), at(w, "name"));
    x.how = string(need(o, "how", w), at(w, "how"));
    if (o.contains("user_s")) x.user_s = figure(o["user_s"], at(w, "user_s"));
    if (o.contains("sys_s")) x.sys_s = figure(o["sys_s"], at(w, "sys_s"));
    if (o.contains("busiest_thread_s"))
      x.busiest_thread_s = figure(o["busiest_thread_s"], at(w, "busiest_thread_s"));
    else if (o.contains("busiest_thread_share"))
      x.busiest_thread_s = figure(o["busiest_thread_share"], at(w, "busiest_thread_share")) * p.wall_s;
    for (auto [key, field] : {std::pair{"peak_rss_bytes", &x.peak_rss_bytes},
                              {"ctx_voluntary", &x.ctx_voluntary},
                              {"ctx_involuntary", &x.ctx_involuntary}})
      if (o.contains(key)) *field = count(o[key], at(w, key));
    if (o.contains("processes"))
      x.processes = static_cast<int>(whole(o["processes"], at(w, "processes"), 0, kMaxClients));
    return x;
  }

  DurabilityResult durability(const json& d, const std::string& dw) const {
    object(d, dw);
    DurabilityResult x;
    x.ran = true;
    auto n = [&](const char* k) { return count(need(d, k, dw), at(dw, k)); };
    x.ops = n("ops"), x.acked = n("acked"), x.lost = n("lost"), x.in_doubt = n("in_doubt");
    x.in_doubt_present = n("in_doubt_kept"), x.never_sent = n("never_sent"), x.corrupt = n("corrupt");
    x.recovery_s = figure(need(d, "recovery_s", dw), at(dw, "recovery_s"));
    x.crash_at = figure(need(d, "crash_at", dw), at(dw, "crash_at"));
    x.victim = string(need(d, "victim", dw), at(dw, "victim"));
    if (d.contains("setting")) x.setting = string(d["setting"], at(dw, "setting"));
    if (d.contains("crash")) x.crash = string(d["crash"], at(dw, "crash"));
    if (d.contains("model")) x.model = string(d["model"], at(dw, "model"));
    if (d.contains("unrecoverable")) x.unrecoverable = boolean(d["unrecoverable"], at(dw, "unrecoverable"));
    if (d.contains("level")) x.level = string(d["level"], at(dw, "level"));
    if (d.contains("loss_window_s")) x.loss_window_s = figure(d["loss_window_s"], at(dw, "loss_window_s"));
    x.expect = string(need(d, "expect", dw), at(dw, "expect"));
    x.note = string(need(d, "note", dw), at(dw, "note"));
    x.detail = string(need(d, "detail", dw), at(dw, "detail"));
    // Written as failed(): a failure the figures do not explain is a restart that failed.
    x.restart_failed = boolean(need(d, "failed", dw), at(dw, "failed")) && !x.failed();
    if (d.contains("checked")) x.checked = boolean(d["checked"], at(dw, "checked"));
    return x;
  }

  // --fault (jobs[].faults[i]): one fault's figures.
  FaultResult fault(const json& v, const std::string& w) const {
    const json& o = object(v, w);
    FaultResult f;
    auto str = [&](const char* k) { return string(need(o, k, w), at(w, k)); };
    auto num = [&](const char* k) { return figure(need(o, k, w), at(w, k)); };
    auto n = [&](const char* k) { return count(need(o, k, w), at(w, k)); };
    f.fault = str("fault"), f.kind = str("kind"), f.error = str("error"), f.lost_note = str("lost_note");
    f.at_s = num("at_s"), f.done_s = num("done_s");
    f.window_start_s = num("window_start_s"), f.window_end_s = num("window_end_s");
    if (f.window_end_s < f.window_start_s) fail(at(w, "window_end_s"), "before window_start_s");
    f.back = boolean(need(o, "back", w), at(w, "back"));
    f.in_doubt = n("in_doubt"), f.ops_after = n("ops_after");
    f.rate_before = num("rate_before");
    f.p99_before_ns = num("p99_before_ns"), f.p99_during_ns = num("p99_during_ns"),
    f.p99_after_ns = num("p99_after_ns");
    if (!need(o, "back_90_s", w).is_null()) f.back_90_s = num("back_90_s");
    if (!need(o, "acked_lost", w).is_null()) f.lost = static_cast<int64_t>(n("acked_lost"));
    const std::string kw = at(w, "failed");
    for (auto& [status, c] : object(need(o, "failed", w), kw).items()) {
      bool known = false;
      for (int k = 0; k < kStatusCount; ++k) known |= status == status_name(static_cast<Status>(k));
      if (!known) fail(kw, "'" + printable(status.substr(0, 40)) + "' is not a status");
      f.failed[status] = count(c, kw + "." + status);
    }
    return f;
  }

  // --find-max (jobs[].capacity): what the search found and every step.
  Capacity capacity(const json& v, const std::string& w) const {
    const json& c = object(v, w);
    Capacity x;
    auto str = [&](const json& o, const char* k, const std::string& ow) { return string(need(o, k, ow), at(ow, k)); };
    auto num = [&](const json& o, const char* k, const std::string& ow) { return figure(need(o, k, ow), at(ow, k)); };
    x.slo = str(c, "slo", w), x.verdict = str(c, "verdict", w), x.advice = str(c, "advice", w);
    x.max_rps = num(c, "max_rps", w), x.precision = num(c, "precision", w), x.step_s = num(c, "step_s", w);
    x.lag_bound_ns = num(c, "lag_bound_ns", w);
    if (c.contains("elapsed_s")) x.elapsed_s = num(c, "elapsed_s", w);  // written since the search was timed
    const std::string rw = at(w, "repeats"), fw = at(w, "first_fail");
    const json& r = object(need(c, "repeats", w), rw);
    x.repeats = static_cast<int>(count(need(r, "count", rw), at(rw, "count")));
    x.repeats_passed = static_cast<int>(count(need(r, "passed", rw), at(rw, "passed")));
    x.repeat_min = num(r, "min", rw), x.repeat_max = num(r, "max", rw);
    if (c.contains("confirmed")) {  // written since a found rate is confirmed (a step down after a missed repeat)
      x.confirmed = boolean(c["confirmed"], at(w, "confirmed"));
      x.searched_rps = num(c, "searched_rps", w);
      x.step_downs = static_cast<int>(count(need(c, "step_downs", w), at(w, "step_downs")));
    } else {  // before: the found rate, repeated; confirmed when every repeat passed
      x.confirmed = x.verdict == "found" && x.repeats > 0 && x.repeats_passed == x.repeats;
      x.searched_rps = x.max_rps;
    }
    const json& f = object(need(c, "first_fail", w), fw);
    x.first_fail = num(f, "offered", fw), x.fail_why = str(f, "why", fw);
    const std::string sw = at(w, "steps");
    const json& steps = array(need(c, "steps", w), sw);
    for (size_t i = 0; i < steps.size(); ++i) {
      const std::string iw = sw + "[" + std::to_string(i) + "]";
      const json& o = object(steps[i], iw);
      CapacityStep s;
      s.kind = str(o, "kind", iw), s.verdict = str(o, "verdict", iw), s.why = str(o, "why", iw);
      s.offered = num(o, "offered", iw), s.achieved = num(o, "achieved", iw);
      s.p50_ns = num(o, "p50", iw), s.p99_ns = num(o, "p99", iw), s.p999_ns = num(o, "p999", iw);
      s.errors = count(need(o, "errors", iw), at(iw, "errors"));
      s.lag_p99_ns = num(o, "lag_p99", iw), s.cpu = num(o, "cpu", iw);
      if (o.contains("loop_busy")) s.loop_busy = num(o, "loop_busy", iw);  // written since the busy check
      if (o.contains("stall_s")) {  // written since mwbench's own stalls are measured
        s.stall_s = num(o, "stall_s", iw), s.stall_max_s = num(o, "stall_max_s", iw);
        if (!need(o, "cpu_wait_s", iw).is_null()) s.cpu_wait_s = num(o, "cpu_wait_s", iw);  // null: unknown
      }
      if (o.contains("backlog_first")) s.backlog_first = num(o, "backlog_first", iw);  // since queues searched
      if (o.contains("backlog_last")) s.backlog_last = num(o, "backlog_last", iw);
      if (o.contains("warmup_s")) s.warmup_s = num(o, "warmup_s", iw);  // since the search was timed
      if (o.contains("setup_s")) s.setup_s = num(o, "setup_s", iw);
      x.steps.push_back(std::move(s));
    }
    return x;
  }

  // A job's durability contract: its kind in contract.h's vocabulary, the interval of a periodic one.
  Contract contract(const json& v, const std::string& w) const {
    const json& c = object(v, w);
    const std::string kind = string(need(c, "kind", w), at(w, "kind"));
    std::optional<ContractKind> k = parse_contract(kind);
    if (!k) fail(at(w, "kind"), "'" + printable(kind.substr(0, 40)) + "' is not a durability contract");
    Contract out{*k, 0, c.contains("detail") ? string(c["detail"], at(w, "detail")) : ""};
    if (*k == ContractKind::PeriodicFsync) out.interval_s = figure(need(c, "interval_s", w), at(w, "interval_s"));
    return out;
  }

  Context context(const json& v, const std::string& w) const {
    object(v, w);
    Context c;
    for (auto [key, field] : {std::pair{"host", &c.host},
                              {"cpu", &c.cpu},
                              {"kernel", &c.kernel},
                              {"os", &c.os},
                              {"virtualization", &c.virtualization},
                              {"build_type", &c.build_type}})
      *field = string(need(v, key, w), at(w, key));
    c.cores = static_cast<int>(whole(need(v, "cores", w), at(w, "cores"), 0, kMaxClients));
    c.memory_bytes = count(need(v, "memory_bytes", w), at(w, "memory_bytes"));
    if (v.contains("libraries"))
      for (auto& [k, lib] : object(v["libraries"], at(w, "libraries")).items())
        c.libraries[k] = string(lib, at(w, "libraries") + "." + printable(k));
    if (v.contains("paths"))
      for (auto& [p, fs] : object(v["paths"], at(w, "paths")).items()) {
        std::string fw = at(w, "paths") + "." + printable(p);
        object(fs, fw);
        c.paths[p] = {string(need(fs, "fs", fw), at(fw, "fs")), string(need(fs, "device", fw), at(fw, "device"))};
      }
    c.warnings = warnings(v, w);
    return c;
  }

  RunResult run(const json& doc, const std::string& label) const {
    if (!doc.is_object() || !doc.contains("schema_version") || !doc.contains("jobs") || !doc["jobs"].is_array())
      fail("", "not an mwbench result file (no schema_version and jobs)");
    const json& version = doc["schema_version"];
    if (version != 1 && version != kSchemaVersion) {  // 2 added per_op, misses, durability, series, ranks
      std::string v = version.dump();
      if (v.size() > 40) v = v.substr(0, 40) + "...";
      fail("",
           "schema_version " + printable(v) + " is not one this mwbench reads (1 or 2): written by a newer mwbench?");
    }
    RunResult r;
    r.label = valid_utf8(label);
    r.suite = string(need(doc, "suite", ""), "suite");
    r.started_at = string(need(doc, "started_at", ""), "started_at");
    r.command = string(need(doc, "command", ""), "command");
    if (doc.contains("interrupted")) r.interrupted = boolean(doc["interrupted"], "interrupted");
    if (r.interrupted && doc.contains("exit_code")) {  // 128 + the signal that stopped it
      int64_t code = whole(doc["exit_code"], std::string("exit_code"), 0, 255);
      if (code > 128) r.signal = static_cast<int>(code - 128);
    }
    r.context = context(need(doc, "context", ""), "context");
    const json& jobs = doc["jobs"];
    for (size_t i = 0; i < jobs.size(); ++i) r.jobs.push_back(job(jobs[i], "jobs[" + std::to_string(i) + "]", false));
    if (doc.contains("ranks")) r.ranks = ranks(doc["ranks"], "ranks");
    if (std::optional<std::vector<Note>> n = notes(doc, ""))
      r.notes = std::move(*n);
    else
      r.notes = run_notes(r);  // a file of before notes
    // A run with a crash job has a caveat among its notes since the durability table's notes were
    // made with the run; a file of before gets them (and each crash job's lines) here alone.
    auto crashed = [](const JobResult& j) { return j.durability.ran; };
    auto caveat = [](const Note& n) { return n.kind == NoteKind::CrashModel; };
    if (std::any_of(r.jobs.begin(), r.jobs.end(), crashed) && std::none_of(r.notes.begin(), r.notes.end(), caveat))
      make_durability_notes(r);
    if (doc.contains("gate")) {  // `run --baseline`: the gate's verdict per row
      const json& g = object(doc["gate"], "gate");
      r.gate_failed = !boolean(need(g, "passed", "gate"), "gate.passed");
      r.gate = string(need(g, "text", "gate"), "gate.text");
    }
    if (doc.contains("decide")) {  // --decide, `mwbench decide`: the rounds, and each verdict where it was written
      std::vector<const json*> decisions;
      if (doc.contains("decisions"))
        for (const json& d : array(doc["decisions"], "decisions")) decisions.push_back(&d);
      for (const json& j : jobs)
        if (j.is_object() && j.contains("decision")) decisions.push_back(&j["decision"]);
      r.decide = std::make_shared<DecideResult>(read_decide(doc["decide"], decisions, label_));
    }
    return r;
  }

 private:
  std::string label_;
  mutable size_t histograms_ = 0;  // rebuilt so far (kMaxResultHistograms)
};

// Deeper nesting than any result file has is refused before the parser builds it.
void check_depth(std::string_view t, const Reader& rd) {
  int depth = 0;
  bool in_string = false, escaped = false;
  for (char c : t) {
    if (in_string) {
      if (escaped)
        escaped = false;
      else if (c == '\\')
        escaped = true;
      else if (c == '"')
        in_string = false;
      continue;
    }
    if (c == '"')
      in_string = true;
    else if (c == '[' || c == '{') {
      if (++depth > kMaxResultDepth)
        rd.fail("", "nested deeper than " + std::to_string(kMaxResultDepth) + " levels: not an mwbench result file");
    } else if (c == ']' || c == '}') {
      --depth;
    }
  }
}

// A job's successful ops are the samples of its histogram: one rule for every reader (merge,
// compare, report, gate), the same merge applies to the sum of several files. (A job that did not
// run shows no figure; merge checks the sum of what it adds.)
void check_job_counts(const Reader& rd, const JobResult& j, const std::string& where) {
  if (j.latency && ran(j) && j.latency->count() != j.ops_ok)
    rd.fail(where, "the histogram holds " + std::to_string(j.latency->count()) + " successful ops, ops_ok says " +
                       std::to_string(j.ops_ok) + ": not a file mwbench wrote, or one changed since");
  for (size_t k = 0; k < j.repeats.size(); ++k)
    check_job_counts(rd, j.repeats[k], where + ".repeats[" + std::to_string(k) + "]");
}

json parse_text(std::string_view text, const std::string& label) {
  Reader rd(label);
  if (text.size() > kMaxResultBytes) rd.fail("", "larger than 256 MiB: not a result file mwbench wrote");
  if (text.find_first_not_of(" \t\r\n") == std::string_view::npos) rd.fail("", "empty file, not JSON");
  check_depth(text, rd);
  json doc;
  try {
    doc = json::parse(text.begin(), text.end(), nullptr, false);
  } catch (const std::exception& e) {
    rd.fail("", std::string("not JSON: ") + e.what());
  }
  if (doc.is_discarded()) rd.fail("", "not JSON");
  return doc;
}

}  // namespace

RunResult parse_result_json(const json& doc, const std::string& label) {
  Reader rd(label);
  RunResult run;
  try {
    run = rd.run(doc, label);
  } catch (const SetupError&) {
    throw;
  } catch (const std::exception& e) {  // not expected: the model reads only what it checked
    rd.fail("", e.what());
  }
  for (size_t i = 0; i < run.jobs.size(); ++i) check_job_counts(rd, run.jobs[i], "jobs[" + std::to_string(i) + "]");
  return run;
}

RunResult parse_result(std::string_view text, const std::string& label) {
  return parse_result_json(parse_text(text, label), label);
}

RunResult load_result(const std::string& file) {
  Reader rd(file);
  struct stat st {};
  if (stat(file.c_str(), &st) != 0) rd.fail("", "cannot read the file");
  if (S_ISDIR(st.st_mode)) rd.fail("", "is a directory, not a result file");
  if (!S_ISREG(st.st_mode)) rd.fail("", "not a regular file (a FIFO, socket or device), not a result file");
  if (static_cast<uint64_t>(st.st_size) > kMaxResultBytes)
    rd.fail("", "larger than 256 MiB: not a result file mwbench wrote");
  // O_NONBLOCK: should a FIFO take the file's place meanwhile, open() does not wait for a writer.
  int fd = open(file.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) rd.fail("", "cannot read the file");
  std::string text;
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    close(fd);
    rd.fail("", "not a regular file, not a result file");
  }
  char buf[1 << 16];
  for (;;) {
    ssize_t n = read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      int e = errno;
      close(fd);
      rd.fail("", std::string("cannot read the file: ") + std::strerror(e));
    }
    if (n == 0) break;
    text.append(buf, static_cast<size_t>(n));
    if (text.size() > kMaxResultBytes) {
      close(fd);
      rd.fail("", "larger than 256 MiB: not a result file mwbench wrote");
    }
  }
  close(fd);
  RunResult run = parse_result(text, file);
  run.label = valid_utf8(std::filesystem::path(file).filename().string());
  return run;
}

}  // namespace mw
