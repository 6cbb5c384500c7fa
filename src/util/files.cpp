#include "util/files.h"

#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

namespace mw {

std::pair<std::string, std::string> filesystem_of(const std::string& path) {
  char real[PATH_MAX];
  std::string p = realpath(path.c_str(), real) ? real : path;
  std::ifstream in("/proc/self/mountinfo");
  std::string line, best_fs, best_dev;
  size_t best_len = 0;
  while (std::getline(in, line)) {
    // id parent major:minor root mountpoint options ... - fstype source superoptions
    std::istringstream ls(line);
    std::string id, parent, majmin, root, mnt, tok;
    ls >> id >> parent >> majmin >> root >> mnt;
    while (ls >> tok && tok != "-") {}
    std::string fs, dev;
    ls >> fs >> dev;
    bool under = p == mnt || mnt == "/" || (p.rfind(mnt, 0) == 0 && p.size() > mnt.size() && p[mnt.size()] == '/');
    if (under && mnt.size() >= best_len) {
      best_len = mnt.size();
      best_fs = fs;
      best_dev = dev;
    }
  }
  return {best_fs.empty() ? "unknown" : best_fs, best_dev};
}

std::string unique_name(const std::string& stem, char sep) {
  static std::atomic<uint64_t> counter{0};
  return stem + sep + std::to_string(getpid()) + sep + std::to_string(counter++);
}

std::string trim_dir(std::string dir) {
  while (dir.size() > 1 && dir.back() == '/') dir.pop_back();
  return dir;
}

std::string temp_file(const std::string& dir, const std::string& ext, const std::string& stem) {
  return trim_dir(dir) + "/" + unique_name(stem) + ext;
}

std::string unusable_dir(const std::string& dir) {
  struct stat st {};
  if (stat(dir.c_str(), &st) != 0) return "directory " + dir + " does not exist";
  if (!S_ISDIR(st.st_mode)) return dir + " is not a directory";
  std::string probe = dir + "/.mwbench-probe-" + std::to_string(getpid());
  int fd = open(probe.c_str(), O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC, 0600);
  if (fd < 0) return "directory " + dir + " is not writable (" + std::strerror(errno) + ")";
  close(fd);
  unlink(probe.c_str());
  return "";
}

}  // namespace mw
