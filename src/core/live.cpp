#include "core/live.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <deque>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>

#include "core/loops.h"
#include "results/result.h"
#include "util/clock.h"
#include "util/text.h"

namespace mw::live {

namespace {

// What another rank (MPI) last said of a job: its done ops, errors and latency so far.
struct Remote {
  uint64_t done = 0;
  uint64_t errors[kStatusCount] = {};
  SeriesInterval latency;
};

struct Series {
  std::string labels;  // name="...",adapter="...",op="...",target="..."
  uint64_t done = 0;   // ops of the phases that ended (successful and failed)
  uint64_t errors[kStatusCount] = {};
  SeriesInterval latency;                           // successful ops of the intervals closed so far
  std::vector<const ClientStats*> running;          // the phase in progress, if any
  std::deque<std::pair<int64_t, uint64_t>> recent;  // (when, ops done) over the last second or so
  std::map<int, Remote> ranks;                      // under MPI, on rank 0: the other ranks' latest
  std::vector<EventValue> events;                   // the running phase's timeline, its last readings
};

std::atomic<int> on{0};  // metrics servers listening
std::mutex m;
std::vector<Series> series;
std::map<int, uint64_t> last_seq;  // the newest snapshot taken from each rank
std::atomic<uint64_t> next_seq{0};

size_t slot_of(const std::string& labels) {  // under the lock
  size_t slot = 0;
  while (slot < series.size() && series[slot].labels != labels) ++slot;
  if (slot == series.size()) {
    series.emplace_back();
    series.back().labels = labels;
  }
  return slot;
}

// A label value as the text format wants it: backslash, double quote and newline escaped.
std::string quoted(const std::string& v) {
  std::string out = "\"";
  for (char c : v) {
    if (c == '\\')
      out += "\\\\";
    else if (c == '"')
      out += "\\\"";
    else if (c == '\n')
      out += "\\n";
    else
      out += c;
  }
  return out + "\"";
}

// This process's own counts; the _all forms add the other ranks'.
uint64_t own_done(const Series& s) {
  uint64_t d = s.done;
  for (auto* c : s.running) d += c->done.load(std::memory_order_relaxed);
  return d;
}

uint64_t own_errors(const Series& s, int k) {
  uint64_t e = s.errors[k];
  for (auto* c : s.running) e += c->errors[k].load(std::memory_order_relaxed);
  return e;
}

uint64_t done_of(const Series& s) {
  uint64_t d = own_done(s);
  for (auto& [rank, r] : s.ranks) d += r.done;
  return d;
}

uint64_t errors_of(const Series& s, int k) {
  uint64_t e = own_errors(s, k);
  for (auto& [rank, r] : s.ranks) e += r.errors[k];
  return e;
}

SeriesInterval latency_of(const Series& s) {
  SeriesInterval h = s.latency;
  for (auto& [rank, r] : s.ranks) h.merge(r.latency);
  return h;
}

std::string num(double v) {
  if (std::isnan(v)) return "NaN";
  char b[64];
  std::snprintf(b, sizeof b, "%.9g", v);
  return b;
}

// The histogram's bucket bounds, in seconds: 10 us to 10 s, 1-2.5-5 per decade.
const std::vector<double>& bounds() {
  static const std::vector<double> b = [] {
    std::vector<double> v;
    for (double d = 1e-5; d < 20; d *= 10)
      for (double f : {1.0, 2.5, 5.0})
        if (d * f <= 10) v.push_back(d * f);
    return v;
  }();
  return b;
}

// The sum of the latencies, in seconds, from each bucket's midpoint: within 1% (2 significant
// figures), as the intervals keep no exact sum.
double sum_of(const SeriesInterval& h) {
  double sum = 0;
  for (auto& [index, count] : h.buckets)
    sum += static_cast<double>(count) *
           (static_cast<double>(CompactLayout::lowest_at(index) + CompactLayout::highest_at(index)) / 2e9);
  return sum;
}

void family(std::string& out, const char* name, const char* type, const char* help) {
  out += std::string("# HELP ") + name + " " + help + "\n# TYPE " + name + " " + type + "\n";
}

}  // namespace

bool enabled() { return on.load(std::memory_order_relaxed) > 0; }
void enable(bool v) { on += v ? 1 : -1; }

std::unique_ptr<Phase> begin(const Job& job, const std::string& target,
                             const std::vector<const ClientStats*>& clients) {
  if (!enabled()) return nullptr;
  // The name and target as every other output shows them (a URL's ?token=, a password= in a name).
  std::string labels = "name=" + quoted(redact_for(job, job.name)) + ",adapter=" + quoted(job.adapter) +
                       ",op=" + quoted(job.op) + ",target=" + quoted(redact_for(job, target));
  std::lock_guard lk(m);
  size_t slot = slot_of(labels);
  series[slot].running = clients;
  series[slot].recent.clear();
  return std::make_unique<Phase>(slot, clients);
}

Phase::~Phase() {
  std::lock_guard lk(m);
  Series& s = series[slot_];
  for (auto* c : clients_) {
    s.done += c->done.load(std::memory_order_relaxed);
    for (int k = 0; k < kStatusCount; ++k) s.errors[k] += c->errors[k].load(std::memory_order_relaxed);
  }
  s.running.clear();
  s.recent.clear();
  s.events.clear();
}

void Phase::add(const SeriesInterval& iv) {
  std::lock_guard lk(m);
  series[slot_].latency.merge(iv);
}

void Phase::events(const std::vector<EventValue>& v) {
  std::lock_guard lk(m);
  std::vector<EventValue>& have = series[slot_].events;
  for (auto& e : v) {
    auto it = std::find_if(have.begin(), have.end(),
                           [&](const EventValue& x) { return x.source == e.source && x.name == e.name; });
    if (it == have.end())
      have.push_back(e);
    else
      *it = e;
  }
}

void sample(int64_t now_ns) {
  std::lock_guard lk(m);
  for (auto& s : series) {
    if (s.running.empty()) continue;
    s.recent.emplace_back(now_ns, done_of(s));
    while (s.recent.size() > 1 && now_ns - s.recent.front().first > 1'000'000'000) s.recent.pop_front();
  }
}

namespace {
// Ops per second from the oldest sample of the last second to now; 0 between phases.
double rate_of(const Series& s, int64_t now_ns) {
  if (s.running.empty() || s.recent.empty() || now_ns <= s.recent.front().first) return 0;
  const uint64_t d = done_of(s), then = s.recent.front().second;
  return static_cast<double>(d - std::min(d, then)) * 1e9 / static_cast<double>(now_ns - s.recent.front().first);
}
}  // namespace

std::string render() {
  std::lock_guard lk(m);
  std::string out;
  family(out, "mwbench_ops_total", "counter", "Operations completed in measured phases, successful and failed.");
  for (auto& s : series) out += "mwbench_ops_total{" + s.labels + "} " + std::to_string(done_of(s)) + "\n";
  family(out, "mwbench_errors_total", "counter", "Failed operations in measured phases, by kind.");
  for (auto& s : series)
    for (int k = 1; k < kStatusCount; ++k)
      out += "mwbench_errors_total{" + s.labels + ",kind=" + quoted(std::string(status_name(static_cast<Status>(k)))) +
             "} " + std::to_string(errors_of(s, k)) + "\n";
  family(out, "mwbench_rate_ops_per_second", "gauge", "Operations completed over the last second (0 between phases).");
  const int64_t now = now_ns();
  for (auto& s : series) out += "mwbench_rate_ops_per_second{" + s.labels + "} " + num(rate_of(s, now)) + "\n";
  family(out, "mwbench_running", "gauge", "1 while the job's measured phase runs.");
  for (auto& s : series) out += "mwbench_running{" + s.labels + "} " + (s.running.empty() ? "0" : "1") + "\n";
  family(out, "mwbench_latency_seconds", "histogram",
         "Latency of successful operations in the intervals closed so far (--interval).");
  for (auto& s : series) {
    const SeriesInterval h = latency_of(s);
    size_t i = 0;
    uint64_t seen = 0;
    for (double le : bounds()) {
      while (i < h.buckets.size() && static_cast<double>(CompactLayout::highest_at(h.buckets[i].first)) <= le * 1e9)
        seen += h.buckets[i++].second;
      out +=
          "mwbench_latency_seconds_bucket{" + s.labels + ",le=" + quoted(num(le)) + "} " + std::to_string(seen) + "\n";
    }
    out += "mwbench_latency_seconds_bucket{" + s.labels + ",le=\"+Inf\"} " + std::to_string(h.ok) + "\n";
    out += "mwbench_latency_seconds_sum{" + s.labels + "} " + num(sum_of(h)) + "\n";
    out += "mwbench_latency_seconds_count{" + s.labels + "} " + std::to_string(h.ok) + "\n";
  }
  family(out, "mwbench_event", "gauge",
         "The running phase's timeline at its last reading (--interval, 100 ms at least): the machine's, a local "
         "server's process and the server's own events (shares of the interval 0-1, counts per interval, levels).");
  for (auto& s : series)
    for (const auto& e : s.events)
      out += "mwbench_event{" + s.labels + ",origin=" + quoted(e.origin) + ",source=" + quoted(e.source) +
             ",event=" + quoted(e.name) + ",unit=" + quoted(e.unit) + "} " + num(e.value) + "\n";
  family(out, "mwbench_latency_quantiles_seconds", "summary",
         "Latency quantiles of successful operations in the intervals closed so far.");
  for (auto& s : series) {
    const SeriesInterval h = latency_of(s);
    for (double q : {0.5, 0.9, 0.99, 0.999})
      out += "mwbench_latency_quantiles_seconds{" + s.labels + ",quantile=" + quoted(num(q)) + "} " +
             (h.ok ? num(static_cast<double>(h.percentile(q * 100)) / 1e9) : "NaN") + "\n";
    out += "mwbench_latency_quantiles_seconds_sum{" + s.labels + "} " + num(sum_of(h)) + "\n";
    out += "mwbench_latency_quantiles_seconds_count{" + s.labels + "} " + std::to_string(h.ok) + "\n";
  }
  return out;
}

// {"seq": N, "series": [[labels, done, [errors by kind], ok, failed, max, [index, count, ...]], ...]}
std::string snapshot() {
  using nlohmann::json;
  std::lock_guard lk(m);
  json doc = {{"seq", ++next_seq}, {"series", json::array()}};
  for (auto& s : series) {
    json errors = json::array(), buckets = json::array();
    for (int k = 0; k < kStatusCount; ++k) errors.push_back(own_errors(s, k));
    for (auto& [index, n] : s.latency.buckets) buckets.push_back(index), buckets.push_back(n);
    doc["series"].push_back({s.labels, own_done(s), errors, s.latency.ok, s.latency.failed, s.latency.max, buckets});
  }
  return doc.dump();
}

void remote(int rank, const std::string& text) {
  using nlohmann::json;
  json doc = json::parse(text, nullptr, false);
  if (!doc.is_object() || !doc.contains("seq") || !doc.contains("series")) return;
  try {
    std::lock_guard lk(m);
    uint64_t seq = doc["seq"].get<uint64_t>();
    if (auto it = last_seq.find(rank); it != last_seq.end() && it->second >= seq) return;  // an older one, late
    std::vector<std::pair<std::string, Remote>> got;
    for (auto& e : doc["series"]) {
      Remote r;
      r.done = e.at(1).get<uint64_t>();
      for (int k = 0; k < kStatusCount; ++k) r.errors[k] = e.at(2).at(static_cast<size_t>(k)).get<uint64_t>();
      r.latency.ok = e.at(3).get<uint64_t>(), r.latency.failed = e.at(4).get<uint64_t>();
      r.latency.max = e.at(5).get<int64_t>();
      const json& b = e.at(6);
      for (size_t i = 0; i + 1 < b.size(); i += 2) {
        const uint64_t index = b[i].get<uint64_t>();
        if (index >= static_cast<uint64_t>(CompactLayout::kLen) ||
            (!r.latency.buckets.empty() && index <= r.latency.buckets.back().first))
          return;  // not buckets this build wrote
        r.latency.buckets.emplace_back(static_cast<uint16_t>(index), b[i + 1].get<uint64_t>());
      }
      got.emplace_back(e.at(0).get<std::string>(), std::move(r));
    }
    last_seq[rank] = seq;
    for (auto& [labels, r] : got) series[slot_of(labels)].ranks[rank] = std::move(r);
  } catch (const json::exception&) {  // not a snapshot of this build: ignored, never fatal
  }
}

}  // namespace mw::live
