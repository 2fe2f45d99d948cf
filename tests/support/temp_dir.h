// TempDir: a fresh directory under /tmp, removed (recursively) when the object dies.
#pragma once

#include <string>
#include <string_view>

namespace shim::test {

class TempDir {
 public:
  // Creates /tmp/<prefix>XXXXXX (mode 0700). Keep the prefix short: unix socket paths
  // inside the directory must stay under 108 bytes.
  explicit TempDir(std::string_view prefix = "ls-");
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  TempDir(TempDir&& other) noexcept;
  TempDir& operator=(TempDir&& other) noexcept;

  const std::string& path() const { return path_; }
  // `path()/name`.
  std::string sub(std::string_view name) const;
  // Stops owning the directory: it is left on disk (for debugging a failure).
  std::string release();
  // Removes the directory now (idempotent). Errors are ignored, as in the destructor.
  void remove();

 private:
  std::string path_;
};

}  // namespace shim::test
