#include "results/decision.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "util/text.h"

namespace mw {

namespace {

double mean_of(const std::vector<double>& v) {
  return v.empty() ? 0 : std::accumulate(v.begin(), v.end(), 0.0) / static_cast<double>(v.size());
}

// The coefficient of variation of v (sd with n - 1 over the mean); 0 with fewer than 2.
double cov_of(const std::vector<double>& v) {
  if (v.size() < 2) return 0;
  const double m = mean_of(v);
  double ss = 0;
  for (double x : v) ss += (x - m) * (x - m);
  return m > 0 ? std::sqrt(ss / static_cast<double>(v.size() - 1)) / m : 0;
}

// The mean of the figures that were read (>= 0), or -1 when none was.
double mean_read(const std::vector<double>& v) {
  std::vector<double> read;
  for (double x : v)
    if (x >= 0) read.push_back(x);
  return read.empty() ? -1 : mean_of(read);
}

int position(const std::vector<int>& order, int alternative) {
  auto it = std::find(order.begin(), order.end(), alternative);
  return it == order.end() ? -1 : static_cast<int>(it - order.begin());
}

Decision decide_one(const DecideResult& r, int a, const decide::Schedule& s) {
  Decision dec;
  dec.alternative = a;
  DecisionDiagnostics& g = dec.diagnostics;
  std::vector<double> d, xs, bs, first, second, self, servers, self_b, servers_b;
  for (size_t k = 0; k < r.rounds.size(); ++k) {
    const DecisionRound& round = r.rounds[k];
    if (static_cast<size_t>(std::max(a, r.baseline)) >= round.runs.size()) continue;
    const DecisionRun& x = round.runs[static_cast<size_t>(a)];
    const DecisionRun& b = round.runs[static_cast<size_t>(r.baseline)];
    const int round_no = static_cast<int>(k) + 1;
    if (x.steal >= 0 || b.steal >= 0) g.steal_max = std::max({g.steal_max, x.steal, b.steal});
    if (x.steal >= 0 && b.steal >= 0 && std::fabs(x.steal - b.steal) >= kStealApart) g.steal_apart.push_back(round_no);
    if (x.client_bound || b.client_bound) g.client_bound.push_back(round_no);
    if (!x.ok || !b.ok || !(x.value > 0) || !(b.value > 0)) {
      ++dec.rounds_failed;
      continue;
    }
    const double one = r.higher_is_better ? std::log(x.value / b.value) : std::log(b.value / x.value);
    d.push_back(one);
    xs.push_back(x.value), bs.push_back(b.value);
    (position(round.order, a) < position(round.order, r.baseline) ? first : second).push_back(one);
    self.push_back(x.cpu_self), servers.push_back(x.cpu_servers);
    self_b.push_back(b.cpu_self), servers_b.push_back(b.cpu_servers);
  }
  dec.rounds = static_cast<int>(d.size());
  dec.estimate = decide::estimate(d, s);
  if (static_cast<size_t>(a) < r.questions.size())
    for (const decide::Question& q : r.questions[static_cast<size_t>(a)])
      dec.asked.push_back({q, decide::answer(dec.estimate, q)});
  g.sd_d = dec.estimate.sd;
  g.cov = cov_of(xs), g.cov_baseline = cov_of(bs);
  g.rounds_first = static_cast<int>(first.size()), g.rounds_second = static_cast<int>(second.size());
  g.ratio_first = first.empty() ? 0 : std::exp(mean_of(first));
  g.ratio_second = second.empty() ? 0 : std::exp(mean_of(second));
  g.trend = decide::slope(d);
  g.cpu_self = mean_read(self), g.cpu_servers = mean_read(servers);
  g.cpu_self_baseline = mean_read(self_b), g.cpu_servers_baseline = mean_read(servers_b);
  return dec;
}

}  // namespace

std::string decision_method(const DecideResult& r) {
  const decide::Settings& s = r.settings;
  return "paired rounds in a balanced random order; per round d = ln(alternative / baseline)" +
         std::string(r.higher_is_better ? "" : " turned round (lower is better)") +
         "; the geometric-mean ratio exp(mean d) with repeated " + fmt(100 * (1 - s.alpha), 0) +
         "% t intervals (group-sequential, Lan-DeMets Pocock-type alpha spending over looks at rounds " +
         std::to_string(s.min_rounds) + "-" + std::to_string(s.max_rounds) + "); equivalence: the " +
         fmt(100 * (1 - 2 * s.alpha), 0) +
         "% interval inside the margin (TOST); robust check: Hodges-Lehmann with "
         "the Wilcoxon signed-rank interval at the same level";
}

void decide_rounds(DecideResult& r, const decide::Schedule& s) {
  r.decisions.clear();
  for (int a = 0; a < static_cast<int>(r.alternatives.size()); ++a)
    if (a != r.baseline) r.decisions.push_back(decide_one(r, a, s));
}

bool all_settled(const DecideResult& r) {
  for (const Decision& d : r.decisions) {
    std::vector<decide::Question> qs;
    for (const Asked& a : d.asked) qs.push_back(a.question);
    if (!decide::settled(d.estimate, qs)) return false;
  }
  return !r.decisions.empty();
}

std::string stop_text(const DecideResult& r) {
  if (r.stopped == "decided") return "every alternative decided";
  if (r.stopped == "max-rounds") return "--max-rounds " + std::to_string(r.settings.max_rounds) + " reached";
  if (r.stopped == "max-time") return "--max-time " + fmt(r.max_time_s, 0) + " s reached";
  if (r.stopped == "interrupted") return "interrupted";
  if (r.stopped == "failed")  // its first line: the output lines a detail may show go to stderr
    return "stopped: " + r.stop_detail.substr(0, r.stop_detail.find('\n'));
  return r.stopped;
}

}  // namespace mw
