// The HTML report's model, built from the loaded runs alone: the matched jobs of every file in
// groups (each drawn on its own scale), the entries of a group (one job of one file, with its
// colour), and per group a verdict. The files html_*.cpp format it.
#pragma once
#include <cstddef>
#include <string>
#include <vector>

#include "results/decision.h"
#include "results/results.h"

namespace mw::html {

// The bar and curve colours (Tableau 10); an entry's colour is the same in both charts.
constexpr const char* kPalette[] = {"#4e79a7", "#f28e2b", "#59a14f", "#e15759", "#76b7b2",
                                    "#edc948", "#b07aa1", "#ff9da7", "#9c755f", "#bab0ac"};
constexpr int kPaletteSize = 10;

struct Entry {  // one job of one file in a group
  size_t row = 0, run = 0;
  const JobResult* job = nullptr;
  std::string label;  // the row's name without what every row of the group shares
  std::string name;   // the label, and its file's tag when the group has several files
  int colour = -1;    // into kPalette; -1: no figure (skipped, set-up failed)
  bool drawn() const { return colour >= 0; }
  bool good() const { return drawn() && !job->failed(); }  // a figure the verdict may rank
};

struct Group {
  std::string id, title;
  std::string short_title;     // for the table's group column
  bool multi_file = false;     // its entries come from more than one file
  std::string workload;        // a workload's text ("read:50,update:50 zipfian ..."), else ""
  std::vector<size_t> rows;    // matched rows, in first-seen order
  std::vector<Entry> entries;  // rows x files, row-major; a workload's load phases excluded
  std::vector<Entry> loads;    // a workload's load phases (shown in its table)
};

struct Page {
  const std::vector<RunResult>& runs;
  std::vector<std::string> tags;  // per file: its name, short ("quick" for 2026-...Z-quick.json)
  std::vector<MatchedJob> rows;
  std::vector<Group> groups;
};

// Groups: a workload's jobs (adapters side by side), else adapter and op (the side-by-side
// axis and the other lists within); the single-job groups of one adapter merge into one.
Page build_page(const std::vector<RunResult>& runs);

// The load phase that ran just before a workload entry in its file, or nullptr.
const JobResult* load_of(const Page& page, const Entry& e);

struct Verdict {
  std::vector<const Entry*> ranked;    // good figures, fastest first
  std::vector<const Entry*> baseline;  // null beside stores: the driver's own cost, not ranked
  std::vector<const Entry*> failed;    // ran, but ops failed or the end check did
  std::vector<const Entry*> missing;   // skipped or set-up failed: no figure
  std::vector<std::string> suspects;   // what makes a figure of the group suspect
};
Verdict verdict_of(const Page& page, const Group& g);
// What makes every figure of a file suspect (debug build, CPU scaling, an interrupted run).
std::vector<std::string> file_suspects(const RunResult& run);

// Formatting shared by the charts and tables (all text escaped by the callers' esc()).
std::string esc(const std::string& s);
std::string fixed(double v, int decimals);
std::string rate(double rps);        // 25,862 / 63.2 / 0.42
std::string compact(double v);       // axis ticks: 500, 2.5k, 1M
std::string duration_ns(double ns);  // 850 ns, 12.3 µs, 1.23 ms, 1.5 s
std::string ratio(double x);         // 2.31×, 31.4×, 120×
// About how wide `text` is at `px` sans-serif, for laying out labels that must not overlap.
double text_width(const std::string& text, double px);
// `text` cut (with an ellipsis) to about `width` pixels at `px`.
std::string fit(const std::string& text, double width, double px);

// Charts (SVG) and tables (HTML).
std::string throughput_chart(const Page& page, const Group& g);
std::string latency_chart(const Page& page, const Group& g);
// req/s (or p99) per interval over time, a line per job; "" when no job lasted two intervals.
std::string series_chart(const Group& g, bool p99);
std::string backlog_chart(const Page& page, const Group& g);  // "" unless a queue op
// A decision (--decide, `mwbench decide`): each alternative's ratio against the baseline, its
// interval and verdict, over the margin's band (html_decision.cpp); the run's section of the
// report with it and the decision in words ("" when the run decided nothing).
std::string forest_plot(const DecideResult& d);
std::string decision_section(const RunResult& run);
// What the decision of their run says of two entries, one the baseline ("decided over 14 paired
// rounds: ... 1.12× (1.08× to 1.16×), faster at a 5% margin"); "" when it decided nothing of them.
std::string decided_between(const Page& page, const Entry& a, const Entry& b);
// --find-max: p99 against achieved req/s of every step, a curve per job, the SLO as a line ("" when
// no job of the group searched).
std::string capacity_chart(const Group& g);
std::string verdict_item(const Page& page, const Group& g);
std::string results_table(const Page& page);
std::string workload_table(const Page& page, const Group& g);
std::string context_table(const RunResult& run);
std::string durability_table(const Page& page);  // "" when no job was crashed

}  // namespace mw::html
