#include "services.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <grp.h>
#include <pwd.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <thread>

#include "status.h"

namespace mw {

int free_port() {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = 0;
  socklen_t len = sizeof a;
  if (fd < 0 || bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 ||
      getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) != 0) {
    if (fd >= 0) close(fd);
    throw SetupError("cannot find a free port on 127.0.0.1");
  }
  close(fd);
  return ntohs(a.sin_port);
}

std::string find_binary(const std::string& name) {
  if (name.find('/') != std::string::npos) return access(name.c_str(), X_OK) == 0 ? name : "";
  std::string path = getenv("PATH") ? getenv("PATH") : "";
  path += ":/usr/sbin:/usr/local/sbin:/sbin:/usr/local/bin:/usr/bin";
  size_t start = 0;
  while (start <= path.size()) {
    size_t end = path.find(':', start);
    if (end == std::string::npos) end = path.size();
    std::string cand = path.substr(start, end - start) + "/" + name;
    if (end > start && access(cand.c_str(), X_OK) == 0) return cand;
    start = end + 1;
  }
  return "";
}

std::string capture_output(const std::vector<std::string>& argv, double timeout_s) {
  int p[2];
  if (pipe2(p, O_CLOEXEC) != 0) return "";
  pid_t pid = fork();
  if (pid == 0) {
    dup2(p[1], 1);
    dup2(p[1], 2);
    std::vector<char*> a;
    for (auto& s : argv) a.push_back(const_cast<char*>(s.c_str()));
    a.push_back(nullptr);
    execvp(a[0], a.data());
    _exit(127);
  }
  close(p[1]);
  std::string out;
  fcntl(p[0], F_SETFL, O_NONBLOCK);
  auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
  char buf[4096];
  for (;;) {
    ssize_t n = read(p[0], buf, sizeof buf);
    if (n > 0) out.append(buf, static_cast<size_t>(n));
    else if (n == 0) break;
    else if (std::chrono::steady_clock::now() > deadline) {
      kill(pid, SIGKILL);
      break;
    } else {
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
  }
  close(p[0]);
  waitpid(pid, nullptr, 0);
  return out;
}

namespace {

std::string substitute(std::string a, int port, const std::string& dir) {
  for (auto [from, to] : {std::pair<std::string, std::string>{"{port}", std::to_string(port)}, {"{dir}", dir}})
    for (size_t at; (at = a.find(from)) != std::string::npos;) a.replace(at, from.size(), to);
  return a;
}

// In a forked child: drop to `user`, log to `log`, run in `dir`, exec argv. Never returns.
[[noreturn]] void exec_child(const std::vector<std::string>& argv, const std::string& user, const std::string& dir,
                             const std::string& log) {
  setpgid(0, 0);  // Ctrl-C on the terminal goes to mwbench, which stops the server itself
  int fd = open(log.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
  if (fd >= 0) dup2(fd, 1), dup2(fd, 2);
  int devnull = open("/dev/null", O_RDONLY);
  if (devnull >= 0) dup2(devnull, 0);
  if (!user.empty()) {
    passwd* pw = getpwnam(user.c_str());
    if (!pw || initgroups(user.c_str(), pw->pw_gid) != 0 || setgid(pw->pw_gid) != 0 || setuid(pw->pw_uid) != 0)
      _exit(125);
  }
  if (chdir(dir.c_str()) != 0) _exit(126);
  std::vector<char*> a;
  for (auto& s : argv) a.push_back(const_cast<char*>(s.c_str()));
  a.push_back(nullptr);
  execvp(a[0], a.data());
  _exit(127);
}

}  // namespace

Service::Service(const ServiceSpec& spec) : spec_(spec) {
  std::string bin = find_binary(spec.binary);
  if (bin.empty()) throw SetupError(spec.name + ": " + spec.binary + " not found (run scripts/setup)");
  char tmpl[] = "/tmp/mwbench-svc-XXXXXX";
  if (!mkdtemp(tmpl)) throw SetupError(spec.name + ": cannot create a temp dir");
  dir_ = tmpl;
  log_ = dir_ + "/stdout.log";
  if (!spec.user.empty()) {
    passwd* pw = getpwnam(spec.user.c_str());
    if (!pw || chown(dir_.c_str(), pw->pw_uid, pw->pw_gid) != 0)
      throw SetupError(spec.name + ": cannot hand " + dir_ + " to user " + spec.user);
  }
  for (auto& cmd : spec.setup) {
    std::vector<std::string> argv;
    for (auto& a : cmd) argv.push_back(substitute(a, 0, dir_));
    pid_t p = fork();
    if (p == 0) exec_child(argv, spec.user, dir_, log_);
    int status = 0;
    waitpid(p, &status, 0);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
      std::string tail = log_tail(600);
      std::filesystem::remove_all(dir_);
      throw SetupError(spec.name + ": set-up step " + argv[0] + " failed; log: " + tail);
    }
  }
  auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(spec.start_timeout_s);
  for (int attempt = 0;; ++attempt) {  // a port taken between free_port() and bind: try another
    port_ = free_port();
    std::vector<std::string> args{bin};
    for (auto& a : spec.args) args.push_back(substitute(a, port_, dir_));
    pid_ = fork();
    if (pid_ < 0) throw SetupError(spec.name + ": fork failed");
    if (pid_ == 0) exec_child(args, spec.user, dir_, log_);
    std::string last;
    while (std::chrono::steady_clock::now() < deadline) {
      if (!running()) break;
      last = spec.probe(port_);
      if (last.empty()) return;
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    bool died = !running();
    stop();
    if (died && attempt < 2 && log_tail().find("in use") != std::string::npos) continue;
    std::string why = died ? "exited during start-up" : "did not answer within " + std::to_string(static_cast<int>(spec.start_timeout_s)) + " s (" + last + ")";
    std::string tail = log_tail(600);
    std::filesystem::remove_all(dir_);
    throw SetupError(spec.name + " on 127.0.0.1:" + std::to_string(port_) + " " + why + "; log: " + tail);
  }
}

bool Service::running() {
  if (pid_ <= 0) return false;
  int status = 0;
  pid_t r = waitpid(pid_, &status, WNOHANG);
  if (r == pid_) {
    pid_ = -1;
    return false;
  }
  return r == 0;
}

void Service::stop() {
  if (pid_ <= 0) return;
  kill(pid_, SIGTERM);
  for (int i = 0; i < 500 && running(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  if (pid_ > 0) {
    kill(pid_, SIGKILL);
    waitpid(pid_, nullptr, 0);
    pid_ = -1;
  }
}

Service::~Service() {
  stop();
  std::error_code ec;
  if (!dir_.empty()) std::filesystem::remove_all(dir_, ec);
}

std::string Service::log_tail(size_t max_bytes) const {
  std::string all;
  for (auto& f : std::filesystem::directory_iterator(dir_)) {
    if (f.path().extension() != ".log") continue;
    std::ifstream in(f.path());
    all += std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  }
  if (all.size() > max_bytes) all = all.substr(all.size() - max_bytes);
  for (char& c : all)
    if (c == '\n') c = ' ';
  return all;
}

namespace {
std::mutex g_mu;
std::map<std::string, std::shared_ptr<Service>>& shared() {
  static std::map<std::string, std::shared_ptr<Service>> m;
  return m;
}
}  // namespace

std::shared_ptr<Service> shared_service(const std::string& key, const ServiceSpec& spec) {
  std::lock_guard lk(g_mu);
  auto& s = shared()[key];
  if (!s || !s->running()) {
    s.reset();
    s = std::make_shared<Service>(spec);
  }
  return s;
}

void stop_shared_services() {
  std::lock_guard lk(g_mu);
  shared().clear();
}

}  // namespace mw
