// A scratch cgroupfs tree for the cgroup fuzz targets, filled from the input and emptied
// after each run, the way the unit tests build theirs (tests/unit/linux/cgroup_test_helpers.h)
// but without Catch2.
//
// Input format: files separated by header lines "@@ <name>\n"; a file's content is
// everything up to the next header line. A name is "<dir>/<file>" with <dir> one of the
// tree's directories (see FakeCgroupTree's constructor) and <file> of [A-Za-z0-9._-]
// (not "." or ".."); a name under "hugepages/" makes a directory (the huge page sizes
// come from their names). Other names are ignored, so nothing is written outside.
#pragma once

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "fuzz_check.h"

namespace fuzz {

class FakeCgroupTree {
 public:
  // `dirs`: the directories (relative to the tree's root) files may be written to.
  explicit FakeCgroupTree(std::vector<std::string> dirs) : dirs_(std::move(dirs)) {
    // In memory, like cgroupfs: on a disk file system the creates and unlinks of each
    // run cost milliseconds (50 runs a second instead of thousands).
    const char* tmp = std::getenv("LIBSHIM_FUZZ_TMPDIR");
    std::string base = tmp != nullptr && *tmp != '\0' ? tmp : "/dev/shm";
    if (::access(base.c_str(), W_OK) != 0) base = "/tmp";
    std::string pattern = base + "/libshim-fuzz-cg.XXXXXX";
    FUZZ_CHECK(::mkdtemp(pattern.data()) != nullptr);
    root_ = pattern;
    for (const std::string& dir : dirs_) std::filesystem::create_directories(root_ + "/" + dir);
    std::filesystem::create_directories(root_ + "/hugepages");
  }
  ~FakeCgroupTree() {
    std::error_code ignored;
    std::filesystem::remove_all(root_, ignored);
  }
  FakeCgroupTree(const FakeCgroupTree&) = delete;
  FakeCgroupTree& operator=(const FakeCgroupTree&) = delete;

  const std::string& root() const { return root_; }
  std::string path(std::string_view relative) const { return root_ + "/" + std::string(relative); }

  // Writes the input's files. clear() removes them again.
  void fill(std::string_view input) {
    constexpr std::string_view kHeader = "@@ ";
    std::size_t at = input.starts_with(kHeader) ? 0 : input.find("\n@@ ");
    while (at != std::string_view::npos) {
      std::size_t name_start = at + (input[at] == '\n' ? 1 : 0) + kHeader.size();
      std::size_t name_end = input.find('\n', name_start);
      if (name_end == std::string_view::npos) name_end = input.size();
      std::size_t next = input.find("\n@@ ", name_end);
      std::size_t content_start = std::min(name_end + 1, input.size());
      std::size_t content_end = next == std::string_view::npos ? input.size() : next;
      std::string_view content = content_start < content_end
                                     ? input.substr(content_start, content_end - content_start)
                                     : std::string_view();
      create(input.substr(name_start, name_end - name_start), content);
      at = next;
    }
  }

  void clear() {
    for (const std::string& file : files_) ::unlink(file.c_str());
    for (const std::string& dir : made_dirs_) ::rmdir(dir.c_str());
    files_.clear();
    made_dirs_.clear();
  }

 private:
  static bool plain_name(std::string_view name) {
    if (name.empty() || name == "." || name == ".." || name.size() > 64) return false;
    for (char c : name) {
      bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                c == '.' || c == '_' || c == '-';
      if (!ok) return false;
    }
    return true;
  }

  void create(std::string_view name, std::string_view content) {
    std::size_t slash = name.rfind('/');
    if (slash == std::string_view::npos) return;
    std::string_view dir = name.substr(0, slash);
    std::string_view file = name.substr(slash + 1);
    if (!plain_name(file)) return;
    if (dir == "hugepages") {
      std::string path = root_ + "/hugepages/" + std::string(file);
      if (::mkdir(path.c_str(), 0755) == 0) made_dirs_.push_back(path);
      return;
    }
    bool known = false;
    for (const std::string& allowed : dirs_) known = known || allowed == dir;
    if (!known) return;
    std::string path = root_ + "/" + std::string(name);
    int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) return;
    files_.push_back(path);
    FUZZ_CHECK(::write(fd, content.data(), content.size()) == static_cast<ssize_t>(content.size()));
    ::close(fd);
  }

  std::vector<std::string> dirs_;
  std::string root_;
  std::vector<std::string> files_;
  std::vector<std::string> made_dirs_;
};

}  // namespace fuzz
