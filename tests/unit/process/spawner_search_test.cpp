// SpawnRequest::search_path: a bare executable name looked up the way runc does (Go's
// exec.LookPath after the user and capabilities are applied), in the child, inside its
// root: relative and absolute symlinks resolve inside the root, entries that are files,
// directories and candidates the process may not execute are skipped, no PATH finds
// nothing, a relative entry is refused, and Go's texts for all of it.
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>

#include <catch2/catch.hpp>

#include "process/posix_spawner.h"
#include "support/busybox_rootfs.h"
#include "support/temp_dir.h"

namespace {

namespace fs = std::filesystem;
using shim::PosixSpawner;
using shim::SpawnedProcess;
using shim::SpawnRequest;
using shim::Status;

void write_file(const std::string& path, const std::string& text, fs::perms mode) {
  std::ofstream(path) << text;
  fs::permissions(path, mode);
}

// busybox's merged layout: the binary and its applets in /usr/bin, /bin -> usr/bin
// (relative), /opt/tools -> /usr/bin (absolute: restarts at the root, not the host's
// /usr/bin), and a few traps along the way.
struct SearchRoot {
  SearchRoot() {
    const fs::path root = dir.path();
    fs::permissions(root, fs::perms(0755));  // the root's "/": searchable by uid 1000 too
    for (const char* sub : {"usr/bin", "etc", "first", "dirs/sh", "opt", "tmp"})
      fs::create_directories(root / sub);
    fs::copy_file(shim::test::kBusyboxBinary, root / "usr/bin/busybox");
    for (const char* applet : {"sh", "echo", "cat"})
      fs::create_symlink("busybox", root / "usr/bin" / applet);
    fs::create_symlink("usr/bin", root / "bin");
    fs::create_symlink("/usr/bin", root / "opt/tools");
    write_file(dir.sub("etc/passwd"), "root:x:0:0:root:/root:/bin/sh\n", fs::perms(0644));
    // Found only inside the root: proves the lookup is not the host's.
    write_file(dir.sub("usr/bin/inside-only"), "#!/bin/sh\necho inside the root\n",
               fs::perms(0755));
    // Traps: not executable, executable only by root, not a program at all.
    write_file(dir.sub("first/sh"), "#!/bin/sh\necho wrong sh\n", fs::perms(0644));
    write_file(dir.sub("first/echo"), "#!/bin/sh\necho root-only echo\n", fs::perms(0700));
    write_file(dir.sub("usr/bin/garbage"), "not a program\n", fs::perms(0755));
  }
  shim::test::TempDir dir{"search-"};
};

struct Result {
  Status status;
  std::string out;
  pid_t pid = -1;
};

Result run(const SearchRoot& root, std::string search_path, std::vector<std::string> argv,
           std::optional<shim::SpawnUser> user = std::nullopt, bool hold = false) {
  int fds[2];
  REQUIRE(::pipe2(fds, O_CLOEXEC) == 0);
  SpawnRequest request;
  request.path = argv[0];
  request.argv = std::move(argv);
  request.env = std::vector<std::string>{"PATH=" + search_path};
  request.search_path = std::move(search_path);
  request.root = root.dir.path();
  request.fds = {{1, fds[1]}};
  request.user = std::move(user);
  request.hold = hold;
  SpawnedProcess child;
  Result result;
  result.status = PosixSpawner().spawn(request, &child);
  result.pid = child.pid;
  if (result.status.ok() && hold) result.status = child.gate.release();
  ::close(fds[1]);
  char buffer[4096];
  for (ssize_t n; (n = ::read(fds[0], buffer, sizeof buffer)) > 0;)
    result.out.append(buffer, static_cast<std::size_t>(n));
  ::close(fds[0]);
  if (child.pid > 0) {
    int status = 0;
    ::waitpid(child.pid, &status, 0);  // ECHILD when the spawner already reaped it
  }
  return result;
}

}  // namespace

TEST_CASE("search: relative and absolute symlinks resolve inside the root", "[spawner][search]") {
  SearchRoot root;
  Result relative = run(root, "/bin", {"sh", "-c", "echo via bin"});
  INFO(relative.status.to_string());
  CHECK(relative.status.ok());
  CHECK(relative.out == "via bin\n");
  Result absolute = run(root, "/opt/tools", {"inside-only"});
  INFO(absolute.status.to_string());
  CHECK(absolute.status.ok());
  CHECK(absolute.out == "inside the root\n");
  // The host has no /usr/bin/inside-only: a lookup on the host would not have found it.
  CHECK_FALSE(fs::exists("/usr/bin/inside-only"));
}

TEST_CASE("search: entries that are files or directories, and non-executables, are skipped",
          "[spawner][search]") {
  SearchRoot root;
  // /etc/passwd/sh: ENOTDIR; /dirs/sh: a directory; /first/sh: not executable.
  Result skipped =
      run(root, "/etc/passwd:/dirs:/nonexistent:/first:/usr/bin", {"sh", "-c", "echo right sh"});
  INFO(skipped.status.to_string());
  CHECK(skipped.status.ok());
  CHECK(skipped.out == "right sh\n");
}

TEST_CASE("search: as the process's user, after its credentials are applied", "[spawner][search]") {
  SearchRoot root;
  // /first/echo is executable by root only: root runs it, uid 1000 goes on to /bin/echo.
  Result as_root = run(root, "/first:/bin", {"echo", "busybox echo"}, shim::SpawnUser{});
  CHECK(as_root.out == "root-only echo\n");
  Result as_user =
      run(root, "/first:/bin", {"echo", "busybox echo"}, shim::SpawnUser{.uid = 1000, .gid = 1000});
  INFO(as_user.status.to_string());
  CHECK(as_user.status.ok());
  CHECK(as_user.out == "busybox echo\n");
}

TEST_CASE("search: not found, no PATH, and a relative entry give Go's errors",
          "[spawner][search]") {
  SearchRoot root;
  Result missing = run(root, "/bin:/usr/local/bin", {"nosuch"});
  CHECK(missing.status.code() == shim::Code::kUnknown);
  CHECK(missing.status.message() == "exec: \"nosuch\": executable file not found in $PATH");
  CHECK(missing.pid > 0);  // the child looked, and is gone
  CHECK(::kill(missing.pid, 0) == -1);

  Result no_path = run(root, "", {"sh", "-c", "true"});
  CHECK(no_path.status.message() == "exec: \"sh\": executable file not found in $PATH");

  // A relative entry ("bin", with cwd "/") finds bin/sh: refused, as Go 1.19+ does.
  Result relative = run(root, "bin", {"sh", "-c", "echo ran"});
  CHECK(relative.status.message() ==
        "exec: \"sh\": cannot run executable found relative to current directory");
  CHECK(relative.out.empty());
  Result empty_entry = run(root, ":/bin", {"sh", "-c", "echo from bin"});
  CHECK(empty_entry.status.ok());  // "./sh" does not exist in "/": skipped
  CHECK(empty_entry.out == "from bin\n");

  // A name with a '/' is not searched: exec'd as it is (inside the root).
  Result with_slash = run(root, "", {"/usr/bin/sh", "-c", "echo direct"});
  CHECK(with_slash.status.ok());
  CHECK(with_slash.out == "direct\n");
}

TEST_CASE("search: a held child looks before its gate, and execs what it found",
          "[spawner][search]") {
  SearchRoot root;
  Result missing = run(root, "/bin", {"nosuch"}, std::nullopt, /*hold=*/true);
  CHECK(missing.status.message() == "exec: \"nosuch\": executable file not found in $PATH");
  Result found = run(root, "/opt/tools", {"sh", "-c", "echo held"}, std::nullopt, true);
  INFO(found.status.to_string());
  CHECK(found.status.ok());
  CHECK(found.out == "held\n");
  // Executable bits but not a program: found, and exec's own error names the path found.
  Result garbage = run(root, "/nonexistent:/bin", {"garbage"}, std::nullopt, true);
  CHECK(garbage.status.message() == "exec /bin/garbage: Exec format error");
  Result unheld = run(root, "/bin", {"garbage"});
  CHECK(unheld.status.message() == "exec /bin/garbage: Exec format error");
}
