// A job's resource profile (results/profile.h) in words, under the table: per op, then what
// limited the job and why.
#include "report.h"
#include "text.h"

namespace mw {

namespace {

std::string us(double v) { return fmt(v, v < 10 ? 2 : 1) + " us"; }
std::string mib(uint64_t b) { return fmt(static_cast<double>(b) / (1024.0 * 1024), 1) + " MiB"; }

std::string process_text(const Profile& p, const ProcessProfile& x) {
  std::string s = x.name + " " + us(p.per_op(x.cpu_s() * 1e6)) + " CPU per op (user " + us(p.per_op(x.user_s * 1e6)) +
                  ", sys " + us(p.per_op(x.sys_s * 1e6)) + "), " + fmt(p.share(x.cpu_s()) * 100, 0) + "% of a core";
  if (x.processes > 1) s += " over " + std::to_string(x.processes) + " processes";
  s += ", busiest thread " + fmt(p.share(x.busiest_thread_s) * 100, 0) + "%";
  s += ", peak RSS " + mib(x.peak_rss_bytes) + ", " + std::to_string(x.ctx_voluntary + x.ctx_involuntary) +
       " context switches (" + std::to_string(x.ctx_involuntary) + " involuntary)";
  return s;
}

std::string disk_text(const Profile& p, const DiskProfile& d) {
  if (!d.missing.empty()) return d.path + ": no disk figures (" + d.missing + ")";
  auto per = [&](uint64_t v) { return fmt(p.per_op(static_cast<double>(v)), 2); };
  std::string s = d.path + " on " + d.device + ": per op " + per(d.reads) + " reads, " + per(d.writes) + " writes, " +
                  fmt(p.per_op(static_cast<double>(d.read_bytes + d.write_bytes)), 0) + " bytes, " + per(d.flushes) +
                  " flushes";
  if (d.flushes) s += ", " + fmt(d.flush_ms / static_cast<double>(d.flushes), 3) + " ms per flush";
  return s + " (the device's counts: every process's I/O)";
}

}  // namespace

bool any_profile(const RunResult& r) {
  for (auto& j : r.jobs)
    if (j.profile.taken) return true;
  return false;
}

std::vector<std::string> profile_lines(const std::string& name, const JobResult& j) {
  const Profile& p = j.profile;
  if (!p.taken) return {};
  std::vector<std::string> out{"profile: " + name + ": " + fmt(p.wall_s, 3) + " s, " + std::to_string(p.ops) + " ops"};
  out.push_back("  " + process_text(p, p.self) + ", " + fmt(p.cores ? p.share(p.self.cpu_s()) / p.cores * 100 : 0, 0) +
                "% of its " + std::to_string(p.cores) + " cores");
  for (auto& s : p.servers) out.push_back("  " + process_text(p, s) + " (" + s.how + ")");
  for (auto& d : p.disks) out.push_back("  " + disk_text(p, d));
  if (p.net_counted)
    out.push_back("  network: " + fmt(p.per_op(static_cast<double>(p.bytes_sent)), 1) + " bytes sent, " +
                  fmt(p.per_op(static_cast<double>(p.bytes_received)), 1) + " received per op");
  if (p.steal_share >= 0)
    out.push_back("  machine: " + fmt(p.steal_share * 100, 1) +
                  "% of its CPU time stolen by the hypervisor (steal, /proc/stat)");
  if (p.locks_counted)
    out.push_back("  lock waits: " + std::to_string(p.lock_retries) + " busy retries (" +
                  fmt(p.per_op(static_cast<double>(p.lock_retries)), 2) + " per op), " + fmt(p.lock_wait_s, 3) +
                  " s asleep over " + std::to_string(p.clients) + " clients");
  out.push_back("limited by: " + name + ": " + p.limited_by + " (" + p.evidence + ")");
  return out;
}

}  // namespace mw
