// A group's two charts as SVG: req/s bars on the group's own scale (log when it spans more
// than 100x) and the latency-by-percentile curves of its jobs on one set of axes. Labels are
// laid out in lanes of their own, so none can overlap another or a whisker.
#include <algorithm>
#include <cmath>
#include <cstdio>

#include "queue/queue.h"
#include "report/html_model.h"
#include "results/writer.h"
#include "util/histogram.h"

namespace mw::html {

namespace {

constexpr double kWidth = 680;  // fits an A4 page's text width at 96 dpi
constexpr double kFont = 11;
constexpr double kBarH = 14, kLine = 18, kRowGap = 8;

std::string svg_open(const std::string& cls, double h, const std::string& title) {
  std::string w = fixed(kWidth, 0), hh = fixed(h, 0);
  return "<svg xmlns=\"http://www.w3.org/2000/svg\" class=\"chart " + cls + "\" width=\"" + w + "\" height=\"" + hh +
         "\" viewBox=\"0 0 " + w + " " + hh + "\" font-family=\"sans-serif\" font-size=\"" + fixed(kFont, 0) +
         "\" role=\"img\" aria-label=\"" + esc(title) + "\">";
}

std::string text(double x, double y, const std::string& body, const std::string& attrs = "") {
  return "<text x=\"" + fixed(x, 1) + "\" y=\"" + fixed(y, 1) + "\"" + (attrs.empty() ? "" : " " + attrs) + ">" + body +
         "</text>";
}

// x of a req/s figure on [0, plot]: linear from 0, or log over whole decades.
struct Scale {
  bool log = false;
  double lo = 0, hi = 1;  // log: exponents
  std::vector<double> ticks;
  double x(double v, double plot) const {
    if (!log) return std::max(0.0, v) / hi * plot;
    if (v <= 0) return 0;
    return std::clamp((std::log10(v) - lo) / (hi - lo), 0.0, 1.0) * plot;
  }
};

Scale scale_of(const Group& g) {
  double max = 0, min = 0;
  for (auto& e : g.entries) {
    if (!e.drawn()) continue;
    std::optional<RpsRange> range = rps_range(*e.job);
    for (double v : {e.job->rps, range ? range->min : e.job->rps, range ? range->max : e.job->rps}) {
      max = std::max(max, v);
      if (v > 0) min = min > 0 ? std::min(min, v) : v;
    }
  }
  Scale s;
  if (max <= 0) max = 1;
  if (min > 0 && max / min > 100) {
    s.log = true;
    s.lo = std::floor(std::log10(min));
    if (std::log10(min) - s.lo < 0.3) s.lo -= 1;  // the smallest bar keeps a visible length
    s.hi = std::max(s.lo + 1, std::ceil(std::log10(max)));
    int step = s.hi - s.lo > 6 ? 2 : 1;  // labels stay apart on a very wide span
    for (double e = s.lo; e <= s.hi; e += step) s.ticks.push_back(std::pow(10, e));
    return s;
  }
  double raw = max / 5, mag = std::pow(10, std::floor(std::log10(raw))), step = mag;
  for (double m : {1.0, 2.0, 2.5, 5.0, 10.0})
    if (m * mag >= raw) {
      step = m * mag;
      break;
    }
  s.hi = std::ceil(max / step - 1e-9) * step;
  for (double t = 0; t <= s.hi + step / 2; t += step) s.ticks.push_back(t);
  return s;
}

// What a drawn entry's value label says: the figure, its mark, and its file when several.
std::string value_label(const Page& page, const Group& g, const Entry& e) {
  std::string s = rate(e.job->rps) + " req/s";
  std::string mark = failure_mark(*e.job);
  if (e.job->state == JobResult::State::Interrupted && mark.empty()) mark = "interrupted";
  if (!mark.empty()) s += " " + mark;
  if (g.multi_file) s += "  " + page.tags[e.run];
  return s;
}

std::string missing_label(const Entry& e) {
  std::string why = e.job->message.empty() ? "" : ": " + e.job->message;
  return std::string(e.job->state == JobResult::State::Skipped ? "skipped" : "set-up failed") + why;
}

}  // namespace

std::string throughput_chart(const Page& page, const Group& g) {
  // Lanes, left to right: row labels | bars and whiskers | value labels.
  double label_w = 60, value_w = 90;
  for (size_t row : g.rows)
    for (auto& e : g.entries)
      if (e.row == row) label_w = std::max(label_w, text_width(e.label, kFont) + 12);
  for (auto& e : g.entries)
    if (e.drawn()) value_w = std::max(value_w, text_width(value_label(page, g, e), kFont) + 12);
  label_w = std::min(label_w, 230.0);
  value_w = std::min(value_w, 250.0);
  double plot = kWidth - label_w - value_w - 8;
  Scale sc = scale_of(g);
  double top = 26, y = top;
  std::string body;
  for (size_t row : g.rows) {
    double y0 = y;
    std::string row_label;
    for (auto& e : g.entries) {
      if (e.row != row) continue;
      row_label = e.label;
      const JobResult& j = *e.job;
      double by = y + (kLine - kBarH) / 2;
      if (!e.drawn()) {
        std::string t = missing_label(e);
        bool bad = j.state != JobResult::State::Skipped;
        body +=
            text(label_w + 4, by + kBarH - 3, esc(fit(t, plot + value_w - 8, kFont)),
                 std::string("class=\"missing\" font-style=\"italic\" fill=\"") + (bad ? "#c0392b" : "#777") + "\"");
        y += kLine;
        continue;
      }
      std::string mark = failure_mark(j);
      double w = std::max(sc.x(j.rps, plot), 1.0);
      const char* colour = kPalette[e.colour];
      std::string tip = e.name + ": " + rate(j.rps) + " req/s" + (mark.empty() ? "" : " (" + mark + ")");
      std::optional<RpsRange> range = rps_range(j);
      if (range) tip += ", repeats " + rate(range->min) + " to " + rate(range->max);
      body += "<rect class=\"bar" + std::string(mark.empty() ? "" : " failed") + "\" x=\"" + fixed(label_w, 1) +
              "\" y=\"" + fixed(by, 1) + "\" width=\"" + fixed(w, 1) + "\" height=\"" + fixed(kBarH, 1) + "\" fill=\"" +
              colour + "\"" +
              (mark.empty() ? ""
                            : " fill-opacity=\"0.35\" stroke=\"#d62728\" stroke-width=\"2\" stroke-dasharray=\"4 2\"") +
              "><title>" + esc(tip) + "</title></rect>";
      double end = label_w + w;
      if (range) {
        double lo = label_w + sc.x(range->min, plot), hi = label_w + sc.x(range->max, plot);
        double cy = by + kBarH / 2;
        body += "<path class=\"whisker\" d=\"M" + fixed(lo, 1) + " " + fixed(cy, 1) + "H" + fixed(hi, 1) + "M" +
                fixed(lo, 1) + " " + fixed(cy - 4, 1) + "V" + fixed(cy + 4, 1) + "M" + fixed(hi, 1) + " " +
                fixed(cy - 4, 1) + "V" + fixed(cy + 4, 1) + "\" stroke=\"#333\"/>";
        end = std::max(end, hi);
      }
      // the value starts past the bar and its whisker, in the lane kept for it
      body += text(end + 5, by + kBarH - 3, esc(fit(value_label(page, g, e), kWidth - end - 8, kFont)),
                   mark.empty() ? "class=\"value\"" : "class=\"value flag\" fill=\"#d62728\" font-weight=\"bold\"");
      y += kLine;
    }
    double mid = (y0 + y) / 2;
    body += text(label_w - 6, mid + 4, esc(fit(row_label, label_w - 10, kFont)), "class=\"label\" text-anchor=\"end\"");
    y += kRowGap;
  }
  double axis = y;
  std::string grid;
  for (double t : sc.ticks) {
    double x = label_w + sc.x(t, plot);
    grid += "<path d=\"M" + fixed(x, 1) + " " + fixed(top - 4, 1) + "V" + fixed(axis, 1) + "\" stroke=\"#e6e6e6\"/>";
    grid += text(x, axis + 14, compact(t), "class=\"tick\" text-anchor=\"middle\" fill=\"#555\"");
  }
  std::string caption = "req/s, successful operations only" +
                        std::string(sc.log ? " (log scale: the group spans more than 100\xC3\x97)" : "");
  std::string s = svg_open("rps", axis + 24, g.title + ": req/s");
  s += text(label_w, 14, esc(caption), "class=\"caption\" fill=\"#444\"");
  s += grid + "<path d=\"M" + fixed(label_w, 1) + " " + fixed(top - 4, 1) + "V" + fixed(axis, 1) + "H" +
       fixed(label_w + plot, 1) + "\" stroke=\"#999\" fill=\"none\"/>";
  return s + body + "</svg>";
}

namespace {

// Percentiles drawn, on a "nines" axis: x = -log10(1 - p/100), up to five nines.
constexpr double kNines[] = {0, 10, 25, 50, 75, 90, 95, 99, 99.5, 99.9, 99.95, 99.99, 99.999};

std::vector<std::pair<double, double>> curve_of(const JobResult& j) {
  std::vector<std::pair<double, double>> pts;
  if (j.latency && j.latency->count())
    for (double p : kNines) pts.push_back({p, std::max(1.0, latency_at(j, p))});
  return pts;
}

// 10^e ns as a tick says it: 100 ns, 1 us, 10 ms, 1 s.
std::string decade_ns(double e) {
  static const char* units[] = {"ns", "\xC2\xB5s", "ms", "s"};
  int k = std::clamp(static_cast<int>(e) / 3, 0, 3);
  return fixed(std::pow(10, e - 3 * k), 0) + " " + units[k];
}

std::string percent(double p) {
  char b[16];
  std::snprintf(b, sizeof b, "%g%%", p);
  return b;
}

}  // namespace

std::string latency_chart(const Page&, const Group& g) {
  const double left = 64, right = 12, top = 26, h = 220, w = kWidth - left - right;
  std::vector<std::pair<const Entry*, std::vector<std::pair<double, double>>>> curves;
  double lo = 1e18, hi = 0;
  for (auto& e : g.entries) {
    if (!e.drawn()) continue;
    auto pts = curve_of(*e.job);
    if (pts.empty()) continue;
    for (auto& [p, v] : pts) lo = std::min(lo, v), hi = std::max(hi, v);
    curves.push_back({&e, std::move(pts)});
  }
  // The legend: one entry per curve, in two columns when the names are short.
  double name_w = 0;
  std::vector<std::string> names;
  for (auto& [e, pts] : curves) {
    std::string mark = failure_mark(*e->job);
    names.push_back(e->name + (mark.empty() ? "" : " (" + mark + ")") + " \xC2\xB7 p99 " +
                    duration_ns(latency_at(*e->job, 99)));
    name_w = std::max(name_w, text_width(names.back(), kFont));
  }
  int cols = curves.size() > 3 && name_w + 30 < kWidth / 2 - 10 ? 2 : 1;
  double col_w = (kWidth - 20) / cols;
  size_t legend_rows = (curves.size() + static_cast<size_t>(cols) - 1) / static_cast<size_t>(cols);
  double legend_top = top + h + 30, height = legend_top + 16 * static_cast<double>(legend_rows) + 6;
  std::string s = svg_open("latency", curves.empty() ? 60 : height, g.title + ": latency by percentile");
  s += text(left, 14, "latency of successful operations by percentile (both axes logarithmic)",
            "class=\"caption\" fill=\"#444\"");
  if (curves.empty())
    return s + text(left, 44, "no latency recorded (no successful operations)", "class=\"missing\"") + "</svg>";
  double l0 = std::floor(std::log10(lo)), l1 = std::ceil(std::log10(hi));
  if (l1 <= l0) l1 = l0 + 1;
  auto xpos = [&](double p) { return left + std::min(5.0, -std::log10(1 - std::min(p, 99.999) / 100)) / 5.0 * w; };
  auto ypos = [&](double v) { return top + h - (std::log10(v) - l0) / (l1 - l0) * h; };
  s += "<rect x=\"" + fixed(left, 1) + "\" y=\"" + fixed(top, 1) + "\" width=\"" + fixed(w, 1) + "\" height=\"" +
       fixed(h, 1) + "\" fill=\"none\" stroke=\"#999\"/>";
  int step = l1 - l0 > 8 ? 2 : 1;
  for (double e = l0; e <= l1; e += step) {
    double y = ypos(std::pow(10, e));
    s += "<path d=\"M" + fixed(left, 1) + " " + fixed(y, 1) + "H" + fixed(left + w, 1) + "\" stroke=\"#eee\"/>";
    s += text(left - 5, y + 4, decade_ns(e), "class=\"tick\" text-anchor=\"end\" fill=\"#555\"");
  }
  for (double p : {0.0, 90.0, 99.0, 99.9, 99.99, 99.999}) {
    double x = xpos(p);
    s += "<path d=\"M" + fixed(x, 1) + " " + fixed(top, 1) + "V" + fixed(top + h, 1) + "\" stroke=\"#eee\"/>";
    // the first and last start and end at the frame: clear of the latency labels and the edge
    const char* anchor = p == 0 ? "start" : p > 99.99 ? "end" : "middle";
    s += text(x, top + h + 14, percent(p), "class=\"tick\" text-anchor=\"" + std::string(anchor) + "\" fill=\"#555\"");
  }
  for (size_t k = 0; k < curves.size(); ++k) {
    auto& [e, pts] = curves[k];
    std::string d;
    for (auto& [p, v] : pts) d += (d.empty() ? "M" : "L") + fixed(xpos(p), 1) + " " + fixed(ypos(v), 1);
    // past the palette, and for a failed job, the line is dashed
    bool dashed = k >= static_cast<size_t>(kPaletteSize) || !failure_mark(*e->job).empty();
    s += "<path class=\"curve\" d=\"" + d + "\" fill=\"none\" stroke-width=\"2\" stroke=\"" + kPalette[e->colour] +
         "\"" + (dashed ? " stroke-dasharray=\"6 3\"" : "") + "><title>" + esc(names[k]) + "</title></path>";
    double lx = 10 + col_w * static_cast<double>(k % static_cast<size_t>(cols));
    const size_t row = k / static_cast<size_t>(cols);
    double ly = legend_top + 16 * static_cast<double>(row);
    s += "<rect class=\"key\" x=\"" + fixed(lx, 1) + "\" y=\"" + fixed(ly, 1) +
         "\" width=\"12\" height=\"12\" fill=\"" + kPalette[e->colour] + "\"/>";
    s += text(lx + 17, ly + 10, esc(fit(names[k], col_w - 24, kFont)), "class=\"legend\"");
  }
  return s + "</svg>";
}

// A queue op's backlog (produced - consumed) per second, one line per entry: a queue whose
// consumers fall behind climbs. "" when no entry of the group is a queue op.
std::string backlog_chart(const Page&, const Group& g) {
  auto backlog = [](const Entry* e) -> const std::vector<int64_t>& {  // a queue op's: queue.backlog
    static const std::vector<int64_t> none;
    return e->job->queue ? e->job->queue->backlog : none;
  };
  const double left = 64, right = 12, top = 26, h = 160, w = kWidth - left - right;
  std::vector<const Entry*> lines;
  int64_t hi = 1;
  size_t len = 2;
  for (auto& e : g.entries) {
    if (!e.drawn() || backlog(&e).empty()) continue;
    lines.push_back(&e);
    for (int64_t v : backlog(&e)) hi = std::max(hi, v);
    len = std::max(len, backlog(&e).size() + 1);
  }
  if (lines.empty()) return "";
  const double legend_top = top + h + 30, height = legend_top + 16 * static_cast<double>(lines.size()) + 6;
  std::string s = svg_open("backlog", height, g.title + ": backlog");
  s += text(left, 14, "backlog: messages produced and not yet consumed, at the end of each second",
            "class=\"caption\" fill=\"#444\"");
  auto xpos = [&](double t) { return left + t / static_cast<double>(len - 1) * w; };
  auto ypos = [&](double v) { return top + h - std::max(0.0, v) / static_cast<double>(hi) * h; };
  s += "<rect x=\"" + fixed(left, 1) + "\" y=\"" + fixed(top, 1) + "\" width=\"" + fixed(w, 1) + "\" height=\"" +
       fixed(h, 1) + "\" fill=\"none\" stroke=\"#999\"/>";
  for (double v : {0.0, hi / 2.0, static_cast<double>(hi)})
    s += text(left - 5, ypos(v) + 4, compact(v), "class=\"tick\" text-anchor=\"end\" fill=\"#555\"");
  s += text(left, top + h + 14, "0 s", "class=\"tick\" fill=\"#555\"");
  s += text(left + w, top + h + 14, std::to_string(len - 1) + " s", "class=\"tick\" text-anchor=\"end\" fill=\"#555\"");
  for (size_t k = 0; k < lines.size(); ++k) {
    const Entry& e = *lines[k];
    std::string d = "M" + fixed(xpos(0), 1) + " " + fixed(ypos(0), 1);  // empty when the clients start
    const std::vector<int64_t>& b = backlog(&e);
    for (size_t i = 0; i < b.size(); ++i)
      d += "L" + fixed(xpos(static_cast<double>(i + 1)), 1) + " " + fixed(ypos(static_cast<double>(b[i])), 1);
    const std::string name =
        e.name + " \xC2\xB7 max " + compact(static_cast<double>(*std::max_element(b.begin(), b.end())));
    s += "<path class=\"curve\" d=\"" + d + "\" fill=\"none\" stroke-width=\"2\" stroke=\"" + kPalette[e.colour] +
         "\"><title>" + esc(name) + "</title></path>";
    const double ly = legend_top + 16 * static_cast<double>(k);
    s += "<rect class=\"key\" x=\"10\" y=\"" + fixed(ly, 1) + "\" width=\"12\" height=\"12\" fill=\"" +
         kPalette[e.colour] + "\"/>";
    s += text(27, ly + 10, esc(fit(name, kWidth - 40, kFont)), "class=\"legend\"");
  }
  return s + "</svg>";
}

}  // namespace mw::html
