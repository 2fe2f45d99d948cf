// release_clean_file_mappings (shim-wasm/src/clean_mappings.h): drops the page-table
// entries of read-only file mappings with no page of their own, and nothing else. The
// call runs in a forked child, single-threaded as the zygote is.
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cctype>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <string>
#include <thread>

#include <fmt/format.h>
#include <catch2/catch.hpp>

#include "clean_mappings.h"
#include "shim/fs.h"
#include "support/temp_dir.h"
#include "unit/process/child_wait.h"

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
  int fd = ::open(file.c_str(), O_RDONLY | O_CLOEXEC);
  REQUIRE(fd >= 0);

  // Read-only and clean: every page faulted in, then dropped.
  auto* code = static_cast<const char*>(::mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd, 0));
  REQUIRE(code != MAP_FAILED);
  for (std::size_t i = 0; i < size; i += 4096) {
    volatile char byte = code[i];  // each page read
    (void)byte;
  }
  // Read-only now, but with pages of its own (written before mprotect, as a relocation
  // is): kept, with what was written.
  auto* relocated =
      static_cast<char*>(::mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_PRIVATE, fd, 0));
  REQUIRE(relocated != MAP_FAILED);
  for (std::size_t i = 0; i < size; i += 4096) relocated[i] = 'R';
  REQUIRE(::mprotect(relocated, size, PROT_READ) == 0);
  ::close(fd);
  CHECK(rss_kib(code) == 1024);

  // The child reports: released KiB, the two mappings' Rss after, whether the clean one
  // reads back unchanged and whether the written one kept its bytes.
  int report[2];
  REQUIRE(::pipe2(report, O_CLOEXEC) == 0);
  pid_t child = ::fork();
  REQUIRE(child >= 0);
  if (child == 0) {
    std::string error;
    long released = shim_wasm::release_clean_file_mappings(&error);
    long code_rss = rss_kib(code);
    bool same = std::memcmp(code, bytes.data(), size) == 0;
    bool kept = true;
    for (std::size_t i = 0; i < size; i += 4096) kept = kept && relocated[i] == 'R';
    std::string line = fmt::format("{} {} {:d} {} {:d} {}", released, code_rss, same,
                                   rss_kib(relocated), kept, error.empty() ? "-" : error);
    (void)!::write(report[1], line.data(), line.size());
    ::_exit(0);
  }
  ::close(report[1]);
  std::string line = shim_test::read_to_end(report[0]);
  ::close(report[0]);
  shim_test::wait_for_child(child);
  long released = -1, code_rss = -1, relocated_rss = -1;
  int same = 0, kept = 0;
  char error[64] = {};
  REQUIRE(std::sscanf(line.c_str(), "%ld %ld %d %ld %d %63s", &released, &code_rss, &same,
                      &relocated_rss, &kept, error) == 6);
  CHECK(std::string(error) == "-");
  CHECK(released >= 1024);
  CHECK(code_rss == 0);
  CHECK(same == 1);  // faulted back in, unchanged
  CHECK(relocated_rss == 1024);
  CHECK(kept == 1);

  // With a second thread it refuses.
  std::string refused;
  std::thread other([&] { CHECK(shim_wasm::release_clean_file_mappings(&refused) == -1); });
  other.join();
  CHECK(refused == "more than one thread: mappings could change under the scan");

  ::munmap(const_cast<char*>(code), size);
  ::munmap(relocated, size);
}
