// A group's time series as SVG: req/s and p99 per interval (jobs[].series) over each job's own
// run, one line per job in its bar colour, so that a run that never settled (a burst-credit
// disk, a noisy neighbour, a throttled VM) shows its slope instead of hiding in one figure.
#include <algorithm>
#include <cmath>
#include <optional>

#include "report/html_model.h"
#include "results/slo.h"
#include "results/writer.h"

namespace mw::html {

namespace {

constexpr double kWidth = 680, kHeight = 190, kFont = 11;
constexpr double kLeft = 64, kRight = 12, kTop = 26, kBottom = 30;

// Ticks 0, step, 2 step, ... covering `max` with about five steps of 1, 2, 2.5 or 5 x 10^k.
std::vector<double> ticks_to(double max) {
  if (!(max > 0)) max = 1;
  double raw = max / 5, mag = std::pow(10, std::floor(std::log10(raw))), step = 10 * mag;
  for (double m : {1.0, 2.0, 2.5, 5.0})
    if (m * mag >= raw) {
      step = m * mag;
      break;
    }
  std::vector<double> out;
  for (int k = 0; k <= 1000 && (out.empty() || out.back() < max - step * 1e-9); ++k) out.push_back(k * step);
  return out;
}

std::string seconds(double s) { return fixed(s, s == std::floor(s) ? 0 : s < 1 ? 2 : 1) + " s"; }

// Where interval k of a job starts on its own clock.
double start(const JobResult& j, size_t k) { return static_cast<double>(k) * j.series_interval_s; }

// The length of interval k of a job within its measured time: the last one may be partial, or
// (ops that completed just after the job's last end) past it.
double length(const JobResult& j, size_t k) { return std::clamp(j.elapsed_s - start(j, k), 0.0, j.series_interval_s); }

// The intervals drawn: all but a last one shorter than half an interval (the few ops that
// completed just after a --duration's end, whose rate over a sliver of time means nothing).
size_t drawn_intervals(const JobResult& j) {
  size_t n = j.series.size();
  return n > 1 && length(j, n - 1) < j.series_interval_s / 2 ? n - 1 : n;
}

// A job's episodes as shaded bands in its colour (their words as the title), and a mark at the top
// for each interval in or beside one where an event named as its cause left its median.
template <class X>
std::string episode_marks(const JobResult& j, const std::string& name, const std::string& colour, const X& x,
                          double top, double height) {
  std::string s;
  std::vector<std::pair<std::string, std::string>> named;  // (source, event) of the causes
  for (const Episode& e : j.episodes) {
    std::string title = name + ": " + fixed(e.start_s, 1) + "-" + fixed(e.end_s, 1) + " s: " + e.what + ": ";
    if (e.causes.empty()) title += e.unexplained;
    for (size_t c = 0; c < e.causes.size(); ++c) {
      title += (c ? "; " : "") + e.causes[c].evidence;
      if (std::find(named.begin(), named.end(), std::pair{e.causes[c].source, e.causes[c].event}) == named.end())
        named.emplace_back(e.causes[c].source, e.causes[c].event);
    }
    s += "<rect class=\"episode\" data-job=\"" + esc(name) + "\" x=\"" + fixed(x(e.start_s), 1) + "\" y=\"" +
         fixed(top, 1) + "\" width=\"" + fixed(std::max(1.0, x(e.end_s) - x(e.start_s)), 1) + "\" height=\"" +
         fixed(height, 1) + "\" fill=\"" + colour + "\" fill-opacity=\"0.13\"><title>" + esc(title) + "</title></rect>";
  }
  for (const EventTrack& t : j.events) {
    if (std::find(named.begin(), named.end(), std::pair{t.source, t.name}) == named.end()) continue;
    std::vector<double> seen;
    for (double v : t.values)
      if (std::isfinite(v)) seen.push_back(v);
    if (seen.empty()) continue;
    std::nth_element(seen.begin(), seen.begin() + static_cast<std::ptrdiff_t>(seen.size() / 2), seen.end());
    const double median = seen[seen.size() / 2];
    for (size_t k = 0; k < t.values.size() && k < drawn_intervals(j); ++k) {
      const double v = t.values[k], mid = start(j, k) + length(j, k) / 2;
      if (!std::isfinite(v) || v <= median) continue;
      bool near = false;  // in an episode or an interval beside one
      for (const Episode& e : j.episodes)
        near |= mid >= e.start_s - j.series_interval_s && mid <= e.end_s + j.series_interval_s;
      if (!near) continue;
      s += "<path class=\"event\" data-job=\"" + esc(name) + "\" d=\"M" + fixed(x(mid), 1) + " " + fixed(top, 1) +
           "v7\" stroke=\"" + colour + "\" stroke-width=\"2\"><title>" +
           esc(t.source + " " + t.name + ": " + fixed(v, v == std::floor(v) ? 0 : 2) +
               (t.unit == "count" ? "" : " " + t.unit)) +
           "</title></path>";
    }
  }
  return s;
}

// One chart: `value` of every interval k of a job (nullopt: no point, e.g. p99 of an interval
// without successful ops) against time, a line per drawn entry that has a series.
template <class Value, class Label>
std::string timeline(const Group& g, const std::string& cls, const std::string& caption, const Value& value,
                     const Label& tick_label) {
  double tmax = 0, vmax = 0;
  for (auto& e : g.entries) {
    if (!e.drawn()) continue;
    for (size_t k = 0; k < drawn_intervals(*e.job); ++k) {
      if (auto v = value(*e.job, k)) vmax = std::max(vmax, *v);
      tmax = std::max(tmax, start(*e.job, k) + length(*e.job, k));
    }
  }
  std::vector<double> xt = ticks_to(tmax), yt = ticks_to(vmax);
  double plot_w = kWidth - kLeft - kRight, plot_h = kHeight - kTop - kBottom;
  auto x = [&](double t) { return kLeft + t / xt.back() * plot_w; };
  auto y = [&](double v) { return kTop + plot_h - v / yt.back() * plot_h; };
  std::string w = fixed(kWidth, 0), h = fixed(kHeight, 0);
  std::string s = "<svg xmlns=\"http://www.w3.org/2000/svg\" class=\"chart timeline " + cls + "\" width=\"" + w +
                  "\" height=\"" + h + "\" viewBox=\"0 0 " + w + " " + h +
                  "\" font-family=\"sans-serif\" font-size=\"" + fixed(kFont, 0) + "\" role=\"img\" aria-label=\"" +
                  esc(g.title + ": " + caption) + "\">";
  s += "<text x=\"" + fixed(kLeft, 1) + "\" y=\"14\" class=\"caption\" fill=\"#444\">" + esc(caption) + "</text>";
  for (double v : yt) {
    s += "<path d=\"M" + fixed(kLeft, 1) + " " + fixed(y(v), 1) + "H" + fixed(kWidth - kRight, 1) +
         "\" stroke=\"#e6e6e6\"/>";
    s += "<text x=\"" + fixed(kLeft - 6, 1) + "\" y=\"" + fixed(y(v) + 4, 1) +
         "\" class=\"tick\" text-anchor=\"end\" fill=\"#555\">" + esc(tick_label(v)) + "</text>";
  }
  for (double t : xt)
    s += "<text x=\"" + fixed(x(t), 1) + "\" y=\"" + fixed(kTop + plot_h + 14, 1) + "\" class=\"tick\" text-anchor=\"" +
         (t == xt.back() ? "end"
          : t == 0       ? "start"
                         : "middle") +
         "\" fill=\"#555\">" + esc(seconds(t)) + "</text>";
  s += "<path d=\"M" + fixed(kLeft, 1) + " " + fixed(kTop, 1) + "V" + fixed(kTop + plot_h, 1) + "H" +
       fixed(kWidth - kRight, 1) + "\" stroke=\"#888\" fill=\"none\"/>";
  for (auto& e : g.entries)
    if (e.drawn()) s += episode_marks(*e.job, e.name, kPalette[e.colour % kPaletteSize], x, kTop, plot_h);
  for (auto& e : g.entries) {
    if (!e.drawn() || e.job->series.empty()) continue;
    std::string points;
    size_t n = 0;
    for (size_t k = 0; k < drawn_intervals(*e.job); ++k)
      if (auto v = value(*e.job, k))
        points += (n++ ? " " : "") + fixed(x(start(*e.job, k) + length(*e.job, k) / 2), 1) + "," + fixed(y(*v), 1);
    if (n == 0) continue;
    std::string colour = kPalette[e.colour % kPaletteSize];
    std::string look = " data-job=\"" + esc(e.name) + "\" data-points=\"" + std::to_string(n) + "\"" +
                       (e.job->failed() ? " opacity=\"0.45\" stroke-dasharray=\"4 3\"" : "");
    s += "<polyline class=\"line\" points=\"" + points + "\" fill=\"none\" stroke=\"" + colour +
         "\" stroke-width=\"1.6\"" + look + "><title>" + esc(e.name) + "</title></polyline>";
    if (n == 1)  // one interval: a dot, or nothing would show
      s += "<circle class=\"dot\" cx=\"" + points.substr(0, points.find(',')) + "\" cy=\"" +
           points.substr(points.find(',') + 1) + "\" r=\"2.5\" fill=\"" + colour +
           "\"/>";  // --fault: each fault's unavailable window, shaded in the job's colour, its line in the title
    for (const FaultResult& f : e.job->faults) {
      if (f.at_s == 0 && f.done_s == 0) continue;  // never injected
      const bool slow = f.delay_s > 0;             // a slow leaves the service up: the time it lasted is shaded
      const double a = x(std::min(slow ? f.at_s : f.window_start_s, xt.back())),
                   b = x(std::min(slow ? f.done_s : f.window_end_s, xt.back()));
      s += "<rect class=\"fault-marker\" x=\"" + fixed(a, 1) + "\" y=\"" + fixed(kTop, 1) + "\" width=\"" +
           fixed(std::max(b - a, 1.0), 1) + "\" height=\"" + fixed(plot_h, 1) + "\" fill=\"" + colour +
           "\" fill-opacity=\"0.15\"><title>" +
           esc(e.name + ": " + f.fault + ": " +
               (slow ? "slowed for " + fixed(f.done_s - f.at_s, 3) + " s, unavailable " : "unavailable ") +
               fixed(f.window_s(), 3) + " s" + (f.node.empty() ? "" : ", killed " + f.node) +
               (f.promoted.empty() ? "" : (f.node.empty() ? ", primary now " : ", leader now ") + f.promoted) +
               (f.messages_lost < 0 ? ""
                                    : ", messages " + std::to_string(f.messages_lost) + " lost, " +
                                          std::to_string(f.messages_duplicated) + " duplicated, " +
                                          std::to_string(f.messages_reordered) + " out of order")) +
           "</title></rect>";
    }
  }
  return s + "</svg>";
}

// The tightest latency bound of an SLO and its text ("p99<1ms"), or 0.
std::pair<double, std::string> slo_line(const std::string& slo) {
  std::pair<double, std::string> out{0, ""};
  try {
    for (const SloTerm& t : parse_slo(slo))
      if (double b = slo_latency_bound(t); b > 0 && (out.first == 0 || b < out.first)) out = {b, t.text};
  } catch (const SetupError&) {  // a file's SLO that does not parse: no line
  }
  return out;
}

}  // namespace

std::string capacity_chart(const Group& g) {
  double xmax = 0, ymax = 0;
  std::vector<std::pair<double, std::string>> lines;  // the SLOs' latency bounds
  for (auto& e : g.entries) {
    if (!e.drawn() || !e.job->capacity) continue;
    for (auto& st : e.job->capacity->steps)
      if (st.offered > 0) xmax = std::max(xmax, st.achieved), ymax = std::max(ymax, st.p99_ns);
    auto line = slo_line(e.job->capacity->slo);
    if (line.first > 0 && std::find(lines.begin(), lines.end(), line) == lines.end()) lines.push_back(line);
  }
  if (xmax <= 0) return "";
  for (auto& l : lines) ymax = std::max(ymax, l.first * 1.2);
  std::vector<double> xt = ticks_to(xmax), yt = ticks_to(ymax);
  double plot_w = kWidth - kLeft - kRight, plot_h = kHeight - kTop - kBottom;
  auto x = [&](double v) { return kLeft + v / xt.back() * plot_w; };
  auto y = [&](double v) { return kTop + plot_h - std::min(v, yt.back()) / yt.back() * plot_h; };
  const std::string caption = "p99 latency (corrected) against achieved req/s: the capacity search's steps";
  std::string w = fixed(kWidth, 0), h = fixed(kHeight, 0);
  std::string s = "<svg xmlns=\"http://www.w3.org/2000/svg\" class=\"chart capacity\" width=\"" + w + "\" height=\"" +
                  h + "\" viewBox=\"0 0 " + w + " " + h + "\" font-family=\"sans-serif\" font-size=\"" +
                  fixed(kFont, 0) + "\" role=\"img\" aria-label=\"" + esc(g.title + ": " + caption) + "\">";
  s += "<text x=\"" + fixed(kLeft, 1) + "\" y=\"14\" class=\"caption\" fill=\"#444\">" + esc(caption) + "</text>";
  for (double v : yt)
    s += "<path d=\"M" + fixed(kLeft, 1) + " " + fixed(y(v), 1) + "H" + fixed(kWidth - kRight, 1) +
         "\" stroke=\"#e6e6e6\"/><text x=\"" + fixed(kLeft - 6, 1) + "\" y=\"" + fixed(y(v) + 4, 1) +
         "\" class=\"tick\" text-anchor=\"end\" fill=\"#555\">" + esc(v == 0 ? std::string("0") : duration_ns(v)) +
         "</text>";
  for (double v : xt)
    s += "<text x=\"" + fixed(x(v), 1) + "\" y=\"" + fixed(kTop + plot_h + 14, 1) + "\" class=\"tick\" text-anchor=\"" +
         (v == xt.back() ? "end"
          : v == 0       ? "start"
                         : "middle") +
         "\" fill=\"#555\">" + esc(compact(v)) + "</text>";
  s += "<path d=\"M" + fixed(kLeft, 1) + " " + fixed(kTop, 1) + "V" + fixed(kTop + plot_h, 1) + "H" +
       fixed(kWidth - kRight, 1) + "\" stroke=\"#888\" fill=\"none\"/>";
  for (auto& [bound, text] : lines)
    s += "<path class=\"slo\" d=\"M" + fixed(kLeft, 1) + " " + fixed(y(bound), 1) + "H" + fixed(kWidth - kRight, 1) +
         "\" stroke=\"#c00\" stroke-dasharray=\"6 4\"/><text x=\"" + fixed(kWidth - kRight - 4, 1) + "\" y=\"" +
         fixed(y(bound) - 4, 1) + "\" text-anchor=\"end\" fill=\"#c00\">SLO " + esc(text) + "</text>";
  for (auto& e : g.entries) {
    if (!e.drawn() || !e.job->capacity) continue;
    std::vector<const CapacityStep*> pts;
    for (auto& st : e.job->capacity->steps)
      if (st.offered > 0 && st.achieved > 0) pts.push_back(&st);
    std::sort(pts.begin(), pts.end(), [](auto* a, auto* b) { return a->offered < b->offered; });
    std::string points, dots;
    const std::string colour = kPalette[e.colour % kPaletteSize];
    for (auto* st : pts) {
      const std::string at = fixed(x(st->achieved), 1) + "," + fixed(y(st->p99_ns), 1);
      points += (points.empty() ? "" : " ") + at;
      dots += "<circle class=\"step " + esc(step_verdict_name(st->verdict)) + "\" cx=\"" + at.substr(0, at.find(',')) +
              "\" cy=\"" + at.substr(at.find(',') + 1) + "\" r=\"2.5\" fill=\"" +
              (st->verdict == StepVerdict::Pass ? colour : "#fff") + "\" stroke=\"" + colour + "\"><title>" +
              esc(e.name + ": " + rate(st->offered) + " req/s offered, " + rate(st->achieved) + " achieved, p99 " +
                  duration_ns(st->p99_ns) + ", " + step_verdict_name(st->verdict)) +
              "</title></circle>";
    }
    s += "<polyline class=\"line\" points=\"" + points + "\" fill=\"none\" stroke=\"" + colour +
         "\" stroke-width=\"1.6\" data-job=\"" + esc(e.name) + "\" data-points=\"" + std::to_string(pts.size()) +
         "\"><title>" + esc(e.name) + "</title></polyline>" + dots;
  }
  return s + "</svg>";
}

std::string series_chart(const Group& g, bool p99) {
  double interval = 0;
  size_t most = 0;
  for (auto& e : g.entries)
    if (e.drawn() && drawn_intervals(*e.job) > most) {
      most = drawn_intervals(*e.job);
      interval = e.job->series_interval_s;
    }
  if (most < 2) return "";  // no job of the group lasted more than one interval
  std::string per = " per " + seconds(interval) + " interval, on each job's own clock";
  if (!p99)
    return timeline(
        g, "rps-time", "req/s over time" + per,
        [](const JobResult& j, size_t k) { return std::optional<double>(series_rps(j, k)); },
        [](double v) { return compact(v); });
  return timeline(
      g, "p99-time", "p99 latency over time" + per,
      [](const JobResult& j, size_t k) {
        const SeriesInterval& iv = j.series[k];
        return iv.ok ? std::optional<double>(static_cast<double>(iv.percentile(99))) : std::nullopt;
      },
      [](double v) { return v == 0 ? std::string("0") : duration_ns(v); });
}

}  // namespace mw::html
