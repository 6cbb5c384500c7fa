// Faster, slower or no significant difference: one job of two result files.
#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>

#include "api/adapter.h"
#include "report/gate.h"
#include "report/report.h"
#include "util/stats.h"

namespace mw {

namespace {

// The runs that ran (a set-up failure has no figure).
std::vector<const JobResult*> runs_of(const JobResult& j) {
  std::vector<const JobResult*> out;
  if (j.repeats.empty()) out.push_back(&j);
  for (auto& r : j.repeats) out.push_back(&r);
  std::erase_if(out, [](const JobResult* r) { return !ran(*r); });
  return out;
}

bool all_positive(const std::vector<double>& v) {
  return std::all_of(v.begin(), v.end(), [](double x) { return x > 0; });
}

}  // namespace

std::vector<double> rps_runs(const JobResult& j) {
  std::vector<double> out;
  for (auto* r : runs_of(j)) out.push_back(r->rps);
  return out;
}

std::vector<double> p99_runs(const JobResult& j) {
  std::vector<double> out;
  for (auto* r : runs_of(j))
    if (r->latency && r->latency->count() > 0) out.push_back(latency_at(*r, 99));
  return out;
}

Comparison judge(const std::vector<double>& base, const std::vector<double>& now, bool higher_is_better) {
  Comparison c;
  c.runs_base = base.size();
  c.runs_new = now.size();
  if (base.empty() || now.empty()) return c;
  double mb = median(base), mn = median(now);
  c.ratio = mb > 0 ? mn / mb : 0;
  auto worse = [&](double ratio) { return higher_is_better ? ratio < 1 : ratio > 1; };
  if (base.size() >= kMinSignificanceRuns && now.size() >= kMinSignificanceRuns && all_positive(base) &&
      all_positive(now)) {
    c.method = Comparison::Method::MannWhitney;
    Shift r = ratio_estimate(base, now, kConfidence);
    c.ratio = r.estimate;
    c.lo = r.lo;
    c.hi = r.hi;
    c.p = mann_whitney(base, now).p;
    if (*c.p >= kSignificance || r.estimate == 1)
      c.kind = Comparison::Kind::Same;
    else
      c.kind = worse(r.estimate) ? Comparison::Kind::Slower : Comparison::Kind::Faster;
    return c;
  }
  if (base.size() < 2 || now.size() < 2) return c;  // one run: no spread to judge by
  c.method = Comparison::Method::MinMax;
  auto [blo, bhi] = std::minmax_element(base.begin(), base.end());
  auto [nlo, nhi] = std::minmax_element(now.begin(), now.end());
  if (*nlo <= *bhi && *blo <= *nhi)
    c.kind = Comparison::Kind::Same;
  else
    c.kind = worse(*nhi < *blo ? 0.5 : 2.0) ? Comparison::Kind::Slower : Comparison::Kind::Faster;
  return c;
}

Comparison judge_rps(const JobResult& base, const JobResult& now) {
  Comparison c = judge(rps_runs(base), rps_runs(now), true);
  if (c.method != Comparison::Method::MannWhitney && base.rps > 0) c.ratio = now.rps / base.rps;  // the median runs'
  return c;
}

Comparison judge_p99(const JobResult& base, const JobResult& now) {
  Comparison c = judge(p99_runs(base), p99_runs(now), false);
  if (c.method != Comparison::Method::MannWhitney && base.latency && now.latency && latency_at(base, 99) > 0)
    c.ratio = latency_at(now, 99) / latency_at(base, 99);
  return c;
}

std::string verdict_word(const Comparison& v) {
  switch (v.kind) {
    case Comparison::Kind::Faster: return "faster";
    case Comparison::Kind::Slower: return "slower";
    case Comparison::Kind::Same: return "no significant difference";
    case Comparison::Kind::Unknown: break;
  }
  return "-";
}

std::string p_text(double p) { return p < 0.0001 ? "<0.0001" : fmt(p, 4); }

double parse_threshold(const std::string& text, const std::string& option, double below) {
  std::string t = text;
  if (!t.empty() && t.back() == '%') t.pop_back();
  char* end = nullptr;
  errno = 0;
  double v = std::strtod(t.c_str(), &end);
  if (t.empty() || *end || errno == ERANGE || !std::isfinite(v) || v <= 0 || v > 1000)
    throw SetupError(option + " expects a percentage above 0 and up to 1000% (10%), got '" + text + "'");
  if (v >= below * 100)
    throw SetupError(option + " expects a percentage below " + fmt(below * 100, 0) +
                     "% (req/s cannot fall by that much: a gate that cannot fail), got '" + text + "'");
  return v / 100;
}

}  // namespace mw
