// A decision in the HTML report: a forest plot of each alternative's ratio against the baseline
// with its interval and the margin's band, and its verdict and diagnostics in words.
#include <algorithm>
#include <cmath>

#include "report/html_model.h"
#include "report/report.h"

namespace mw::html {

namespace {

const char* verdict_colour(decide::Verdict v) {
  switch (v) {
    case decide::Verdict::Faster: return "#2e7d32";
    case decide::Verdict::Slower: return "#c0392b";
    case decide::Verdict::Equivalent:
    case decide::Verdict::DifferentWithinMargin: return "#1f5fa8";
    case decide::Verdict::Undecided: break;
  }
  return "#888";
}

}  // namespace

std::string forest_plot(const DecideResult& d) {
  const double band_lo = 1 / (1 + d.settings.margin), band_hi = 1 + d.settings.margin;
  double lo = band_lo, hi = band_hi;
  for (const Decision& x : d.decisions) {
    const decide::Estimate& e = x.estimate;
    lo = std::min(lo, e.ratio), hi = std::max(hi, e.ratio);
    if (e.looked && e.lo > 0) lo = std::min(lo, e.lo), hi = std::max(hi, e.hi);
  }
  lo /= 1.05, hi *= 1.05;
  const double left = 230, right = 620, row = 26, top = 24;
  const double height = top + row * static_cast<double>(d.decisions.size()) + 34;
  auto x_of = [&](double r) {
    return left + (std::log(r) - std::log(lo)) / (std::log(hi) - std::log(lo)) * (right - left);
  };
  std::string s = "<svg class=\"chart forest\" xmlns=\"http://www.w3.org/2000/svg\" width=\"680\" height=\"" +
                  fixed(height, 0) + "\" viewBox=\"0 0 680 " + fixed(height, 0) +
                  "\" font-family=\"sans-serif\" font-size=\"11\">";
  s += "<title>ratio against " + esc(d.alternatives[static_cast<size_t>(d.baseline)].name) + "</title>";
  const double bottom = height - 30;
  s += "<rect x=\"" + fixed(x_of(band_lo), 1) + "\" y=\"" + fixed(top - 8, 1) + "\" width=\"" +
       fixed(x_of(band_hi) - x_of(band_lo), 1) + "\" height=\"" + fixed(bottom - top + 8, 1) +
       "\" fill=\"#e8f1e4\"><title>the margin: " + esc(ratio(band_lo)) + " to " + esc(ratio(band_hi)) +
       "</title></rect>";
  s += "<line x1=\"" + fixed(x_of(1), 1) + "\" x2=\"" + fixed(x_of(1), 1) + "\" y1=\"" + fixed(top - 8, 1) +
       "\" y2=\"" + fixed(bottom, 1) + "\" stroke=\"#444\"/>";
  s += "<text x=\"" + fixed((x_of(band_lo) + x_of(band_hi)) / 2, 1) +
       "\" y=\"12\" text-anchor=\"middle\" fill=\"#2e7d32\">margin " + fixed(d.settings.margin * 100, 0) + "%</text>";
  // ticks: a few round ratios within the range, and the band's edges
  std::vector<double> ticks{band_lo, 1, band_hi};
  for (double t : {0.1, 0.2, 0.5, 0.8, 0.9, 1.1, 1.2, 1.5, 2.0, 5.0, 10.0})
    if (t > lo && t < hi &&
        std::none_of(ticks.begin(), ticks.end(), [&](double k) { return std::fabs(x_of(k) - x_of(t)) < 28; }))
      ticks.push_back(t);
  s += "<line x1=\"" + fixed(left, 1) + "\" x2=\"" + fixed(right, 1) + "\" y1=\"" + fixed(bottom, 1) + "\" y2=\"" +
       fixed(bottom, 1) + "\" stroke=\"#999\"/>";
  for (double t : ticks)
    s += "<text x=\"" + fixed(x_of(t), 1) + "\" y=\"" + fixed(bottom + 14, 1) +
         "\" text-anchor=\"middle\" fill=\"#555\">" + esc(fixed(t, 2)) + "</text>";
  s += "<text x=\"" + fixed((left + right) / 2, 1) + "\" y=\"" + fixed(bottom + 27, 1) +
       "\" text-anchor=\"middle\" fill=\"#555\">ratio against " +
       esc(fit(d.alternatives[static_cast<size_t>(d.baseline)].name, 300, 11)) + " (above 1: better)</text>";
  for (size_t i = 0; i < d.decisions.size(); ++i) {
    const Decision& x = d.decisions[i];
    const decide::Estimate& e = x.estimate;
    const Alternative& a = d.alternatives[static_cast<size_t>(x.alternative)];
    const double y = top + row * static_cast<double>(i) + row / 2;
    const std::string colour = verdict_colour(e.verdict);
    s += "<text x=\"4\" y=\"" + fixed(y + 4, 1) + "\">" + esc(fit(a.label + "  " + a.name, left - 12, 11)) + "</text>";
    if (e.looked)
      s += "<line x1=\"" + fixed(x_of(e.lo), 1) + "\" x2=\"" + fixed(x_of(e.hi), 1) + "\" y1=\"" + fixed(y, 1) +
           "\" y2=\"" + fixed(y, 1) + "\" stroke=\"" + colour + "\" stroke-width=\"2\"/>";
    s += "<circle cx=\"" + fixed(x_of(e.ratio), 1) + "\" cy=\"" + fixed(y, 1) + "\" r=\"4\" fill=\"" + colour +
         "\"><title>" +
         esc(a.label + ": " + ratio(e.ratio) + (e.looked ? " (" + ratio(e.lo) + " to " + ratio(e.hi) + ")" : "") +
             ", " + decide::verdict_name(e.verdict)) +
         "</title></circle>";
    s += "<text x=\"" + fixed(right + 8, 1) + "\" y=\"" + fixed(y + 4, 1) + "\" fill=\"" + colour + "\">" +
         esc(decide::verdict_name(e.verdict)) + "</text>";
  }
  return s + "</svg>";
}

std::string decided_between(const Page& page, const Entry& a, const Entry& b) {
  if (a.run != b.run) return "";
  const RunResult& run = page.runs[a.run];
  if (!run.decide) return "";
  const DecideResult& d = *run.decide;
  auto alternative = [&](const Entry& e) {
    for (size_t i = 0; i < d.alternatives.size(); ++i)
      if (d.alternatives[i].job >= 0 && static_cast<size_t>(d.alternatives[i].job) < run.jobs.size() &&
          &run.jobs[static_cast<size_t>(d.alternatives[i].job)] == e.job)
        return static_cast<int>(i);
    return -1;
  };
  const int x = alternative(a), y = alternative(b);
  if (x < 0 || y < 0 || (x != d.baseline && y != d.baseline)) return "";
  const int alt = x == d.baseline ? y : x;
  for (const Decision& dec : d.decisions)
    if (dec.alternative == alt) {
      const decide::Estimate& e = dec.estimate;
      const std::string who = esc(d.alternatives[static_cast<size_t>(alt)].name);
      const std::string base = esc(d.alternatives[static_cast<size_t>(d.baseline)].name);
      return "decided over " + std::to_string(dec.rounds) + " paired rounds: " + who + " against " + base + " <b>" +
             esc(ratio(e.ratio)) + "</b>" +
             (e.looked ? " (" + esc(ratio(e.lo)) + " to " + esc(ratio(e.hi)) + ")" : "") + ", <b>" +
             esc(verdict_text(d, dec)) + "</b> at a " + fixed(d.settings.margin * 100, 0) + "% margin";
    }
  return "";
}

std::string decision_section(const RunResult& run) {
  if (!run.decide) return "";
  const DecideResult& d = *run.decide;
  std::vector<std::string> lines = decision_lines(d, false);
  std::string s = "<h3>" + esc(run.label) + ": " + esc(lines[0]) + "</h3>\n<div class=\"charts\">" + forest_plot(d) +
                  "</div>\n<ul class=\"verdicts\">";
  for (size_t i = 1; i < lines.size(); ++i) s += "<li>" + esc(lines[i]) + "</li>";
  return s + "</ul>\n";
}

}  // namespace mw::html
