// release_clean_file_mappings (shim-wasm/src/clean_mappings.h): drops the page-table
// entries of read-only file mappings with no page of their own, and nothing else.
#include <sys/mman.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <fstream>
#include <string>

#include <fmt/format.h>
#include <catch2/catch.hpp>

#include "clean_mappings.h"
#include "shim/fs.h"
#include "support/temp_dir.h"

namespace {

// The Rss of the mapping that starts at `address`, from /proc/self/smaps; -1: none.
long rss_kib(const void* address) {
  std::ifstream smaps("/proc/self/smaps");
  std::string start = fmt::format("{:x}-", reinterpret_cast<unsigned long>(address));
  std::string line;
  bool in = false;
  while (std::getline(smaps, line)) {
    if (line.find('-') != std::string::npos && line.find(' ') > line.find('-') &&
        std::isxdigit(static_cast<unsigned char>(line[0]))) {
      in = line.starts_with(start);
      continue;
    }
    if (in && line.starts_with("Rss:")) return std::stol(line.substr(4));
  }
  return -1;
}

}  // namespace

TEST_CASE("the zygote drops its mappings of clean read-only file pages, and only those",
          "[shim-wasm]") {
  shim::test::TempDir dir;
  const std::string file = dir.path() + "/code";
  const std::size_t size = 256 * 4096;
  std::string bytes(size, '\0');
  for (std::size_t i = 0; i < size; ++i) bytes[i] = static_cast<char>(i * 7);
  REQUIRE(shim::write_file(file, bytes, 0644).ok());
  FILE* f = std::fopen(file.c_str(), "r");
  REQUIRE(f != nullptr);
  int fd = ::fileno(f);

  // Read-only and clean: every page faulted in, then dropped.
  auto* code = static_cast<const char*>(::mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd, 0));
  REQUIRE(code != MAP_FAILED);
  for (std::size_t i = 0; i < size; i += 4096) {
    volatile char byte = code[i];  // each page read
    (void)byte;
  }
  CHECK(rss_kib(code) == 1024);

  // Read-only now, but a page of its own (written before mprotect, as a relocation is):
  // kept, with what was written.
  auto* relocated =
      static_cast<char*>(::mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_PRIVATE, fd, 0));
  REQUIRE(relocated != MAP_FAILED);
  for (std::size_t i = 0; i < size; i += 4096) relocated[i] = 'R';
  REQUIRE(::mprotect(relocated, size, PROT_READ) == 0);

  std::string error;
  long released = shim_wasm::release_clean_file_mappings(&error);
  INFO(error);
  CHECK(released >= 1024);
  CHECK(rss_kib(code) == 0);
  CHECK(std::memcmp(code, bytes.data(), size) == 0);  // faulted back in, unchanged
  CHECK(rss_kib(relocated) == 1024);
  for (std::size_t i = 0; i < size; i += 4096) CHECK(relocated[i] == 'R');

  ::munmap(const_cast<char*>(code), size);
  ::munmap(relocated, size);
  std::fclose(f);
}
