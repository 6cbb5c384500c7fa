#include "results/slo.h"

#include <cerrno>
#include <cmath>
#include <cstdlib>

#include "api/job.h"
#include "results/result.h"
#include "results/writer.h"
#include "util/text.h"

namespace mw {

namespace {

constexpr size_t kMaxSloText = 1000;
const char* const kLatencies[] = {"min", "mean", "p50", "p90", "p99", "p999", "max"};

bool is_latency(const std::string& m) {
  for (const char* l : kLatencies)
    if (m == l) return true;
  return false;
}

std::string trim(const std::string& s) {
  size_t a = s.find_first_not_of(" \t"), b = s.find_last_not_of(" \t");
  return a == std::string::npos ? "" : s.substr(a, b - a + 1);
}

// A number followed by one of `units` (name, factor); "" in units means no unit is allowed. The
// value in the base unit is at most `most` (`most_text` says it): a bound beyond anything measured
// (a latency over the histogram's hour, 1e300s) would be written to the result as no number.
double number_with_unit(const std::string& text, const std::vector<std::pair<std::string, double>>& units,
                        const std::string& term, const std::string& expected, double most,
                        const std::string& most_text) {
  char* end = nullptr;
  errno = 0;
  double v = std::strtod(text.c_str(), &end);
  if (end == text.c_str() || errno == ERANGE || !std::isfinite(v) || v < 0)
    throw SetupError("'" + term + "': expected " + expected);
  std::string unit = trim(end);
  for (auto& [u, factor] : units)
    if (unit == u) {
      if (!(v * factor <= most)) throw SetupError("'" + term + "': at most " + most_text);
      return v * factor;
    }
  throw SetupError("'" + term + "': expected " + expected);
}

constexpr double kMostRate = 1e15;  // a result file's largest figure (results.cpp's kMaxFigure)

bool holds(double v, SloTerm::Op op, double want) {
  switch (op) {
    case SloTerm::Op::Lt: return v < want;
    case SloTerm::Op::Le: return v <= want;
    case SloTerm::Op::Gt: return v > want;
    case SloTerm::Op::Ge: return v >= want;
    case SloTerm::Op::Eq: return v == want;
  }
  return false;
}

}  // namespace

std::vector<SloTerm> parse_slo(const std::string& spec) {
  if (spec.size() > kMaxSloText)
    throw SetupError(std::to_string(spec.size()) + " characters; at most " + std::to_string(kMaxSloText));
  std::vector<SloTerm> out;
  for (const std::string& raw : split_list(spec)) {
    std::string term = trim(raw);
    std::string shown = printable(term);
    size_t at = term.find_first_of("<>=");
    if (at == std::string::npos)
      throw SetupError("'" + shown + "': expected METRIC OP VALUE with OP one of < <= > >= = (p99<2ms)");
    SloTerm t;
    t.text = term;
    t.metric = trim(term.substr(0, at));
    size_t len = 1;
    char c = term[at];
    bool eq_next = at + 1 < term.size() && term[at + 1] == '=';
    if (c == '<')
      t.op = eq_next ? SloTerm::Op::Le : SloTerm::Op::Lt;
    else if (c == '>')
      t.op = eq_next ? SloTerm::Op::Ge : SloTerm::Op::Gt;
    else
      t.op = SloTerm::Op::Eq;
    if (eq_next) len = 2;
    std::string value = trim(term.substr(at + len));
    if (value.empty() || value.find_first_of("<>=") != std::string::npos)
      throw SetupError("'" + shown + "': expected METRIC OP VALUE with OP one of < <= > >= = (p99<2ms)");
    if (is_latency(t.metric)) {
      t.value = number_with_unit(value, {{"ns", 1}, {"us", 1e3}, {"ms", 1e6}, {"s", 1e9}}, shown,
                                 "a latency with a unit: ns, us, ms or s (2ms)",
                                 static_cast<double>(Histogram::kMaxValue), "3600s (the longest latency measured)");
    } else if (t.metric == "rps") {
      t.value = number_with_unit(value, {{"", 1}, {"k", 1e3}, {"M", 1e6}, {"G", 1e9}}, shown,
                                 "req/s as a number (10000, 10k, 1.5M)", kMostRate, "1e15 req/s");
    } else if (t.metric == "mbps") {
      t.value = number_with_unit(value, {{"", 1}}, shown, "MB/s as a number (250)", kMostRate, "1e15 MB/s");
    } else if (t.metric == "errors") {
      t.percent = value.back() == '%';
      t.value = number_with_unit(value, {{"", 1}, {"%", 0.01}}, shown, "a count of failed ops (0) or a share (0.1%)",
                                 kMostRate, "1e15 ops");
      if (!t.percent && t.value != std::floor(t.value))
        throw SetupError("'" + shown + "': expected a whole count of failed ops (0) or a share (0.1%)");
      if (t.percent && t.value > 1) throw SetupError("'" + shown + "': a share of failed ops is at most 100% (0.1%)");
    } else {
      throw SetupError("'" + shown + "': unknown metric '" + printable(t.metric) +
                       "'; expected rps, mbps, errors, min, mean, p50, p90, p99, p999 or max");
    }
    if (t.op == SloTerm::Op::Lt && t.value == 0)
      throw SetupError("'" + shown + "': can never hold (no figure is below 0)");
    out.push_back(t);
  }
  if (out.empty()) throw SetupError("empty; expected terms METRIC OP VALUE (p99<2ms,rps>10000,errors=0)");
  return out;
}

double slo_latency_bound(const SloTerm& t) {
  return is_latency(t.metric) && (t.op == SloTerm::Op::Lt || t.op == SloTerm::Op::Le) ? t.value : 0;
}

bool SloOutcome::violated(const std::string& metric) const {
  for (auto& v : violations)
    if (v.metric == metric) return true;
  return false;
}

SloOutcome check_slo(const std::string& spec, const JobResult& j) {
  SloOutcome out;
  out.spec = spec;
  if (spec.empty()) return out;
  if (j.state == JobResult::State::Skipped || j.state == JobResult::State::SetupFailed) return out;
  out.checked = true;
  uint64_t failed = 0, total = 0;
  auto count = [&](const JobResult& r) {
    failed += r.ops_failed + r.ops_not_run;
    total += r.ops_ok + r.ops_failed + r.ops_not_run;
  };
  if (j.repeats.empty()) count(j);
  for (auto& r : j.repeats) count(r);
  for (const SloTerm& t : parse_slo(spec)) {
    double v = 0;
    std::string shown;
    if (is_latency(t.metric)) {
      const Histogram* h = j.latency.get();
      if (!h || !h->count()) {  // no successful op: no latency meets an objective
        out.violations.push_back({t.metric, t.metric + ": no successful op, wanted " + t.text});
        continue;
      }
      if (t.metric == "min")
        v = static_cast<double>(h->min());
      else if (t.metric == "mean")
        v = h->mean();
      else if (t.metric == "max")
        v = static_cast<double>(h->max());
      else
        v = static_cast<double>(h->percentile(t.metric == "p50"   ? 50
                                              : t.metric == "p90" ? 90
                                              : t.metric == "p99" ? 99
                                                                  : 99.9));
      shown = fmt(v / 1e6, 3) + " ms";
    } else if (t.metric == "rps") {
      v = j.rps;
      shown = fmt(v, 1);
    } else if (t.metric == "mbps") {
      v = j.mbps();
      shown = fmt(v, 2);
    } else if (t.percent) {
      v = total ? static_cast<double>(failed) / static_cast<double>(total) : 0;
      shown = fmt(v * 100, 3) + "%";
    } else {
      v = static_cast<double>(failed);
      shown = std::to_string(failed);
    }
    if (!holds(v, t.op, t.value)) out.violations.push_back({t.metric, t.metric + " " + shown + ", wanted " + t.text});
  }
  out.passed = out.violations.empty();
  return out;
}

}  // namespace mw
