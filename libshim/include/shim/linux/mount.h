// Mounting a task's rootfs (CreateTaskRequest.rootfs) into <bundle>/rootfs and taking it
// down again, with containerd's mount semantics (mount/mount_linux.go in 1.6,
// core/mount/mount_linux.go in 2.x): options parsed by parse_mount_options(); a separate mount(2)
// call for propagation; bind + ro remounted read-only (a bind ignores MS_RDONLY); overlay
// lowerdir lists near a page long shortened by mounting from their common parent; data
// longer than a page refused; "loop" over a loop device. fuse.*/fuse3.* types (mount
// helpers) and uidmap=/gidmap= (idmapped mounts) are refused with a clear error.
//
// Blocking system calls: run on a WorkPool thread.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "shim/pb/containerd/types.pb.h"
#include "shim/status.h"

namespace shim {

// One mount of CreateTaskRequest.rootfs, as `mount` takes it.
struct MountEntry {
  std::string type;                  // filesystem type ("overlay", "bind", ...)
  std::string source;                // device, directory or filesystem-specific source
  std::string target;                // relative to the rootfs; "" for the rootfs itself (1.7+)
  std::vector<std::string> options;  // mount(8) -o options, one per entry
};

// The Mount messages of a CreateTaskRequest as MountEntry values.
std::vector<MountEntry> mount_entries(
    const google::protobuf::RepeatedPtrField<containerd::types::Mount>& mounts);

// filepath.Join(bundle, "rootfs").
std::string rootfs_path(std::string_view bundle);
// mkdir <bundle>/rootfs 0711 (an existing one is fine); `rootfs` gets its path.
shim::Status make_rootfs_dir(std::string_view bundle, std::string* rootfs);

// Mounts one entry at root_path(root, entry.target). Error texts name the failing step.
shim::Status mount_entry(const MountEntry& entry, const std::string& root);

// Mounts all entries in order. If one fails, what was mounted (including a half-done
// entry, e.g. a bind whose read-only remount failed) is unmounted in reverse order and
// the error says which entry failed:
//   mount rootfs component 2/3 (type "overlay", source "overlay", target "/b/rootfs"): ...
shim::Status mount_all(const std::vector<MountEntry>& entries, const std::string& root);

// Unmounts every mount at or below `target`, deepest first, each one repeatedly with
// MNT_DETACH until EINVAL says nothing is left there (stacked mounts). A missing or empty
// target is fine. Only a failure at the target itself is reported.
shim::Status unmount_all(const std::string& target);

// Mount points at or below `target` listed in /proc/self/mountinfo (unescaped), in
// mountinfo order, without duplicates. `target` must be canonical.
shim::Status mount_points_under(const std::string& target, std::vector<std::string>* points);

}  // namespace shim
