#include "pagecache/layer_dir.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <set>
#include <sstream>

namespace mw::pagecache {
namespace {

constexpr const char* kMarkerTag = "mwbench-pagecache-layer";
constexpr int kMaxDepth = 64;  // deeper than any store's directory; deeper entries stay

// The start time of process `pid` (field 22 of /proc/PID/stat), "" when it is gone.
std::string start_time(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  if (!std::getline(in, line)) return {};
  const size_t at = line.rfind(") ");
  if (at == std::string::npos) return {};
  std::istringstream f(line.substr(at + 2));
  std::string field;
  for (int i = 3; i <= 22 && f >> field; ++i)
    if (i == 22) return field;
  return {};
}

// A descriptor that closes itself.
struct Fd {
  int fd = -1;
  explicit Fd(int f) : fd(f) {}
  ~Fd() {
    if (fd >= 0) close(fd);
  }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
};

// Ours: this user's, and nobody else may write it.
bool mine(const struct stat& st) { return st.st_uid == geteuid() && (st.st_mode & (S_IWGRP | S_IWOTH)) == 0; }

// The parent of `dir` and the layer's name in it; false when `dir` is not named as a layer.
bool split(const std::string& dir, std::string* parent, std::string* name) {
  std::string d = dir;
  while (d.size() > 1 && d.back() == '/') d.pop_back();
  const size_t slash = d.rfind('/');
  *parent = slash == std::string::npos ? "." : slash == 0 ? "/" : d.substr(0, slash);
  *name = slash == std::string::npos ? d : d.substr(slash + 1);
  const size_t n = std::strlen(kLayerPrefix);
  return name->size() == n + 6 && name->compare(0, n, kLayerPrefix) == 0 && name->find('/') == std::string::npos;
}

// Opens the layer directory (never through a symlink) and checks everything but the owner's
// life; -1 with `why` when it is not ours.
int open_layer(const std::string& dir, int* parent_fd, LayerOwner* out) {
  std::string parent, name;
  if (!split(dir, &parent, &name)) return out->why = "not named " + std::string(kLayerPrefix) + "XXXXXX", -1;
  *parent_fd = open(parent.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (*parent_fd < 0) return out->why = "its parent cannot be opened", -1;
  int fd = openat(*parent_fd, name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  struct stat st {};
  if (fd < 0 || fstat(fd, &st) != 0 || !mine(st)) {
    if (fd >= 0) close(fd);
    return out->why = "not a directory of this user's alone", -1;
  }
  Fd marker(openat(fd, kMarkerFile, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC));
  struct stat ms {};
  char buf[160] = {};
  ssize_t k = -1;
  if (marker.fd >= 0 && fstat(marker.fd, &ms) == 0 && S_ISREG(ms.st_mode) && mine(ms) && ms.st_nlink == 1 &&
      ms.st_size < static_cast<off_t>(sizeof buf))
    k = read(marker.fd, buf, sizeof buf - 1);
  char tag[32] = {}, start[32] = {}, end = 0;
  long pid = 0;
  if (k <= 0 || std::sscanf(buf, "%31s %ld %31s%c", tag, &pid, start, &end) != 4 || end != '\n' ||
      std::strcmp(tag, kMarkerTag) != 0 || pid <= 0) {
    close(fd);
    return out->why = "no marker of mwbench's in it", -1;
  }
  out->ours = true;
  out->pid = static_cast<pid_t>(pid);
  out->alive = out->pid == getpid() || start_time(out->pid) == start;
  return fd;
}

// Removes `name` in `dir_fd` and all below it on device `dev`: a symlink is removed as a name,
// a directory on another device (a mount) is left with what holds it.
bool remove_tree_at(int dir_fd, const char* name, dev_t dev, int depth) {
  if (unlinkat(dir_fd, name, 0) == 0 || errno == ENOENT) return true;
  if ((errno != EISDIR && errno != EPERM) || depth >= kMaxDepth) return false;
  int fd = openat(dir_fd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  struct stat st {};
  if (fd < 0 || fstat(fd, &st) != 0 || st.st_dev != dev) {
    if (fd >= 0) close(fd);
    return false;
  }
  DIR* d = fdopendir(fd);
  if (!d) {
    close(fd);
    return false;
  }
  bool ok = true;
  while (dirent* e = readdir(d))
    if (std::strcmp(e->d_name, ".") != 0 && std::strcmp(e->d_name, "..") != 0)
      ok = remove_tree_at(dirfd(d), e->d_name, dev, depth + 1) && ok;
  closedir(d);
  return unlinkat(dir_fd, name, AT_REMOVEDIR) == 0 && ok;
}

}  // namespace

bool write_marker(const std::string& dir) {
  Fd d(open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (d.fd < 0) return false;
  Fd f(openat(d.fd, kMarkerFile, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644));
  if (f.fd < 0) return false;
  const std::string start = start_time(getpid());
  const std::string line =
      std::string(kMarkerTag) + " " + std::to_string(getpid()) + " " + (start.empty() ? "0" : start) + "\n";
  return write(f.fd, line.data(), line.size()) == static_cast<ssize_t>(line.size());
}

LayerOwner inspect_layer(const std::string& dir) {
  LayerOwner out;
  int parent = -1;
  int fd = open_layer(dir, &parent, &out);
  if (fd >= 0) close(fd);
  if (parent >= 0) close(parent);
  return out;
}

bool remove_layer(const std::string& dir, std::string* why) {
  LayerOwner owner;
  int parent_fd = -1;
  Fd layer(open_layer(dir, &parent_fd, &owner));
  Fd parent(parent_fd);
  auto fail = [&](const std::string& w) {
    if (why) *why = w;
    return false;
  };
  if (layer.fd < 0) return fail(owner.why);
  {  // only what mwbench puts there; anything else keeps the directory whole
    Fd list(dup(layer.fd));
    DIR* d = list.fd >= 0 ? fdopendir(list.fd) : nullptr;
    if (!d) return fail("it cannot be listed");
    list.fd = -1;  // the DIR owns it now
    std::string other;
    while (dirent* e = readdir(d)) {
      const std::string n = e->d_name;
      if (n != "." && n != ".." && n != kMarkerFile && n != kLowerDir && n != kDataDir) other = n;
    }
    closedir(d);
    if (!other.empty()) return fail("it holds " + other + ", which mwbench did not put there");
  }
  struct stat st {};
  fstat(layer.fd, &st);
  if (!remove_tree_at(layer.fd, kLowerDir, st.st_dev, 0)) return fail("lower/ could not be removed whole");
  if (unlinkat(layer.fd, kDataDir, AT_REMOVEDIR) != 0 && errno != ENOENT)
    return fail(std::string("data/ stays: ") + std::strerror(errno));
  if (unlinkat(layer.fd, kMarkerFile, 0) != 0 && errno != ENOENT) return fail("its marker could not be removed");
  std::string parent_path, name;
  split(dir, &parent_path, &name);
  if (unlinkat(parent.fd, name.c_str(), AT_REMOVEDIR) != 0) return fail(std::strerror(errno));
  return true;
}

}  // namespace mw::pagecache
