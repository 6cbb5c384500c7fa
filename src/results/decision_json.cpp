// A decision in the result file, and read back: the top-level "decide" (what was asked, the
// alternatives, every round) and one "decision" object per compared alternative (jobs[].decision
// for jobs, the top-level "decisions" for `mwbench decide`). What is written is what is read.
#include <cmath>
#include <nlohmann/json.hpp>

#include "results/decision_json.h"
#include "util/status.h"
#include "util/text.h"

namespace mw {

using nlohmann::json;

namespace {

json pair_of(double lo, double hi) { return json::array({lo, hi}); }

json located_json(const decide::Located& l) {
  return {{"estimate", l.estimate}, {"ci", pair_of(l.lo, l.hi)}, {"achieved", l.achieved}, {"exact", l.exact}};
}

json run_json(const DecisionRun& r) {
  json o = {{"ok", r.ok},
            {"value", r.value},
            {"wall_s", r.wall_s},
            {"steal", r.steal},
            {"client_bound", r.client_bound},
            {"cpu_self", r.cpu_self},
            {"cpu_servers", r.cpu_servers}};
  if (!r.why.empty()) o["why"] = r.why;
  return o;
}

}  // namespace

json decide_json(const DecideResult& r) {
  json alts = json::array(), rounds = json::array();
  for (const Alternative& a : r.alternatives)
    alts.push_back({{"label", a.label}, {"name", a.name}, {"reset", a.reset}, {"job", a.job}});
  for (const DecisionRound& k : r.rounds) {
    json runs = json::array();
    for (const DecisionRun& x : k.runs) runs.push_back(run_json(x));
    rounds.push_back({{"order", k.order}, {"runs", runs}});
  }
  return {{"metric", r.metric},
          {"pattern", r.pattern},
          {"higher_is_better", r.higher_is_better},
          {"margin", r.settings.margin},
          {"alpha", r.settings.alpha},
          {"min_rounds", r.settings.min_rounds},
          {"max_rounds", r.settings.max_rounds},
          {"max_time_s", r.max_time_s},
          {"baseline", r.baseline},
          {"stopped", r.stopped},
          {"stop_detail", r.stop_detail},
          {"elapsed_s", r.elapsed_s},
          {"seed", r.seed},
          {"method", decision_method(r)},
          {"alternatives", alts},
          {"rounds", rounds}};
}

json decision_json(const DecideResult& r, const Decision& d) {
  const decide::Estimate& e = d.estimate;
  const DecisionDiagnostics& g = d.diagnostics;
  const Alternative& a = r.alternatives.at(static_cast<size_t>(d.alternative));
  const Alternative& b = r.alternatives.at(static_cast<size_t>(r.baseline));
  json asked = json::array();
  for (const Asked& q : d.asked)
    asked.push_back(
        {{"question", a.label + decide::question_text(q.question)}, {"outcome", decide::outcome_name(q.outcome)}});
  json o = {{"alternative", a.label},
            {"name", a.name},
            {"baseline", b.name},
            {"baseline_label", b.label},
            {"metric", r.metric},
            {"margin", r.settings.margin},
            {"verdict", decide::verdict_name(e.verdict)},
            {"ratio", e.ratio},
            {"ci", pair_of(e.lo, e.hi)},
            {"ci90", pair_of(e.lo90, e.hi90)},
            {"looked", e.looked},
            {"level", e.level},
            {"mean_d", e.mean},
            {"rounds", d.rounds},
            {"rounds_failed", d.rounds_failed},
            {"rounds_needed", e.rounds_needed},
            {"method", decision_method(r)},
            {"questions", asked},
            {"diagnostics",
             {{"sd_d", g.sd_d},
              {"cov", g.cov},
              {"cov_baseline", g.cov_baseline},
              {"ratio_first", g.ratio_first},
              {"ratio_second", g.ratio_second},
              {"rounds_first", g.rounds_first},
              {"rounds_second", g.rounds_second},
              {"trend", g.trend},
              {"steal_max", g.steal_max},
              {"steal_apart", g.steal_apart},
              {"client_bound", g.client_bound},
              {"cpu_self", g.cpu_self},
              {"cpu_servers", g.cpu_servers},
              {"cpu_self_baseline", g.cpu_self_baseline},
              {"cpu_servers_baseline", g.cpu_servers_baseline}}}};
  if (e.robust)
    o["robust"] = {{"method", "Hodges-Lehmann, Wilcoxon signed-rank interval"},
                   {"hl", located_json(e.hl)},
                   {"hl90", located_json(e.hl90)},
                   {"verdict", decide::verdict_name(e.robust_verdict)},
                   {"disagree", e.disagree}};
  return o;
}

namespace {

// The checks of the fields read: each failure one SetupError "LABEL: where: what".
class Fields {
 public:
  explicit Fields(std::string label) : label_(std::move(label)) {}
  [[noreturn]] void fail(const std::string& where, const std::string& what) const {
    throw SetupError(label_ + ": " + where + ": " + what);
  }
  const json& at(const json& o, const char* key, const std::string& where) const {
    if (!o.is_object()) fail(where, std::string("expected an object, got ") + o.type_name());
    auto it = o.find(key);
    if (it == o.end()) fail(where, std::string("missing \"") + key + "\"");
    return *it;
  }
  const json& array(const json& o, const char* key, const std::string& where) const {
    const json& v = at(o, key, where);
    if (!v.is_array()) fail(where + "." + key, std::string("expected an array, got ") + v.type_name());
    return v;
  }
  double number(const json& o, const char* key, const std::string& where, double lo = -1, double hi = 1e15) const {
    const json& v = at(o, key, where);
    if (!v.is_number() || !std::isfinite(v.get<double>()) || v.get<double>() < lo || v.get<double>() > hi)
      fail(where + "." + key, "expected a number from " + fmt(lo, 0) + " to " + fmt(hi, 0));
    return v.get<double>();
  }
  int whole(const json& o, const char* key, const std::string& where, int lo, int hi) const {
    const json& v = at(o, key, where);
    if (!v.is_number_integer() || v.get<int64_t>() < lo || v.get<int64_t>() > hi)
      fail(where + "." + key, "expected a whole number from " + std::to_string(lo) + " to " + std::to_string(hi));
    return static_cast<int>(v.get<int64_t>());
  }
  bool boolean(const json& o, const char* key, const std::string& where) const {
    const json& v = at(o, key, where);
    if (!v.is_boolean()) fail(where + "." + key, "expected true or false");
    return v.get<bool>();
  }
  std::string string(const json& o, const char* key, const std::string& where) const {
    const json& v = at(o, key, where);
    if (!v.is_string()) fail(where + "." + key, "expected a string");
    return v.get<std::string>();
  }
  std::pair<double, double> pair(const json& o, const char* key, const std::string& where) const {
    const json& v = array(o, key, where);
    if (v.size() != 2 || !v[0].is_number() || !v[1].is_number() || v[0].get<double>() > v[1].get<double>())
      fail(where + "." + key, "expected [low, high]");
    return {v[0].get<double>(), v[1].get<double>()};
  }

 private:
  std::string label_;
};

decide::Located located(const Fields& f, const json& o, const std::string& w) {
  decide::Located l;
  l.estimate = f.number(o, "estimate", w, 0);
  std::tie(l.lo, l.hi) = f.pair(o, "ci", w);
  l.achieved = f.number(o, "achieved", w, 0, 1);
  l.exact = f.boolean(o, "exact", w);
  return l;
}

decide::Verdict verdict(const Fields& f, const json& o, const std::string& w) {
  const std::string v = f.string(o, "verdict", w);
  std::optional<decide::Verdict> k = decide::parse_verdict(v);
  if (!k) f.fail(w + ".verdict", "'" + printable(v.substr(0, 40)) + "' is not a verdict of a decision");
  return *k;
}

Decision decision(const Fields& f, const json& o, const std::string& w, const DecideResult& r) {
  Decision d;
  const std::string label = f.string(o, "alternative", w);
  for (size_t i = 0; i < r.alternatives.size(); ++i)
    if (r.alternatives[i].label == label) d.alternative = static_cast<int>(i);
  if (r.alternatives.empty() || r.alternatives[static_cast<size_t>(d.alternative)].label != label)
    f.fail(w + ".alternative", "'" + printable(label.substr(0, 40)) + "' is not one of decide.alternatives");
  if (d.alternative == r.baseline) f.fail(w + ".alternative", "the baseline is not decided against itself");
  decide::Estimate& e = d.estimate;
  e.verdict = verdict(f, o, w);
  e.ratio = f.number(o, "ratio", w, 0);
  std::tie(e.lo, e.hi) = f.pair(o, "ci", w);
  std::tie(e.lo90, e.hi90) = f.pair(o, "ci90", w);
  e.looked = f.boolean(o, "looked", w);
  e.level = f.number(o, "level", w, 0, 1);
  e.mean = f.number(o, "mean_d", w, -1e3, 1e3);
  d.rounds = f.whole(o, "rounds", w, 0, 1 << 30);
  d.rounds_failed = f.whole(o, "rounds_failed", w, 0, 1 << 30);
  e.n = d.rounds;
  e.rounds_needed = f.whole(o, "rounds_needed", w, 0, 1 << 30);
  const json& qs = f.array(o, "questions", w);
  for (size_t i = 0; i < qs.size(); ++i) {
    const std::string qw = w + ".questions[" + std::to_string(i) + "]";
    const std::string text = f.string(qs[i], "question", qw);
    Asked a;
    try {
      a.question = decide::parse_expect(text).second;
    } catch (const SetupError&) {
      f.fail(qw + ".question", "'" + printable(text.substr(0, 40)) + "' is not a question (B>=1.05)");
    }
    const std::string outcome = f.string(qs[i], "outcome", qw);
    std::optional<decide::Outcome> k = decide::parse_outcome(outcome);
    if (!k) f.fail(qw + ".outcome", "'" + printable(outcome.substr(0, 40)) + "' is not met, failed or undecided");
    a.outcome = *k;
    d.asked.push_back(a);
  }
  const std::string gw = w + ".diagnostics";
  const json& g = f.at(o, "diagnostics", w);
  DecisionDiagnostics& x = d.diagnostics;
  x.sd_d = f.number(g, "sd_d", gw, 0);
  e.sd = x.sd_d;
  x.cov = f.number(g, "cov", gw, 0), x.cov_baseline = f.number(g, "cov_baseline", gw, 0);
  x.ratio_first = f.number(g, "ratio_first", gw, 0), x.ratio_second = f.number(g, "ratio_second", gw, 0);
  x.rounds_first = f.whole(g, "rounds_first", gw, 0, 1 << 30),
  x.rounds_second = f.whole(g, "rounds_second", gw, 0, 1 << 30);
  x.trend = f.number(g, "trend", gw, -1e3, 1e3);
  x.steal_max = f.number(g, "steal_max", gw, -1, 1);
  for (const char* key : {"steal_apart", "client_bound"}) {
    std::vector<int>& into = std::string(key) == "steal_apart" ? x.steal_apart : x.client_bound;
    const json& v = f.array(g, key, gw);
    for (size_t i = 0; i < v.size(); ++i) {
      if (!v[i].is_number_integer() || v[i].get<int64_t>() < 1 || v[i].get<int64_t>() > (1 << 30))
        f.fail(gw + "." + key, "expected round numbers from 1");
      into.push_back(static_cast<int>(v[i].get<int64_t>()));
    }
  }
  x.cpu_self = f.number(g, "cpu_self", gw), x.cpu_servers = f.number(g, "cpu_servers", gw);
  x.cpu_self_baseline = f.number(g, "cpu_self_baseline", gw);
  x.cpu_servers_baseline = f.number(g, "cpu_servers_baseline", gw);
  if (o.contains("robust")) {
    const std::string rw = w + ".robust";
    const json& rb = f.at(o, "robust", w);
    e.robust = true;
    e.hl = located(f, f.at(rb, "hl", rw), rw + ".hl");
    e.hl90 = located(f, f.at(rb, "hl90", rw), rw + ".hl90");
    e.robust_verdict = verdict(f, rb, rw);
    e.disagree = f.boolean(rb, "disagree", rw);
  }
  return d;
}

}  // namespace

DecideResult read_decide(const json& v, const std::vector<const json*>& decisions, const std::string& label) {
  Fields f(printable(label));
  const std::string w = "decide";
  DecideResult r;
  r.metric = f.string(v, "metric", w);
  r.pattern = f.string(v, "pattern", w);
  r.higher_is_better = f.boolean(v, "higher_is_better", w);
  r.settings.margin = f.number(v, "margin", w, 0, 1);
  r.settings.alpha = f.number(v, "alpha", w, 0, 0.5);
  r.settings.min_rounds = f.whole(v, "min_rounds", w, 2, decide::kMaxRounds);
  r.settings.max_rounds = f.whole(v, "max_rounds", w, r.settings.min_rounds, decide::kMaxRounds);
  r.max_time_s = f.number(v, "max_time_s", w, 0);
  r.stopped = f.string(v, "stopped", w);
  r.stop_detail = f.string(v, "stop_detail", w);
  r.elapsed_s = f.number(v, "elapsed_s", w, 0);
  const json& seed = f.at(v, "seed", w);
  if (!seed.is_number_unsigned() && !(seed.is_number_integer() && seed.get<int64_t>() >= 0))
    f.fail(w + ".seed", "expected a whole number");
  r.seed = seed.get<uint64_t>();
  const json& alts = f.array(v, "alternatives", w);
  if (alts.size() < 2 || alts.size() > 1000) f.fail(w + ".alternatives", "expected 2 to 1000 alternatives");
  for (size_t i = 0; i < alts.size(); ++i) {
    const std::string aw = w + ".alternatives[" + std::to_string(i) + "]";
    r.alternatives.push_back({f.string(alts[i], "label", aw), f.string(alts[i], "name", aw),
                              f.string(alts[i], "reset", aw), f.whole(alts[i], "job", aw, -1, 1 << 30)});
  }
  const int k = static_cast<int>(r.alternatives.size());
  r.baseline = f.whole(v, "baseline", w, 0, k - 1);
  const json& rounds = f.array(v, "rounds", w);
  if (rounds.size() > static_cast<size_t>(decide::kMaxRounds))
    f.fail(w + ".rounds", "more rounds than a decision runs");
  for (size_t i = 0; i < rounds.size(); ++i) {
    const std::string rw = w + ".rounds[" + std::to_string(i) + "]";
    DecisionRound round;
    const json& order = f.array(rounds[i], "order", rw);
    for (auto& x : order) {
      if (!x.is_number_integer() || x.get<int64_t>() < 0 || x.get<int64_t>() >= k)
        f.fail(rw + ".order", "expected alternatives' indices");
      round.order.push_back(static_cast<int>(x.get<int64_t>()));
    }
    const json& runs = f.array(rounds[i], "runs", rw);
    if (runs.size() != static_cast<size_t>(k)) f.fail(rw + ".runs", "expected a run per alternative");
    for (size_t a = 0; a < runs.size(); ++a) {
      const std::string xw = rw + ".runs[" + std::to_string(a) + "]";
      DecisionRun x;
      x.ok = f.boolean(runs[a], "ok", xw);
      x.value = f.number(runs[a], "value", xw, -1e15);
      x.wall_s = f.number(runs[a], "wall_s", xw, 0);
      x.steal = f.number(runs[a], "steal", xw, -1, 1);
      x.client_bound = f.boolean(runs[a], "client_bound", xw);
      x.cpu_self = f.number(runs[a], "cpu_self", xw);
      x.cpu_servers = f.number(runs[a], "cpu_servers", xw);
      if (runs[a].contains("why")) x.why = f.string(runs[a], "why", xw);
      round.runs.push_back(std::move(x));
    }
    r.rounds.push_back(std::move(round));
  }
  r.questions.assign(r.alternatives.size(), {});
  for (size_t i = 0; i < decisions.size(); ++i) {
    Decision d = decision(f, *decisions[i], "decisions[" + std::to_string(i) + "]", r);
    for (const Asked& a : d.asked) r.questions[static_cast<size_t>(d.alternative)].push_back(a.question);
    r.decisions.push_back(std::move(d));
  }
  return r;
}

}  // namespace mw
