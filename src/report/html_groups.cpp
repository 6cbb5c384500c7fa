// Which jobs share a chart, and what a group's figures say: the fastest, by how much, and what
// makes a figure suspect. Only the loaded model is read.
#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include "api/adapter.h"
#include "report/html_model.h"
#include "results/notes.h"
#include "results/writer.h"

namespace mw::html {

namespace {

constexpr double kSettled = 0.10;  // repeats whose min-max spans more of the median never settled

const JobResult* job_at(const Page& page, size_t row, size_t run) {
  int i = page.rows[row].index[run];
  return i < 0 ? nullptr : &page.runs[run].jobs[static_cast<size_t>(i)];
}

const JobResult& first_job(const Page& page, size_t row) {
  for (size_t r = 0; r < page.runs.size(); ++r)
    if (auto* j = job_at(page, row, r)) return *j;
  return page.runs[0].jobs[0];  // (unreachable: a matched row has a job in some file)
}

// The words every name shares at its start, up to a space ("sqlite insert " of
// "sqlite insert /var/tmp" and "sqlite insert /dev/shm").
size_t shared_prefix(const std::vector<std::string>& names) {
  if (names.size() < 2) return 0;
  size_t n = names[0].size();
  for (auto& s : names) {
    size_t k = 0;
    while (k < n && k < s.size() && s[k] == names[0][k]) ++k;
    n = k;
  }
  while (n > 0 && names[0][n - 1] != ' ') --n;
  for (auto& s : names)
    if (s.size() <= n) return 0;  // a name would be left empty
  return n;
}

// A file's name as entries and headings say it: without ".json", and without the start time
// mwbench puts in front when the names stay distinct without it.
std::vector<std::string> file_tags(const std::vector<RunResult>& runs) {
  auto strip = [](std::string s, bool time) {
    if (s.size() > 5 && s.compare(s.size() - 5, 5, ".json") == 0) s.resize(s.size() - 5);
    // 2026-11-30T06-33-54Z-quick
    bool stamped = s.size() > 21 && s[4] == '-' && s[7] == '-' && s[10] == 'T' && s[19] == 'Z' && s[20] == '-';
    return time && stamped ? s.substr(21) : s;
  };
  std::vector<std::string> short_tags, tags;
  for (auto& r : runs) short_tags.push_back(strip(r.label, true));
  std::set<std::string> distinct(short_tags.begin(), short_tags.end());
  if (distinct.size() == runs.size()) return short_tags;
  for (auto& r : runs) tags.push_back(strip(r.label, false));
  return tags;
}

void fill_entries(Page& page, Group& g) {
  std::vector<std::string> names;
  std::set<size_t> files;
  for (size_t row : g.rows) {
    names.push_back(page.rows[row].name);
    for (size_t r = 0; r < page.runs.size(); ++r)
      if (job_at(page, row, r)) files.insert(r);
  }
  g.multi_file = files.size() > 1;
  // What every row's name shares, at its start and at its end (" c=2"), is said once: by the title.
  size_t cut = shared_prefix(names);
  std::vector<std::string> backwards;
  for (auto& n : names) backwards.emplace_back(n.rbegin(), n.rend() - static_cast<std::ptrdiff_t>(cut));
  size_t tail = shared_prefix(backwards);
  if (tail > 1) {
    std::string end = names[0].substr(names[0].size() - tail + 1);
    g.title += " (" + end + ")";
    g.short_title += " (" + end + ")";
  }
  int colour = 0;
  for (size_t row : g.rows)
    for (size_t r = 0; r < page.runs.size(); ++r) {
      const JobResult* j = job_at(page, row, r);
      if (!j) continue;
      const std::string& full = page.rows[row].name;
      std::string label = full.substr(cut, full.size() - cut - tail);
      std::string name = g.multi_file ? label + " (" + page.tags[r] + ")" : label;
      Entry e{.row = row, .run = r, .job = j, .label = label, .name = name};
      if (!g.workload.empty() && j->job.op == "load") {
        g.loads.push_back(e);
        continue;
      }
      if (ran(*j)) e.colour = colour++ % kPaletteSize;
      g.entries.push_back(e);
    }
}

}  // namespace

Page build_page(const std::vector<RunResult>& runs) {
  Page page{.runs = runs, .tags = file_tags(runs), .rows = match_jobs(runs), .groups = {}};
  std::vector<Group> groups;
  std::map<std::string, size_t> by_key;
  for (size_t row = 0; row < page.rows.size(); ++row) {
    const JobResult& j = first_job(page, row);
    bool workload = !j.workload.empty();
    std::string key = workload ? "w|" + j.workload : "o|" + j.job.adapter + "|" + j.job.op;
    auto [it, fresh] = by_key.emplace(key, groups.size());
    if (fresh) {
      Group g;
      g.title = workload ? "Workload " + j.workload : j.job.adapter + " " + j.job.op;
      g.short_title = workload ? "workload " + j.workload.substr(0, j.workload.find(' ')) : g.title;
      g.workload = workload ? j.workload : "";
      groups.push_back(g);
    }
    groups[it->second].rows.push_back(row);
  }
  // An adapter whose every group is one job (redis set, get, ping): one chart of its ops.
  std::map<std::string, std::vector<size_t>> of_adapter;
  for (size_t i = 0; i < groups.size(); ++i)
    if (groups[i].workload.empty()) of_adapter[first_job(page, groups[i].rows[0]).job.adapter].push_back(i);
  std::set<size_t> merged_away;
  for (auto& [adapter, members] : of_adapter) {
    if (members.size() < 2) continue;
    if (std::any_of(members.begin(), members.end(), [&](size_t i) { return groups[i].rows.size() != 1; })) continue;
    Group& into = groups[members[0]];
    std::string ops;
    for (size_t i : members) ops += (ops.empty() ? "" : ", ") + first_job(page, groups[i].rows[0]).job.op;
    into.title = into.short_title = adapter + ": " + ops;
    for (size_t k = 1; k < members.size(); ++k) {
      into.rows.push_back(groups[members[k]].rows[0]);
      merged_away.insert(members[k]);
    }
  }
  for (size_t i = 0; i < groups.size(); ++i) {
    if (merged_away.count(i)) continue;
    Group& g = page.groups.emplace_back(std::move(groups[i]));
    g.id = "g" + std::to_string(page.groups.size());
    fill_entries(page, g);
  }
  return page;
}

const JobResult* load_of(const Page& page, const Entry& e) {
  const auto& jobs = page.runs[e.run].jobs;
  int i = page.rows[e.row].index[e.run];
  if (i < 1) return nullptr;
  const JobResult& before = jobs[static_cast<size_t>(i) - 1];
  return before.job.op == "load" && before.workload == e.job->workload ? &before : nullptr;
}

std::vector<std::string> file_suspects(const RunResult& run) {
  std::vector<std::string> out;
  for (auto& w : run.context.warnings)  // the shared-cores warning is said where a server ran
    if (w.kind != WarningKind::SharedCores) out.push_back(w.text);
  if (run.interrupted) out.push_back("the run was interrupted: its last figures are partial");
  return out;
}

Verdict verdict_of(const Page& page, const Group& g) {
  Verdict v;
  std::vector<std::string> suspects;
  auto add = [&](const std::string& s) {
    if (std::find(suspects.begin(), suspects.end(), s) == suspects.end()) suspects.push_back(s);
  };
  bool several = g.entries.size() > 1;
  // A baseline adapter (the driver alone) stands beside the stores, unranked.
  auto baseline = [](const JobResult& j) { return j.baseline; };
  bool stores = std::any_of(g.entries.begin(), g.entries.end(), [&](const Entry& e) { return !baseline(*e.job); });
  std::string unsettled;
  std::map<std::string, std::set<size_t>> shared;  // a server's warning -> the files it is in
  for (auto& e : g.entries) {
    const JobResult& j = *e.job;
    if (!e.drawn())
      v.missing.push_back(&e);
    else if (e.good())
      (stores && baseline(j) ? v.baseline : v.ranked).push_back(&e);
    else
      v.failed.push_back(&e);
    if (!e.drawn()) continue;
    std::string who = several ? e.name + ": " : "";
    for (auto& w : j.warnings)  // a figure too short, not confirmed or behind schedule is said in its row's notes
      if (!of_figures(w)) add(who + w.text);
    if (managed_server(j))
      for (auto& w : page.runs[e.run].context.warnings)
        if (w.kind == WarningKind::SharedCores) shared[w.text].insert(e.run);
    if (auto range = rps_range(j); range && j.rps > 0 && (range->max - range->min) / j.rps > kSettled)
      unsettled += (unsettled.empty() ? "" : ", ") + (several ? e.name + " " : "") +
                   fixed((range->max - range->min) / j.rps * 100, 0) + "%";
  }
  for (auto& [w, files] : shared) {
    std::string tags;
    for (size_t r : files) tags += (tags.empty() ? "" : ", ") + page.tags[r];
    add(w + (g.multi_file ? " (" + tags + ")" : ""));
  }
  if (!unsettled.empty()) add("never settled: the min-max req/s of the repeats spans " + unsettled + " of the median");
  std::stable_sort(v.ranked.begin(), v.ranked.end(),
                   [](const Entry* a, const Entry* b) { return a->job->rps > b->job->rps; });
  v.suspects = std::move(suspects);
  return v;
}

}  // namespace mw::html
