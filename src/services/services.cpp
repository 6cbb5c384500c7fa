#include "services/services.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <grp.h>
#include <locale.h>
#include <netinet/in.h>
#include <poll.h>
#include <pwd.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <sstream>
#include <thread>

#include "api/stop.h"
#include "services/proxy.h"
#include "services/resources.h"
#include "util/status.h"

namespace mw {

namespace {
std::mutex g_claims_mu;
// Never destroyed: a Service unclaims itself from it when it ends, and one may end during exit,
// held by a static made before this list was (shared_service()'s map, whose first Service claims
// itself, making the list then) and so destroyed after it; a destroyed list was a use after free.
std::vector<const Service*>& claims() {
  static auto* c = new std::vector<const Service*>;
  return *c;
}
void claim(const Service* s) {
  std::lock_guard lk(g_claims_mu);
  if (std::find(claims().begin(), claims().end(), s) == claims().end()) claims().push_back(s);
}
void unclaim(const Service* s) {
  std::lock_guard lk(g_claims_mu);
  std::erase(claims(), s);
}
}  // namespace

void begin_service_claims() {
  std::lock_guard lk(g_claims_mu);
  claims().clear();
}

std::vector<ServerProcess> claimed_servers() {
  std::lock_guard lk(g_claims_mu);
  std::vector<ServerProcess> out;
  for (const Service* s : claims())
    if (s->pid() > 0) out.push_back({s->name(), s->pid(), s->server_port()});
  return out;
}

std::vector<std::string> server_environment(const std::string& dir,
                                            const std::vector<std::pair<std::string, std::string>>& extra) {
  static const std::string locale = [] {
    locale_t l = newlocale(LC_ALL_MASK, "C.UTF-8", static_cast<locale_t>(nullptr));
    if (l) freelocale(l);
    return std::string(l ? "C.UTF-8" : "C");
  }();
  const char* path = getenv("PATH");
  std::vector<std::string> env = {
      std::string("PATH=") + (path && *path ? path : "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"),
      "HOME=" + (dir.empty() ? std::string("/nonexistent") : dir),
      "TMPDIR=" + (dir.empty() ? std::string("/tmp") : dir), "LANG=" + locale, "LC_ALL=" + locale};
  for (const auto& [name, value] : extra) {
    const std::string prefix = name + "=";  // (a lambda may not capture a structured binding in clang 14)
    std::erase_if(env, [&prefix](const std::string& e) { return e.rfind(prefix, 0) == 0; });
    env.push_back(prefix + value);
  }
  return env;
}

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
  std::vector<char*> a;  // prepared before fork(): mwbench has threads
  for (auto& s : argv) a.push_back(const_cast<char*>(s.c_str()));
  a.push_back(nullptr);
  std::vector<std::string> env_s = server_environment("");
  std::vector<char*> envp;
  for (auto& e : env_s) envp.push_back(e.data());
  envp.push_back(nullptr);
  int p[2];
  if (pipe2(p, O_CLOEXEC) != 0) return "";
  pid_t pid = fork();
  if (pid == 0) {
    dup2(p[1], 1);
    dup2(p[1], 2);
    execvpe(a[0], a.data(), envp.data());
    _exit(127);
  }
  close(p[1]);
  std::string out;
  fcntl(p[0], F_SETFL, O_NONBLOCK);
  auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
  char buf[4096];
  for (;;) {
    ssize_t n = read(p[0], buf, sizeof buf);
    if (n > 0)
      out.append(buf, static_cast<size_t>(n));
    else if (n == 0)
      break;
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

// Managed servers' process groups, for stop_services_now() in a signal handler: no locks, no
// allocation. Beyond kMaxGroups the supervisors alone stop what is left.
constexpr int kMaxGroups = 64;
std::atomic<pid_t> g_groups[kMaxGroups];

void register_group(pid_t g) {
  for (auto& slot : g_groups) {
    pid_t free_slot = 0;
    if (slot.compare_exchange_strong(free_slot, g)) return;
  }
}
void unregister_group(pid_t g) {
  for (auto& slot : g_groups) {
    pid_t mine = g;
    if (slot.compare_exchange_strong(mine, 0)) return;
  }
}

// The lifeline: mwbench alone holds the write end (close-on-exec); every supervisor holds the
// read end, which reads end-of-file the moment mwbench is gone, however it died.
struct Lifeline {
  int read_end = -1, write_end = -1;
};
const Lifeline& lifeline() {
  static Lifeline l = [] {
    int p[2];
    if (pipe2(p, O_CLOEXEC) != 0) throw SetupError("cannot create a pipe for managed servers");
    return Lifeline{p[0], p[1]};
  }();
  return l;
}

constexpr const char* kOwnerFile = "owner.pid";

// Kills every process that runs in `dir` or names it on its command line.
void kill_processes_in(const std::string& dir) {
  std::error_code ec;
  for (auto& e : std::filesystem::directory_iterator("/proc", ec)) {
    std::string name = e.path().filename();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    pid_t pid = static_cast<pid_t>(std::stol(name));
    if (pid == getpid()) continue;
    std::error_code cwd_ec;
    std::string cwd = std::filesystem::read_symlink(e.path() / "cwd", cwd_ec).string();
    bool inside = !cwd_ec && (cwd == dir || cwd.rfind(dir + "/", 0) == 0);
    if (!inside) {
      std::ifstream in(e.path() / "cmdline");
      std::string cmd((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
      inside = cmd.find(dir) != std::string::npos;
    }
    if (inside) kill(pid, SIGKILL);
  }
}

// Directories of managed servers whose mwbench is gone (killed before its supervisors could
// clean up): their servers are killed and the directories removed. What makes a directory ours
// is its owner file, written by mwbench as this user: the directory itself may have been handed
// to the server's user (PostgreSQL's initdb runs as postgres). Directories without an owner file,
// or whose owner file is another user's, are left alone.
void remove_stale_dirs() {
  std::error_code ec;
  for (auto& e : std::filesystem::directory_iterator("/tmp", ec)) {
    std::string dir = e.path().string();
    if (e.path().filename().string().rfind("mwbench-svc-", 0) != 0) continue;
    const std::string owner_file = dir + "/" + kOwnerFile;
    struct stat st {
    }, ost{};
    if (lstat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) continue;
    if (lstat(owner_file.c_str(), &ost) != 0 || !S_ISREG(ost.st_mode) || ost.st_uid != geteuid()) continue;
    std::ifstream in(owner_file);
    long pid = 0;
    std::string started;
    if (!(in >> pid >> started) || pid <= 0) continue;
    if (pid == getpid() || start_time(static_cast<pid_t>(pid)) == started) continue;  // alive
    kill_processes_in(dir);
    std::error_code rm_ec;
    std::filesystem::remove_all(dir, rm_ec);
  }
}

// Everything a forked child needs, prepared before fork(): after it only async-signal-safe
// calls are made until exec (mwbench has threads).
struct Launch {
  std::vector<std::string> argv_s, env_s;
  std::vector<char*> argv, envp;
  std::string dir, log, user;
  uid_t uid = 0;
  gid_t gid = 0;
  pid_t parent = 0;  // the process the child must die with

  Launch(std::vector<std::string> args, const ServiceSpec& spec, int port, std::string d, std::string l)
      : argv_s(std::move(args)), dir(std::move(d)), log(std::move(l)), user(spec.user) {
    for (auto& s : argv_s) argv.push_back(s.data());
    argv.push_back(nullptr);
    std::vector<std::pair<std::string, std::string>> extra;
    for (const auto& [name, value] : spec.env) extra.emplace_back(name, substitute(value, port, dir));
    env_s = server_environment(dir, extra);
    for (auto& e : env_s) envp.push_back(e.data());
    envp.push_back(nullptr);
    if (!user.empty()) {
      passwd* pw = getpwnam(user.c_str());
      if (!pw) throw SetupError("no user '" + user + "' to run " + argv_s[0] + " as");
      uid = pw->pw_uid;
      gid = pw->pw_gid;
    }
  }
};

// ServiceSpec::secret_files for one start: written before it (mode 0600, owned by the spec's
// user, who reads them), removed when the start ends, whether the server answered or not.
class SecretFiles {
 public:
  SecretFiles(const ServiceSpec& spec, int port, const std::string& dir) {
    try {
      for (const auto& [where, content] : spec.secret_files) write(spec, substitute(where, port, dir), content);
    } catch (...) {
      remove();
      throw;
    }
  }
  ~SecretFiles() { remove(); }
  SecretFiles(const SecretFiles&) = delete;
  SecretFiles& operator=(const SecretFiles&) = delete;

 private:
  void write(const ServiceSpec& spec, const std::string& path, const std::string& content) {
    unlink(path.c_str());
    int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd < 0) throw SetupError(spec.name + ": cannot write " + path + ": " + std::strerror(errno));
    paths_.push_back(path);
    bool ok = true;
    for (size_t done = 0; ok && done < content.size();) {
      ssize_t n = ::write(fd, content.data() + done, content.size() - done);
      if (n < 0 && errno == EINTR) continue;
      ok = n > 0;
      if (ok) done += static_cast<size_t>(n);
    }
    const int err = ok ? 0 : errno;
    if (const passwd* pw = spec.user.empty() ? nullptr : getpwnam(spec.user.c_str()); ok && pw)
      ok = fchown(fd, pw->pw_uid, pw->pw_gid) == 0;
    close(fd);
    if (!ok) throw SetupError(spec.name + ": cannot write " + path + ": " + std::strerror(err ? err : errno));
  }
  void remove() {
    for (const std::string& p : paths_) unlink(p.c_str());
    paths_.clear();
  }
  std::vector<std::string> paths_;
};

void default_signals() {
  for (int sig : {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGPIPE, SIGCHLD}) signal(sig, SIG_DFL);
  sigset_t none;
  sigemptyset(&none);
  sigprocmask(SIG_SETMASK, &none, nullptr);
}

// In a forked child: own process group, dies with `l.parent`, drops to `user`, logs to `log`,
// runs in `dir`, execs. Never returns.
[[noreturn]] void exec_child(const Launch& l) {
  setpgid(0, 0);  // Ctrl-C on the terminal goes to mwbench, which stops the server itself
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (getppid() != l.parent) _exit(124);  // the parent died before prctl: do not start at all
  default_signals();
  int fd = open(l.log.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (fd >= 0) dup2(fd, 1), dup2(fd, 2);
  int devnull = open("/dev/null", O_RDONLY | O_CLOEXEC);
  if (devnull >= 0) dup2(devnull, 0);
  if (!l.user.empty() && (initgroups(l.user.c_str(), l.gid) != 0 || setgid(l.gid) != 0 || setuid(l.uid) != 0))
    _exit(125);
  if (chdir(l.dir.c_str()) != 0) _exit(126);
  execvpe(l.argv[0], l.argv.data(), l.envp.data());  // the environment built for it, never mwbench's
  _exit(127);
}

// The supervisor, a forked copy of mwbench: starts the server, tells mwbench its pid, then
// waits. The server exiting ends the supervisor with the server's status; the lifeline
// closing (mwbench gone, even by SIGKILL) makes it stop the server's whole process group and
// remove the temp dir. Async-signal-safe calls only.
[[noreturn]] void supervise(Launch& l, int report_fd, char* const* rm_argv) {
  const Lifeline& life = lifeline();
  close(life.write_end);
  for (int sig : {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGPIPE}) signal(sig, SIG_IGN);  // mwbench decides
  signal(SIGCHLD, SIG_DFL);
  // Keep only the lifeline and the report pipe (above 2), the rest is mwbench's business: an
  // inherited stdout would keep a reader of mwbench's output waiting.
  int keep_a = fcntl(life.read_end, F_DUPFD_CLOEXEC, 10), keep_b = fcntl(report_fd, F_DUPFD_CLOEXEC, 11);
  int devnull = open("/dev/null", O_RDWR);
  if (devnull >= 0) dup2(devnull, 0), dup2(devnull, 1), dup2(devnull, 2);
  int lo = std::min(keep_a, keep_b), hi = std::max(keep_a, keep_b);
  syscall(SYS_close_range, 3u, static_cast<unsigned>(lo - 1), 0u);
  if (hi - lo > 1) syscall(SYS_close_range, static_cast<unsigned>(lo + 1), static_cast<unsigned>(hi - 1), 0u);
  syscall(SYS_close_range, static_cast<unsigned>(hi + 1), ~0u, 0u);
  l.parent = getpid();
  pid_t server = fork();
  if (server == 0) exec_child(l);
  if (server > 0) setpgid(server, server);
  (void)!write(keep_b, &server, sizeof server);
  close(keep_b);
  if (server < 0) _exit(127);
  int pidfd = static_cast<int>(syscall(SYS_pidfd_open, server, 0));
  for (;;) {
    pollfd p[2] = {{keep_a, POLLIN, 0}, {pidfd, POLLIN, 0}};
    int n = poll(p, pidfd >= 0 ? 2 : 1, pidfd >= 0 ? -1 : 50);
    int status = 0;
    if (waitpid(server, &status, WNOHANG) == server) {
      kill(-server, SIGKILL);  // what the server left running in its group
      _exit(WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status));
    }
    if (n > 0 && (p[0].revents & (POLLIN | POLLHUP | POLLERR))) break;  // mwbench is gone
  }
  kill(-server, SIGTERM);
  kill(-server, SIGCONT);
  bool reaped = false;
  for (int i = 0; i < 100 && !reaped; ++i) {  // a second for a clean exit
    reaped = waitpid(server, nullptr, WNOHANG) == server;
    if (!reaped) poll(nullptr, 0, 10);
  }
  kill(-server, SIGKILL);  // the group: the server and any child it started
  if (!reaped) waitpid(server, nullptr, 0);
  execv(rm_argv[0], rm_argv);
  _exit(0);
}

}  // namespace

void stop_services_now(int sig) {
  for (auto& slot : g_groups) {
    pid_t g = slot.load();
    if (g > 0) kill(-g, sig), kill(-g, SIGCONT);
  }
}

Service::Service(const ServiceSpec& spec) : spec_(spec), owner_(getpid()) {
  static std::once_flag cleaned;
  std::call_once(cleaned, remove_stale_dirs);
  lifeline();  // made before any fork(): a supervisor must never be the first to create it
  std::string bin = find_binary(spec.binary);
  if (bin.empty()) throw SetupError(spec.name + ": " + spec.binary + " not found (run scripts/setup)");
  char tmpl[] = "/tmp/mwbench-svc-XXXXXX";
  if (!mkdtemp(tmpl)) throw SetupError(spec.name + ": cannot create a temp dir");
  dir_ = tmpl;
  log_ = dir_ + "/stdout.log";
  {
    std::ofstream owner(dir_ + "/" + kOwnerFile);
    owner << getpid() << " " << start_time(getpid()) << "\n";
  }
  auto fail = [&](const std::string& why) {
    stop();
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
    dir_.clear();
    throw SetupError(why);
  };
  auto interrupted = [&](const std::string& during) {
    stop();
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
    dir_.clear();
    throw Interrupted(spec_.name + ": interrupted during " + during);
  };
  if (!spec.user.empty()) {
    passwd* pw = getpwnam(spec.user.c_str());
    if (!pw || chown(dir_.c_str(), pw->pw_uid, pw->pw_gid) != 0)
      fail(spec.name + ": cannot hand " + dir_ + " to user " + spec.user);
  }
  for (auto& cmd : spec.setup) {
    std::vector<std::string> argv;
    for (auto& a : cmd) argv.push_back(substitute(a, 0, dir_));
    Launch l(argv, spec, 0, dir_, log_);
    l.parent = getpid();
    pid_t p = fork();
    if (p < 0) fail(spec.name + ": fork failed");
    if (p == 0) exec_child(l);
    setpgid(p, p);
    int status = 0;
    while (waitpid(p, &status, WNOHANG) == 0) {
      if (stop_requested().load()) {
        kill(-p, SIGKILL);
        waitpid(p, nullptr, 0);
        interrupted("set-up step " + argv[0]);
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
      fail(spec.name + ": set-up step " + argv[0] + " failed; log: " + log_tail(600));
  }
  try {
    launch(false);
  } catch (const Interrupted&) {
    interrupted("start-up");
  } catch (const SetupError& e) {
    fail(e.what());
  }
  if (FaultProxy* proxy = routed_proxy()) {
    try {
      client_port_ = proxy->add("127.0.0.1", port_);
    } catch (const SetupError& e) {
      fail(e.what());
    }
  }
  claim(this);
}

// Starts the server in dir_ and waits until it answers; throws SetupError (the server stopped,
// the dir kept) or Interrupted. `same_port`: on the port it had (a restart), else on a free one.
void Service::launch(bool same_port) {
  std::string bin = find_binary(spec_.binary);
  if (bin.empty()) throw SetupError(spec_.name + ": " + spec_.binary + " not found (run scripts/setup)");
  const ServiceSpec& spec = spec_;
  std::string rm_s[] = {"/bin/rm", "-rf", "--", dir_};
  char* rm_argv[] = {rm_s[0].data(), rm_s[1].data(), rm_s[2].data(), rm_s[3].data(), nullptr};
  auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(spec.start_timeout_s);
  for (int attempt = 0;; ++attempt) {  // a port taken between free_port() and bind: try another
    if (!same_port || attempt > 0) port_ = free_port();
    std::vector<std::string> args{bin};
    for (auto& a : spec.args) args.push_back(substitute(a, port_, dir_));
    mark_logs();  // a failure quotes this start's log, not what an earlier (killed) one wrote
    Launch l(args, spec, port_, dir_, log_);
    SecretFiles secrets(spec, port_, dir_);  // removed when this start ends, however it ends
    int report[2];
    if (pipe2(report, O_CLOEXEC) != 0) throw SetupError(spec.name + ": cannot create a pipe");
    sup_ = fork();
    if (sup_ < 0) {
      close(report[0]), close(report[1]);
      throw SetupError(spec.name + ": fork failed");
    }
    if (sup_ == 0) {
      close(report[0]);
      supervise(l, report[1], rm_argv);
    }
    close(report[1]);
    pid_t server = -1;
    ssize_t got;
    while ((got = read(report[0], &server, sizeof server)) < 0 && errno == EINTR) {}
    close(report[0]);
    if (got != static_cast<ssize_t>(sizeof server) || server <= 0) {
      waitpid(sup_, nullptr, 0);
      sup_ = -1;
      throw SetupError(spec.name + ": cannot start " + bin);
    }
    pid_ = server;
    register_group(pid_);
    std::string last;
    bool stopped = false;
    while (std::chrono::steady_clock::now() < deadline) {
      if (!running()) break;
      if ((stopped = stop_requested().load())) break;
      last = spec.probe(port_);
      if (last.empty()) return;
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    if (stopped) {
      stop();
      throw Interrupted(spec.name + ": interrupted during start-up");
    }
    bool died = !running();
    stop();
    if (died && attempt < 2 && log_tail().find("in use") != std::string::npos) continue;
    std::string why =
        died ? "exited during start-up"
             : "did not answer within " + std::to_string(static_cast<int>(spec.start_timeout_s)) + " s (" + last + ")";
    throw SetupError(spec.name + " on 127.0.0.1:" + std::to_string(port_) + " " + why + "; log: " + log_tail(600));
  }
}

void Service::kill_now() {
  if (sup_ <= 0) return;
  // Children that left its process group (PostgreSQL's backends each run in a session of their
  // own) die with it, as in a crash, not when they notice their parent is gone. Stopped first, it
  // starts no more children, and those it has keep it as their parent while they are looked up.
  kill(pid_, SIGSTOP);
  for (pid_t c : children_of(pid_)) kill(c, SIGKILL);
  kill(-pid_, SIGKILL);
  kill(-pid_, SIGCONT);
  // The supervisor reaps the server and exits with it; a few seconds at most.
  for (int i = 0; i < 500 && running(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  stop();
}

bool Service::pause(bool on) {
  if (sup_ <= 0 || pid_ <= 0) return false;
  return kill(-pid_, on ? SIGSTOP : SIGCONT) == 0;
}

void Service::restart() {
  stop();
  struct stat st {};
  if (dir_.empty() || stat(dir_.c_str(), &st) != 0 || !S_ISDIR(st.st_mode))
    throw SetupError(spec_.name + ": cannot restart on the same store: its directory " +
                     (dir_.empty() ? std::string("(none)") : dir_) + " is gone");
  launch(true);
}

bool Service::running() {
  if (sup_ <= 0) return false;
  int status = 0;
  pid_t r = waitpid(sup_, &status, WNOHANG);
  if (r == sup_ || (r < 0 && errno == ECHILD)) {  // the server is gone, and so is its supervisor
    unregister_group(pid_);
    sup_ = -1;
    pid_ = -1;
    return false;
  }
  return true;
}

void Service::stop() {
  if (owner_ != getpid()) sup_ = -1, pid_ = -1;  // the parent's server, not this forked child's
  if (sup_ <= 0) return;
  kill(-pid_, SIGTERM);
  kill(-pid_, SIGCONT);  // a stopped server must see the SIGTERM
  for (int i = 0; i < 500 && running(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  if (sup_ > 0) {
    kill(-pid_, SIGKILL);
    for (int i = 0; i < 100 && running(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  if (sup_ > 0) {
    kill(sup_, SIGKILL);
    waitpid(sup_, nullptr, 0);
    unregister_group(pid_);
    sup_ = -1;
    pid_ = -1;
  }
}

Service::~Service() {
  unclaim(this);
  stop();
  std::error_code ec;
  if (!dir_.empty() && owner_ == getpid()) std::filesystem::remove_all(dir_, ec);
}

void Service::mark_logs() {
  log_marks_.clear();
  std::error_code ec;
  for (auto& f : std::filesystem::directory_iterator(dir_, ec))
    if (f.path().extension() == ".log") log_marks_[f.path().string()] = f.file_size(ec);
}

std::string Service::log_tail(size_t max_bytes) const {
  std::string all;
  std::error_code ec;
  for (auto& f : std::filesystem::directory_iterator(dir_, ec)) {
    if (f.path().extension() != ".log") continue;
    std::ifstream in(f.path());
    auto mark = log_marks_.find(f.path().string());
    if (mark != log_marks_.end()) in.seekg(static_cast<std::streamoff>(mark->second));
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
  if (routed_proxy()) return std::make_shared<Service>(spec);  // claimed by its constructor
  std::lock_guard lk(g_mu);
  auto& s = shared()[key];
  if (!s || !s->running()) {
    s.reset();
    s = std::make_shared<Service>(spec);
  }
  claim(s.get());
  return s;
}

void stop_shared_services() {
  std::lock_guard lk(g_mu);
  shared().clear();
}

void move_data_dir(ServiceSpec& spec, const std::string& from, const std::string& to) {
  if (mkdir(to.c_str(), 0700) != 0) throw SetupError(spec.name + ": cannot make " + to + ": " + std::strerror(errno));
  if (const passwd* pw = spec.user.empty() ? nullptr : getpwnam(spec.user.c_str()))
    if (chown(to.c_str(), pw->pw_uid, pw->pw_gid) != 0)
      throw SetupError(spec.name + ": cannot give " + to + " to " + spec.user + ": " + std::strerror(errno));
  relocate(spec, from, to);
}

void relocate(ServiceSpec& spec, const std::string& from, const std::string& to) {
  auto place = [&](std::string& a) {
    for (size_t at = 0; (at = a.find(from, at)) != std::string::npos; at += to.size()) a.replace(at, from.size(), to);
  };
  for (std::string& a : spec.args) place(a);
  for (auto& cmd : spec.setup)
    for (std::string& a : cmd) place(a);
}

}  // namespace mw
