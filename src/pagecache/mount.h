// mwbench's side of the FUSE page-cache layer (--crash power): a store's directory mounted
// through mwbench-pagecache (daemon.cpp), whose model (volatile_files.h, "mwbench-pagecache-1")
// drops every byte not yet fsynced when the power is cut.
//
// The daemon is a supervised child: it holds a socket from mwbench and unmounts (lazily, if a
// file is still open) as soon as that socket ends or mwbench is gone, SIGKILL included, and then
// removes the layer's directory. A layer whose owner is gone, mounted or not, is unmounted and
// removed when the next one is created in the same base directory. Only layers: what makes a
// directory one, and how one is removed, is layer_dir.h; a mount or a directory mwbench did not
// make is never unmounted nor removed.
#pragma once
#include <sys/types.h>

#include <string>

namespace mw {

class PageCacheMount {
 public:
  // Creates BASE/mwbench-pc-XXXXXX/{disk,data}, mounts data/ over disk/ and returns once it is
  // mounted. Throws SetupError (one line: /dev/fuse missing or not permitted, the daemon not
  // found, the mount refused). `torn`: the layer of the torn model (--crash torn), whose writes
  // reach the daemon one by one as the process made them; the power model's layer has the
  // kernel's writeback cache above it (daemon.cpp), so a write() costs no trip through FUSE.
  explicit PageCacheMount(const std::string& base, bool torn = false);
  ~PageCacheMount();
  PageCacheMount(const PageCacheMount&) = delete;
  PageCacheMount& operator=(const PageCacheMount&) = delete;

  const std::string& path() const { return data_; }  // where the store's files go
  const std::string& disk() const { return disk_; }  // the backing directory
  // The power cut: every byte not synced is dropped (the daemon unmounts, restores the durable
  // state and exits), then the layer is mounted again on what survived. Call once every process
  // writing under path() is gone. Returns the number of files the cut put back; throws
  // SetupError when the restore or the new mount fails. A torn layer's cut keeps part of the
  // last unsynced write of each file (the torn model, volatile_files.h).
  size_t power_cut();
  bool torn() const { return torn_; }
  static const char* model(bool torn = false);

 private:
  void start();
  void stop();

  std::string dir_, disk_, data_;
  pid_t pid_ = -1;
  int ctl_ = -1;
  bool torn_ = false;
};

// Why --crash power cannot run here ("" when it can): /dev/fuse, the daemon binary.
std::string pagecache_unavailable();
// Layers in BASE (mounted at BASE/mwbench-pc-XXXXXX/data by this user's daemon) of an mwbench
// that is gone: unmounted and removed. Any other page-cache mount is left alone.
void remove_stale_pagecache_mounts(const std::string& base);
// Layer directories in BASE (BASE/mwbench-pc-*) of an mwbench that is gone and no longer mounted
// (a daemon killed after its unmount, before it removed them): removed. A directory without the
// marker (not written yet, or not mwbench's), or whose owner runs, is kept.
void remove_stale_layer_dirs(const std::string& base);

}  // namespace mw
