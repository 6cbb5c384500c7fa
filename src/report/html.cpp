// The report people share: one self-contained HTML page (inline SVG and CSS, a few lines of
// inline script to sort the table; nothing loaded at view time), in this order: the verdict
// per group, each group's charts, the workloads' adapters side by side, every job in one
// table, and each file's context. A print stylesheet fits it to A4.
#include <cstdio>

#include "report/html_model.h"
#include "report/report.h"

namespace mw {

namespace {

const char* kStyle =
    "body{font-family:sans-serif;margin:24px;color:#222;max-width:1400px}"
    "h1{margin:0 0 4px}h2{margin:28px 0 8px;border-bottom:1px solid #ddd}h3{margin:16px 0 6px;font-size:15px}"
    "p.files{color:#555;font-size:13px;margin:0 0 12px}"
    "ul.verdicts{padding-left:18px}li.verdict{margin:6px 0;line-height:1.45}"
    ".noise{color:#8a6d00;font-weight:bold}.bad,tr.failed td.bad{color:#c0392b}.skip{color:#777}"
    ".suspect{color:#8a4b00}.suspect::before{content:'\\26A0  '}.warn{color:#8a4b00}"
    "div.filewide{background:#fff6e5;border-left:4px solid #e6a23c;padding:6px 10px;font-size:13px;margin:8px 0}"
    "section.group{margin:14px 0 26px}p.gverdict{margin:0 0 4px;font-size:13px}"
    "div.charts{display:flex;flex-wrap:wrap;gap:8px 24px;align-items:flex-start}"
    "svg.chart{display:block;max-width:100%;height:auto}div.charts>svg.chart{flex:1 1 520px;max-width:680px}"
    "table{border-collapse:collapse;font-size:12px;margin:6px 0}div.wide{overflow-x:auto}"
    "th,td{border:1px solid #ddd;padding:3px 8px;text-align:left;vertical-align:top}"
    "th.num,td.num{text-align:right;white-space:nowrap;font-variant-numeric:tabular-nums}"
    "td .u{color:#777}td.best{font-weight:bold}thead th{background:#f3f3f3}"
    "table.sortable thead tr:last-child th{cursor:pointer;user-select:none}"
    "table.sortable thead tr:last-child th::after{content:' \\2195';color:#aaa}th.file{text-align:center}"
    "table.sortable thead th[aria-sort=ascending]::after{content:' \\25B2';color:#333}"
    "table.sortable thead th[aria-sort=descending]::after{content:' \\25BC';color:#333}"
    "table.results td:first-child{white-space:nowrap}table.results td:nth-child(2){min-width:150px}"
    "td.note{min-width:200px;max-width:380px;font-size:11px}tr.failed td{background:#fdecea}tr.skipped td{color:#888}"
    ".badge{display:inline-block;padding:0 4px;border-radius:3px;font-size:10px;font-weight:bold}"
    ".badge.bad{background:#c0392b;color:#fff}.badge.skip{background:#ddd;color:#444}"
    ".badge.noise{background:#f3e3a0;color:#5a4700}"
    "table.context th{width:160px}tr.warn td{color:#8a4b00}"
    "@page{size:A4;margin:12mm}"
    "@media print{body{margin:0;max-width:none;font-size:10pt}h2{break-after:avoid}"
    "section.group,li.verdict,tr{break-inside:avoid}div.charts{display:block}"
    "svg.chart{width:100%;max-width:180mm;margin:4px 0}div.wide{overflow:visible}table{font-size:8pt}th,td{padding:2px "
    "4px}"
    "table.sortable thead th::after{content:''}a{color:inherit;text-decoration:none}}";

// Sorting by a heading: numbers by data-v (empty last), else by text; click again to reverse.
const char* kScript =
    "document.querySelectorAll('table.sortable').forEach(function(t){"
    "var hs=t.tHead.rows[t.tHead.rows.length-1].cells;Array.prototype.forEach.call(hs,function(th,i){th.tabIndex=0;"
    "function go(){var num=th.classList.contains('num'),"
    "asc=th.getAttribute('aria-sort')?th.getAttribute('aria-sort')!=='ascending':!num;"
    "Array.prototype.forEach.call(hs,function(h){h.removeAttribute('aria-sort')});"
    "th.setAttribute('aria-sort',asc?'ascending':'descending');"
    "var b=t.tBodies[0],rows=Array.prototype.slice.call(b.rows);"
    "function key(r){var c=r.cells[i],v=c.getAttribute('data-v');"
    "return v===null?c.textContent.trim().toLowerCase():v===''?null:parseFloat(v)}"
    "rows.sort(function(x,y){var a=key(x),c=key(y);if(a===c)return 0;if(a===null)return 1;if(c===null)return -1;"
    "return (a<c?-1:1)*(asc?1:-1)});rows.forEach(function(r){b.appendChild(r)})}"
    "th.addEventListener('click',go);th.addEventListener('keydown',function(e){if(e.key==='Enter')go()})})});";

}  // namespace

std::map<std::string, std::string> render_svgs(const std::vector<RunResult>& runs) {
  html::Page page = html::build_page(runs);
  std::map<std::string, std::string> out;
  for (size_t i = 0; i < page.groups.size(); ++i) {
    char name[32];
    std::snprintf(name, sizeof name, "%02zu.svg", i + 1);
    out[std::string("rps-") + name] = html::throughput_chart(page, page.groups[i]);
    out[std::string("latency-") + name] = html::latency_chart(page, page.groups[i]);
    if (std::string t = html::series_chart(page.groups[i], false); !t.empty()) out[std::string("rps-time-") + name] = t;
    if (std::string t = html::series_chart(page.groups[i], true); !t.empty()) out[std::string("p99-time-") + name] = t;
    if (std::string t = html::capacity_chart(page.groups[i]); !t.empty()) out[std::string("capacity-") + name] = t;
  }
  return out;
}

std::string render_html(const std::vector<RunResult>& runs) {
  using namespace html;
  Page page = build_page(runs);
  std::string s = std::string("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">") +
                  "<meta name=\"viewport\" content=\"width=device-width\"><title>mwbench report</title><style>" +
                  kStyle + "</style></head><body>\n<h1>mwbench report</h1>\n<p class=\"files\">";
  for (size_t r = 0; r < runs.size(); ++r)
    s += (r ? "<br>" : "") + (runs.size() > 1 ? "<b>" + esc(page.tags[r]) + "</b> = " : "") + esc(runs[r].label) +
         ": suite " + esc(runs[r].suite) + ", " + esc(runs[r].started_at) + ", " + esc(runs[r].context.host) + ", " +
         esc(runs[r].context.cpu) + ", " + std::to_string(runs[r].context.cores) + " cores";
  s += "</p>\n<h2 id=\"verdict\">Verdict</h2>\n";
  for (auto& run : runs) {
    auto w = file_suspects(run);
    if (w.empty()) continue;
    s += "<div class=\"filewide\"><b>Every figure of " + esc(run.label) + " is suspect:</b> ";
    for (size_t i = 0; i < w.size(); ++i) s += (i ? "; " : "") + esc(w[i]);
    s += ".</div>\n";
  }
  s += "<ul class=\"verdicts\">\n";
  for (auto& g : page.groups) s += verdict_item(page, g);
  bool repeated = false;
  for (auto& run : runs)
    for (auto& j : run.jobs) repeated |= !j.repeats.empty();
  s += std::string("</ul>\n<p class=\"files\">req/s counts successful operations only; failed ops are never in it. ") +
       (repeated ? "Whiskers show the min-max req/s of the repeats; figures within noise cannot be ranked."
                 : "Each job ran once: run with --repeat K to know the spread.") +
       "</p>\n";
  std::string decided;
  for (auto& run : runs) decided += decision_section(run);
  if (!decided.empty())
    s +=
        "<h2 id=\"decision\">Decision</h2>\n<p class=\"files\">Paired rounds: each alternative's ratio against the "
        "baseline (above 1: better), its repeated confidence interval, and the margin's band (green): faster or slower "
        "when the interval lies beyond the band, equivalent when inside it.</p>\n" +
        decided;
  s += "<h2 id=\"groups\">Throughput and latency by group</h2>\n";
  for (auto& g : page.groups) {
    std::string line = verdict_item(page, g);  // the same words beside the charts
    line = line.substr(line.find("</a>: ") + 6);
    line = line.substr(0, line.rfind("</li>"));
    s += "<section class=\"group\" id=\"" + g.id + "\"><h3>" + esc(g.title) + "</h3><p class=\"gverdict\">" + line +
         "</p><div class=\"charts\">" + throughput_chart(page, g) + latency_chart(page, g) + series_chart(g, false) +
         series_chart(g, true) + backlog_chart(page, g) + capacity_chart(g) + "</div></section>\n";
  }
  bool workloads = false;
  for (auto& g : page.groups) workloads |= !g.workload.empty();
  if (workloads) {
    s += "<h2 id=\"workloads\">Workloads: the adapters side by side</h2>\n<p class=\"files\">Per workload (mix, keys, "
         "value sizes), each adapter's figures for the whole mix, its untimed load phase and each op of the mix; the "
         "best of a line is bold. Hit ratio: the share of reads that found their key.</p>\n";
    for (auto& g : page.groups)
      if (!g.workload.empty()) s += "<h3>" + esc(g.title) + "</h3>\n" + workload_table(page, g);
  }
  if (std::string d = durability_table(page); !d.empty())
    s += "<h2 id=\"durability\">Durability: killed and restarted</h2>\n<p class=\"files\">Each job's server (or "
         "writing process) was sent SIGKILL while writes were in flight, restarted on the same store, and every write "
         "read back. Acked: the server said it was done before the kill; lost: acked, then missing or different; in "
         "doubt: sent, not acknowledged (kept or not, both are fine). A process kill is not a power cut: the page "
         "cache survives SIGKILL, so a level whose safety depends on fsync can look safe here and still lose data "
         "on a power loss.</p>\n" +
         d;
  s += "<h2 id=\"jobs\">Every job</h2>\n<p class=\"files\">Click a heading to sort by it (again to reverse). " +
       std::string(runs.size() > 1 ? "Ratio: req/s against " + esc(page.tags[0]) + ". " : "") +
       "Failed rows are red; within noise: both were repeated and their min-max req/s ranges overlap.</p>\n" +
       results_table(page);
  s += "<h2 id=\"context\">Context</h2>\n";
  for (auto& r : runs) s += context_table(r) + "\n";
  return s + "<script>" + kScript + "</script>\n</body></html>\n";
}

}  // namespace mw
