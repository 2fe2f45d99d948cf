#include "support/temp_dir.h"

#include <stdlib.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <stdexcept>
#include <system_error>
#include <utility>

#include <fmt/format.h>

namespace shim::test {

TempDir::TempDir(std::string_view prefix) {
  std::string pattern = fmt::format("/tmp/{}XXXXXX", prefix);
  if (mkdtemp(pattern.data()) == nullptr) {
    throw std::runtime_error(
        fmt::format("mkdtemp {}: {}", pattern, std::strerror(errno)));
  }
  path_ = std::move(pattern);
}

TempDir::~TempDir() { remove(); }

TempDir::TempDir(TempDir&& other) noexcept : path_(std::exchange(other.path_, {})) {}

TempDir& TempDir::operator=(TempDir&& other) noexcept {
  if (this != &other) {
    remove();
    path_ = std::exchange(other.path_, {});
  }
  return *this;
}

std::string TempDir::sub(std::string_view name) const {
  return fmt::format("{}/{}", path_, name);
}

std::string TempDir::release() { return std::exchange(path_, {}); }

void TempDir::remove() {
  if (path_.empty()) return;
  std::error_code ignored;
  std::filesystem::remove_all(path_, ignored);
  path_.clear();
}

}  // namespace shim::test
