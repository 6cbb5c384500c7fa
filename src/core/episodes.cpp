#include "core/episodes.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>
#include <string>

#include "util/stats.h"
#include "util/text.h"

namespace mw {

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

std::string ms(double ns) {
  const double v = ns / 1e6;
  return fmt(v, v >= 10 ? 0 : v >= 1 ? 1 : 2) + " ms";
}

std::string pct(double share) { return fmt(share * 100, share < 0.1 && share > 0 ? 1 : 0) + "%"; }

std::string secs(double s) { return fmt(s, s < 10 ? 1 : 0) + " s"; }

// A value in its unit, for the evidence.
std::string in_unit(double v, const std::string& unit) {
  if (unit == "share") return pct(v);
  if (unit == "ms") return fmt(v, v >= 10 ? 0 : 1) + " ms";
  if (unit == "bytes") return fmt(v / (1 << 20), 1) + " MiB";
  return fmt(v, v == std::floor(v) ? 0 : 2);
}

// A wait for a CPU (a thread or task runnable and not run, or a guest not run): its share of the
// interval is time every op in flight then waited.
bool waits_for_cpu(const EventTrack& t) {
  return t.name == kCpuWait || t.name == kProcessCpuWait || t.name == kPsiCpuSome || t.name == kSteal;
}

// The least rise above its norm that counts for an event: a tenth of the interval for a share,
// one for a count or a state, a millisecond, a MiB. A wait for a CPU counts from the p99 floor's
// time in the interval (when that is less than a tenth of it): a client descheduled for 3 ms
// makes the ops due then 3 ms late, and an episode is 2 ms above the norm at least.
double floor_of(const EventTrack& t, double interval_s, const EpisodeRules& r) {
  if (t.unit == "share")
    return waits_for_cpu(t) && interval_s > 0 ? std::min(0.1, r.p99_floor_ns / (interval_s * 1e9)) : 0.1;
  if (t.unit == "bytes") return 1 << 20;
  return 1;
}

double quantile(std::vector<double> v, double q) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, static_cast<size_t>(std::llround(q * static_cast<double>(v.size() - 1))))];
}

struct Stretch {
  size_t first = 0, last = 0;  // whole intervals, inclusive
};

struct Judged {
  const JobResult& j;
  const EpisodeRules& rules;
  size_t whole = 0;
  double norm_p99 = 0, norm_ok = 0;
  std::vector<bool> quiet;  // whole intervals outside every episode's window
};

bool binary(const EventTrack& t) {
  if (!t.unit.empty()) return false;
  for (double v : t.values)
    if (std::isfinite(v) && v != 0 && v != 1) return false;
  return true;
}

const EventTrack* track(const JobResult& j, const std::string& source, const char* name) {
  for (auto& t : j.events)
    if (t.source == source && t.name == name) return &t;
  return nullptr;
}

double at(const EventTrack& t, size_t k) { return k < t.values.size() ? t.values[k] : kNaN; }

// The window an episode's events are looked for in: its intervals and one on either side (an event
// read at an interval's end, a latency that outlasts its cause).
Stretch window_of(const Stretch& s, size_t whole) {
  return {s.first > 0 ? s.first - 1 : 0, std::min(whole - 1, s.last + 1)};
}

// An event that left its own norm in the window: its cause, or nothing.
std::optional<EpisodeCause> cause_of(const Judged& g, const EventTrack& t, const Stretch& w) {
  if (t.name == kProcessStopped || t.name == kProbeUnanswered) return std::nullopt;  // the stall's own words
  std::vector<double> norm;
  for (size_t k = 0; k < g.whole; ++k)
    if (g.quiet[k] && std::isfinite(at(t, k))) norm.push_back(at(t, k));
  double peak = kNaN, sum = 0;
  size_t read = 0, above = 0;
  const double floor = floor_of(t, g.j.series_interval_s, g.rules);
  const double base = norm.empty() ? 0 : median(norm), high = norm.empty() ? 0 : quantile(norm, 0.9);
  for (size_t k = w.first; k <= w.last; ++k) {
    const double v = at(t, k);
    if (!std::isfinite(v)) continue;
    ++read, sum += v;
    if (!(v <= peak)) peak = v;
    if (v - base >= floor && v > high) ++above;
  }
  if (read == 0 || !(peak - base >= floor) || !(peak > high)) return std::nullopt;
  const double rise = (peak - base) / std::max(high - base, floor);
  const double coverage = static_cast<double>(above) / static_cast<double>(w.last - w.first + 1);
  double weight = t.origin == "server" ? 1.5 : 1;
  EpisodeCause c{t.source, t.name, "", std::log2(1 + rise) * (0.5 + coverage) * weight};
  size_t quiet_above = 0;
  for (double v : norm) quiet_above += v - base >= floor;
  const std::string elsewhere =
      norm.empty() ? ""
      : quiet_above == 0
          ? " (never in the other intervals)"
          : " (in " + pct(static_cast<double>(quiet_above) / static_cast<double>(norm.size())) + " of the others)";
  const std::string what = t.what.empty() ? t.source + " " + t.name : t.what;
  if (binary(t)) {
    c.evidence = what + ": in " + std::to_string(above) + " of " + std::to_string(w.last - w.first + 1) + " intervals" +
                 elsewhere;
  } else if (t.unit == "count") {
    c.evidence = what + ": " + in_unit(sum, t.unit) + " in " +
                 secs(static_cast<double>(w.last - w.first + 1) * g.j.series_interval_s) + ", " +
                 in_unit(peak, t.unit) + " in its busiest interval (median " + in_unit(base, t.unit) +
                 " per interval otherwise)";
  } else {
    c.evidence = what + ": " + in_unit(peak, t.unit) + " at its peak (median " + in_unit(base, t.unit) + " otherwise)";
  }
  return c;
}

// A local server that answered nothing in some of the episode's intervals and used no CPU in them:
// it did not run (stopped by a signal, frozen, or never scheduled). Null when it ran or is not seen.
std::optional<EpisodeCause> did_not_run(const Judged& g, const Stretch& s, double silent_s) {
  if (silent_s <= 0) return std::nullopt;
  for (auto& t : g.j.events) {
    if (t.origin != "process" || t.name != kProcessCpu) continue;
    double cpu = 0;
    size_t silent = 0;
    for (size_t k = s.first; k <= s.last; ++k)
      if (g.j.series[k].ok == 0 && std::isfinite(at(t, k))) cpu += at(t, k), ++silent;
    if (silent == 0) continue;
    const double used_ms = cpu * g.j.series_interval_s * 1000;  // share of a core over the silent intervals
    size_t stopped = 0, read = 0;
    if (const EventTrack* st = track(g.j, t.source, kProcessStopped))
      for (size_t k = s.first; k <= s.last; ++k)
        if (std::isfinite(at(*st, k))) ++read, stopped += at(*st, k) > 0;
    if (used_ms / static_cast<double>(silent) > 0.02 * g.j.series_interval_s * 1000 && stopped == 0) continue;
    std::string ev = t.source + " stopped answering and did not run: it answered nothing for " + secs(silent_s) +
                     " and used " + fmt(used_ms, 0) + " ms of CPU in that time";
    if (stopped)
      ev += "; stopped (state T, as by SIGSTOP) at " + std::to_string(stopped) + " of " + std::to_string(read) +
            " readings";
    return EpisodeCause{t.source, stopped ? "stopped" : "did not run", ev, 100};
  }
  return std::nullopt;
}

// A source's probe that got no answer during the episode, after answering before it.
std::optional<EpisodeCause> unanswered(const EventTrack& t, const Stretch& w) {
  if (t.name != kProbeUnanswered) return std::nullopt;
  size_t none = 0, read = 0;
  for (size_t k = w.first; k <= w.last; ++k)
    if (std::isfinite(at(t, k))) ++read, none += at(t, k) > 0;
  if (none == 0) return std::nullopt;
  return EpisodeCause{t.source, "no answer",
                      t.source + "'s own events got no answer in " + std::to_string(none) + " of " +
                          std::to_string(read) + " intervals (its probe connection timed out)",
                      2 + static_cast<double>(none) / static_cast<double>(read)};
}

Episode describe(const Judged& g, const Stretch& s, const Stretch& w, bool p99, bool throughput) {
  const JobResult& j = g.j;
  Episode e;
  e.p99 = p99, e.throughput = throughput;
  e.start_s = static_cast<double>(s.first) * j.series_interval_s;
  e.end_s = std::min(static_cast<double>(s.last + 1) * j.series_interval_s, j.elapsed_s);
  e.norm_p99_ns = g.norm_p99;
  e.norm_rps = g.norm_ok / j.series_interval_s;
  double min_ok = INFINITY, silent_s = 0;
  for (size_t k = s.first; k <= s.last; ++k) {
    const SeriesInterval& iv = j.series[k];
    if (iv.ok) e.p99_ns = std::max(e.p99_ns, static_cast<double>(iv.percentile(99)));
    min_ok = std::min(min_ok, static_cast<double>(iv.ok));
    if (iv.ok == 0) silent_s += j.series_interval_s;
  }
  e.rps = min_ok / j.series_interval_s;
  if (p99) e.what = "p99 " + ms(e.p99_ns) + " (median interval " + ms(g.norm_p99) + ")";
  if (throughput)
    e.what += (e.what.empty() ? "" : ", ") +
              (min_ok == 0 ? "no op completed for " + secs(silent_s)
                           : "throughput " + fmt((min_ok / g.norm_ok - 1) * 100, 0) + "% (" + grouped(e.rps) +
                                 " req/s, median interval " + grouped(e.norm_rps) + ")");
  if (auto c = did_not_run(g, s, silent_s)) e.causes.push_back(*c);
  for (auto& t : j.events) {
    if (auto c = unanswered(t, w)) e.causes.push_back(*c);
    if (auto c = cause_of(g, t, w)) e.causes.push_back(*c);
  }
  std::stable_sort(e.causes.begin(), e.causes.end(),
                   [](const EpisodeCause& a, const EpisodeCause& b) { return a.score > b.score; });
  if (e.causes.empty()) {
    e.unexplained = j.events.empty() ? "no events were read (--server-events off)" : "no event read moved with it";
    if (silent_s > 0) e.unexplained += "; nothing was answered for " + secs(silent_s);
  }
  return e;
}

}  // namespace

void find_episodes(JobResult& j, const EpisodeRules& r) {
  j.episodes.clear();
  j.episodes_judged = false;
  if (j.series_interval_s <= 0 || j.elapsed_s <= 0) return;
  const size_t whole =
      std::min(j.series.size(), static_cast<size_t>(std::floor(j.elapsed_s / j.series_interval_s + 1e-9)));
  if (whole < r.min_intervals) return;
  std::vector<double> p99s, oks;
  for (size_t k = 0; k < whole; ++k) {
    oks.push_back(static_cast<double>(j.series[k].ok));
    if (j.series[k].ok) p99s.push_back(static_cast<double>(j.series[k].percentile(99)));
  }
  if (p99s.empty()) return;
  Judged g{j, r, whole, median(p99s), median(oks), std::vector<bool>(whole, true)};
  j.episodes_judged = true;
  const bool judge_rps = g.norm_ok >= r.min_ops;
  std::vector<bool> out_p99(whole), out_rps(whole);
  for (size_t k = 0; k < whole; ++k) {
    const SeriesInterval& iv = j.series[k];
    const double p99 = iv.ok ? static_cast<double>(iv.percentile(99)) : 0;
    out_p99[k] = iv.ok && p99 >= r.p99_factor * g.norm_p99 && p99 - g.norm_p99 >= r.p99_floor_ns;
    out_rps[k] = judge_rps && static_cast<double>(iv.ok) <= r.rps_factor * g.norm_ok;
  }
  // Stretches of intervals that left the norm, merged across a gap of one interval.
  std::vector<Stretch> found;
  for (size_t k = 0; k < whole; ++k) {
    if (!out_p99[k] && !out_rps[k]) continue;
    if (!found.empty() && k <= found.back().last + 2)
      found.back().last = k;
    else
      found.push_back({k, k});
  }
  // An episode holds min_s (one interval at least) of intervals out of the norm in a row: a blip
  // (a thread descheduled for a few ms on a busy machine) is one interval, seldom three in a row.
  const double min_len = std::max(r.min_s, j.series_interval_s) - 1e-9;
  std::erase_if(found, [&](const Stretch& s) {
    size_t run = 0, longest = 0;
    for (size_t k = s.first; k <= s.last; ++k) {
      run = out_p99[k] || out_rps[k] ? run + 1 : 0;
      longest = std::max(longest, run);
    }
    return static_cast<double>(longest) * j.series_interval_s < min_len;
  });
  for (auto& s : found) {
    const Stretch w = window_of(s, whole);
    for (size_t k = w.first; k <= w.last; ++k) g.quiet[k] = false;
  }
  for (auto& s : found) {
    bool p99 = false, throughput = false;
    for (size_t k = s.first; k <= s.last; ++k) p99 |= out_p99[k], throughput |= out_rps[k];
    j.episodes.push_back(describe(g, s, window_of(s, whole), p99, throughput));
  }
}

}  // namespace mw
