#include "pagecache/mount.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <set>
#include <sstream>
#include <thread>
#include <vector>

#include "pagecache/layer_dir.h"
#include "pagecache/volatile_files.h"
#include "util/status.h"

namespace mw {
namespace {

constexpr const char* kFsType = "fuse.mwbench-pagecache";

std::string fuse_device() {
  const char* d = std::getenv("MWBENCH_FUSE_DEVICE");  // tests name a missing one
  return d && *d ? d : "/dev/fuse";
}

// The daemon: $MWBENCH_PAGECACHE, else beside mwbench (or one folder up: build/tests/unit_tests).
std::string daemon_binary() {
  if (const char* e = std::getenv("MWBENCH_PAGECACHE"); e && *e) return e;
  std::error_code ec;
  auto self = std::filesystem::read_symlink("/proc/self/exe", ec).parent_path();
  for (const auto& dir : {self, self.parent_path()}) {
    auto p = dir / "mwbench-pagecache";
    if (access(p.c_str(), X_OK) == 0) return p.string();
  }
  return {};
}

// One line from `fd`, waiting at most timeout_s; "" on end of stream or time-out.
std::string read_line(int fd, double timeout_s) {
  std::string line;
  const auto until = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
  while (line.size() < 512) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(until - std::chrono::steady_clock::now());
    if (left.count() <= 0) return {};
    pollfd p{fd, POLLIN, 0};
    int r = poll(&p, 1, static_cast<int>(left.count()));
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return {};
    char c;
    ssize_t k = read(fd, &c, 1);
    if (k < 0 && errno == EINTR) continue;
    if (k <= 0) return {};
    if (c == '\n') return line;
    line += c;
  }
  return line;
}

// The page-cache mounts in this mount namespace (octal escapes of mountinfo undone), with the
// user whose daemon serves each (FUSE's user_id=).
struct LayerMount {
  std::string path;
  long uid = -1;
};
std::vector<LayerMount> layer_mounts() {
  std::vector<LayerMount> out;
  std::ifstream in("/proc/self/mountinfo");
  std::string line;
  while (std::getline(in, line)) {
    auto sep = line.find(" - ");
    if (sep == std::string::npos || line.compare(sep + 3, std::strlen(kFsType) + 1, std::string(kFsType) + " ") != 0)
      continue;
    std::istringstream f(line.substr(0, sep));
    std::string id, parent, dev, root, mp;
    f >> id >> parent >> dev >> root >> mp;
    LayerMount m;
    for (size_t i = 0; i < mp.size(); ++i) {
      if (mp[i] == '\\' && i + 3 < mp.size()) {
        m.path += static_cast<char>(std::stoi(mp.substr(i + 1, 3), nullptr, 8));
        i += 3;
      } else {
        m.path += mp[i];
      }
    }
    if (auto at = line.find(",user_id=", sep); at != std::string::npos) m.uid = std::atol(line.c_str() + at + 9);
    out.push_back(m);
  }
  return out;
}

// BASE as the mount table names it (symlinks resolved).
std::string canonical_base(const std::string& base) {
  std::error_code ec;
  auto c = std::filesystem::weakly_canonical(base.empty() ? "/tmp" : base, ec);
  return ec ? std::string() : c.string();
}

// The layer directory of mount point `mp` when it is ROOT/mwbench-pc-XXXXXX/data and its daemon
// runs as this user; "" for any other mount, which mwbench leaves alone.
std::string layer_of(const LayerMount& m, const std::string& root) {
  const std::filesystem::path mp(m.path);
  if (root.empty() || mp.filename() != "data" || mp.parent_path().parent_path() != root) return {};
  if (m.uid != static_cast<long>(geteuid())) return {};
  return mp.parent_path().string();
}

}  // namespace

const char* PageCacheMount::model(bool torn) { return torn ? pagecache::kTornModelName : pagecache::kModelName; }

std::string pagecache_unavailable() {
  const std::string dev = fuse_device();
  int fd = open(dev.c_str(), O_RDWR | O_CLOEXEC);
  if (fd < 0) return dev + " cannot be opened (" + std::strerror(errno) + "): FUSE is missing or not permitted";
  close(fd);
  if (daemon_binary().empty()) return "mwbench-pagecache (the layer's daemon) is not beside mwbench";
  return {};
}

void remove_stale_pagecache_mounts(const std::string& base) {
  const std::string root = canonical_base(base);
  for (const LayerMount& m : layer_mounts()) {
    const std::string dir = layer_of(m, root);
    if (dir.empty()) continue;
    const pagecache::LayerOwner owner = pagecache::inspect_layer(dir);
    if (!owner.ours || owner.alive) continue;
    umount2(m.path.c_str(), MNT_DETACH | UMOUNT_NOFOLLOW);
    pagecache::remove_layer(dir);
  }
}

void remove_stale_layer_dirs(const std::string& base) {
  std::set<std::string> mounted;
  for (const LayerMount& m : layer_mounts()) mounted.insert(std::filesystem::path(m.path).parent_path().string());
  const std::string root = canonical_base(base);
  std::error_code ec;
  for (auto& e : std::filesystem::directory_iterator(root, ec)) {
    const std::string dir = e.path().string();
    if (e.path().filename().string().rfind(pagecache::kLayerPrefix, 0) != 0 || mounted.count(dir)) continue;
    // No marker yet: another mwbench is making it. An owner still running keeps it.
    const pagecache::LayerOwner owner = pagecache::inspect_layer(dir);
    if (owner.ours && !owner.alive) pagecache::remove_layer(dir);
  }
}

PageCacheMount::PageCacheMount(const std::string& base, bool torn) : torn_(torn) {
  {  // once per base: the layers of owners that are gone, mounted or not
    static std::mutex mu;
    static std::set<std::string> bases;
    std::lock_guard lk(mu);
    if (bases.insert(base).second) {
      remove_stale_pagecache_mounts(base);
      remove_stale_layer_dirs(base);
    }
  }
  if (std::string why = pagecache_unavailable(); !why.empty()) throw SetupError("--crash power: " + why);
  std::string tmpl = (base.empty() ? std::string("/tmp") : base) + "/" + pagecache::kLayerPrefix + "XXXXXX";
  if (!mkdtemp(tmpl.data()))
    throw SetupError("--crash power: cannot create a directory in " + base + ": " + std::strerror(errno));
  dir_ = tmpl, disk_ = dir_ + "/" + pagecache::kLowerDir, data_ = dir_ + "/" + pagecache::kDataDir;
  chmod(dir_.c_str(), 0755);  // a server run as another user (PostgreSQL) reaches its directory in data/
  if (!pagecache::write_marker(dir_) || mkdir(disk_.c_str(), 0755) != 0 || mkdir(data_.c_str(), 0755) != 0) {
    const int e = errno;
    pagecache::remove_layer(dir_);
    rmdir(dir_.c_str());  // no marker written: empty, and made by this process a moment ago
    throw SetupError("--crash power: cannot create the layer " + dir_ + ": " + std::strerror(e));
  }
  try {
    start();
  } catch (...) {
    pagecache::remove_layer(dir_);
    throw;
  }
}

PageCacheMount::~PageCacheMount() {
  stop();
  pagecache::remove_layer(dir_);
}

void PageCacheMount::start() {
  const std::string bin = daemon_binary();
  int sv[2];
  if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0)
    throw SetupError(std::string("--crash power: socketpair: ") + std::strerror(errno));
  pid_t pid = fork();
  if (pid < 0) {
    close(sv[0]), close(sv[1]);
    throw SetupError(std::string("--crash power: fork: ") + std::strerror(errno));
  }
  if (pid == 0) {  // its own session: a Ctrl-C to mwbench's group leaves the unmount to it
    setsid();
    int fd = dup(sv[1]);  // without FD_CLOEXEC
    std::string fd_s = std::to_string(fd);
    execl(bin.c_str(), "mwbench-pagecache", disk_.c_str(), data_.c_str(), fd_s.c_str(),
          torn_ ? "writethrough" : "writeback", static_cast<char*>(nullptr));
    _exit(127);
  }
  close(sv[1]);
  pid_ = pid, ctl_ = sv[0];
  std::string line = read_line(ctl_, 10);
  if (line.rfind("ready", 0) != 0) {
    stop();
    throw SetupError("--crash power: the page-cache layer did not mount at " + data_ + ": " +
                     (line.empty() ? "no answer from " + bin : line));
  }
}

void PageCacheMount::stop() {
  if (pid_ < 0) return;
  if (send(ctl_, "stop\n", 5, MSG_NOSIGNAL) < 0) {}
  close(ctl_);
  ctl_ = -1;
  for (int i = 0; i < 500; ++i) {  // 5 s, then it is killed and the mount detached from here
    if (waitpid(pid_, nullptr, WNOHANG) == pid_) {
      pid_ = -1;
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  if (pid_ > 0) {
    kill(pid_, SIGKILL);
    waitpid(pid_, nullptr, 0);
    pid_ = -1;
  }
  umount2(data_.c_str(), MNT_DETACH);  // EINVAL when the daemon did it
}

size_t PageCacheMount::power_cut() {
  if (pid_ < 0) throw SetupError("--crash power: the page-cache layer at " + data_ + " is not mounted");
  std::string line;
  const std::string cmd = torn_ ? "cut torn\n" : "cut\n";
  if (send(ctl_, cmd.data(), cmd.size(), MSG_NOSIGNAL) == static_cast<ssize_t>(cmd.size())) line = read_line(ctl_, 60);
  if (line.empty()) kill(pid_, SIGKILL);
  waitpid(pid_, nullptr, 0);
  pid_ = -1;
  close(ctl_);
  ctl_ = -1;
  umount2(data_.c_str(), MNT_DETACH);
  if (line.rfind("cut ", 0) != 0)
    throw SetupError("--crash power: dropping the unsynced data under " + data_ +
                     " failed: " + (line.empty() ? "the layer's daemon did not answer" : line));
  start();
  return std::stoul(line.substr(4));
}

}  // namespace mw
