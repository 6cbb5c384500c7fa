#include "services/resources.h"

#include <dirent.h>
#include <linux/tcp.h>
#include <netinet/in.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <cstddef>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <vector>

#include "util/files.h"

namespace mw {

namespace {

std::vector<long> numeric_entries(const std::string& dir) {
  std::vector<long> out;
  DIR* d = opendir(dir.c_str());
  if (!d) return out;
  while (dirent* e = readdir(d)) {
    char* end = nullptr;
    long v = std::strtol(e->d_name, &end, 10);
    if (end != e->d_name && *end == '\0') out.push_back(v);
  }
  closedir(d);
  return out;
}

// "" when the file cannot be read: libstdc++ throws from a read that fails, as a read of
// /proc/PID/... does (ESRCH) once the process has exited after the open.
std::string slurp(const std::string& file) {
  try {
    std::ifstream in(file);
    return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  } catch (const std::exception&) {
    return "";
  }
}

// The fields of a /proc stat line after "(comm)": [0] is the state, [1] the ppid, [11] utime...
struct StatLine {
  bool ok = false;
  std::string comm;
  std::vector<std::string> f;
};
StatLine read_stat(const std::string& file) {
  StatLine s;
  std::string t = slurp(file);
  size_t open = t.find('('), close = t.rfind(')');
  if (open == std::string::npos || close == std::string::npos || close < open) return s;
  s.comm = t.substr(open + 1, close - open - 1);
  std::istringstream in(t.substr(close + 1));
  for (std::string x; in >> x;) s.f.push_back(x);
  s.ok = s.f.size() > 14;
  return s;
}

double ticks(const std::string& v) {
  static const double hz = static_cast<double>(sysconf(_SC_CLK_TCK));
  return std::strtod(v.c_str(), nullptr) / hz;
}

// "VmHWM:   1234 kB" and the like, from a /proc status file.
uint64_t status_field(const std::string& status, const std::string& key) {
  size_t at = status.find("\n" + key + ":");
  if (at == std::string::npos) return 0;
  return std::strtoull(status.c_str() + at + key.size() + 2, nullptr, 10);
}

void add_threads(const std::string& proc, ProcSample& s, bool switches) {
  for (long tid : numeric_entries(proc + "/task")) {
    const std::string t = proc + "/task/" + std::to_string(tid);
    StatLine st = read_stat(t + "/stat");
    if (st.ok) s.thread_cpu_s[static_cast<pid_t>(tid)] = ticks(st.f[11]) + ticks(st.f[12]);
    if (!switches) continue;
    std::string status = slurp(t + "/status");
    s.ctx_voluntary += status_field(status, "voluntary_ctxt_switches");
    s.ctx_involuntary += status_field(status, "nonvoluntary_ctxt_switches");
  }
}

void add_process(pid_t pid, ProcSample& s) {
  const std::string proc = "/proc/" + std::to_string(pid);
  StatLine st = read_stat(proc + "/stat");
  if (!st.ok) return;
  const double user = ticks(st.f[11]) + ticks(st.f[13]), sys = ticks(st.f[12]) + ticks(st.f[14]);
  s.user_s += user, s.sys_s += sys, s.cpu_s += user + sys;
  s.peak_rss_bytes += status_field(slurp(proc + "/status"), "VmHWM") * 1024;
  ++s.processes;
  add_threads(proc, s, true);
}

}  // namespace

std::vector<pid_t> process_tree(pid_t root) {
  std::vector<pid_t> tree{root};
  std::multimap<pid_t, pid_t> children;  // ppid -> pid
  for (long pid : numeric_entries("/proc")) {
    StatLine st = read_stat("/proc/" + std::to_string(pid) + "/stat");
    if (st.ok) children.emplace(static_cast<pid_t>(std::atol(st.f[1].c_str())), static_cast<pid_t>(pid));
  }
  for (size_t i = 0; i < tree.size(); ++i) {
    auto [lo, hi] = children.equal_range(tree[i]);
    for (auto it = lo; it != hi; ++it) tree.push_back(it->second);
  }
  return tree;
}

ProcSample sample_process(pid_t root, bool with_children) {
  ProcSample s;
  StatLine r = read_stat("/proc/" + std::to_string(root) + "/stat");
  if (!r.ok) return s;
  s.found = true;
  s.name = r.comm;
  for (pid_t p : with_children ? process_tree(root) : std::vector<pid_t>{root}) add_process(p, s);
  return s;
}

TaskSample sample_tasks(const std::vector<pid_t>& pids) {
  TaskSample s;
  bool waits = true;
  int64_t wait = 0;
  for (size_t i = 0; i < pids.size(); ++i) {
    const std::string proc = "/proc/" + std::to_string(pids[i]);
    StatLine st = read_stat(proc + "/stat");
    if (!st.ok) continue;
    if (i == 0) s.found = true, s.state = st.f[0].empty() ? 0 : st.f[0][0];
    s.cpu_s += ticks(st.f[11]) + ticks(st.f[12]) + ticks(st.f[13]) + ticks(st.f[14]);
    s.major_faults += std::strtoull(st.f[9].c_str(), nullptr, 10);
    for (long tid : numeric_entries(proc + "/task")) {
      std::string t = slurp(proc + "/task/" + std::to_string(tid) + "/schedstat");
      char* end = nullptr;
      std::strtoll(t.c_str(), &end, 10);  // on a CPU; then the wait
      const char* at = end;
      const long long w = std::strtoll(at, &end, 10);
      if (end == at)
        waits = false;
      else
        wait += w;
    }
  }
  if (s.found && waits) s.wait_ns = wait;
  return s;
}

int64_t parse_psi_total(const std::string& text, const std::string& line) {
  size_t at = text.rfind(line + " ", 0) == 0 ? 0 : text.find("\n" + line + " ");
  if (at == std::string::npos) return -1;
  size_t total = text.find("total=", at);
  size_t eol = text.find('\n', at + 1);
  if (total == std::string::npos || (eol != std::string::npos && total > eol)) return -1;
  char* end = nullptr;
  const long long v = std::strtoll(text.c_str() + total + 6, &end, 10);
  return end == text.c_str() + total + 6 || v < 0 ? -1 : static_cast<int64_t>(v);
}

PsiSample sample_psi() {
  PsiSample s;
  const std::string cpu = slurp("/proc/pressure/cpu"), io = slurp("/proc/pressure/io"),
                    memory = slurp("/proc/pressure/memory");
  s.cpu_some = parse_psi_total(cpu, "some");
  s.io_some = parse_psi_total(io, "some"), s.io_full = parse_psi_total(io, "full");
  s.memory_some = parse_psi_total(memory, "some"), s.memory_full = parse_psi_total(memory, "full");
  return s;
}

int64_t major_faults() {
  const std::string v = slurp("/proc/vmstat");
  size_t at = v.find("\npgmajfault ");
  if (at == std::string::npos) return -1;
  return std::strtoll(v.c_str() + at + 12, nullptr, 10);
}

std::string start_time(pid_t pid) {
  StatLine st = read_stat("/proc/" + std::to_string(pid) + "/stat");
  return st.ok && st.f.size() > 19 ? st.f[19] : "";  // field 22 of the line, [19] after "(comm)"
}

std::vector<pid_t> children_of(pid_t parent) {
  std::vector<pid_t> out;
  for (long pid : numeric_entries("/proc")) {
    StatLine st = read_stat("/proc/" + std::to_string(pid) + "/stat");
    if (st.ok && std::atol(st.f[1].c_str()) == parent) out.push_back(static_cast<pid_t>(pid));
  }
  return out;
}

ProcSample sample_self() {
  ProcSample s;
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  s.found = true;
  s.name = "mwbench";
  s.user_s = static_cast<double>(ru.ru_utime.tv_sec) + static_cast<double>(ru.ru_utime.tv_usec) / 1e6;
  s.sys_s = static_cast<double>(ru.ru_stime.tv_sec) + static_cast<double>(ru.ru_stime.tv_usec) / 1e6;
  s.cpu_s = s.user_s + s.sys_s;
  s.peak_rss_bytes = static_cast<uint64_t>(ru.ru_maxrss) * 1024;
  s.ctx_voluntary = static_cast<uint64_t>(ru.ru_nvcsw);
  s.ctx_involuntary = static_cast<uint64_t>(ru.ru_nivcsw);
  s.processes = 1;
  add_threads("/proc/self", s, false);
  return s;
}

pid_t listener_of(int port) {
  std::vector<std::string> inodes;
  for (const char* table : {"/proc/net/tcp", "/proc/net/tcp6"}) {
    std::ifstream in(table);
    std::string line;
    std::getline(in, line);  // the header
    while (std::getline(in, line)) {
      std::istringstream f(line);
      std::string sl, local, remote, st, q, tm, retr, uid, timeout, inode;
      f >> sl >> local >> remote >> st >> q >> tm >> retr >> uid >> timeout >> inode;
      size_t colon = local.rfind(':');
      if (st != "0A" || colon == std::string::npos) continue;  // 0A: LISTEN
      if (std::strtol(local.c_str() + colon + 1, nullptr, 16) == port && inode != "0") inodes.push_back(inode);
    }
  }
  if (inodes.empty()) return -1;
  for (long pid : numeric_entries("/proc")) {
    if (pid == getpid()) continue;
    const std::string fds = "/proc/" + std::to_string(pid) + "/fd";
    for (long fd : numeric_entries(fds)) {
      std::error_code ec;
      std::string link = std::filesystem::read_symlink(fds + "/" + std::to_string(fd), ec).string();
      for (auto& i : inodes)
        if (link == "socket:[" + i + "]") return static_cast<pid_t>(pid);
    }
  }
  return -1;
}

DiskDevice disk_of(const std::string& path) {
  std::filesystem::path p = path.empty() ? std::filesystem::path(".") : std::filesystem::path(path);
  struct stat st {};
  while (stat(p.c_str(), &st) != 0) {  // a file not made yet: the folder it will be in
    if (!p.has_parent_path() || p.parent_path() == p) return {"", path + ": does not exist"};
    p = p.parent_path();
  }
  const unsigned maj = major(st.st_dev), min = minor(st.st_dev);
  if (maj == 0) return {"", filesystem_of(p.string()).first + ": no block device"};
  const std::string sys = "/sys/dev/block/" + std::to_string(maj) + ":" + std::to_string(min);
  std::error_code ec;
  std::filesystem::path dev = std::filesystem::canonical(sys, ec);
  if (ec) return {"", "device " + std::to_string(maj) + ":" + std::to_string(min) + " not in /sys/dev/block"};
  if (std::filesystem::exists(dev / "partition", ec)) dev = dev.parent_path();  // a partition: its disk
  DiskDevice d{dev.filename().string(), ""};
  if (!sample_disk(d.name).found) return {"", d.name + ": not in /proc/diskstats"};
  return d;
}

DiskSample sample_disk(const std::string& device) {
  DiskSample s;
  std::ifstream in("/proc/diskstats");
  for (std::string line; std::getline(in, line);) {
    std::istringstream f(line);
    std::string maj, min, name;
    f >> maj >> min >> name;
    if (name != device) continue;
    std::vector<uint64_t> v;
    for (uint64_t x; f >> x;) v.push_back(x);
    if (v.size() < 8) return s;
    s.found = true;
    s.reads = v[0], s.read_bytes = v[2] * 512, s.writes = v[4], s.write_bytes = v[6] * 512;
    s.busy_ms = static_cast<double>(v[9]);
    if (v.size() >= 17) s.flushes = v[15], s.flush_ms = static_cast<double>(v[16]);  // kernel 5.5+
    return s;
  }
  return s;
}

CpuSample parse_cpu(const std::string& proc_stat) {
  CpuSample s;
  std::istringstream in(proc_stat);
  std::string first;
  std::getline(in, first);
  std::istringstream f(first);
  std::string label;
  f >> label;
  if (label != "cpu") return s;
  // user nice system idle iowait irq softirq steal [guest guest_nice: already in user and nice]
  std::vector<uint64_t> v;
  for (uint64_t x; v.size() < 8 && f >> x;) v.push_back(x);
  if (v.size() < 8) return s;
  s.found = true;
  for (uint64_t x : v) s.total += x;
  s.steal = v[7];
  return s;
}

CpuSample sample_cpu() {
  std::ifstream in("/proc/stat");
  std::string line;
  std::getline(in, line);
  return parse_cpu(line);
}

NetSample sample_net() {
  NetSample s;
  for (long fd : numeric_entries("/proc/self/fd")) {
    struct stat st {};
    if (fstat(static_cast<int>(fd), &st) != 0 || !S_ISSOCK(st.st_mode)) continue;
    tcp_info ti{};
    socklen_t len = sizeof ti;
    if (getsockopt(static_cast<int>(fd), IPPROTO_TCP, TCP_INFO, &ti, &len) != 0) continue;
    if (len < offsetof(tcp_info, tcpi_bytes_received) + sizeof ti.tcpi_bytes_received) continue;
    s.sockets[st.st_ino] = {ti.tcpi_bytes_acked, ti.tcpi_bytes_received};
  }
  return s;
}

std::pair<uint64_t, uint64_t> net_delta(const NetSample& start, const NetSample& end) {
  uint64_t sent = 0, received = 0;
  for (auto& [ino, b] : end.sockets) {
    auto it = start.sockets.find(ino);
    const std::pair<uint64_t, uint64_t> from = it == start.sockets.end() ? std::pair<uint64_t, uint64_t>{} : it->second;
    sent += b.first >= from.first ? b.first - from.first : 0;
    received += b.second >= from.second ? b.second - from.second : 0;
  }
  return {sent, received};
}

}  // namespace mw
