// The HTML report's durability table: every crash job (--crash kill, power) of every file, its req/s
// next to what the kill cost it.
#include "durability/durability.h"
#include "report/html_model.h"
#include "report/report.h"
#include "results/notes.h"

namespace mw::html {

std::string durability_table(const Page& page) {
  std::string rows;
  for (size_t r = 0; r < page.runs.size(); ++r) {
    std::vector<CrashRow> crashed;  // the rows' names: each setting once (crash_row_names)
    for (const JobResult& j : page.runs[r].jobs)
      if (j.durability.ran) crashed.push_back({j.job.name, j.job.adapter, j.job.op, j.durability.setting});
    const std::vector<std::string> names = crash_row_names(crashed);
    size_t row = 0;
    for (const JobResult& j : page.runs[r].jobs) {
      if (!j.durability.ran) continue;
      const std::string& name = names[row++];
      const DurabilityResult& d = j.durability;
      auto n = [](uint64_t v) {
        return "<td class=\"num\" data-v=\"" + std::to_string(v) + "\">" + std::to_string(v) + "</td>";
      };
      const bool lost = d.lost || d.corrupt;
      const std::string loss = d.lost ? esc(loss_sentence(j.job.name, d.level, d.loss_window_s)) : "lost";
      const std::string verdict = !d.checked              ? "<span class=\"badge bad\">not checked</span>"
                                  : d.unrecoverable       ? "<span class=\"badge bad\">unrecoverable</span> " + loss
                                  : !lost && d.acked == 0 ? "nothing acknowledged: " + esc(kNothingAcked)
                                  : !lost                 ? "kept"
                                  : d.failed() ? "<span class=\"badge bad\">LOST</span> " + loss + ", expected durable"
                                               : loss + " (a finding)";
      rows += std::string("<tr") + (d.failed() ? " class=\"failed\"" : "") + "><td>" + esc(name) +
              (page.runs.size() > 1 ? " <span class=\"u\">" + esc(page.tags[r]) + "</span>" : "") + "</td><td>" +
              esc(j.target) + "</td><td>" + esc(crash_text(d.crash, d.victim, d.crash_at)) +
              "</td><td class=\"num\" data-v=\"" + fixed(j.rps, 1) + "\">" + rate(j.rps) + "</td>" + n(d.acked) +
              n(d.lost) + "<td class=\"num\" data-v=\"" + fixed(d.loss_window_s, 3) + "\">" +
              loss_window_text(d.lost, d.loss_window_s) + "</td>" + n(d.in_doubt) + n(d.never_sent) + n(d.corrupt) +
              "<td class=\"num\" data-v=\"" + fixed(d.recovery_s, 3) + "\">" + fixed(d.recovery_s, 3) + " s</td><td>" +
              esc(expectation_name(d.expect)) + "</td><td>" + verdict + "</td><td class=\"note\">" + esc(d.note) +
              (d.model.empty() ? "" : "<br>power cut modelled by " + esc(d.model)) +
              (j.contract ? "<br>contract: " + esc(contract_label(*j.contract)) : "") +
              (d.detail.empty() ? "" : "<br>" + esc(d.detail)) + "</td></tr>\n";
    }
  }
  if (rows.empty()) return "";
  return "<div class=\"wide\"><table class=\"sortable durability\"><thead><tr><th>job</th><th>target</th>"
         "<th>killed</th><th class=\"num\">req/s</th><th class=\"num\">acked</th><th class=\"num\">lost</th>"
         "<th class=\"num\">lost s</th>"
         "<th class=\"num\">in doubt</th><th class=\"num\">never sent</th><th class=\"num\">corrupt</th>"
         "<th class=\"num\">recovery</th><th>expect</th><th>verdict</th><th>note</th></tr></thead><tbody>\n" +
         rows + "</tbody></table></div>\n";
}

}  // namespace mw::html
