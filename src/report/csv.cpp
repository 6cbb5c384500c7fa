#include "report/report.h"
#include "results/results.h"
#include "util/text.h"

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

// The profile's main figures (when some job of the run has a profile, as the table's "limited by"
// column): mwbench's share of the cores it may use (0-1), its servers' CPU per op, its devices'
// flushes per op, the verdict. Empty where the job has none (no profile, no server, no disk).
std::vector<std::string> profile_cells(const Profile& p) {
  if (!p.taken) return {"", "", "", ""};
  double server_s = 0, flushes = 0;
  bool disk = false;
  for (auto& s : p.servers) server_s += s.cpu_s();
  for (auto& d : p.disks)
    if (d.missing.empty()) flushes += static_cast<double>(d.flushes), disk = true;
  return {p.cores > 0 ? fmt(p.share(p.self.cpu_s()) / p.cores, 4) : "",
          p.servers.empty() ? "" : fmt(p.per_op(server_s * 1e6), 3), disk ? fmt(p.per_op(flushes), 4) : "",
          p.limited_by};
}

}  // namespace

std::string format_csv(const RunResult& r) {
  const bool profiles = any_profile(r);
  std::string out =
      "name,adapter,op,target,clients,pipeline,state,ops_ok,ops_failed,ops_not_run,elapsed_s,rps,bytes,"
      "lat_min_ns,lat_mean_ns,lat_p50_ns,lat_p90_ns,lat_p99_ns,lat_p999_ns,lat_max_ns,verify";
  out += profiles ? ",client_cpu_share,server_cpu_us_per_op,flushes_per_op,limited_by\n" : "\n";
  for (auto& j : r.jobs) {
    Histogram empty;
    const Histogram& h = j.latency ? *j.latency : empty;
    std::vector<std::string> c = {j.job.name,
                                  j.job.adapter,
                                  j.job.op,
                                  j.target,
                                  std::to_string(j.job.clients),
                                  std::to_string(j.job.pipeline),
                                  state_name(j.state),
                                  std::to_string(j.ops_ok),
                                  std::to_string(j.ops_failed),
                                  std::to_string(j.ops_not_run),
                                  fmt(j.elapsed_s, 6),
                                  fmt(j.rps, 1),
                                  std::to_string(j.bytes),
                                  std::to_string(h.min()),
                                  fmt(h.mean(), 0),
                                  std::to_string(h.percentile(50)),
                                  std::to_string(h.percentile(90)),
                                  std::to_string(h.percentile(99)),
                                  std::to_string(h.percentile(99.9)),
                                  std::to_string(h.max()),
                                  !j.verify.checked ? ""
                                  : j.verify.ok     ? "ok"
                                                    : "failed"};
    if (profiles)
      for (auto& cell : profile_cells(j.profile)) c.push_back(cell);
    for (size_t i = 0; i < c.size(); ++i) out += (i ? "," : "") + csv_cell(c[i]);
    out += "\n";
  }
  return out;
}

}  // namespace mw
