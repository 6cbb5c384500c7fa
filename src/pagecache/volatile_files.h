// The page-cache model of mwbench's FUSE layer (mwbench-pagecache-1): what a power cut keeps.
//
// Writes go to the backing file at once (reads then need no merge), and the layer keeps what a
// power cut must restore: per file, the bytes that were durable ("the disk"), as an undo record
// of the pages overwritten since the last sync, and the durable size. cut() puts every file back
// to that state. The model:
//   - file data, and a size grown by write or fallocate, are volatile until fsync or fdatasync of
//     the file (a write through a descriptor opened O_SYNC or O_DSYNC is synced at once; msync is
//     an fsync of the mapped range's file, as the kernel sends it);
//   - namespace and size operations (create, mkdir, unlink, rmdir, rename, link, symlink,
//     truncate, chmod, chown) are durable at once, as on a file system that commits its metadata
//     journal before returning; a directory fsync therefore changes nothing.
// The torn model (mwbench-pagecache-torn-2, --crash torn) is that, and the last write not yet
// synced of each file survives in part: its first half (cut at a 512-byte sector boundary when the
// write spans one), the rest as if it was never written: a torn page. Writes that each continue the
// one before count as one (the kernel splits a write() at page boundaries into several requests),
// so the kept part always follows the durable bytes before it: no hole. (torn-1 tore the last
// request alone, which could leave zeros where its first part had been.)
// Thread-safe: the FUSE daemon calls it from its worker threads.
#pragma once
#include <sys/types.h>

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <utility>

namespace mw::pagecache {

inline constexpr const char* kModelName = "mwbench-pagecache-1";
inline constexpr const char* kTornModelName = "mwbench-pagecache-torn-2";

// The part of a write of [off, off + len) a torn cut keeps: [off, returned end).
off_t torn_end(off_t off, size_t len);

class VolatileFiles {
 public:
  struct File;  // one backing inode's durable state
  VolatileFiles();
  ~VolatileFiles();
  VolatileFiles(const VolatileFiles&) = delete;
  VolatileFiles& operator=(const VolatileFiles&) = delete;

  // The state of the file open as `fd` (created on first use: what is there now is durable).
  // Returns null when fstat fails. The pointer stays valid until cut() or forget().
  File* track(int fd);
  // Before a write (or a hole punch) of [off, off + len): saves the durable bytes it covers.
  // Returns false (errno set) when they cannot be read.
  bool before_write(File* f, off_t off, size_t len);
  // fsync / fdatasync / a synced write: what the file holds now is durable.
  void synced(File* f);
  // truncate (durable at once, by the model): the file's size is now `size`.
  void truncated(File* f, off_t size);
  // After an unlink or a rename over it: forgets the file when no name is left.
  void unlinked(File* f);
  // The power cut: every tracked file back to its durable state (torn: and the first part of its
  // last unsynced write kept). Returns the number of files restored; `error` says which could
  // not be (then the count excludes them).
  size_t cut(std::string* error, bool torn = false);
  // Bytes held for restores (undo pages), for the layer's own figures.
  uint64_t undo_bytes() const;

 private:
  mutable std::mutex mu_;
  std::map<std::pair<dev_t, ino_t>, std::unique_ptr<File>> files_;
};

}  // namespace mw::pagecache
