// shim-wasm/src/module_file.h: the zygote's read of a module, and its child's check that
// the file it sees holds the bytes the zygote made ready. A same-size file that differs
// anywhere, a FIFO (which must not block), a missing file: not the module.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <string>

#include <catch2/catch.hpp>

#include "module_file.h"
#include "shim/fs.h"
#include "shim/unique_fd.h"
#include "support/temp_dir.h"

namespace {

TEST_CASE("file_holds: exactly the bytes, or not the module", "[wasm][module-file]") {
  shim::test::TempDir dir("modfile-");
  std::string bytes(10000, 'a');
  bytes[9999] = 'z';  // past the first 4 KiB piece
  const std::string path = dir.path() + "/m.wasm";
  REQUIRE(shim::write_file(path, bytes, 0644).ok());
  CHECK(shim_wasm::file_holds(path, bytes));
  std::string last = bytes;
  last.back() = 'y';
  CHECK_FALSE(shim_wasm::file_holds(path, last));
  CHECK_FALSE(shim_wasm::file_holds(path, bytes.substr(0, 9999)));
  CHECK_FALSE(shim_wasm::file_holds(path, bytes + "x"));
  CHECK_FALSE(shim_wasm::file_holds(dir.path() + "/missing.wasm", bytes));
  REQUIRE(::mkfifo((dir.path() + "/fifo.wasm").c_str(), 0644) == 0);
  CHECK_FALSE(shim_wasm::file_holds(dir.path() + "/fifo.wasm", ""));  // at once, no writer
  REQUIRE(shim::write_file(dir.path() + "/empty.wasm", "", 0644).ok());
  CHECK(shim_wasm::file_holds(dir.path() + "/empty.wasm", ""));
}

TEST_CASE("read_module_file: a regular file up to the limit", "[wasm][module-file]") {
  shim::test::TempDir dir("modfile-");
  const std::string path = dir.path() + "/m.wasm";
  REQUIRE(shim::write_file(path, "0123456789", 0644).ok());
  std::string out;
  shim::UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  CHECK(shim_wasm::read_module_file(fd.get(), 10, &out));
  CHECK(out == "0123456789");
  shim::UniqueFd again(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  CHECK_FALSE(shim_wasm::read_module_file(again.get(), 9, &out));
  shim::UniqueFd directory(::open(dir.path().c_str(), O_RDONLY | O_CLOEXEC));
  CHECK_FALSE(shim_wasm::read_module_file(directory.get(), 100, &out));
}

}  // namespace
