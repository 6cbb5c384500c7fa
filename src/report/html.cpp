// Charts as plain SVG strings and one self-contained HTML page: no scripts, no network.
#include <algorithm>
#include <cmath>
#include <cstdio>

#include "histogram.h"
#include "report.h"
#include "results.h"
#include "text.h"

namespace mw {

namespace {

const char* kColors[] = {"#4e79a7", "#f28e2b", "#59a14f", "#e15759", "#76b7b2", "#edc948", "#b07aa1", "#9c755f"};

std::string esc(const std::string& s) { return html_text(s); }

// What the bar of a run that failed says beside its figure: "" for a good run.
std::string failure_label(const LoadedJob& j) {
  if (!j.failed()) return j.state == "done" ? "" : j.state;
  if (!j.ran()) return j.state == "skipped" ? "skipped" : "FAILED: set-up error";
  bool ops_bad = j.ops_failed || j.ops_not_run;
  for (auto& k : j.repeats) ops_bad |= k.ops_failed || k.ops_not_run || !k.ran();
  if (!ops_bad) return "unverified";
  return "FAILED";
}

std::string num(double v, int d = 1) {
  char b[48];
  std::snprintf(b, sizeof b, "%.*f", d, v);
  return b;
}

// One line per run, from y down: kLegendLine each.
constexpr double kLegendLine = 16;
std::string legend(const std::vector<LoadedRun>& runs, double y) {
  std::string s;
  for (size_t r = 0; r < runs.size(); ++r) {
    double yy = y + static_cast<double>(r) * kLegendLine;
    s += "<rect x=\"10\" y=\"" + num(yy) + "\" width=\"12\" height=\"12\" fill=\"" + kColors[r % 8] + "\"/>";
    s += "<text x=\"26\" y=\"" + num(yy + 11) + "\">" + esc(runs[r].label) + "</text>";
  }
  return s;
}

std::string percent(double p) {
  char b[16];
  std::snprintf(b, sizeof b, "%g%%", p);
  return b;
}

// req/s per job as horizontal bars, one per run, with the min-max of repeats as a whisker.
std::string rps_chart(const std::vector<LoadedRun>& runs, const std::vector<MatchedJob>& rows) {
  const double label_w = 330, plot_w = 520, bar_h = 14, gap = 10, top = 30;
  double max = 0;
  for (auto& m : rows)
    for (size_t r = 0; r < runs.size(); ++r)
      if (m.index[r] >= 0) {
        const LoadedJob& j = runs[r].jobs[static_cast<size_t>(m.index[r])];
        max = std::max({max, j.rps, j.rps_max.value_or(0.0)});
      }
  if (max <= 0) max = 1;
  double group_h = bar_h * static_cast<double>(runs.size()) + gap;
  double height = top + group_h * static_cast<double>(rows.size()) + 14 + kLegendLine * static_cast<double>(runs.size());
  std::string s = "<svg xmlns=\"http://www.w3.org/2000/svg\" class=\"chart rps\" width=\"" + num(label_w + plot_w + 120, 0) +
                  "\" height=\"" + num(height, 0) + "\" font-family=\"sans-serif\" font-size=\"11\">";
  s += "<text x=\"10\" y=\"16\" font-size=\"13\" font-weight=\"bold\">req/s (successful operations per second)</text>";
  for (size_t i = 0; i < rows.size(); ++i) {
    double y0 = top + group_h * static_cast<double>(i);
    s += "<text x=\"" + num(label_w - 6) + "\" y=\"" + num(y0 + group_h / 2) + "\" text-anchor=\"end\">" + esc(rows[i].name) + "</text>";
    for (size_t r = 0; r < runs.size(); ++r) {
      if (rows[i].index[r] < 0) continue;
      const LoadedJob& j = runs[r].jobs[static_cast<size_t>(rows[i].index[r])];
      double v = j.rps, y = y0 + bar_h * static_cast<double>(r);
      double w = v / max * plot_w;
      // A run that failed is flagged: faded, a dashed red outline, and its label says so.
      std::string flag = failure_label(j);
      bool failed = j.failed();
      s += std::string("<rect class=\"bar") + (failed ? " failed" : "") + "\" x=\"" + num(label_w) + "\" y=\"" + num(y) +
           "\" width=\"" + num(std::max(w, 0.5)) + "\" height=\"" + num(bar_h - 2) + "\" fill=\"" + kColors[r % 8] + "\"" +
           (failed ? " fill-opacity=\"0.35\" stroke=\"#d62728\" stroke-width=\"2\" stroke-dasharray=\"4 2\"" : "") + "><title>" +
           esc(runs[r].label) + ": " + num(v) + " req/s" + (flag.empty() ? "" : " (" + esc(flag) + ")") + "</title></rect>";
      if (j.rps_min) {
        double lo = label_w + j.rps_min.value_or(v) / max * plot_w, hi = label_w + j.rps_max.value_or(v) / max * plot_w;
        double cy = y + (bar_h - 2) / 2;
        s += "<path class=\"whisker\" d=\"M" + num(lo) + " " + num(cy) + "H" + num(hi) + "M" + num(lo) + " " + num(cy - 4) +
             "V" + num(cy + 4) + "M" + num(hi) + " " + num(cy - 4) + "V" + num(cy + 4) + "\" stroke=\"#333\"/>";
      }
      s += "<text x=\"" + num(label_w + std::max(w, 0.5) + 4) + "\" y=\"" + num(y + bar_h - 4) + "\"" +
           (failed ? " class=\"flag\" fill=\"#d62728\" font-weight=\"bold\"" : "") + ">" + num(v) +
           (flag.empty() ? "" : " " + esc(flag)) + "</text>";
    }
  }
  s += legend(runs, height - kLegendLine * static_cast<double>(runs.size()));
  return s + "</svg>";
}

// Latency against percentile on a "nines" axis (0, 90, 99, 99.9, ...), both logarithmic.
std::string latency_chart(const std::vector<LoadedRun>& runs, const MatchedJob& row) {
  const double w = 520, h = 260, left = 60, top = 30, bottom = 40;
  static const double ps[] = {0, 10, 25, 50, 75, 90, 95, 99, 99.5, 99.9, 99.95, 99.99, 99.999};
  auto xpos = [&](double p) { return left + std::min(5.0, -std::log10(1 - std::min(p, 99.999) / 100)) / 5.0 * w; };
  std::vector<std::vector<std::pair<double, double>>> curves(runs.size());
  double lo = 1e18, hi = 0;
  for (size_t r = 0; r < runs.size(); ++r) {
    if (row.index[r] < 0) continue;
    const LoadedJob& j = runs[r].jobs[static_cast<size_t>(row.index[r])];
    if (!j.histogram) continue;
    Histogram hst;
    for (auto& [value, n] : *j.histogram) hst.record_n(value, n);
    if (!hst.count()) continue;
    for (double p : ps) {
      double v = std::max(1.0, static_cast<double>(hst.percentile(p)));
      curves[r].push_back({p, v});
      lo = std::min(lo, v), hi = std::max(hi, v);
    }
  }
  std::string s = "<svg xmlns=\"http://www.w3.org/2000/svg\" class=\"chart latency\" width=\"" + num(left + w + 40, 0) +
                  "\" height=\"" + num(top + h + bottom + kLegendLine * static_cast<double>(runs.size()), 0) + "\" font-family=\"sans-serif\" font-size=\"11\">";
  s += "<text x=\"10\" y=\"16\" font-size=\"13\" font-weight=\"bold\">" + esc(row.name) + ": latency by percentile</text>";
  if (hi <= 0) return s + "<text x=\"10\" y=\"50\">no successful operations</text></svg>";
  double l0 = std::floor(std::log10(lo)), l1 = std::ceil(std::log10(hi));
  if (l1 <= l0) l1 = l0 + 1;
  auto ypos = [&](double v) { return top + h - (std::log10(v) - l0) / (l1 - l0) * h; };
  s += "<rect x=\"" + num(left) + "\" y=\"" + num(top) + "\" width=\"" + num(w) + "\" height=\"" + num(h) + "\" fill=\"none\" stroke=\"#999\"/>";
  for (double e = l0; e <= l1; ++e) {  // latency grid: powers of ten
    double y = ypos(std::pow(10, e));
    double ms = std::pow(10, e) / 1e6;
    s += "<path d=\"M" + num(left) + " " + num(y) + "H" + num(left + w) + "\" stroke=\"#eee\"/>";
    s += "<text x=\"" + num(left - 4) + "\" y=\"" + num(y + 4) + "\" text-anchor=\"end\">" + num(ms, ms < 0.01 ? 4 : ms < 1 ? 3 : 0) + " ms</text>";
  }
  for (double p : {0.0, 90.0, 99.0, 99.9, 99.99, 99.999}) {
    double x = xpos(p);
    s += "<path d=\"M" + num(x) + " " + num(top) + "V" + num(top + h) + "\" stroke=\"#eee\"/>";
    s += "<text x=\"" + num(x) + "\" y=\"" + num(top + h + 14) + "\" text-anchor=\"middle\">" + percent(p) + "</text>";
  }
  for (size_t r = 0; r < runs.size(); ++r) {
    if (curves[r].empty()) continue;
    std::string d;
    for (auto& [p, v] : curves[r]) d += (d.empty() ? "M" : "L") + num(xpos(p)) + " " + num(ypos(v));
    s += "<path class=\"curve\" d=\"" + d + "\" fill=\"none\" stroke-width=\"2\" stroke=\"" + kColors[r % 8] + "\"><title>" +
         esc(runs[r].label) + "</title></path>";
  }
  s += legend(runs, top + h + 24);
  return s + "</svg>";
}

std::string context_table(const LoadedRun& run) {
  const LoadedContext& c = run.context;
  std::string s = "<h3>" + esc(run.label) + "</h3><table class=\"context\">";
  auto row = [&](const std::string& k, const std::string& v) { s += "<tr><th>" + esc(k) + "</th><td>" + esc(v) + "</td></tr>"; };
  row("started", run.started_at);
  row("command", redact_text(run.command));  // files written before redaction was complete
  for (auto [k, v] : {std::pair{"host", &c.host}, {"cpu", &c.cpu}, {"kernel", &c.kernel}, {"os", &c.os},
                      {"virtualization", &c.virtualization}, {"build_type", &c.build_type}})
    row(k, *v);
  row("cores", std::to_string(c.cores));
  row("memory", num(static_cast<double>(c.memory_bytes) / (1024.0 * 1024 * 1024), 1) + " GiB");
  for (auto& [p, fs] : c.paths) row("path " + p, fs.first + " " + fs.second);
  for (auto& [k, v] : c.libraries) row(k, v);
  for (auto& w : c.warnings) row("warning", w);
  for (auto& j : run.jobs)
    for (auto& w : j.warnings) row("warning", j.name + ": " + w);
  return s + "</table>";
}

}  // namespace

std::map<std::string, std::string> render_svgs(const std::vector<LoadedRun>& runs) {
  auto rows = match_jobs(runs);
  std::map<std::string, std::string> out{{"rps.svg", rps_chart(runs, rows)}};
  for (size_t i = 0; i < rows.size(); ++i) {
    char name[48];
    std::snprintf(name, sizeof name, "latency-%02zu.svg", i + 1);
    out[name] = latency_chart(runs, rows[i]);
  }
  return out;
}

std::string render_html(const std::vector<LoadedRun>& runs) {
  auto rows = match_jobs(runs);
  std::string s =
      "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>mwbench report</title><style>"
      "body{font-family:sans-serif;margin:24px;color:#222}table.context{border-collapse:collapse;margin-bottom:16px}"
      "table.context th,table.context td{border:1px solid #ddd;padding:3px 8px;text-align:left;font-size:12px}"
      "pre{background:#f6f6f6;padding:8px;font-size:12px;overflow-x:auto}svg{display:block;margin:12px 0}"
      "</style></head><body>\n<h1>mwbench report</h1>\n";
  s += "<p>" + std::to_string(runs.size()) + " result file(s): ";
  for (size_t r = 0; r < runs.size(); ++r) s += (r ? ", " : "") + esc(runs[r].label);
  s += ". req/s counts successful operations only; whiskers show the min-max of repeats.</p>\n";
  if (runs.size() > 1) s += "<h2>Comparison</h2><pre>" + esc(format_compare(runs)) + "</pre>\n";
  s += "<h2>Throughput</h2>\n" + rps_chart(runs, rows) + "\n<h2>Latency</h2>\n";
  for (auto& row : rows) s += latency_chart(runs, row) + "\n";
  s += "<h2>Context</h2>\n";
  for (auto& r : runs) s += context_table(r) + "\n";
  return s + "</body></html>\n";
}

}  // namespace mw
