#include "core/sysinfo.h"

#include "api/adapter.h"
#include "results/writer.h"
#include "util/files.h"

#include <atomic>

#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>
#include <thread>

namespace mw {
namespace {

std::string read_first_line(const std::string& file) {
  std::ifstream in(file);
  std::string line;
  std::getline(in, line);
  return line;
}

std::string cpuinfo_field(const std::string& key) {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line))
    if (line.rfind(key, 0) == 0) {
      auto pos = line.find(':');
      if (pos != std::string::npos) return line.substr(pos + 2);
    }
  return "";
}

std::string virtualization() {
  // systemd-detect-virt knows most; fall back to the CPU's hypervisor flag and DMI.
  if (FILE* p = popen("systemd-detect-virt 2>/dev/null", "r")) {
    char buf[128] = {};
    bool got = fgets(buf, sizeof buf, p) != nullptr;
    pclose(p);
    std::string s = got ? std::string(buf) : "";
    while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
    if (!s.empty()) return s;
  }
  std::string vendor = read_first_line("/sys/class/dmi/id/sys_vendor");
  if (cpuinfo_field("flags").find(" hypervisor") != std::string::npos)
    return vendor.empty() ? "vm" : "vm (" + vendor + ")";
  return "none";
}

std::string os_name() {
  std::ifstream in("/etc/os-release");
  std::string line;
  while (std::getline(in, line))
    if (line.rfind("PRETTY_NAME=", 0) == 0) {
      std::string v = line.substr(12);
      if (v.size() >= 2 && v.front() == '"') v = v.substr(1, v.size() - 2);
      return v;
    }
  return "";
}

}  // namespace

Context machine_context() {
  Context c;
  char host[256] = {};
  gethostname(host, sizeof host - 1);
  c.host = host;
  c.cpu = cpuinfo_field("model name");
  c.cores = static_cast<int>(std::thread::hardware_concurrency());
  std::istringstream mem(read_first_line("/proc/meminfo"));
  std::string label;
  uint64_t kb = 0;
  mem >> label >> kb;
  c.memory_bytes = kb * 1024;
  utsname u{};
  if (uname(&u) == 0) c.kernel = std::string(u.sysname) + " " + u.release + " " + u.machine;
  c.os = os_name();
  c.virtualization = virtualization();
  c.build_type = MWBENCH_BUILD_TYPE;
  if (c.build_type != "Release" && c.build_type != "RelWithDebInfo")
    c.warnings.push_back(
        {WarningKind::DebugBuild, "mwbench was built as " + c.build_type + ": its own overhead is not representative"});
  std::string gov = read_first_line("/sys/devices/system/cpu/cpu0/cpufreq/scaling_governor");
  if (!gov.empty() && gov != "performance")
    c.warnings.push_back(
        {WarningKind::CpuScaling, "CPU frequency scaling is enabled (governor " + gov + "): figures may vary"});
  return c;
}

void finish_context(RunResult& run) {
  bool local_server = false;
  for (auto& j : run.jobs) {
    adapter_facts(j);
    for (auto& r : j.repeats) adapter_facts(r);
    for (auto& p : j.paths)
      if (access(p.c_str(), F_OK) == 0) run.context.paths[p] = filesystem_of(p);
    if (const AdapterSpec* spec = find_adapter(j.job.adapter))  // the client libraries it reports
      for (const std::string& lib : spec->libraries)
        if (auto v = j.server.find(lib); v != j.server.end()) run.context.libraries[lib] = v->second;
    if (auto m = j.server.find("managed"); m != j.server.end() && m->second == "yes") local_server = true;
  }
  if (local_server && run.context.cores <= 2)
    run.context.warnings.push_back({WarningKind::SharedCores, "server and client share this machine's " +
                                                                  std::to_string(run.context.cores) +
                                                                  " cores: the server's figures are a lower bound"});
}

}  // namespace mw
