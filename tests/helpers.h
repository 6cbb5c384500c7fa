// What several test files need: a temp dir removed afterwards, and a job to run.
#pragma once
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <memory>
#include <stdexcept>
#include <string>

#include "api/adapter.h"
#include "api/job.h"
#include "config/workload_spec.h"
#include "results/result.h"
#include "results/writer.h"

namespace mw::test {

// The sanitizer build (tests/CMakeLists.txt): cases that read the same code over volumes of data
// read less of it there.
#ifdef MWBENCH_SANITIZED
inline constexpr bool kSanitized = true;
#else
inline constexpr bool kSanitized = false;
#endif

struct TempDir {
  std::string path;
  explicit TempDir(const char* base = "/var/tmp") {
    std::string tmpl = std::string(base) + "/mwbench-test-XXXXXX";
    path = mkdtemp(tmpl.data());
  }
  ~TempDir() { std::filesystem::remove_all(path); }
};

// A listening socket on 127.0.0.1 at a free port, for the tests' own small servers (hostile
// ones among them): returns the fd (-1 on failure) and sets `port`.
inline int listen_loopback(int backlog, int& port) {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  int one = 1;
  setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof a;
  if (fd < 0 || bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 || listen(fd, backlog) != 0 ||
      getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) != 0) {
    if (fd >= 0) close(fd);
    return -1;
  }
  port = ntohs(a.sin_port);
  return fd;
}

// This process's memory from /proc/self/status, in kB: `field` "VmRSS" (now) or "VmHWM" (the
// peak since the last reset_peak_rss()); -1 when absent.
inline int64_t status_kb(const std::string& field) {
  std::ifstream in("/proc/self/status");
  for (std::string line; std::getline(in, line);)
    if (line.rfind(field + ":", 0) == 0) return std::stoll(line.substr(field.size() + 1));
  return -1;
}
// How far this process's peak memory (VmHWM, reset first: Linux 4.0 and later) rose above what it
// held before while `run` ran, in kB.
template <class Run>
int64_t peak_growth_kb(Run&& run) {
  const int64_t before = status_kb("VmRSS");
  std::ofstream("/proc/self/clear_refs") << "5";
  run();
  return status_kb("VmHWM") - before;
}

inline Job make_job(const std::string& adapter, const std::string& op, uint64_t n, int clients = 1) {
  Job j;
  j.adapter = adapter;
  j.op = op;
  j.name = adapter + " " + op;
  j.n = n;
  j.clients = clients;
  return j;
}

// The registered adapter `name` made for job `j` as the runner makes it: handed the workload
// built from the job's options.
inline std::unique_ptr<Adapter> make_adapter(const std::string& name, const Job& j) {
  const AdapterSpec* spec = find_adapter(name);
  if (!spec) throw std::runtime_error("no adapter " + name);
  return spec->make(j, workload_of(j, *spec));
}

// A job that ran: 100 ops of 1 to 100 us at `rps` req/s, on target "-".
inline JobResult done_result(const std::string& adapter, const std::string& op, const std::string& name, double rps) {
  JobResult j;
  j.job.name = name;
  j.job.adapter = adapter;
  j.job.op = op;
  j.target = "-";
  j.latency = std::make_shared<Histogram>();
  for (int i = 1; i <= 100; ++i) j.latency->record(i * 1000);
  j.ops_ok = 100;
  j.elapsed_s = 100 / rps;
  j.rps = rps;
  adapter_facts(j);  // as the runner's finish_context does
  return j;
}

// A metric's value, or -1 when the job has none of that name.
inline double metric(const JobResult& r, const std::string& name) {
  const Metric* m = find_metric(r.metrics, name);
  return m ? m->value : -1;
}

// The HTTP responses by status, as "201: 9, 409: 1" (from the "HTTP <code> responses" metrics).
inline std::string statuses(const JobResult& r) {
  std::string s;
  for (auto& m : r.metrics)
    if (m.name.rfind("HTTP ", 0) == 0 && m.name.size() > 15 &&
        m.name.compare(m.name.size() - 10, 10, " responses") == 0)
      s += (s.empty() ? "" : ", ") + m.name.substr(5, m.name.size() - 15) + ": " + format_metric_value(m);
  return s;
}

// The exit code of a run of this one job (0 ok, 1 failed, 2 set-up, 3 a gate).
inline int exit_of(const JobResult& r) {
  RunResult run;
  run.jobs.push_back(r);
  return exit_code(run);
}

}  // namespace mw::test

#include <sys/mount.h>
#include <sys/resource.h>

#include <csignal>

namespace mw::test {

// A filesystem that fills up: a tmpfs of `bytes` mounted on a temp dir (as root), or else the
// temp dir under a file-size limit (RLIMIT_FSIZE, SIGXFSZ ignored: a write past it fails EFBIG).
// Undone when it goes out of scope.
struct SmallFs {
  TempDir dir;
  bool mounted = false;
  rlimit old{};
  explicit SmallFs(size_t bytes) {
    const std::string size = "size=" + std::to_string(bytes);
    mounted = mount("tmpfs", dir.path.c_str(), "tmpfs", 0, size.c_str()) == 0;
    if (!mounted) {
      getrlimit(RLIMIT_FSIZE, &old);
      rlimit r = old;
      r.rlim_cur = bytes;
      signal(SIGXFSZ, SIG_IGN);
      setrlimit(RLIMIT_FSIZE, &r);
    }
  }
  ~SmallFs() {
    if (mounted)
      umount2(dir.path.c_str(), MNT_DETACH);
    else
      setrlimit(RLIMIT_FSIZE, &old);
  }
  SmallFs(const SmallFs&) = delete;
  SmallFs& operator=(const SmallFs&) = delete;
};

}  // namespace mw::test
