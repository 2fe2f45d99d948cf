// fstab-style mount options -> mount(2) flags and data, as containerd's mount package
// parses them (mount/mount_linux.go), plus the propagation options, and containerd's
// shortening of long overlay lowerdir lists. Pure: no system calls.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace shim {

struct ParsedMountOptions {
  unsigned long flags = 0;        // MS_* including propagation (MS_SHARED, MS_REC, ...)
  std::vector<std::string> data;  // everything else, in order
  bool loop = false;              // "loop": mount a loop device over the source file
  std::string uidmap;             // "uidmap=..." (idmapped mounts; not supported here)
  std::string gidmap;

  // data joined with ',' (the mount(2) data argument).
  std::string data_string() const;
};

// Applies the options in order: a flag option sets or clears its MS_* bits ("ro" then "rw"
// ends read-write). Flags: ro rw bind rbind nosuid suid nodev dev noexec exec remount
// sync async dirsync mand nomand atime noatime diratime nodiratime relatime norelatime
// strictatime nostrictatime, propagation [r]shared [r]private [r]slave [r]unbindable
// (the r- forms add MS_REC). "defaults" is dropped (containerd passes it on as data,
// which e.g. tmpfs rejects). Anything else is data.
ParsedMountOptions parse_mount_options(const std::vector<std::string>& options);

// Sum of the options' lengths (containerd's optionsSize).
std::size_t mount_options_size(const std::vector<std::string>& options);

// containerd's compactLowerdirOption: when an overlay's options come close to a page,
// the lowerdirs are rewritten relative to their common parent directory and the mount is
// done from inside it. chdir == "" when nothing could be shortened.
struct CompactedOverlay {
  std::string chdir;  // ends with '/', or ""
  std::vector<std::string> options;
};
CompactedOverlay compact_lowerdir_option(const std::vector<std::string>& options);

}  // namespace shim
