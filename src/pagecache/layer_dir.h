// The directories of mwbench's page-cache layers (BASE/mwbench-pc-XXXXXX/{owner.pid,lower,data}):
// how one is marked as mwbench's, and the only way one is removed. mwbench (mount.cpp) and the
// layer's daemon (daemon.cpp) both remove layers whose owner is gone; neither may remove
// anything else. A directory is a layer, and so removable, only when all of these hold:
//   - its name is mwbench-pc-XXXXXX, and it is a directory (not a symlink) owned by this user,
//     writable by nobody else;
//   - it holds the marker mwbench writes at creation (owner.pid: a regular file, not a link, of
//     this user, one line "mwbench-pagecache-layer PID START"), and nothing but lower/ and data/
//     beside it (an entry mwbench did not make keeps the whole directory).
// Removal works on descriptors opened O_NOFOLLOW: it never follows a symlink (it removes the
// link), never crosses into another file system (a mount below the layer keeps its part), and
// data/ (the mount point) goes only when empty.
#pragma once
#include <sys/types.h>

#include <string>

namespace mw::pagecache {

constexpr const char* kLayerPrefix = "mwbench-pc-";  // + the six characters of mkdtemp
constexpr const char* kMarkerFile = "owner.pid";
constexpr const char* kLowerDir = "lower";  // the files as written (the daemon's lower layer)
constexpr const char* kDataDir = "data";    // the mount point the store sees

// The marker of the layer directory `dir` (just made by mkdtemp), naming this process as its
// owner. False (errno set) when it cannot be written.
bool write_marker(const std::string& dir);

struct LayerOwner {
  bool ours = false;   // a layer directory by every rule above (marker read)
  pid_t pid = 0;       // its owner
  bool alive = false;  // the owner still runs (the same process: its start time matches)
  std::string why;     // when not ours: the rule it fails, for a note
};
LayerOwner inspect_layer(const std::string& dir);

// Removes the layer `dir` when it is ours by every rule above (whatever its owner's state: the
// caller decides that). False, with `why`, when it is not ours or something in it stayed.
bool remove_layer(const std::string& dir, std::string* why = nullptr);

}  // namespace mw::pagecache
