// Rootfs mounts: option parsing, overlay lowerdir compaction, root-scoped target paths,
// and real mounts (tmpfs, bind, overlay, loop) made in a forked child's private mount
// namespace, so nothing can leak into the host's mount table.
#include <fcntl.h>
#include <sched.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <unistd.h>

#include <linux/magic.h>

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include <fmt/format.h>
#include <catch2/catch.hpp>

#include "gocompat/go_compat.h"
#include "linux/mount_options.h"
#include "linux/root_path.h"
#include "shim/fs.h"
#include "shim/linux/mount.h"
#include "support/temp_dir.h"
#include "unit/isolated_child.h"

namespace {

using shim::MountEntry;
using shim_test::ChildReport;

bool make_dir(const std::string& path) { return ::mkdir(path.c_str(), 0755) == 0; }

bool write_text(const std::string& path, const std::string& text) {
  return shim::go_write_file(path, text, 0644).ok();
}

std::string read_text(const std::string& path) {
  std::string content;
  if (!shim::go_read_file(path, &content).ok()) return "<unreadable>";
  return content;
}

std::vector<std::string> mounts_under(const std::string& path) {
  std::vector<std::string> points;
  CHECK(shim::mount_points_under(path, &points).ok());
  return points;
}

// The mountinfo line of the mount at `point` (the last one, if stacked).
std::string mountinfo_line(const std::string& point) {
  std::ifstream mountinfo("/proc/self/mountinfo");
  std::string line;
  std::string found;
  while (std::getline(mountinfo, line)) {
    if (line.find(" " + point + " ") != std::string::npos) found = line;
  }
  return found;
}

long fs_type(const std::string& path) {
  struct statfs st {};
  return ::statfs(path.c_str(), &st) == 0 ? static_cast<long>(st.f_type) : -1;
}

// A private mount namespace for the forked test child.
bool enter_private_mount_namespace(ChildReport& report) {
  bool ok = ::unshare(CLONE_NEWNS) == 0 &&
            ::mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) == 0;
  return report.check(ok, fmt::format("private mount namespace: {}", std::strerror(errno)));
}

}  // namespace

TEST_CASE("mount options -> flags and data", "[runc]") {
  using shim::parse_mount_options;
  struct Case {
    std::vector<std::string> options;
    unsigned long flags;
    std::string data;
  };
  const Case cases[] = {
      {{}, 0, ""},
      {{"ro"}, MS_RDONLY, ""},
      {{"ro", "rw"}, 0, ""},
      {{"bind"}, MS_BIND, ""},
      {{"rbind"}, MS_BIND | MS_REC, ""},
      {{"nosuid", "nodev", "noexec"}, MS_NOSUID | MS_NODEV | MS_NOEXEC, ""},
      {{"nosuid", "suid", "nodev", "dev", "noexec", "exec"}, 0, ""},
      {{"remount", "ro"}, MS_REMOUNT | MS_RDONLY, ""},
      {{"noatime", "nodiratime"}, MS_NOATIME | MS_NODIRATIME, ""},
      {{"noatime", "atime", "nodiratime", "diratime"}, 0, ""},
      {{"relatime", "strictatime"}, MS_RELATIME | MS_STRICTATIME, ""},
      {{"relatime", "norelatime", "strictatime", "nostrictatime"}, 0, ""},
      {{"sync", "dirsync", "mand"}, MS_SYNCHRONOUS | MS_DIRSYNC | MS_MANDLOCK, ""},
      {{"sync", "async", "mand", "nomand"}, 0, ""},
      {{"shared"}, MS_SHARED, ""},
      {{"rshared"}, MS_SHARED | MS_REC, ""},
      {{"private", "rprivate"}, MS_PRIVATE | MS_REC, ""},
      {{"slave"}, MS_SLAVE, ""},
      {{"rslave"}, MS_SLAVE | MS_REC, ""},
      {{"unbindable"}, MS_UNBINDABLE, ""},
      {{"runbindable"}, MS_UNBINDABLE | MS_REC, ""},
      {{"defaults"}, 0, ""},
      {{"index=off", "ro", "lowerdir=/a:/b", "upperdir=/u", "workdir=/w"},
       MS_RDONLY,
       "index=off,lowerdir=/a:/b,upperdir=/u,workdir=/w"},
      {{"size=65536k", "mode=755", "nosuid"}, MS_NOSUID, "size=65536k,mode=755"},
      {{"RO", "Bind"}, 0, "RO,Bind"},  // options are case-sensitive, like containerd's map
  };
  for (const Case& c : cases) {
    INFO(fmt::format("{}", fmt::join(c.options, ",")));
    shim::ParsedMountOptions parsed = parse_mount_options(c.options);
    CHECK(parsed.flags == c.flags);
    CHECK(parsed.data_string() == c.data);
    CHECK_FALSE(parsed.loop);
  }
  shim::ParsedMountOptions special =
      parse_mount_options({"loop", "uidmap=0:1000:1", "gidmap=0:1000:1", "ro"});
  CHECK(special.loop);
  CHECK(special.uidmap == "0:1000:1");
  CHECK(special.gidmap == "0:1000:1");
  CHECK(special.flags == MS_RDONLY);
  CHECK(special.data.empty());
}

TEST_CASE("overlay lowerdirs are rewritten relative to their common parent", "[runc]") {
  const std::string root = "/var/lib/containerd/io.containerd.snapshotter.v1.overlayfs/snapshots";
  shim::CompactedOverlay compacted = shim::compact_lowerdir_option(
      {"index=off", "lowerdir=" + root + "/13/fs:" + root + "/12/fs:" + root + "/1/fs",
       "upperdir=" + root + "/14/fs", "workdir=" + root + "/14/work"});
  CHECK(compacted.chdir == root + "/");
  CHECK(compacted.options == std::vector<std::string>{"index=off", "upperdir=" + root + "/14/fs",
                                                      "workdir=" + root + "/14/work",
                                                      "lowerdir=13/fs:12/fs:1/fs"});

  std::vector<std::string> single{"lowerdir=" + root + "/1/fs", "upperdir=/u"};
  CHECK(shim::compact_lowerdir_option(single).chdir.empty());
  CHECK(shim::compact_lowerdir_option(single).options == single);
  std::vector<std::string> unrelated{"lowerdir=/a/1:/b/2"};  // only "/" in common
  CHECK(shim::compact_lowerdir_option(unrelated).chdir.empty());
  CHECK(shim::compact_lowerdir_option({"upperdir=/u"}).chdir.empty());
}

TEST_CASE("mount targets are joined under the rootfs, symlinks scoped to it", "[runc]") {
  shim::test::TempDir dir("runc-root-");
  const std::string root = dir.path();
  REQUIRE(make_dir(root + "/etc"));
  REQUIRE(make_dir(root + "/usr"));
  REQUIRE(::symlink("/etc", (root + "/abs").c_str()) == 0);
  REQUIRE(::symlink("../../../../usr", (root + "/up").c_str()) == 0);
  REQUIRE(::symlink("usr/lib", (root + "/rel").c_str()) == 0);
  REQUIRE(::symlink("loop2", (root + "/loop1").c_str()) == 0);
  REQUIRE(::symlink("loop1", (root + "/loop2").c_str()) == 0);

  auto join = [&](std::string_view path) {
    std::string joined;
    shim::Status status = shim::root_path(root, path, &joined);
    INFO(status.to_string());
    REQUIRE(status.ok());
    return joined;
  };
  CHECK(join("") == root);
  CHECK(join("/") == root);
  CHECK(join("proc") == root + "/proc");
  CHECK(join("/a/../../../b") == root + "/b");
  CHECK(join("abs/passwd") == root + "/etc/passwd");
  CHECK(join("up/bin") == root + "/usr/bin");
  CHECK(join("rel/x") == root + "/usr/lib/x");
  CHECK(join("missing/../etc") == root + "/etc");
  std::string joined;
  CHECK(shim::root_path(root, "loop1/x", &joined).message() == "too many links");
  CHECK(shim::rootfs_path("/b/t1/") == "/b/t1/rootfs");
}

TEST_CASE("mount_all / unmount_all with real mounts", "[runc]") {
  auto outcome = shim_test::run_in_child([](ChildReport& report) {
    if (!enter_private_mount_namespace(report)) return;
    shim::test::TempDir dir("runc-mnt-");
    const std::string bundle = dir.path();
    const std::string source = bundle + "/source";
    report.check(
        make_dir(source) && make_dir(source + "/mnt") && write_text(source + "/hello", "hi"),
        "prepare source");
    std::string rootfs;
    shim::Status made = shim::make_rootfs_dir(bundle, &rootfs);
    report.check(made.ok() && rootfs == bundle + "/rootfs", "rootfs dir: " + made.to_string());
    struct stat st {};
    report.check(::stat(rootfs.c_str(), &st) == 0 && (st.st_mode & 0777) == 0711,
                 fmt::format("rootfs mode {:o}", st.st_mode & 0777));
    report.check(shim::make_rootfs_dir(bundle, &rootfs).ok(), "existing rootfs dir is fine");

    // A read-only bind of the source as the rootfs, a tmpfs on its /mnt.
    std::vector<MountEntry> entries{
        {"bind", source, "", {"rbind", "ro"}},
        {"tmpfs", "tmpfs", "/mnt", {"nosuid", "nodev", "size=1m", "mode=750"}},
    };
    shim::Status mounted = shim::mount_all(entries, rootfs);
    report.check(mounted.ok(), "mount_all: " + mounted.to_string());
    report.check(read_text(rootfs + "/hello") == "hi", "bind shows the source");
    report.check(!write_text(rootfs + "/new", "x") && errno == EROFS,
                 "bind was remounted read-only");
    report.check(fs_type(rootfs + "/mnt") == TMPFS_MAGIC, "tmpfs at /mnt");
    report.check(write_text(rootfs + "/mnt/file", "w"), "tmpfs is writable");
    std::string tmpfs_line = mountinfo_line(rootfs + "/mnt");
    report.check(tmpfs_line.find("nosuid") != std::string::npos &&
                     tmpfs_line.find("nodev") != std::string::npos &&
                     tmpfs_line.find("mode=750") != std::string::npos,
                 "tmpfs flags and data: " + tmpfs_line);
    report.check(mounts_under(rootfs) == std::vector<std::string>{rootfs, rootfs + "/mnt"},
                 fmt::format("mount points: {}", fmt::join(mounts_under(rootfs), " ")));

    shim::Status unmounted = shim::unmount_all(rootfs);
    report.check(unmounted.ok(), "unmount_all: " + unmounted.to_string());
    report.check(mounts_under(rootfs).empty(), "nothing left mounted");
    report.check(read_text(rootfs + "/hello") == "<unreadable>", "rootfs is empty again");
    report.check(read_text(source + "/hello") == "hi", "source untouched");
    report.check(shim::unmount_all(rootfs).ok(), "unmount_all twice");
    report.check(shim::unmount_all(bundle + "/nope").ok(), "missing target is fine");
    report.check(shim::unmount_all("").ok(), "empty target is fine");

    // Stacked mounts on one point all go.
    for (int i = 0; i < 3; ++i) {
      shim::Status s = shim::mount_entry({"tmpfs", "tmpfs", "", {"size=64k"}}, rootfs);
      report.check(s.ok(), "stacked tmpfs: " + s.to_string());
    }
    report.check(shim::unmount_all(rootfs).ok() && mounts_under(rootfs).empty(),
                 "stacked mounts removed");
  });
  shim_test::require_child_passed(outcome);
}

TEST_CASE("mount_all failures: rollback and clear errors", "[runc]") {
  auto outcome = shim_test::run_in_child([](ChildReport& report) {
    if (!enter_private_mount_namespace(report)) return;
    shim::test::TempDir dir("runc-mnt-");
    std::string rootfs;
    report.check(shim::make_rootfs_dir(dir.path(), &rootfs).ok(), "rootfs dir");

    std::vector<MountEntry> entries{
        {"tmpfs", "tmpfs", "", {"size=64k"}},
        {"tmpfs", "tmpfs", "/missing", {"size=64k"}},
    };
    shim::Status failed = shim::mount_all(entries, rootfs);
    report.check(failed.code() == shim::Code::kUnknown &&
                     failed.message() ==
                         fmt::format("mount rootfs component 2/2 (type \"tmpfs\", source "
                                     "\"tmpfs\", target \"{0}/missing\"): mount \"tmpfs\" on "
                                     "\"{0}/missing\" (type \"tmpfs\"): no such file or "
                                     "directory",
                                     rootfs),
                 "error text: " + failed.message());
    report.check(mounts_under(rootfs).empty(), "first mount rolled back");

    std::string long_option = "x=" + std::string(5000, 'a');
    shim::Status too_long =
        shim::mount_entry({"tmpfs", "tmpfs", "", {"size=64k", long_option}}, rootfs);
    report.check(too_long.message().starts_with("mount options is too long"),
                 "too long: " + too_long.message());
    shim::Status fuse = shim::mount_entry({"fuse.sshfs", "x:/", "", {}}, rootfs);
    report.check(fuse.message().find("FUSE") != std::string::npos, "fuse: " + fuse.message());
    shim::Status idmap =
        shim::mount_entry({"bind", "/", "", {"rbind", "uidmap=0:1:1", "gidmap=0:1:1"}}, rootfs);
    report.check(idmap.message().find("idmapped") != std::string::npos,
                 "idmap: " + idmap.message());
    report.check(mounts_under(rootfs).empty(), "nothing mounted by the refusals");

    // Propagation needs its own mount call.
    shim::Status shared = shim::mount_entry({"tmpfs", "tmpfs", "", {"size=64k", "shared"}}, rootfs);
    report.check(shared.ok(), "shared tmpfs: " + shared.to_string());
    report.check(mountinfo_line(rootfs).find(" shared:") != std::string::npos,
                 "propagation: " + mountinfo_line(rootfs));
    report.check(shim::unmount_all(rootfs).ok(), "unmount shared");
  });
  shim_test::require_child_passed(outcome);
}

TEST_CASE("overlay with a lowerdir list longer than a page fits by compaction", "[runc]") {
  auto outcome = shim_test::run_in_child([](ChildReport& report) {
    if (!enter_private_mount_namespace(report)) return;
    shim::test::TempDir dir("runc-ovl-");
    // Long snapshot paths, as a containerd root deep in the filesystem makes them.
    const std::string snapshots = dir.path() + "/" + std::string(100, 's') + "/snapshots";
    report.check(shim::make_dirs(snapshots, 0755).ok(), "mkdir snapshots");
    std::string lowerdir = "lowerdir=";
    const int layers = 40;
    for (int i = layers; i >= 1; --i) {
      std::string layer = fmt::format("{}/{}/fs", snapshots, i);
      report.check(shim::make_dirs(layer, 0755).ok(), "mkdir layer");
      write_text(fmt::format("{}/file{}", layer, i), std::to_string(i));
      lowerdir += layer + (i > 1 ? ":" : "");
    }
    std::string upper = snapshots + "/upper/fs";
    std::string work = snapshots + "/upper/work";
    report.check(shim::make_dirs(upper, 0755).ok() && shim::make_dirs(work, 0755).ok(),
                 "mkdir upper");
    std::vector<std::string> options{"index=off", lowerdir, "upperdir=" + upper, "workdir=" + work};
    report.check(shim::mount_options_size(options) > 4096,
                 fmt::format("options are {} bytes", shim::mount_options_size(options)));
    std::string rootfs;
    report.check(shim::make_rootfs_dir(dir.path(), &rootfs).ok(), "rootfs dir");
    char cwd_before[4096];
    report.check(::getcwd(cwd_before, sizeof cwd_before) != nullptr, "getcwd");

    shim::Status mounted = shim::mount_all({{"overlay", "overlay", "", options}}, rootfs);
    report.check(mounted.ok(), "overlay: " + mounted.to_string());
    report.check(read_text(rootfs + "/file1") == "1" && read_text(rootfs + "/file40") == "40",
                 "layers visible");
    report.check(write_text(rootfs + "/upper-file", "u") && read_text(upper + "/upper-file") == "u",
                 "writes go to upperdir");
    char cwd_after[4096];
    report.check(
        ::getcwd(cwd_after, sizeof cwd_after) != nullptr && std::string(cwd_before) == cwd_after,
        "the process's working directory did not change");
    report.check(shim::unmount_all(rootfs).ok() && mounts_under(rootfs).empty(),
                 "overlay unmounted");
  });
  shim_test::require_child_passed(outcome);
}

TEST_CASE("loop mounts attach an autoclear loop device", "[runc]") {
  if (::access("/dev/loop-control", R_OK | W_OK) != 0 ||
      ::access("/usr/sbin/mkfs.ext4", X_OK) != 0) {
    WARN("no /dev/loop-control or mkfs.ext4: loop mount not tested");
    return;
  }
  auto outcome = shim_test::run_in_child([](ChildReport& report) {
    if (!enter_private_mount_namespace(report)) return;
    shim::test::TempDir dir("runc-loop-");
    std::string image = dir.sub("image.ext4");
    int fd = ::open(image.c_str(), O_CREAT | O_WRONLY | O_CLOEXEC, 0600);
    report.check(fd >= 0 && ::ftruncate(fd, 4 << 20) == 0, "image file");
    ::close(fd);
    report.check(::system(("/usr/sbin/mkfs.ext4 -q -F " + image + " >/dev/null 2>&1").c_str()) == 0,
                 "mkfs.ext4");
    std::string rootfs;
    report.check(shim::make_rootfs_dir(dir.path(), &rootfs).ok(), "rootfs dir");

    shim::Status mounted = shim::mount_all({{"ext4", image, "", {"loop", "ro"}}}, rootfs);
    report.check(mounted.ok(), "loop mount: " + mounted.to_string());
    std::string line = mountinfo_line(rootfs);
    std::size_t at = line.find(" - ext4 /dev/loop");
    report.check(at != std::string::npos && line.find(" ro") != std::string::npos,
                 "mounted ro from a loop device: " + line);
    std::string device =
        at == std::string::npos ? "" : line.substr(at + 8, line.find(' ', at + 8) - at - 8);
    report.check(shim::unmount_all(rootfs).ok(), "unmount");
    // Autoclear: the device lets go of the image once unmounted (asynchronously).
    std::string backing = fmt::format("/sys/block/{}/loop/backing_file", device.substr(5));
    bool cleared = false;
    for (int i = 0; i < 200 && !cleared; ++i) {
      cleared = ::access(backing.c_str(), F_OK) != 0;
      if (!cleared) std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    report.check(!device.empty() && cleared, "loop device " + device + " cleared");
  });
  shim_test::require_child_passed(outcome);
}
