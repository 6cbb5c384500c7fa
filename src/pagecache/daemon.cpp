// mwbench-pagecache: the FUSE file system of --crash power. A passthrough over a backing
// directory whose page-cache model (volatile_files.h) can drop every unsynced byte on command.
//
//   mwbench-pagecache BACKING MOUNTPOINT CONTROL_FD [writeback|writethrough]
//
// writeback (the power model): the kernel's writeback cache sits above the layer, as the page
// cache sits above a disk. A write() is a copy into the kernel's pages; the layer receives the
// dirty pages when the kernel writes them back, at the latest at fsync/fdatasync (the kernel
// sends every dirty page of the file before the FSYNC request, and follows an O_SYNC/O_DSYNC
// write with one), at close, or when its writeback timer fires. What the layer has received but
// was not fsynced is volatile all the same, so the model is unchanged and a write() no longer
// costs a round trip through FUSE. writethrough (the torn model, the default): every write()
// reaches the layer as the process made it, since the torn model keeps part of the last one.
//
// It mounts BACKING at MOUNTPOINT and says "ready" on CONTROL_FD (a socket from mwbench, see
// mount.h). On "cut" (or "cut torn": the torn model, volatile_files.h) it unmounts (lazily,
// should a process still hold a file), puts every file back to its durable state, answers
// "cut N" and exits; on "stop" it unmounts, removes the layer's directory and exits. When
// CONTROL_FD ends or its parent is gone (mwbench was killed), it unmounts, removes the layer's
// directory and exits. The layer's directory is MOUNTPOINT's parent, and only when it is one of
// mwbench's layers (layer_dir.h) made by the process that started the daemon, with BACKING as its
// disk/ and MOUNTPOINT as its data/: a daemon started by hand on any other directory removes
// nothing. The daemon removes it, not mwbench after the daemon exits: a SIGKILL of mwbench
// between the two left it behind.
#define FUSE_USE_VERSION 31
#include <dirent.h>
#include <fcntl.h>
#include <fuse.h>
#include <poll.h>
#include <signal.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/types.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <shared_mutex>
#include <string>
#include <thread>

#include "pagecache/layer_dir.h"
#include "pagecache/volatile_files.h"

namespace {

using mw::pagecache::VolatileFiles;

int g_root = -1;      // the backing directory
std::string g_mount;  // where it is mounted
VolatileFiles g_files;
std::shared_mutex g_cut;            // writers share it; the cut takes it alone
bool g_dead = false;                // after the cut: every write fails
std::atomic<bool> g_ending{false};  // the control thread ends the process (cut, orphaned)
bool g_writeback = false;           // the kernel's writeback cache above the layer (the power model)
std::string g_layer;                // the layer's directory, removed at the end; "" when it is not one (see the top)

// The requests the layer served, by operation (the high-level API's: a LOOKUP is a getattr, a
// SETATTR a chmod, chown, truncate or utimens), and the bytes written through it. With
// $MWBENCH_PAGECACHE_COUNTS set, the daemon appends them to that file as one line when it ends:
// how it ended (cut, stop, orphaned), then name=count for each operation it served
// (scripts/compare-pagecache reads them: requests per op, a figure no machine load changes).
enum Op {
  kGetattr,
  kReadlink,
  kMknod,
  kMkdir,
  kUnlink,
  kRmdir,
  kSymlink,
  kRename,
  kLink,
  kChmod,
  kChown,
  kTruncate,
  kOpen,
  kRead,
  kWrite,
  kStatfs,
  kRelease,
  kFsync,
  kOpendir,
  kReaddir,
  kReleasedir,
  kFsyncdir,
  kAccess,
  kCreate,
  kUtimens,
  kFallocate,
  kOps
};
constexpr const char* kOpNames[kOps] = {
    "getattr", "readlink", "mknod",      "mkdir",    "unlink", "rmdir",  "symlink", "rename",   "link",
    "chmod",   "chown",    "truncate",   "open",     "read",   "write",  "statfs",  "release",  "fsync",
    "opendir", "readdir",  "releasedir", "fsyncdir", "access", "create", "utimens", "fallocate"};
std::atomic<uint64_t> g_count[kOps];
std::atomic<uint64_t> g_written{0};
void count(Op op) { g_count[op].fetch_add(1, std::memory_order_relaxed); }

void write_counts(const char* how) {
  const char* path = std::getenv("MWBENCH_PAGECACHE_COUNTS");
  if (!path || !*path) return;
  std::string line = how;
  for (int i = 0; i < kOps; ++i)
    if (uint64_t n = g_count[i].load()) line += std::string(" ") + kOpNames[i] + "=" + std::to_string(n);
  line += " written_bytes=" + std::to_string(g_written.load()) + "\n";
  int fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) return;
  if (write(fd, line.data(), line.size()) < 0) {}
  close(fd);
}

struct Handle {
  int fd;
  VolatileFiles::File* file;  // null: not a regular file
  bool sync;                  // opened O_SYNC / O_DSYNC
};

std::string rel(const char* path) {
  while (*path == '/') ++path;
  return *path ? path : ".";
}
Handle* handle(fuse_file_info* fi) { return reinterpret_cast<Handle*>(fi->fh); }

// Files a non-root caller creates are its own (the daemon runs as root).
void own(const std::string& p) {
  fuse_context* c = fuse_get_context();
  if (c && c->uid != 0) fchownat(g_root, p.c_str(), c->uid, c->gid, AT_SYMLINK_NOFOLLOW);
}

int pc_getattr(const char* path, struct stat* st, fuse_file_info* fi) {
  count(kGetattr);
  int r = fi ? fstat(handle(fi)->fd, st) : fstatat(g_root, rel(path).c_str(), st, AT_SYMLINK_NOFOLLOW);
  return r == 0 ? 0 : -errno;
}

int pc_readlink(const char* path, char* buf, size_t size) {
  count(kReadlink);
  ssize_t n = readlinkat(g_root, rel(path).c_str(), buf, size - 1);
  if (n < 0) return -errno;
  buf[n] = '\0';
  return 0;
}

int pc_mknod(const char* path, mode_t mode, dev_t rdev) {
  count(kMknod);
  if (mknodat(g_root, rel(path).c_str(), mode, rdev) != 0) return -errno;
  own(rel(path));
  return 0;
}

int pc_mkdir(const char* path, mode_t mode) {
  count(kMkdir);
  if (mkdirat(g_root, rel(path).c_str(), mode) != 0) return -errno;
  own(rel(path));
  return 0;
}

// The file at `p` if the layer tracks it (for unlink and rename over it).
VolatileFiles::File* tracked(const std::string& p) {
  int fd = openat(g_root, p.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) return nullptr;
  VolatileFiles::File* f = g_files.track(fd);
  close(fd);
  return f;
}

int pc_unlink(const char* path) {
  count(kUnlink);
  VolatileFiles::File* f = tracked(rel(path));
  if (unlinkat(g_root, rel(path).c_str(), 0) != 0) return -errno;
  if (f) g_files.unlinked(f);
  return 0;
}

int pc_rmdir(const char* path) {
  count(kRmdir);
  return unlinkat(g_root, rel(path).c_str(), AT_REMOVEDIR) == 0 ? 0 : -errno;
}

int pc_symlink(const char* target, const char* path) {
  count(kSymlink);
  if (symlinkat(target, g_root, rel(path).c_str()) != 0) return -errno;
  own(rel(path));
  return 0;
}

int pc_rename(const char* from, const char* to, unsigned int flags) {
  count(kRename);
  VolatileFiles::File* over = (flags & RENAME_EXCHANGE) ? nullptr : tracked(rel(to));
  if (renameat2(g_root, rel(from).c_str(), g_root, rel(to).c_str(), flags) != 0) return -errno;
  if (over) g_files.unlinked(over);
  return 0;
}

int pc_link(const char* from, const char* to) {
  count(kLink);
  return linkat(g_root, rel(from).c_str(), g_root, rel(to).c_str(), 0) == 0 ? 0 : -errno;
}

int pc_chmod(const char* path, mode_t mode, fuse_file_info* fi) {
  count(kChmod);
  int r = fi ? fchmod(handle(fi)->fd, mode) : fchmodat(g_root, rel(path).c_str(), mode, 0);
  return r == 0 ? 0 : -errno;
}

int pc_chown(const char* path, uid_t uid, gid_t gid, fuse_file_info* fi) {
  count(kChown);
  int r = fi ? fchown(handle(fi)->fd, uid, gid) : fchownat(g_root, rel(path).c_str(), uid, gid, AT_SYMLINK_NOFOLLOW);
  return r == 0 ? 0 : -errno;
}

int pc_truncate(const char* path, off_t size, fuse_file_info* fi) {
  count(kTruncate);
  std::shared_lock lk(g_cut);
  if (g_dead) return -EIO;
  int fd = fi ? handle(fi)->fd : openat(g_root, rel(path).c_str(), O_WRONLY | O_CLOEXEC);
  if (fd < 0) return -errno;
  VolatileFiles::File* f = g_files.track(fd);
  int r = ftruncate(fd, size) == 0 ? 0 : -errno;
  if (r == 0 && f) g_files.truncated(f, size);
  if (!fi) close(fd);
  return r;
}

// With the writeback cache the kernel keeps a file's mtime itself and sends it with each
// writeback (atime omitted). Setting it on the backing file would cost what a write does not:
// utimensat marks the inode for fdatasync, a journal commit on ext4 at every sync where a direct
// write's own mtime update costs none. The kernel's copy is the one read while mounted, and no
// store reads a data file's mtime after a cut; a caller's own utimens (atime given) still passes.
int pc_utimens(const char* path, const struct timespec ts[2], fuse_file_info* fi) {
  count(kUtimens);
  if (g_writeback && ts[0].tv_nsec == UTIME_OMIT && ts[1].tv_nsec != UTIME_OMIT) return 0;
  int r = fi ? futimens(handle(fi)->fd, ts) : utimensat(g_root, rel(path).c_str(), ts, AT_SYMLINK_NOFOLLOW);
  return r == 0 ? 0 : -errno;
}

int open_handle(int fd, fuse_file_info* fi) {
  if (fd < 0) return -errno;
  auto* h = new Handle{fd, g_files.track(fd), (fi->flags & (O_SYNC | O_DSYNC)) != 0};
  fi->fh = reinterpret_cast<uint64_t>(h);
  return 0;
}

// O_TRUNC is a truncate (durable at once, by the model), done once the file is tracked. The
// kernel computes append offsets and hands over page-sized buffers: the backing descriptor takes
// neither O_APPEND (pwrite would ignore the offset) nor O_DIRECT (alignment).
// With the writeback cache the kernel reads a page to complete a partial write even through a
// descriptor opened for writing only: the backing descriptor is opened read-write then.
int open_flags(int flags) {
  flags = (flags & ~(O_TRUNC | O_NOFOLLOW | O_APPEND | O_DIRECT)) | O_CLOEXEC;
  if (g_writeback && (flags & O_ACCMODE) == O_WRONLY) flags = (flags & ~O_ACCMODE) | O_RDWR;
  return flags;
}

int after_trunc(fuse_file_info* fi) {
  Handle* h = handle(fi);
  if (!(fi->flags & O_TRUNC)) return 0;
  if (ftruncate(h->fd, 0) != 0) return -errno;
  if (h->file) g_files.truncated(h->file, 0);
  return 0;
}

int pc_open(const char* path, fuse_file_info* fi) {
  count(kOpen);
  int r = open_handle(openat(g_root, rel(path).c_str(), open_flags(fi->flags)), fi);
  return r ? r : after_trunc(fi);
}

int pc_create(const char* path, mode_t mode, fuse_file_info* fi) {
  count(kCreate);
  int r = open_handle(openat(g_root, rel(path).c_str(), open_flags(fi->flags) | O_CREAT, mode), fi);
  if (r) return r;
  own(rel(path));
  return after_trunc(fi);
}

int pc_read(const char*, char* buf, size_t size, off_t off, fuse_file_info* fi) {
  count(kRead);
  ssize_t n = pread(handle(fi)->fd, buf, size, off);
  return n < 0 ? -errno : static_cast<int>(n);
}

void sync_file(Handle* h, bool data_only) {
  if (data_only ? fdatasync(h->fd) : fsync(h->fd)) return;
  if (h->file) g_files.synced(h->file);
}

int pc_write(const char*, const char* buf, size_t size, off_t off, fuse_file_info* fi) {
  count(kWrite);
  std::shared_lock lk(g_cut);
  if (g_dead) return -EIO;
  Handle* h = handle(fi);
  if (h->file && !g_files.before_write(h->file, off, size)) return -errno;
  ssize_t n = pwrite(h->fd, buf, size, off);
  if (n < 0) return -errno;
  g_written.fetch_add(static_cast<uint64_t>(n), std::memory_order_relaxed);
  // An O_SYNC/O_DSYNC write is synced here as it comes (the kernel also follows it with an
  // FSYNC). Not with the writeback cache: the kernel may write back any process's dirty pages
  // through this handle, and syncing them here would make them durable early.
  if (h->sync && !g_writeback) sync_file(h, true);
  return static_cast<int>(n);
}

int pc_statfs(const char*, struct statvfs* st) {
  count(kStatfs);
  return fstatvfs(g_root, st) == 0 ? 0 : -errno;
}

int pc_release(const char*, fuse_file_info* fi) {
  count(kRelease);
  Handle* h = handle(fi);
  close(h->fd);
  delete h;
  return 0;
}

int pc_fsync(const char*, int datasync, fuse_file_info* fi) {
  count(kFsync);
  std::shared_lock lk(g_cut);
  if (g_dead) return -EIO;
  Handle* h = handle(fi);
  if (datasync ? fdatasync(h->fd) : fsync(h->fd)) return -errno;
  if (h->file) g_files.synced(h->file);
  return 0;
}

int pc_opendir(const char* path, fuse_file_info* fi) {
  count(kOpendir);
  int fd = openat(g_root, rel(path).c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return -errno;
  DIR* d = fdopendir(fd);
  if (!d) {
    close(fd);
    return -errno;
  }
  fi->fh = reinterpret_cast<uint64_t>(d);
  return 0;
}

int pc_readdir(const char*, void* buf, fuse_fill_dir_t fill, off_t, fuse_file_info* fi, fuse_readdir_flags) {
  count(kReaddir);
  DIR* d = reinterpret_cast<DIR*>(fi->fh);
  rewinddir(d);
  while (dirent* e = readdir(d)) {
    struct stat st {};
    st.st_ino = e->d_ino;
    st.st_mode = static_cast<mode_t>(DTTOIF(e->d_type));
    if (fill(buf, e->d_name, &st, 0, static_cast<fuse_fill_dir_flags>(0))) break;
  }
  return 0;
}

int pc_releasedir(const char*, fuse_file_info* fi) {
  count(kReleasedir);
  closedir(reinterpret_cast<DIR*>(fi->fh));
  return 0;
}

// Metadata is durable at once (the model): a directory fsync syncs the backing directory only.
int pc_fsyncdir(const char*, int, fuse_file_info* fi) {
  count(kFsyncdir);
  return fsync(dirfd(reinterpret_cast<DIR*>(fi->fh))) == 0 ? 0 : -errno;
}

int pc_access(const char* path, int mask) {
  count(kAccess);
  return faccessat(g_root, rel(path).c_str(), mask, 0) == 0 ? 0 : -errno;
}

int pc_fallocate(const char*, int mode, off_t off, off_t len, fuse_file_info* fi) {
  count(kFallocate);
  std::shared_lock lk(g_cut);
  if (g_dead) return -EIO;
  Handle* h = handle(fi);
  const bool changes_data =
      mode & (FALLOC_FL_PUNCH_HOLE | FALLOC_FL_ZERO_RANGE | FALLOC_FL_COLLAPSE_RANGE | FALLOC_FL_INSERT_RANGE);
  if (mode & (FALLOC_FL_COLLAPSE_RANGE | FALLOC_FL_INSERT_RANGE)) return -EOPNOTSUPP;  // moves data: not modelled
  if (changes_data && h->file && !g_files.before_write(h->file, off, static_cast<size_t>(len))) return -errno;
  return fallocate(h->fd, mode, off, len) == 0 ? 0 : -errno;
}

// Every change to the files goes through this mount, so the kernel may keep names, attributes
// and absent names (SQLite asks for its -journal before each transaction) as long as it likes.
// With the writeback cache the kernel keeps a file's mtime and ctime itself, to time_gran: at the
// default (1 ns) a write after each tick of its clock changed them, and the next fsync sent them
// first in a SETATTR of their own (pc_utimens drops it): a synced commit cost the layer three
// round trips, not two. To the second, a file's times change once a second, and so do those
// SETATTRs; stat() while mounted shows whole seconds.
void* pc_init(fuse_conn_info* conn, fuse_config* cfg) {
  if (g_writeback && (conn->capable & FUSE_CAP_WRITEBACK_CACHE)) {
    conn->want |= FUSE_CAP_WRITEBACK_CACHE;
    conn->time_gran = 1000000000;
  }
  cfg->use_ino = 1;
  cfg->nullpath_ok = 1;
  cfg->entry_timeout = cfg->attr_timeout = cfg->negative_timeout = 3600;
  return nullptr;
}

fuse_operations operations() {
  fuse_operations o{};
  o.getattr = pc_getattr, o.readlink = pc_readlink, o.mknod = pc_mknod, o.mkdir = pc_mkdir;
  o.unlink = pc_unlink, o.rmdir = pc_rmdir, o.symlink = pc_symlink, o.rename = pc_rename, o.link = pc_link;
  o.chmod = pc_chmod, o.chown = pc_chown, o.truncate = pc_truncate, o.open = pc_open, o.read = pc_read;
  o.write = pc_write, o.statfs = pc_statfs, o.release = pc_release, o.fsync = pc_fsync;
  o.opendir = pc_opendir, o.readdir = pc_readdir, o.releasedir = pc_releasedir, o.fsyncdir = pc_fsyncdir;
  o.init = pc_init, o.access = pc_access, o.create = pc_create, o.utimens = pc_utimens;
  o.fallocate = pc_fallocate;
  return o;
}

void say(int fd, const std::string& line) {
  std::string s = line + "\n";
  if (write(fd, s.data(), s.size()) < 0) {}
}

// `counts`: not from a signal handler (write_counts allocates).
[[noreturn]] void unmount_and_exit(int code, bool counts = true) {
  umount2(g_mount.c_str(), MNT_DETACH);
  if (counts) write_counts("stop");
  _exit(code);
}

// The power cut: no write passes once it starts; unmount, restore, answer.
[[noreturn]] void cut(int ctl, bool torn) {
  g_ending = true;
  {
    std::unique_lock lk(g_cut);
    g_dead = true;
  }
  umount2(g_mount.c_str(), MNT_DETACH);
  write_counts("cut");
  std::string error;
  size_t n = g_files.cut(&error, torn);
  say(ctl, error.empty() ? "cut " + std::to_string(n) : "error restoring " + error);
  _exit(error.empty() ? 0 : 1);
}

// The layer's directory, when it is one (g_layer): removed, trying `tries` times 100 ms apart
// (a server that outlived mwbench may still be writing through the detached mount until its
// supervisor kills it).
void remove_layer_dir(int tries) {
  for (int i = 0; !g_layer.empty() && i < tries; ++i) {
    struct stat st {};
    if (mw::pagecache::remove_layer(g_layer) || lstat(g_layer.c_str(), &st) != 0) return;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
}

// The end of the layer ("stop", or mwbench gone): unmount, then remove its directory.
[[noreturn]] void finish(const char* how, int tries) {
  g_ending = true;  // before the unmount: the main thread must not end the process first
  umount2(g_mount.c_str(), MNT_DETACH);
  write_counts(how);
  remove_layer_dir(tries);
  _exit(0);
}

// Reads commands; ends the daemon when the control socket closes or the parent is gone.
void control(int ctl, pid_t parent) {
  std::string line;
  for (;;) {
    pollfd p{ctl, POLLIN, 0};
    int r = poll(&p, 1, 200);
    if (getppid() != parent) finish("orphaned", 50);
    if (r < 0 && errno == EINTR) continue;
    if (r == 0) continue;
    char c;
    ssize_t k = read(ctl, &c, 1);
    if (k < 0 && errno == EINTR) continue;
    if (k <= 0) finish("orphaned", 50);
    if (c != '\n') {
      if (line.size() < 64) line += c;
      continue;
    }
    if (line == "cut" || line == "cut torn") cut(ctl, line == "cut torn");
    if (line == "stop") finish("stop", 1);
    line.clear();
  }
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 4 || argc > 5 ||
      (argc == 5 && std::strcmp(argv[4], "writeback") != 0 && std::strcmp(argv[4], "writethrough") != 0)) {
    std::fputs(
        "usage: mwbench-pagecache BACKING MOUNTPOINT CONTROL_FD [writeback|writethrough] (mwbench --crash "
        "power starts it)\n",
        stderr);
    return 2;
  }
  g_writeback = argc == 5 && std::strcmp(argv[4], "writeback") == 0;
  const int ctl = std::atoi(argv[3]);
  for (int sig : {SIGINT, SIGHUP, SIGPIPE}) signal(sig, SIG_IGN);  // mwbench decides when it ends
  signal(SIGTERM, [](int) { unmount_and_exit(0, false); });
  const pid_t parent = getppid();
  g_mount = argv[2];
  {  // the layer's directory, if it is one made by our parent
    const std::string dir = std::filesystem::path(g_mount).parent_path().string();
    const mw::pagecache::LayerOwner owner = mw::pagecache::inspect_layer(dir);
    if (owner.ours && owner.pid == parent && g_mount == dir + "/" + mw::pagecache::kDataDir &&
        std::string(argv[1]) == dir + "/" + mw::pagecache::kLowerDir)
      g_layer = dir;
  }
  g_root = open(argv[1], O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (g_root < 0) {
    say(ctl, std::string("error: backing directory ") + argv[1] + ": " + std::strerror(errno));
    return 2;
  }
  char prog[] = "mwbench-pagecache", o[] = "-o";
  std::string opts = std::string("fsname=mwbench-pagecache,subtype=mwbench-pagecache") +
                     (getuid() == 0 ? ",allow_other,default_permissions" : "");
  char* args_v[] = {prog, o, opts.data(), nullptr};
  fuse_args args = FUSE_ARGS_INIT(3, args_v);
  fuse_operations ops = operations();
  fuse* f = fuse_new(&args, &ops, sizeof ops, nullptr);
  if (!f || fuse_mount(f, g_mount.c_str()) != 0) {
    say(ctl, "error: cannot mount the page-cache layer at " + g_mount + " (is /dev/fuse there and permitted?)");
    return 2;
  }
  say(ctl, std::string("ready ") + mw::pagecache::kModelName);
  std::thread(control, ctl, parent).detach();
  fuse_loop_mt(f, 0);        // returns once unmounted
  while (g_ending) pause();  // the control thread finishes and ends the process
  unmount_and_exit(0);
}
