// The report's text: a verdict per group, every job in one sortable table, a workload's
// adapters side by side, and each file's context. Numbers right-aligned, with their units.
#include <algorithm>
#include <cmath>

#include "report/html_model.h"
#include "results/notes.h"
#include "results/writer.h"
#include "util/redact.h"
#include "util/text.h"

namespace mw::html {

namespace {

constexpr double kLevel = 1.03;  // the fastest by less than this is "level with" the next

std::string figure_text(const JobResult& j) {
  std::string s = rate(j.rps) + " req/s";
  if (j.latency && j.latency->count()) s += ", p99 " + duration_ns(latency_at(j, 99));
  return s;
}

std::string trouble(const Entry& e) {
  const JobResult& j = *e.job;
  std::string who = "<b>" + esc(e.name) + "</b>";
  if (!e.drawn())
    return who + " " + esc(j.state == JobResult::State::Skipped ? "skipped" : "set-up failed") +
           (j.message.empty() ? "" : ": " + esc(j.message));
  uint64_t failed = j.ops_failed, not_run = j.ops_not_run;
  for (auto& r : j.repeats) failed += r.ops_failed, not_run += r.ops_not_run;
  std::string mark = failure_mark(j);
  if (mark == "unverified") return who + " unverified" + (j.verify.detail.empty() ? "" : ": " + esc(j.verify.detail));
  if (mark.empty()) return who + " " + esc(state_name(j.state));  // interrupted
  return who + " FAILED (" + std::to_string(failed) + " failed, " + std::to_string(not_run) + " not run)";
}

// A numeric cell: data-v is what the table sorts by ("" sorts last either way).
std::string num_cell(double v, const std::string& shown, const std::string& unit, const std::string& extra = "") {
  return "<td class=\"num\" data-v=\"" + fixed(v, 3) + "\">" + extra + shown +
         (unit.empty() ? "" : "<span class=\"u\"> " + unit + "</span>") + "</td>";
}
std::string empty_cell(const std::string& shown = "\xE2\x80\x93") {
  return "<td class=\"num\" data-v=\"\">" + shown + "</td>";
}
std::string latency_cell(const JobResult& j, double p) {
  if (!ran(j) || !j.latency || !j.latency->count()) return empty_cell();
  double ns = latency_at(j, p);
  return "<td class=\"num\" data-v=\"" + fixed(ns, 0) + "\">" + esc(duration_ns(ns)) + "</td>";
}

}  // namespace

namespace {

// The ranking's sentence: the fastest, against the next (decided, within noise, or a ratio) and
// the slowest.
std::string ranking_text(const Page& page, const Group& g, const Verdict& v) {
  if (v.ranked.empty()) return "no figure to rank.";
  if (v.ranked.size() == 1) {
    const std::string& name = v.ranked[0]->name;  // (a group of one job is named after it)
    return (name == g.title ? "" : "<b>" + esc(name) + "</b>: ") + esc(figure_text(*v.ranked[0]->job)) +
           (v.ranked.size() + v.baseline.size() < g.entries.size() ? "; the only good figure of the group."
                                                                   : "; nothing else to rank it against.");
  }
  const Entry& best = *v.ranked[0];
  const Entry& next = *v.ranked[1];
  const bool single =
      std::all_of(v.ranked.begin(), v.ranked.end(), [](const Entry* e) { return e->job->repeats.empty(); });
  std::string s = "<b class=\"best\">" + esc(best.name) + "</b> is fastest: " + esc(figure_text(*best.job));
  if (std::string decided = decided_between(page, best, next); !decided.empty()) {  // paired rounds say more
    s += "; " + decided;
  } else if (within_noise(*best.job, *next.job)) {
    s += "; <span class=\"noise\">within noise</span> of " + esc(next.name) + " (" + esc(figure_text(*next.job)) +
         "): their repeats' ranges overlap";
  } else if (next.job->rps > 0 && single) {  // one run each: a ratio, and no claim
    s += "; <b>" + esc(ratio(best.job->rps / next.job->rps)) + "</b> the req/s of " + esc(next.name) + " (" +
         esc(figure_text(*next.job)) + "): single runs, nothing decided (--decide decides)";
  } else if (next.job->rps > 0) {
    double x = best.job->rps / next.job->rps;  // under 3%: no claim (run with --repeat K to know)
    s += "; <b>" + esc(ratio(x)) + "</b> " + (x < kLevel ? "level with " : "faster than ") + esc(next.name) + " (" +
         esc(figure_text(*next.job)) + ")";
  }
  const Entry& last = *v.ranked.back();
  if (v.ranked.size() > 2 && last.job->rps > 0)
    s += "; " + esc(ratio(best.job->rps / last.job->rps)) +
         (single ? " the req/s of the slowest, " : " faster than the slowest, ") + esc(last.name) + " (" +
         esc(figure_text(*last.job)) + ")";
  return s + ".";
}

// Each later file against the first, over the jobs both ran well: the geometric mean of the ratios.
std::string files_text(const Page& page, const Group& g) {
  std::string s;
  for (size_t r = 1; r < page.runs.size(); ++r) {
    double logs = 0;
    int n = 0;
    for (size_t row : g.rows) {
      const Entry *a = nullptr, *b = nullptr;
      for (auto& e : g.entries) {
        if (e.row != row || !e.good()) continue;
        if (e.run == 0)
          a = &e;
        else if (e.run == r)
          b = &e;
      }
      if (a && b && a->job->rps > 0 && b->job->rps > 0) logs += std::log(b->job->rps / a->job->rps), ++n;
    }
    if (n)
      s += " " + esc(page.tags[r]) + " against " + esc(page.tags[0]) + ": <b>" + esc(ratio(std::exp(logs / n))) +
           "</b>" + (n > 1 ? " (geometric mean of " + std::to_string(n) + " jobs)" : "") + ".";
  }
  return s;
}

// What was not ranked (failed), not measured (the jobs skipped for one reason together), suspect.
std::string left_out_text(const Verdict& v) {
  std::string s;
  if (!v.failed.empty()) {
    s += " <span class=\"bad\">Not ranked: ";
    for (size_t i = 0; i < v.failed.size(); ++i) s += (i ? "; " : "") + trouble(*v.failed[i]);
    s += ".</span>";
  }
  if (!v.missing.empty()) {
    s += " <span class=\"skip\">Not measured: ";
    for (size_t i = 0; i < v.missing.size(); ++i) {
      const JobResult& j = *v.missing[i]->job;
      bool same_next = i + 1 < v.missing.size() && v.missing[i + 1]->job->state == j.state &&
                       v.missing[i + 1]->job->message == j.message;
      s += "<b>" + esc(v.missing[i]->name) + "</b>";
      if (same_next) {
        s += ", ";
        continue;
      }
      s += " " + esc(j.state == JobResult::State::Skipped ? "skipped" : "set-up failed") +
           (j.message.empty() ? "" : ": " + esc(j.message));
      if (i + 1 < v.missing.size()) s += "; ";
    }
    s += ".</span>";
  }
  if (!v.suspects.empty()) {
    s += " <span class=\"suspect\">Suspect: ";
    for (size_t i = 0; i < v.suspects.size(); ++i) s += (i ? "; " : "") + esc(v.suspects[i]);
    s += ".</span>";
  }
  return s;
}

}  // namespace

std::string verdict_item(const Page& page, const Group& g) {
  const Verdict v = verdict_of(page, g);
  std::string s = "<li class=\"verdict\"><a href=\"#" + g.id + "\">" + esc(g.title) + "</a>: ";
  s += ranking_text(page, g, v);
  std::string limits;  // what limited each ranked figure (its profile's verdict)
  for (auto* e : v.ranked)
    if (!e->job->profile.limited_by.empty())
      limits += std::string(limits.empty() ? " Limited by: " : "; ") + "<b>" + esc(e->name) + "</b> " +
                esc(e->job->profile.limited_by) + " (" + esc(e->job->profile.evidence) + ")";
  if (!limits.empty()) s += limits + ".";
  for (auto* e : v.baseline)
    s += " The driver alone (" + esc(e->name) + ", not ranked): " + esc(figure_text(*e->job)) + ".";
  s += files_text(page, g);
  s += left_out_text(v);
  return s + "</li>\n";
}

namespace {

// A job's durability contract in its row's note (the first file's), and a mark where it differs
// from the first file's (the same job) or from the group's first row (side-by-side settings).
template <class AddNote>
void contract_notes(size_t r, const JobResult* j, const JobResult* base, const JobResult*& group_base, AddNote add) {
  if (!j->contract) return;
  if (r == 0) add("contract: " + esc(contract_label(*j->contract)));
  const JobResult* other = r > 0 ? base : group_base;
  if (other && other != j)
    if (std::string d = contracts_differ(*other, *j); !d.empty())
      add("<span class=\"badge warn\">" + esc(d) + "</span>");
  if (r == 0 && !group_base) group_base = j;
}

}  // namespace

std::string results_table(const Page& page) {
  const auto& runs = page.runs;
  bool p50 = runs.size() == 1;  // several files: req/s, p99, failed and the ratio per file, and no more
  // Several files: a heading row of file names over each file's columns; the sortable headings below.
  std::string s = "<div class=\"wide\"><table class=\"results sortable\"><thead>";
  if (runs.size() > 1) {
    s += "<tr class=\"files\"><th colspan=\"2\"></th>";
    for (size_t r = 0; r < runs.size(); ++r)
      s += "<th class=\"file\" colspan=\"" + std::string(r > 0 ? "4" : "3") + "\" title=\"" + esc(runs[r].label) +
           "\">" + esc(page.tags[r]) + "</th>";
    s += "<th></th></tr>";
  }
  s += "<tr><th>group</th><th>job</th>";
  for (size_t r = 0; r < runs.size(); ++r) {
    s += std::string("<th class=\"num\">req/s</th>") + (p50 ? "<th class=\"num\">p50</th>" : "") +
         "<th class=\"num\">p99</th><th class=\"num\">failed</th>";
    if (r > 0) s += "<th class=\"num\" title=\"req/s against " + esc(page.tags[0]) + "\">ratio</th>";
  }
  s += "<th>note</th></tr></thead><tbody>\n";
  for (auto& g : page.groups) {
    const JobResult* group_base = nullptr;  // the group's first job with a contract, in the first run
    for (size_t row : g.rows) {
      std::string cells, note;
      bool any_failed = false, any_ran = false;
      const JobResult* base = nullptr;
      auto add_note = [&](const std::string& html) { note += (note.empty() ? "" : "<br>") + html; };
      for (size_t r = 0; r < runs.size(); ++r) {
        int i = page.rows[row].index[r];
        const JobResult* j = i < 0 ? nullptr : &runs[r].jobs[static_cast<size_t>(i)];
        if (r == 0) base = j;
        if (!j) {
          cells += empty_cell() + empty_cell() + empty_cell() + (p50 ? empty_cell() : "") + (r > 0 ? empty_cell() : "");
          continue;
        }
        std::string mark = ran(*j) ? failure_mark(*j) : "";
        any_failed |= !mark.empty() || j->state == JobResult::State::SetupFailed;
        any_ran |= ran(*j);
        if (ran(*j)) {
          std::string badge = mark.empty() ? "" : "<span class=\"badge bad\">" + mark + "</span> ";
          cells += num_cell(j->rps, rate(j->rps), "req/s", badge);
        } else {
          cells +=
              empty_cell("<span class=\"badge " + std::string(j->state == JobResult::State::Skipped ? "skip" : "bad") +
                         "\">" + esc(state_name(j->state)) + "</span>");
        }
        if (p50) cells += latency_cell(*j, 50);
        cells += latency_cell(*j, 99);
        uint64_t failed = j->ops_failed + j->ops_not_run;
        for (auto& k : j->repeats) failed += k.ops_failed + k.ops_not_run;
        cells += ran(*j) ? "<td class=\"num" + std::string(failed ? " bad" : "") + "\" data-v=\"" +
                               std::to_string(failed) + "\">" + std::to_string(failed) + "</td>"
                         : empty_cell();
        if (r > 0) {
          bool comparable = base && ran(*base) && ran(*j) && base->rps > 0;
          cells += comparable ? num_cell(j->rps / base->rps, ratio(j->rps / base->rps), "") : empty_cell();
          if (comparable && within_noise(*base, *j))
            add_note("<span class=\"badge noise\">within noise</span> " + esc(page.tags[r]) + " and " +
                     esc(page.tags[0]));
        }
        std::string why = failure_note(runs[r], *j);
        if (!why.empty()) add_note(esc(why));
        contract_notes(r, j, base, group_base, add_note);
        if (std::string c = connect_line("", *j); !c.empty()) add_note(esc(c));
        for (auto& w : j->warnings) add_note("<span class=\"warn\">" + esc(w.text) + "</span>");
      }
      std::string cls = any_failed ? " class=\"failed\"" : !any_ran ? " class=\"skipped\"" : "";
      s += "<tr" + cls + "><td>" + esc(g.short_title) + "</td><td>" + esc(page.rows[row].name) + "</td>" + cells +
           "<td class=\"note\">" + note + "</td></tr>\n";
    }
  }
  return s + "</tbody></table></div>\n";
}

namespace {

// The ops of a mix in the order a user writes them.
constexpr const char* kOpOrder[] = {"read", "update", "insert", "delete", "rmw", "scan"};

const OpFigures* op_of(const JobResult& j, const std::string& op) {
  for (auto& o : j.per_op)
    if (o.op == op) return &o;
  return nullptr;
}

}  // namespace

namespace {

using Opt = std::optional<double>;

Opt at(const std::shared_ptr<Histogram>& h, double p) { return h ? Opt(static_cast<double>(h->percentile(p))) : Opt(); }
std::string rps_text(double x) { return rate(x) + " req/s"; }
std::string pct_text(double x) { return fixed(x * 100, x >= 0.9995 ? 1 : 2) + "%"; }

// A workload group's table: a column per job, a line per figure (all ops', the load phase's, each
// op's), the best of a line bold when there is a choice.
class WorkloadTable {
 public:
  explicit WorkloadTable(const Group& g) {
    for (auto& e : g.entries) cols_.push_back(&e);
  }

  std::string head() const {
    std::string s = "<table class=\"workload\"><thead><tr><th></th>";
    for (auto* e : cols_) {
      std::string mark = e->drawn() ? failure_mark(*e->job) : std::string(state_name(e->job->state));
      s += "<th class=\"num\">" + esc(e->name) +
           (mark.empty() ? ""
                         : " <span class=\"badge " + std::string(mark == "skipped" ? "skip" : "bad") + "\">" +
                               esc(mark) + "</span>") +
           "</th>";
    }
    return s + "</tr></thead><tbody>\n";
  }

  // One line: a value per job (nullopt: none); none at all: no line.
  template <class Value, class Show>
  void line(const std::string& name, const Value& value, const Show& show, bool higher_better) {
    std::vector<Opt> v;
    for (auto* e : cols_) v.push_back(e->drawn() ? value(*e) : std::nullopt);
    if (std::none_of(v.begin(), v.end(), [](auto& x) { return x.has_value(); })) return;
    Opt best, worst;
    for (size_t i = 0; i < v.size(); ++i)
      if (v[i] && cols_[i]->good()) {
        if (!best || (higher_better ? *v[i] > *best : *v[i] < *best)) best = v[i];
        if (!worst || (higher_better ? *v[i] < *worst : *v[i] > *worst)) worst = v[i];
      }
    const bool choice = best && *best != *worst;  // a tie, or one figure, has no best
    body_ += "<tr><th>" + esc(name) + "</th>";
    for (size_t i = 0; i < v.size(); ++i) {
      if (!v[i]) {
        body_ += "<td class=\"num\">\xE2\x80\x93</td>";
        continue;
      }
      const bool b = choice && cols_[i]->good() && *v[i] == *best;
      body_ += std::string("<td class=\"num") + (b ? " best" : "") + "\">" + esc(show(*v[i])) + "</td>";
    }
    body_ += "</tr>\n";
  }

  template <class Of, class Show>
  void job_line(const std::string& name, const Of& of, const Show& show, bool higher_better) {
    line(
        name, [&](const Entry& e) { return of(*e.job); }, show, higher_better);
  }

  // An op's req/s, p50, p99, and its hit ratio (reads, and any op with misses).
  void op_lines(const std::string& o) {
    auto op_line = [&](const std::string& what, auto of, auto show, bool higher_better) {
      line(
          o + " " + what,
          [&](const Entry& e) {
            const OpFigures* p = op_of(*e.job, o);
            return p ? of(*e.job, *p) : Opt();
          },
          show, higher_better);
    };
    op_line(
        "req/s", [](const JobResult& j, const OpFigures& p) { return Opt(op_rps(j, p)); }, rps_text, true);
    op_line(
        "p50", [](const JobResult&, const OpFigures& p) { return at(p.latency, 50); }, duration_ns, false);
    op_line(
        "p99", [](const JobResult&, const OpFigures& p) { return at(p.latency, 99); }, duration_ns, false);
    bool misses = false;
    for (auto* e : cols_)
      if (auto* p = op_of(*e->job, o)) misses |= p->misses > 0;
    if (o == "read" || misses)
      op_line(
          "hit ratio",
          [](const JobResult&, const OpFigures& p) {
            return p.ops_ok ? Opt(static_cast<double>(p.ops_ok - p.misses) / static_cast<double>(p.ops_ok)) : Opt();
          },
          pct_text, true);
  }

  const std::string& body() const { return body_; }

 private:
  std::vector<const Entry*> cols_;
  std::string body_;
};

}  // namespace

std::string workload_table(const Page& page, const Group& g) {
  WorkloadTable t(g);
  t.job_line(
      "req/s, all ops", [](const JobResult& j) { return Opt(j.rps); }, rps_text, true);
  t.job_line(
      "p50, all ops", [](const JobResult& j) { return at(j.latency, 50); }, duration_ns, false);
  t.job_line(
      "p99, all ops", [](const JobResult& j) { return at(j.latency, 99); }, duration_ns, false);
  t.line(
      "load phase req/s",
      [&](const Entry& e) {
        const JobResult* l = load_of(page, e);
        return l && ran(*l) ? Opt(l->rps) : Opt();
      },
      rps_text, true);
  for (const char* name : kOpOrder) t.op_lines(name);
  t.job_line(
      "failed ops", [](const JobResult& j) { return Opt(static_cast<double>(j.ops_failed + j.ops_not_run)); },
      [](double x) { return fixed(x, 0); }, false);
  return t.head() + t.body() + "</tbody></table>\n";
}

std::string context_table(const RunResult& run) {
  const Context& c = run.context;
  std::string s = "<h3>" + esc(run.label) + "</h3><table class=\"context\">";
  auto row = [&](const std::string& k, const std::string& v, const char* cls = "") {
    s += std::string("<tr") + (*cls ? " class=\"" + std::string(cls) + "\"" : "") + "><th>" + esc(k) + "</th><td>" +
         esc(v) + "</td></tr>";
  };
  row("suite", run.suite);
  row("started", run.started_at);
  row("command", redact_text(run.command));  // files written before redaction was complete
  for (auto [k, v] : {std::pair{"host", &c.host},
                      {"cpu", &c.cpu},
                      {"kernel", &c.kernel},
                      {"os", &c.os},
                      {"virtualization", &c.virtualization},
                      {"build_type", &c.build_type}})
    row(k, *v);
  row("cores", std::to_string(c.cores));
  row("memory", fixed(static_cast<double>(c.memory_bytes) / (1024.0 * 1024 * 1024), 1) + " GiB");
  for (auto& [p, fs] : c.paths) row("path " + p, fs.first + " " + fs.second);
  for (auto& [k, v] : c.libraries) row(k, v);
  for (auto& w : c.warnings) row("warning", w.text, "warn");
  for (auto& j : run.jobs)
    for (auto& w : j.warnings) row("warning", j.job.name + ": " + w.text, "warn");
  for (auto& j : run.jobs) {  // the machine while each job ran, and what its latency means for the stores
    if (j.profile.taken && j.profile.steal_share >= 0)
      row("CPU steal", j.job.name + ": " + fixed(j.profile.steal_share * 100, 1) +
                           "% of the machine's CPU time taken by the hypervisor (/proc/stat)");
    StoreGuidance g = store_guidance(j);
    if (g.figure.empty()) continue;
    row("stores", j.job.name + ": " + g.figure);
    for (auto& r : g.rules) row("", r);
  }
  return s + "</table>";
}

}  // namespace mw::html
