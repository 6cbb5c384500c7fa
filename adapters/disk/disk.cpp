// Raw file I/O, fio's way: the file is fully written with random data before measuring (a file
// that is only allocated reads zeros without I/O), its pages are dropped before a read test,
// offsets are aligned and drawn from a seeded generator, O_DIRECT alignment comes from statx.
// Queue depth (-P) 1 uses pread/pwrite; deeper queues use io_uring, whose ring fd the driver polls.
#include "adapters/disk/disk.h"

#include <fcntl.h>
#include <liburing.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "api/options.h"
#include "api/stop.h"
#include "util/files.h"
#include "util/keys.h"

namespace mw {
namespace {

enum class Pattern { Read, Write, RandRead, RandWrite, RandRW, CachedRead, Fsync, Fdatasync };
constexpr uint8_t kRead = 0, kWrite = 1;

void fill_random(char* p, size_t n, uint64_t seed) {
  uint64_t x = mix64(seed);
  for (size_t i = 0; i + 8 <= n; i += 8, x = mix64(x)) std::memcpy(p + i, &x, 8);
}

struct Plan {
  Pattern pattern;
  uint64_t bs, blocks, region_blocks, seed;
  int mix_read;  // randrw: % reads
  // The op for seq: where, and whether it reads.
  std::pair<uint64_t, bool> at(uint64_t seq) const {
    switch (pattern) {
      case Pattern::Read: return {(seq % blocks) * bs, true};
      case Pattern::Write: return {(seq % blocks) * bs, false};
      case Pattern::RandRead: return {(mix64(seed ^ seq) % blocks) * bs, true};
      case Pattern::RandWrite: return {(mix64(seed ^ seq) % blocks) * bs, false};
      case Pattern::RandRW:
        return {(mix64(seed ^ seq) % blocks) * bs, static_cast<int>(mix64(~seed ^ seq) % 100) < mix_read};
      case Pattern::CachedRead: return {(seq % region_blocks) * bs, true};
      case Pattern::Fsync:
      case Pattern::Fdatasync: return {(seq % blocks) * bs, false};  // a log's appends, as etcd's fio check writes
    }
    return {0, true};
  }
};

class DiskClient final : public Client {
 public:
  DiskClient(const std::string& file, bool direct, const Plan& plan, int depth, size_t align)
      : plan_(plan), depth_(depth) {
    fd_ = ::open(file.c_str(), O_RDWR | O_CLOEXEC | (direct ? O_DIRECT : 0));
    if (fd_ < 0)
      throw SetupError("disk: cannot open " + file + (direct ? " with O_DIRECT" : "") + ": " + std::strerror(errno));
    size_t bytes = plan_.bs * static_cast<size_t>(depth_);
    // A constructor that throws runs no destructor: what it took so far is given back here.
    if (posix_memalign(&buf_, std::max<size_t>(align, 4096), bytes) != 0) {
      ::close(fd_);
      throw SetupError("disk: out of memory for -P " + std::to_string(depth_) + " buffers of " +
                       std::to_string(plan_.bs) + " bytes");
    }
    fill_random(static_cast<char*>(buf_), bytes, plan_.seed + 99);
    if (depth_ > 1) {
      if (int rc = io_uring_queue_init(static_cast<unsigned>(depth_) * 2, &ring_, 0); rc < 0) {
        std::free(buf_);
        ::close(fd_);
        throw SetupError(std::string("disk: io_uring refused a queue of ") + std::to_string(depth_ * 2) +
                         " entries: " + std::strerror(-rc) + " (lower -P; 1 uses pread/pwrite)");
      }
      ring_ok_ = true;
      slots_.resize(static_cast<size_t>(depth_));
      for (int i = depth_ - 1; i >= 0; --i) free_.push_back(i);
    }
  }
  ~DiskClient() override {
    if (ring_ok_) io_uring_queue_exit(&ring_);  // cancels and waits for what is in flight
    if (fd_ >= 0) ::close(fd_);
    std::free(buf_);
  }

  OpResult run(uint64_t seq) override {
    auto [off, read] = plan_.at(seq);
    char* b = static_cast<char*>(buf_);
    ssize_t n =
        read ? pread(fd_, b, plan_.bs, static_cast<off_t>(off)) : pwrite(fd_, b, plan_.bs, static_cast<off_t>(off));
    if (n < 0) return fail(errno, read);
    if (static_cast<uint64_t>(n) != plan_.bs)
      return {Status::Error, 0, read ? "short read" : "short write", read ? kRead : kWrite};
    // pg_test_fsync's and etcd's check: one small write, then its sync; the op's latency is both.
    if (plan_.pattern == Pattern::Fsync && fsync(fd_) != 0) return fail(errno, false);
    if (plan_.pattern == Pattern::Fdatasync && fdatasync(fd_) != 0) return fail(errno, false);
    return {Status::Ok, static_cast<uint32_t>(plan_.bs), {}, read ? kRead : kWrite};
  }

  // The ring's own fd polls readable while completions wait: no eventfd to read per batch.
  int fd() const override { return ring_ok_ ? ring_.ring_fd : -1; }
  void submit(uint64_t seq) override {
    auto [off, read] = plan_.at(seq);
    int slot = free_.back();
    free_.pop_back();
    slots_[static_cast<size_t>(slot)] = {seq, read};
    io_uring_sqe* sqe = io_uring_get_sqe(&ring_);
    char* b = static_cast<char*>(buf_) + static_cast<size_t>(slot) * plan_.bs;
    if (read)
      io_uring_prep_read(sqe, fd_, b, static_cast<unsigned>(plan_.bs), off);
    else
      io_uring_prep_write(sqe, fd_, b, static_cast<unsigned>(plan_.bs), off);
    io_uring_sqe_set_data64(sqe, static_cast<uint64_t>(slot));
  }
  void flush() override { io_uring_submit(&ring_); }
  size_t reap(std::span<Completion> out) override {
    size_t k = 0;
    io_uring_cqe* cqe = nullptr;
    while (k < out.size() && io_uring_peek_cqe(&ring_, &cqe) == 0 && cqe) {
      int slot = static_cast<int>(io_uring_cqe_get_data64(cqe));
      auto [seq, read] = slots_[static_cast<size_t>(slot)];
      OpResult r;
      if (cqe->res < 0)
        r = fail(-cqe->res, read);
      else if (static_cast<uint64_t>(cqe->res) != plan_.bs)
        r = {Status::Error, 0, read ? "short read" : "short write", read ? kRead : kWrite};
      else
        r = {Status::Ok, static_cast<uint32_t>(plan_.bs), {}, read ? kRead : kWrite};
      out[k++] = {seq, r};
      io_uring_cqe_seen(&ring_, cqe);
      free_.push_back(slot);
    }
    return k;
  }

 private:
  OpResult fail(int err, bool read) {
    detail_ = std::string(read ? "read: " : "write: ") + std::strerror(err);
    return {Status::Error, 0, detail_, read ? kRead : kWrite};
  }
  Plan plan_;
  int depth_;
  int fd_ = -1;
  void* buf_ = nullptr;
  io_uring ring_{};
  bool ring_ok_ = false;
  std::vector<std::pair<uint64_t, bool>> slots_;
  std::vector<int> free_;
  std::string detail_;
};

struct DiskOptions {
  std::string path = "/var/tmp";
  uint64_t bs = 4096;
  uint64_t size = 256ull << 20;
  bool direct = true;
  int mix = 50;
  uint64_t seed = 1;
  std::string file;
  bool allow_write = false;
  bool keep = false;
};

std::string human(uint64_t bytes) {
  char b[32];
  if (bytes >= (1ull << 30))
    std::snprintf(b, sizeof b, "%.1f GiB", static_cast<double>(bytes) / (1ull << 30));
  else
    std::snprintf(b, sizeof b, "%.1f MiB", static_cast<double>(bytes) / (1ull << 20));
  return b;
}

class DiskAdapter final : public Adapter {
 public:
  explicit DiskAdapter(const Job& job) : o_(options_of<DiskOptions>(job)), dir_(o_.path), direct_(o_.direct) {
    dir_ = trim_dir(dir_);
    plan_.pattern = op_of<Pattern>(job);
    plan_.bs = o_.bs;
    size_ = o_.size;
    plan_.seed = o_.seed;
    plan_.mix_read = o_.mix;
    if (!o_.file.empty()) {
      file_ = o_.file;
      given_ = true;
    } else {
      file_ = temp_file(dir_, ".dat", "mwbench-disk");
    }
    if (plan_.pattern == Pattern::CachedRead) direct_ = false;  // hdparm -T: the page cache itself
    // A log's write and its sync go through the page cache, as pg_test_fsync's and etcd's fio
    // check do, unless --direct is given.
    if (syncs() && !job.opts.count("direct")) direct_ = false;
  }
  ~DiskAdapter() override { teardown(); }

  void prepare(const Job& job) override {
    if (plan_.bs == 0 || size_ < plan_.bs)
      throw SetupError("disk: --size " + std::to_string(size_) + " is less than one --bs block (" +
                       std::to_string(plan_.bs) + ")");
    if (plan_.mix_read < 0 || plan_.mix_read > 100) throw SetupError("disk: --mix is a read percentage, 0 to 100");
    if (syncs() && job.pipeline > 1)
      throw SetupError("disk: " + job.op + " is one write and one sync at a time: use -P 1");
    bool writes =
        plan_.pattern != Pattern::Read && plan_.pattern != Pattern::RandRead && plan_.pattern != Pattern::CachedRead;
    if (given_) {
      struct stat st {};
      if (stat(file_.c_str(), &st) != 0) throw SetupError("disk: --file " + file_ + " does not exist");
      if (writes && !o_.allow_write)
        throw SetupError("disk: " + job.op + " would overwrite --file " + file_ + ": add --allow-write");
      if (!S_ISREG(st.st_mode) && !S_ISBLK(st.st_mode))
        throw SetupError("disk: --file " + file_ + " is neither a regular file nor a block device");
      uint64_t have = S_ISREG(st.st_mode) ? static_cast<uint64_t>(st.st_size) : size_;
      if (have < plan_.bs)
        throw SetupError("disk: --file " + file_ + " has " + std::to_string(have) +
                         " bytes, less than one --bs block (" + std::to_string(plan_.bs) + ")");
      if (have < size_) size_ = have - have % plan_.bs;
    } else {
      create();
    }
    plan_.blocks = size_ / plan_.bs;
    plan_.region_blocks = std::max<uint64_t>(1, std::min<uint64_t>(plan_.blocks, (2ull << 20) / plan_.bs));
    align_ = alignment();
    if (direct_ && (plan_.bs % align_ != 0))
      throw SetupError("disk: --bs " + std::to_string(plan_.bs) + " is not a multiple of the O_DIRECT alignment " +
                       std::to_string(align_) + " of " + file_);
    int fd = ::open(file_.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd >= 0) {
      if (plan_.pattern == Pattern::CachedRead) {  // bring the region into the page cache
        std::vector<char> b(plan_.bs);
        for (uint64_t i = 0; i < plan_.region_blocks; ++i)
          if (pread(fd, b.data(), b.size(), static_cast<off_t>(i * plan_.bs)) < 0) break;
      } else {
        posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);  // read tests start from the device
      }
      ::close(fd);
    }
    fs_ = filesystem_of(dir_).first;
    info_ = {{"file", file_},
             {"bs", std::to_string(plan_.bs)},
             {"size", std::to_string(size_)},
             {"direct", direct_ ? "yes" : "no"},
             {"engine", job.pipeline > 1 ? "io_uring" : "psync"},
             {"depth", std::to_string(job.pipeline)},
             {"o_direct_alignment", std::to_string(align_)}};
    if (plan_.pattern == Pattern::RandRW) info_["rwmixread"] = std::to_string(plan_.mix_read);
    if (direct_ && (fs_ == "tmpfs" || fs_ == "ramfs"))
      warnings_.push_back(
          {WarningKind::NotTheDevice, "O_DIRECT on " + fs_ + " still goes through memory: not a device figure"});
    bool wraps = job.duration_s > 0 || (job.n + job.warmup_ops) > plan_.blocks;
    if (!direct_ && plan_.pattern != Pattern::CachedRead && !writes && wraps)
      warnings_.push_back({WarningKind::PageCache,
                           "buffered reads of more than the file: after the first pass they come from the page cache"});
  }

  std::unique_ptr<Client> open(const Job& job, int) override {
    return std::make_unique<DiskClient>(file_, direct_, plan_, job.pipeline, align_);
  }
  std::vector<std::string> sides() const override { return {"read", "write"}; }
  Info describe() override { return info_; }
  std::vector<Warning> warnings() const override { return warnings_; }
  std::string target() const override { return given_ ? file_ : dir_; }
  std::vector<std::string> paths() const override { return {dir_}; }
  void teardown() override {
    if (created_ && !o_.keep) unlink(file_.c_str());
    created_ = false;
  }

 private:
  void create() {
    if (std::string why = unusable_dir(dir_); !why.empty()) throw SetupError("disk: " + why + " (--path)");
    int fd = ::open(file_.c_str(), O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC, 0600);
    if (fd < 0) throw SetupError("disk: cannot create " + file_ + ": " + std::strerror(errno));
    struct statvfs vfs {};
    if (statvfs(dir_.c_str(), &vfs) == 0) {
      uint64_t free_bytes = static_cast<uint64_t>(vfs.f_bavail) * vfs.f_frsize;
      if (size_ > free_bytes) {
        ::close(fd);
        unlink(file_.c_str());
        throw SetupError("disk: a " + human(size_) + " test file does not fit in " + dir_ + " (" + human(free_bytes) +
                         " free): lower --size");
      }
    }
    created_ = true;
    std::vector<char> chunk(1 << 20);
    for (uint64_t off = 0; off < size_; off += chunk.size()) {  // random data, like fio's layout
      if (stop_requested().load(std::memory_order_relaxed)) {
        ::close(fd);
        throw Interrupted("interrupted during the layout of " + file_ + " (" + human(off) + " of " + human(size_) +
                          " written)");
      }
      fill_random(chunk.data(), chunk.size(), plan_.seed * 1000003 + off);
      size_t n = static_cast<size_t>(std::min<uint64_t>(chunk.size(), size_ - off));
      if (pwrite(fd, chunk.data(), n, static_cast<off_t>(off)) != static_cast<ssize_t>(n)) {
        int e = errno;
        ::close(fd);
        throw SetupError("disk: writing the test file " + file_ + " failed: " + std::strerror(e));
      }
      // Write back as it goes (the window before last waited for), so that the final fsync is
      // short and a stop request is never stuck behind gigabytes of dirty pages.
      constexpr uint64_t kWindow = 32ull << 20;
      uint64_t written = off + n;
      if (written % kWindow == 0) {
        sync_file_range(fd, static_cast<off_t>(written - kWindow), kWindow, SYNC_FILE_RANGE_WRITE);
        if (written >= 2 * kWindow)
          sync_file_range(fd, static_cast<off_t>(written - 2 * kWindow), kWindow,
                          SYNC_FILE_RANGE_WAIT_BEFORE | SYNC_FILE_RANGE_WRITE | SYNC_FILE_RANGE_WAIT_AFTER);
      }
    }
    fsync(fd);
    ::close(fd);
  }
  bool syncs() const { return plan_.pattern == Pattern::Fsync || plan_.pattern == Pattern::Fdatasync; }
  size_t alignment() const {
    struct statx sx {};
    if (statx(AT_FDCWD, file_.c_str(), 0, STATX_DIOALIGN, &sx) == 0 && (sx.stx_mask & STATX_DIOALIGN) &&
        sx.stx_dio_offset_align)
      return sx.stx_dio_offset_align;
    return 4096;  // not reported (tmpfs, older kernels): the safe common value
  }

  DiskOptions o_;
  std::string dir_, file_, fs_;
  bool direct_, given_ = false, created_ = false;
  uint64_t size_ = 0;
  size_t align_ = 4096;
  Plan plan_{};
  Info info_;
  std::vector<Warning> warnings_;
};

}  // namespace

AdapterSpec disk_adapter_spec() {
  using O = DiskOptions;
  return {
      .name = "disk",
      .summary =
          "raw file I/O like fio: sequential and random reads/writes, randrw mix, cached reads, "
          "fsync and fdatasync latency",
      .ops = {{"read", Pattern::Read},
              {"write", Pattern::Write},
              {"randread", Pattern::RandRead},
              {"randwrite", Pattern::RandWrite},
              {"randrw", Pattern::RandRW},
              {"cached-read", Pattern::CachedRead},
              {"fsync", Pattern::Fsync},
              {"fdatasync", Pattern::Fdatasync}},
      .default_ops = "randread",
      .options =
          {opt(&O::path,
               {.name = "path", .help = "directory for the test file; a list runs side by side", .list = true}),
           opt(&O::bs, {.name = "bs", .help = "block size", .def = "4k", .list = true, .min = 1, .max = 64 << 20}),
           opt(&O::size,
               {.name = "size", .help = "test file size (written with random data first)", .min = 1, .max = 1ll << 50}),
           opt(&O::direct, {.name = "direct",
                            .help = "O_DIRECT (cached-read is always buffered; fsync and fdatasync "
                                    "are buffered unless --direct is given)",
                            .list = true}),
           opt(&O::mix, {.name = "mix", .help = "randrw: percentage of reads (fio rwmixread)", .max = 100}),
           opt(&O::seed, {.name = "seed", .help = "seed of the random offsets", .max = 4294967295}),
           opt(&O::file, {.name = "file", .help = "use this existing file or device instead of creating one"}),
           opt(&O::allow_write, {.name = "allow-write", .help = "allow write patterns on --file"}),
           opt(&O::keep, {.name = "keep", .help = "keep the test file afterwards"})},
      .unavailable = nullptr,
      .make = [](const Job& j, WorkloadPtr) { return std::make_unique<DiskAdapter>(j); },
      .machine = nullptr,
      .aliases =
          {{"pattern", "ops"}, {"rw", "ops"}, {"depth", "pipeline"}, {"iodepth", "pipeline"}, {"rwmixread", "mix"}},
      .latency_is = {{"fsync", LatencyKind::Fsync}, {"fdatasync", LatencyKind::Fdatasync}},
      .reset =
          "its file made again each run (--file: that one); reads drop the file from the page cache first, "
          "cachedread reads its region in"};
}

}  // namespace mw
