#include "pagecache/volatile_files.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

namespace mw::pagecache {

namespace {
constexpr off_t kPage = 4096;
constexpr off_t kSector = 512;
}  // namespace

off_t torn_end(off_t off, size_t len) {
  const off_t half = off + static_cast<off_t>(len / 2);
  const off_t sector = half / kSector * kSector;
  return sector > off ? sector : half;
}

struct VolatileFiles::File {
  std::mutex mu;
  int fd = -1;                         // the layer's own descriptor (read-write), kept until the cut
  off_t data_end = 0;                  // durable content ends here; [data_end, size) is durable as zeros
  off_t size = 0;                      // durable size
  std::map<off_t, std::string> pages;  // page index -> its durable bytes (overwritten since the sync)
  off_t last_off = 0;                  // the last write since the sync: [last_off, last_off + last_len)
  size_t last_len = 0;
  ~File() {
    if (fd >= 0) close(fd);
  }
};

VolatileFiles::VolatileFiles() = default;
VolatileFiles::~VolatileFiles() = default;

VolatileFiles::File* VolatileFiles::track(int fd) {
  struct stat st {};
  if (fstat(fd, &st) != 0) return nullptr;
  if (!S_ISREG(st.st_mode)) return nullptr;
  std::lock_guard lk(mu_);
  auto& slot = files_[{st.st_dev, st.st_ino}];
  if (!slot) {
    auto f = std::make_unique<File>();
    const std::string self = "/proc/self/fd/" + std::to_string(fd);
    f->fd = open(self.c_str(), O_RDWR | O_CLOEXEC);
    if (f->fd < 0) {
      files_.erase({st.st_dev, st.st_ino});
      return nullptr;
    }
    f->data_end = f->size = st.st_size;
    slot = std::move(f);
  }
  return slot.get();
}

bool VolatileFiles::before_write(File* f, off_t off, size_t len) {
  std::lock_guard lk(f->mu);
  // A write that continues the last one is part of it: the kernel splits one write() into several
  // requests at page boundaries, and a tear keeps a prefix of what the process wrote, never a hole.
  if (f->last_len > 0 && off == f->last_off + static_cast<off_t>(f->last_len))
    f->last_len += len;
  else
    f->last_off = off, f->last_len = len;
  if (off >= f->data_end || len == 0) return true;
  const off_t end = std::min<off_t>(f->data_end, off + static_cast<off_t>(len));
  for (off_t p = off / kPage; p <= (end - 1) / kPage; ++p) {
    if (f->pages.count(p)) continue;
    std::string buf(kPage, '\0');
    ssize_t n = pread(f->fd, buf.data(), buf.size(), p * kPage);
    if (n < 0) return false;
    buf.resize(static_cast<size_t>(n));
    f->pages.emplace(p, std::move(buf));
  }
  return true;
}

void VolatileFiles::synced(File* f) {
  std::lock_guard lk(f->mu);
  struct stat st {};
  if (fstat(f->fd, &st) != 0) return;
  f->data_end = f->size = st.st_size;
  f->pages.clear();
  f->last_len = 0;
}

void VolatileFiles::truncated(File* f, off_t size) {
  std::lock_guard lk(f->mu);
  f->size = size;
  f->data_end = std::min(f->data_end, size);
  f->pages.erase(f->pages.lower_bound((size + kPage - 1) / kPage), f->pages.end());
  f->last_len = f->last_off >= size ? 0 : std::min<size_t>(f->last_len, static_cast<size_t>(size - f->last_off));
}

void VolatileFiles::unlinked(File* f) {
  struct stat st {};
  if (fstat(f->fd, &st) != 0 || st.st_nlink > 0) return;
  std::lock_guard lk(mu_);
  files_.erase({st.st_dev, st.st_ino});
}

size_t VolatileFiles::cut(std::string* error, bool torn) {
  std::lock_guard lk(mu_);
  size_t restored = 0;
  for (auto& [key, f] : files_) {
    std::lock_guard fl(f->mu);
    std::string kept;  // torn: the part of the last write that reached the disk
    if (torn && f->last_len > 0) {
      kept.resize(static_cast<size_t>(torn_end(f->last_off, f->last_len) - f->last_off));
      const ssize_t n = pread(f->fd, kept.data(), kept.size(), f->last_off);
      kept.resize(n > 0 ? static_cast<size_t>(n) : 0);
    }
    bool ok = true;
    for (auto& [p, bytes] : f->pages) {
      const off_t at = p * kPage;
      if (at >= f->data_end) break;
      const size_t n = static_cast<size_t>(std::min<off_t>(static_cast<off_t>(bytes.size()), f->data_end - at));
      ok = ok && pwrite(f->fd, bytes.data(), n, at) == static_cast<ssize_t>(n);
    }
    ok = ok && ftruncate(f->fd, f->data_end) == 0;
    if (f->size > f->data_end) ok = ok && ftruncate(f->fd, f->size) == 0;
    if (!kept.empty())
      ok = ok && pwrite(f->fd, kept.data(), kept.size(), f->last_off) == static_cast<ssize_t>(kept.size());
    if (ok) {
      ++restored;
    } else if (error && error->empty()) {
      *error = "inode " + std::to_string(key.second) + ": " + std::strerror(errno);
    }
  }
  files_.clear();
  return restored;
}

uint64_t VolatileFiles::undo_bytes() const {
  std::lock_guard lk(mu_);
  uint64_t n = 0;
  for (auto& [key, f] : files_) {
    std::lock_guard fl(f->mu);
    for (auto& [p, bytes] : f->pages) n += bytes.size();
  }
  return n;
}

}  // namespace mw::pagecache
