#include "report.h"
#include "results.h"
#include "text.h"

namespace mw {
namespace {

// A cell a spreadsheet would run as a formula (=, +, -, @, a tab or CR first) starts with ' instead
// (a lone "-", the table's "none", is no formula).
std::string csv_cell(const std::string& raw) {
  std::string s = printable(raw);
  if (s.size() > 1 && std::string_view("=+-@\t\r").find(s[0]) != std::string_view::npos) s.insert(0, "'");
  if (s.find_first_of(",\"\n") == std::string::npos) return s;
  std::string q = "\"";
  for (char c : s) q += c == '"' ? std::string("\"\"") : std::string(1, c);
  return q + "\"";
}

}  // namespace

std::string format_csv(const RunResult& r) {
  std::string out =
      "name,adapter,op,target,clients,pipeline,state,ops_ok,ops_failed,ops_not_run,elapsed_s,rps,bytes,"
      "lat_min_ns,lat_mean_ns,lat_p50_ns,lat_p90_ns,lat_p99_ns,lat_p999_ns,lat_max_ns,verify\n";
  for (auto& j : r.jobs) {
    Histogram empty;
    const Histogram& h = j.latency ? *j.latency : empty;
    std::vector<std::string> c = {j.job.name, j.job.adapter, j.job.op, j.target,
                                  std::to_string(j.job.clients), std::to_string(j.job.pipeline),
                                  state_name(j.state), std::to_string(j.ops_ok),
                                  std::to_string(j.ops_failed), std::to_string(j.ops_not_run),
                                  fmt(j.elapsed_s, 6), fmt(j.rps, 1), std::to_string(j.bytes),
                                  std::to_string(h.min()), fmt(h.mean(), 0), std::to_string(h.percentile(50)),
                                  std::to_string(h.percentile(90)), std::to_string(h.percentile(99)),
                                  std::to_string(h.percentile(99.9)), std::to_string(h.max()),
                                  !j.verify.checked ? "" : j.verify.ok ? "ok" : "failed"};
    for (size_t i = 0; i < c.size(); ++i) out += (i ? "," : "") + csv_cell(c[i]);
    out += "\n";
  }
  return out;
}

}  // namespace mw
