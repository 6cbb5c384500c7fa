// The FUSE page-cache layer of --crash power (src/pagecache/), with plain files: what its model
// (mwbench-pagecache-1) keeps and drops on a power cut, and that no mount outlives its owner.
#include <doctest/doctest.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "pagecache/layer_dir.h"
#include "pagecache/mount.h"
#include "pagecache/volatile_files.h"

using namespace mw;

namespace {

std::string slurp(const std::string& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

void put(int fd, const std::string& s, off_t at) {
  REQUIRE(pwrite(fd, s.data(), s.size(), at) == static_cast<ssize_t>(s.size()));
}

int make(const std::string& p, int flags = 0) {
  int fd = open(p.c_str(), O_CREAT | O_RDWR | O_CLOEXEC | flags, 0644);
  REQUIRE(fd >= 0);
  return fd;
}

bool mounted(const std::string& where) {
  std::ifstream in("/proc/self/mountinfo");
  std::string line;
  while (std::getline(in, line))
    if (line.find(" " + where + " ") != std::string::npos) return true;
  return false;
}

// A layer mounted in a child process that waits to be killed: its pid and the layer's path().
std::pair<pid_t, std::string> mount_in_child() {
  int pipefd[2];
  REQUIRE(pipe(pipefd) == 0);
  pid_t pid = fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    close(pipefd[0]);
    try {
      PageCacheMount m("/tmp");
      std::string line = m.path() + "\n";
      if (write(pipefd[1], line.data(), line.size()) < 0) _exit(1);
      pause();
    } catch (...) {}
    _exit(1);
  }
  close(pipefd[1]);
  std::string where;
  char c;
  while (read(pipefd[0], &c, 1) == 1 && c != '\n') where += c;
  close(pipefd[0]);
  return {pid, where};
}

// The requests the layer served ($MWBENCH_PAGECACHE_COUNTS, daemon.cpp): name -> count.
std::map<std::string, uint64_t> counts_of(const std::string& line) {
  std::map<std::string, uint64_t> c;
  std::istringstream in(line);
  std::string w;
  in >> w;  // how the daemon ended
  while (in >> w)
    if (auto eq = w.find('='); eq != std::string::npos) c[w.substr(0, eq)] = std::stoull(w.substr(eq + 1));
  return c;
}

// mwbench-pagecache started by hand (as anyone may) on DIR/lower over DIR/data: its pid and the
// control socket, once it said "ready".
struct HandDaemon {
  pid_t pid = -1;
  int ctl = -1;
};
HandDaemon start_daemon(const std::string& dir) {
  const auto exe = std::filesystem::read_symlink("/proc/self/exe");
  const std::string bin = (exe.parent_path().parent_path() / "mwbench-pagecache").string();
  const std::string disk = dir + "/lower", data = dir + "/data";
  int sv[2];
  REQUIRE(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) == 0);
  const pid_t pid = fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    const std::string fd = std::to_string(dup(sv[1]));
    execl(bin.c_str(), "mwbench-pagecache", disk.c_str(), data.c_str(), fd.c_str(), "writeback",
          static_cast<char*>(nullptr));
    _exit(127);
  }
  close(sv[1]);
  std::string line;
  char c;
  pollfd p{sv[0], POLLIN, 0};
  while (poll(&p, 1, 10000) == 1 && read(sv[0], &c, 1) == 1 && c != '\n') line += c;
  CHECK(line.rfind("ready", 0) == 0);
  return {pid, sv[0]};
}
void stop_daemon(const HandDaemon& d, const std::string& dir) {
  if (send(d.ctl, "stop\n", 5, MSG_NOSIGNAL) < 0) {}
  close(d.ctl);
  waitpid(d.pid, nullptr, 0);
  umount2((dir + "/data").c_str(), MNT_DETACH);
}

// A directory holding a file of its own, with lower/ and data/ beside it (a hand-made mount's).
std::string dir_with_files(const std::string& d) {
  std::filesystem::create_directories(d + "/lower");
  std::filesystem::create_directories(d + "/data");
  std::ofstream(d + "/keep.txt") << "not mwbench's";
  return d;
}

}  // namespace

TEST_CASE("pagecache: write + fsync survives a power cut, the write after it does not") {
  PageCacheMount m("/tmp");
  const std::string f = m.path() + "/f";
  int fd = make(f);
  put(fd, std::string(5000, 'a'), 0);
  REQUIRE(fsync(fd) == 0);
  put(fd, std::string(100, 'b'), 10);     // over synced bytes
  put(fd, std::string(3000, 'c'), 5000);  // past the synced end
  close(fd);
  CHECK(slurp(f).substr(8, 4) == "aabb");  // read while mounted: the unsynced bytes are there
  CHECK(std::filesystem::file_size(f) == 8000);
  CHECK(m.power_cut() >= 1);
  CHECK(slurp(f) == std::string(5000, 'a'));
  CHECK(std::string(PageCacheMount::model()) == "mwbench-pagecache-1");
}

TEST_CASE("pagecache: fdatasync and O_DSYNC writes are durable; a file never synced is empty") {
  PageCacheMount m("/tmp");
  int a = make(m.path() + "/a");
  put(a, "kept", 0);
  REQUIRE(fdatasync(a) == 0);
  put(a, "LOST", 0);
  close(a);
  int d = make(m.path() + "/d", O_DSYNC);
  put(d, "dsync", 0);
  close(d);
  int s = make(m.path() + "/s", O_SYNC);
  put(s, "osync", 0);
  close(s);
  int n = make(m.path() + "/n");
  put(n, "never synced", 0);
  close(n);
  m.power_cut();
  CHECK(slurp(m.path() + "/a") == "kept");
  CHECK(slurp(m.path() + "/d") == "dsync");
  CHECK(slurp(m.path() + "/s") == "osync");
  CHECK(std::filesystem::exists(m.path() + "/n"));  // its creation is metadata: durable at once
  CHECK(slurp(m.path() + "/n").empty());
}

TEST_CASE("pagecache: rename and unlink are durable at once, with or without a directory fsync") {
  PageCacheMount m("/tmp");
  int fd = make(m.path() + "/tmp1");
  put(fd, "synced", 0);
  REQUIRE(fsync(fd) == 0);
  put(fd, "+unsynced", 6);  // the data follows the file, not its name
  close(fd);
  std::filesystem::rename(m.path() + "/tmp1", m.path() + "/final");  // no directory fsync
  int gone = make(m.path() + "/gone");
  put(gone, "x", 0);
  REQUIRE(fsync(gone) == 0);
  close(gone);
  std::filesystem::remove(m.path() + "/gone");
  int dfd = open(m.path().c_str(), O_RDONLY | O_DIRECTORY);
  REQUIRE(fsync(dfd) == 0);  // a directory fsync is accepted and changes nothing
  close(dfd);
  int other = make(m.path() + "/other");
  put(other, "old", 0);
  REQUIRE(fsync(other) == 0);
  close(other);
  int fresh = make(m.path() + "/fresh");
  put(fresh, "new", 0);
  REQUIRE(fsync(fresh) == 0);
  close(fresh);
  std::filesystem::rename(m.path() + "/fresh", m.path() + "/other");  // replaces a synced file
  m.power_cut();
  CHECK_FALSE(std::filesystem::exists(m.path() + "/tmp1"));
  CHECK(slurp(m.path() + "/final") == "synced");
  CHECK_FALSE(std::filesystem::exists(m.path() + "/gone"));
  CHECK(slurp(m.path() + "/other") == "new");
}

TEST_CASE("pagecache: truncate is durable at once; the bytes written past it after are not") {
  PageCacheMount m("/tmp");
  const std::string f = m.path() + "/t";
  int fd = make(f);
  put(fd, std::string(10000, 'x'), 0);
  REQUIRE(fsync(fd) == 0);
  REQUIRE(ftruncate(fd, 3000) == 0);      // shrink: kept
  REQUIRE(ftruncate(fd, 6000) == 0);      // grow: zeros, kept
  put(fd, std::string(1000, 'y'), 4000);  // into the grown part, unsynced: zeros after the cut
  put(fd, std::string(10, 'z'), 0);       // over synced bytes, unsynced
  close(fd);
  m.power_cut();
  CHECK(slurp(f) == std::string(3000, 'x') + std::string(3000, '\0'));
}

TEST_CASE("pagecache: a file extended by mmap writes is durable after msync, not before") {
  PageCacheMount m("/tmp");
  const std::string f = m.path() + "/m";
  int fd = make(f);
  REQUIRE(ftruncate(fd, 8192) == 0);
  REQUIRE(fsync(fd) == 0);
  void* p = mmap(nullptr, 8192, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  REQUIRE(p != MAP_FAILED);
  char* c = static_cast<char*>(p);
  std::memset(c, 'm', 4096);
  REQUIRE(msync(c, 8192, MS_SYNC) == 0);
  std::memset(c + 4096, 'u', 4096);  // never msynced
  munmap(p, 8192);
  close(fd);
  CHECK(slurp(f)[5000] == 'u');
  m.power_cut();
  CHECK(slurp(f) == std::string(4096, 'm') + std::string(4096, '\0'));
}

TEST_CASE("pagecache: concurrent writers to one file; the cut keeps exactly the synced round") {
  PageCacheMount m("/tmp");
  const std::string f = m.path() + "/c";
  int fd = make(f);
  constexpr int kThreads = 4, kBlocks = 64;
  auto round = [&](char base) {
    std::vector<std::thread> ts;
    for (int t = 0; t < kThreads; ++t)
      ts.emplace_back([&, t] {
        for (int b = t; b < kBlocks; b += kThreads)
          put(fd, std::string(4096, static_cast<char>(base + t)), static_cast<off_t>(b) * 4096);
      });
    for (auto& t : ts) t.join();
  };
  round('a');
  REQUIRE(fsync(fd) == 0);
  round('A');  // every block overwritten, unsynced
  close(fd);
  std::string want;
  for (int b = 0; b < kBlocks; ++b) want += std::string(4096, static_cast<char>('a' + b % kThreads));
  m.power_cut();
  CHECK(slurp(f) == want);
}

TEST_CASE("pagecache: a synced append costs the layer one write and one fsync; the clock's ticks cost no request") {
  const std::string file = "/tmp/mwbench-pc-counts-" + std::to_string(getpid());
  std::filesystem::remove(file);
  REQUIRE(setenv("MWBENCH_PAGECACHE_COUNTS", file.c_str(), 1) == 0);
  constexpr int kCommits = 20;
  time_t first = 0, last = 0;
  {
    std::unique_ptr<PageCacheMount> m;
    try {
      m = std::make_unique<PageCacheMount>("/tmp");
    } catch (...) {
      unsetenv("MWBENCH_PAGECACHE_COUNTS");
      throw;
    }
    unsetenv("MWBENCH_PAGECACHE_COUNTS");  // the daemon has it
    int fd = make(m->path() + "/wal");
    first = time(nullptr);
    for (int i = 0; i < kCommits; ++i) {  // SQLite's WAL at synchronous=full: a frame, then fdatasync
      put(fd, std::string(4120, 'w'), static_cast<off_t>(i) * 4120);
      REQUIRE(fdatasync(fd) == 0);
      // Long enough for the kernel's clock to tick: each write would change the file's mtime
      // and send the layer a SETATTR (utimens) with the next fdatasync, but for time_gran.
      std::this_thread::sleep_for(std::chrono::milliseconds(15));
    }
    close(fd);
    last = time(nullptr);
  }
  const std::string line = slurp(file);
  std::filesystem::remove(file);
  INFO("counts: " << line);
  REQUIRE(line.rfind("stop ", 0) == 0);
  auto c = counts_of(line);
  CHECK(c["fsync"] == kCommits);
  CHECK(c["write"] >= kCommits);  // the dirty pages of each append, handed over as one request
  CHECK(c["write"] <= kCommits + 2);
  CHECK(c["written_bytes"] >= kCommits * 4120);
  // The kernel keeps mtime to the second: one update per second the loop spanned, and one at close.
  CHECK(c["utimens"] <= static_cast<uint64_t>(last - first) + 2);
  CHECK(c["getattr"] <= c["utimens"] + 3);  // the create's, and one in each SETATTR's reply: none per commit
}

TEST_CASE("pagecache: a torn cut keeps the first half of each file's last unsynced write, nothing else unsynced") {
  CHECK(pagecache::torn_end(0, 4096) == 2048);     // a page write: its first four sectors
  CHECK(pagecache::torn_end(5000, 3000) == 6144);  // cut at the sector boundary before the middle
  CHECK(pagecache::torn_end(10, 100) == 60);       // within one sector: half its bytes
  CHECK(pagecache::torn_end(7, 1) == 7);           // one byte: nothing of it
  CHECK(std::string(PageCacheMount::model(true)) == "mwbench-pagecache-torn-2");
  PageCacheMount m("/tmp", true);
  const std::string f = m.path() + "/t", g = m.path() + "/g", h = m.path() + "/h";
  int fd = make(f);
  put(fd, std::string(8192, 'a'), 0);
  REQUIRE(fsync(fd) == 0);
  put(fd, std::string(100, 'b'), 0);      // unsynced, not the last: dropped
  put(fd, std::string(4096, 'c'), 4096);  // the last: torn
  close(fd);
  int gd = make(g);
  put(gd, std::string(5000, 'x'), 0);
  REQUIRE(fsync(gd) == 0);
  put(gd, std::string(3000, 'y'), 5000);  // an append, torn: the file keeps [5000, 6144)
  close(gd);
  // One append handed over as two requests split at a page boundary (as the kernel does): the
  // tear keeps a prefix of the whole, never the second request after a hole of zeros.
  const std::string k = m.path() + "/k";
  int kd = make(k);
  put(kd, std::string(3700, 'p'), 0);
  REQUIRE(fsync(kd) == 0);
  put(kd, std::string(396, 'q'), 3700);  // to the page boundary
  put(kd, std::string(276, 'r'), 4096);  // the rest of the same append: torn as one with it
  close(kd);
  int hd = make(h);
  put(hd, std::string(4096, 's'), 0);
  REQUIRE(fsync(hd) == 0);
  put(hd, std::string(4096, 'z'), 0);
  REQUIRE(fsync(hd) == 0);  // synced after its last write: nothing to tear
  close(hd);
  int dd = make(m.path() + "/d", O_DSYNC);  // this layer syncs each O_DSYNC write as it comes
  put(dd, "dsync", 0);
  close(dd);
  CHECK(m.power_cut() >= 4);
  CHECK(slurp(m.path() + "/d") == "dsync");
  CHECK(slurp(f) == std::string(4096, 'a') + std::string(2048, 'c') + std::string(2048, 'a'));
  CHECK(slurp(g) == std::string(5000, 'x') + std::string(1144, 'y'));
  CHECK(slurp(h) == std::string(4096, 'z'));
  CHECK(slurp(k) == std::string(3700, 'p') + std::string(336, 'q'));  // half of the 672 bytes appended
}

TEST_CASE("pagecache: the layer is unmounted when its owner is SIGKILLed; a missing /dev/fuse is one line") {
  auto [pid, where] = mount_in_child();
  REQUIRE_FALSE(where.empty());
  CHECK(mounted(where));
  kill(pid, SIGKILL);
  waitpid(pid, nullptr, 0);
  const auto dir = std::filesystem::path(where).parent_path();
  bool gone = false;
  for (int i = 0; i < 100 && !gone; ++i) {  // the daemon unmounts and removes the layer's directory
    gone = !mounted(where) && !std::filesystem::exists(dir);
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  CHECK(gone);

  setenv("MWBENCH_FUSE_DEVICE", "/nonexistent/fuse", 1);
  CHECK(pagecache_unavailable().find("/nonexistent/fuse cannot be opened") == 0);
  CHECK_THROWS_WITH_AS(PageCacheMount("/tmp"), doctest::Contains("--crash power: /nonexistent/fuse"), std::exception);
  unsetenv("MWBENCH_FUSE_DEVICE");
}

// A layer whose daemon died with its owner before it could unmount (both SIGKILLed, the daemon
// stopped first) stays mounted, dead; the next mwbench's first layer removes it
// (remove_stale_pagecache_mounts, called once per process before the first mount): unmounted,
// its directory gone.
TEST_CASE("pagecache: a layer left mounted by a dead owner and daemon is removed at the next start") {
  auto [owner, where] = mount_in_child();
  REQUIRE_FALSE(where.empty());
  pid_t daemon = -1;  // the layer's daemon: mwbench-pagecache DISK DATA FD MODE, DATA = where
  for (auto& e : std::filesystem::directory_iterator("/proc")) {
    std::string args = slurp(e.path().string() + "/cmdline");
    if (args.find(std::string(1, '\0') + where + '\0') != std::string::npos && args.rfind("mwbench-pagecache", 0) == 0)
      daemon = std::stoi(e.path().filename().string());
  }
  REQUIRE(daemon > 0);
  const std::string stat = "/proc/" + std::to_string(daemon) + "/stat";
  auto state = [&] {  // R, S, T (stopped), Z; 0 when gone
    const std::string st = slurp(stat);
    const size_t at = st.rfind(") ");
    return at == std::string::npos || at + 2 >= st.size() ? '\0' : st[at + 2];
  };
  kill(daemon, SIGSTOP);
  for (int i = 0; i < 500 && state() != 'T'; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(2));
  REQUIRE(state() == 'T');  // stopped before its owner dies: it cannot unmount
  kill(owner, SIGKILL);
  waitpid(owner, nullptr, 0);
  kill(daemon, SIGKILL);
  for (int i = 0; i < 500 && state() != '\0' && state() != 'Z'; ++i)  // dead: gone, or a zombie not reaped yet
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  const auto dir = std::filesystem::path(where).parent_path();
  CHECK(mounted(where));  // left behind: nobody was there to unmount it
  CHECK(std::filesystem::exists(dir / "owner.pid"));
  remove_stale_pagecache_mounts("/tmp");
  CHECK_FALSE(mounted(where));
  CHECK_FALSE(std::filesystem::exists(dir));
}

// A layer's directory left unmounted by an owner that is gone (its daemon unmounted, then died
// before it removed the directory) is removed when the next layer is made in the same base
// directory; one whose owner runs, or whose owner file is not written yet, is kept.
TEST_CASE("pagecache: an unmounted layer directory of a gone owner is removed when the next layer is made") {
  const std::string base = "/tmp/mwbench-test-pcbase-" + std::to_string(getpid());
  std::filesystem::create_directories(base);
  pid_t gone = fork();  // a pid that is no process's any more
  REQUIRE(gone >= 0);
  if (gone == 0) _exit(0);
  waitpid(gone, nullptr, 0);
  auto layer_dir = [&](const std::string& name, pid_t owner) {
    const std::string d = base + "/" + name;
    std::filesystem::create_directories(d + "/lower");
    std::filesystem::create_directories(d + "/data");
    std::ofstream(d + "/lower/store.db") << "left behind";
    if (owner) std::ofstream(d + "/owner.pid") << "mwbench-pagecache-layer " << owner << " 1\n";
    return d;
  };
  const std::string stale = layer_dir("mwbench-pc-stale1", gone), live = layer_dir("mwbench-pc-live01", getpid()),
                    fresh = layer_dir("mwbench-pc-fresh1", 0), other = layer_dir("other-dir", gone);
  {
    PageCacheMount m(base);
    CHECK(std::filesystem::exists(m.path()));
  }
  CHECK_FALSE(std::filesystem::exists(stale));
  CHECK(std::filesystem::exists(live));
  CHECK(std::filesystem::exists(fresh));
  CHECK(std::filesystem::exists(other));
  std::filesystem::remove_all(base);
}

// Clean-up removes only what mwbench made (issue: a --crash power run detached a page-cache mount
// made by hand and removed its whole parent directory, files and all). A mount or a directory
// that is not a layer (no marker, another user's, a planted symlink, something mwbench did not put
// there) is left as it is, mounted or not.
TEST_CASE("pagecache: clean-up leaves alone every mount and directory mwbench did not make") {
  const std::string base = "/tmp/mwbench-test-pcforeign-" + std::to_string(getpid());
  std::filesystem::remove_all(base);
  std::filesystem::create_directories(base);
  pid_t gone = fork();  // a pid that is no process's any more
  REQUIRE(gone >= 0);
  if (gone == 0) _exit(0);
  waitpid(gone, nullptr, 0);
  const std::string marker = "mwbench-pagecache-layer " + std::to_string(gone) + " 1\n";
  // Mounted by hand: in a directory of other files, and in one named like a layer, without marker.
  const std::string foreign = dir_with_files(base + "/foreign"), unmarked = dir_with_files(base + "/mwbench-pc-nomark");
  const HandDaemon d1 = start_daemon(foreign), d2 = start_daemon(unmarked);
  REQUIRE(mounted(foreign + "/data"));
  REQUIRE(mounted(unmarked + "/data"));
  // Named and marked as a layer of a gone owner, but holding a file mwbench did not put there.
  const std::string extra = dir_with_files(base + "/mwbench-pc-extra1");
  std::ofstream(extra + "/owner.pid") << marker;
  // Planted symlinks: the layer itself, to a victim's directory that looks like a layer; a marker
  // that is a link to a marker; a layer whose lower/ is a link to a victim's directory.
  const std::string victim = dir_with_files(base + "/victim"), victim2 = dir_with_files(base + "/victim2");
  std::ofstream(victim + "/owner.pid") << marker;
  std::filesystem::create_directory_symlink(victim, base + "/mwbench-pc-link01");
  const std::string mlink = base + "/mwbench-pc-mlink1";
  std::filesystem::create_directories(mlink + "/lower");
  std::ofstream(mlink + "/lower/store.db") << "kept";
  std::filesystem::create_symlink(victim + "/owner.pid", mlink + "/owner.pid");
  const std::string dlink = base + "/mwbench-pc-dlink1";
  std::filesystem::create_directories(dlink + "/data");
  std::ofstream(dlink + "/owner.pid") << marker;
  std::filesystem::create_directory_symlink(victim2, dlink + "/lower");
  // Another user's: marked, of a gone owner (as root only: chown).
  const std::string others = dir_with_files(base + "/mwbench-pc-other1");
  std::filesystem::remove(others + "/keep.txt");
  std::ofstream(others + "/owner.pid") << marker;
  const bool as_root = geteuid() == 0 && chown(others.c_str(), 65534, 65534) == 0;

  remove_stale_pagecache_mounts(base);
  remove_stale_layer_dirs(base);
  remove_stale_pagecache_mounts("/tmp");
  { PageCacheMount m(base); }  // a layer made in the same base cleans up first, then removes its own

  CHECK(mounted(foreign + "/data"));
  CHECK(mounted(unmarked + "/data"));
  for (const std::string& d : {foreign, unmarked, extra, victim, victim2}) {
    CAPTURE(d);
    CHECK(slurp(d + "/keep.txt") == "not mwbench's");
  }
  CHECK(std::filesystem::is_symlink(base + "/mwbench-pc-link01"));
  CHECK(slurp(victim + "/owner.pid") == marker);
  CHECK(slurp(mlink + "/lower/store.db") == "kept");
  CHECK_FALSE(std::filesystem::exists(dlink));  // a layer: removed, its lower/ link as a link
  CHECK(std::filesystem::exists(victim2 + "/lower"));
  if (as_root) CHECK(std::filesystem::exists(others + "/owner.pid"));

  // The daemon started by hand whose starter dies unmounts, and removes nothing.
  const std::string orphan = dir_with_files(base + "/orphan");
  const pid_t starter = fork();
  REQUIRE(starter >= 0);
  if (starter == 0) {
    try {
      start_daemon(orphan);
    } catch (...) {  // a failed REQUIRE: this process must not go on with the cases
    }
    _exit(0);
  }
  waitpid(starter, nullptr, 0);
  for (int i = 0; i < 200 && mounted(orphan + "/data"); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(50));
  CHECK_FALSE(mounted(orphan + "/data"));
  CHECK(slurp(orphan + "/keep.txt") == "not mwbench's");

  stop_daemon(d1, foreign);
  stop_daemon(d2, unmarked);
  CHECK(slurp(foreign + "/keep.txt") == "not mwbench's");  // the daemon, told to stop, too
  CHECK(slurp(unmarked + "/keep.txt") == "not mwbench's");
  std::filesystem::remove_all(base);
}

// The daemon, told to stop, unmounts and removes its layer's directory itself: an mwbench
// SIGKILLed after that (a Ctrl-C, then kill -9, during its teardown) leaves nothing behind. It
// used to leave the removal to mwbench, after the daemon's exit: killed in between, mwbench left
// an empty mwbench-pc-* directory until its next run.
TEST_CASE("pagecache: the daemon removes its layer's directory when told to stop") {
  const std::string base = "/tmp/mwbench-test-pcstop-" + std::to_string(getpid());
  std::filesystem::create_directories(base);
  std::string dir = base + "/mwbench-pc-XXXXXX";
  REQUIRE(mkdtemp(dir.data()));
  REQUIRE(chmod(dir.c_str(), 0755) == 0);
  REQUIRE(pagecache::write_marker(dir));  // made as mwbench makes a layer, by this process
  std::filesystem::create_directories(dir + "/lower");
  std::filesystem::create_directories(dir + "/data");
  const HandDaemon d = start_daemon(dir);
  REQUIRE(mounted(dir + "/data"));
  std::ofstream(dir + "/data/store.db") << "written";
  if (send(d.ctl, "stop\n", 5, MSG_NOSIGNAL) < 0) {}
  int status = -1;
  for (int i = 0; i < 200 && waitpid(d.pid, &status, WNOHANG) == 0; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  close(d.ctl);
  CHECK(WIFEXITED(status));
  CHECK_FALSE(mounted(dir + "/data"));
  CHECK_FALSE(std::filesystem::exists(dir));  // nothing is left for this process to remove
  umount2((dir + "/data").c_str(), MNT_DETACH);
  std::filesystem::remove_all(base);
}
