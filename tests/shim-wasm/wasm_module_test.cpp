// check_module: WebAssembly files as containerd's users hand them to the Wasm shim, built
// byte by byte (a module's header, sections and imports).
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "shim/fs.h"
#include "support/temp_dir.h"
#include "wasm_module.h"

namespace {

using Bytes = std::string;

Bytes header() { return Bytes("\0asm\x01\0\0\0", 8); }

Bytes name(const std::string& s) { return Bytes(1, static_cast<char>(s.size())) + s; }

// An import section with function imports (type index 0) from module.field pairs.
Bytes import_section(const std::vector<std::pair<std::string, std::string>>& imports) {
  Bytes body(1, static_cast<char>(imports.size()));
  for (const auto& [module, field] : imports) body += name(module) + name(field) + Bytes("\0\0", 2);
  return Bytes(1, '\x02') + Bytes(1, static_cast<char>(body.size())) + body;
}

// A type section with one () -> () function type.
Bytes type_section() { return Bytes("\x01\x04\x01\x60\x00\x00", 6); }

std::string write(const shim::test::TempDir& dir, const std::string& file, const Bytes& bytes) {
  std::string path = dir.path() + "/" + file;
  REQUIRE(shim::write_file(path, bytes, 0644).ok());
  return path;
}

}  // namespace

TEST_CASE("check_module accepts a module that imports only WASI", "[wasm]") {
  shim::test::TempDir dir;
  std::string path = write(
      dir, "ok.wasm",
      header() + type_section() +
          import_section({{"wasi_snapshot_preview1", "fd_write"}, {"wasi_unstable", "proc_exit"}}));
  shim_wasm::ModuleSummary summary;
  shim::Status s = shim_wasm::check_module(path, "/ok.wasm", &summary);
  INFO(s.message());
  REQUIRE(s.ok());
  CHECK(summary.imports ==
        std::vector<std::string>{"wasi_snapshot_preview1.fd_write", "wasi_unstable.proc_exit"});
  // No import section at all (a module that only computes) is fine too.
  CHECK(shim_wasm::check_module(write(dir, "bare.wasm", header()), "/bare.wasm").ok());
}

TEST_CASE("check_module names the import WASI does not provide", "[wasm]") {
  shim::test::TempDir dir;
  std::string path =
      write(dir, "host.wasm",
            header() + type_section() +
                import_section({{"wasi_snapshot_preview1", "fd_write"}, {"env", "host_fn"}}));
  shim::Status s = shim_wasm::check_module(path, "/app/host.wasm");
  CHECK(s.code() == shim::Code::kInvalidArgument);
  CHECK(s.message() == "/app/host.wasm imports env.host_fn, which WASI does not provide");
}

// The names are the module's bytes: the error shows them as printable ASCII, at most
// 128 bytes of each shown (it reaches containerd, whose protobuf wants UTF-8, ctr and logs).
TEST_CASE("check_module shows an import's odd bytes escaped and its long name cut", "[wasm]") {
  shim::test::TempDir dir;
  std::string path =
      write(dir, "odd.wasm", header() + import_section({{"e\xff\n\\v", std::string(50, '\x01')}}));
  shim::Status s = shim_wasm::check_module(path, "/odd.wasm");
  CHECK(s.code() == shim::Code::kInvalidArgument);
  std::string cut;
  for (int i = 0; i < 32; ++i) cut += "\\x01";  // 4 bytes each: 32 of the 50 fit
  CHECK(s.message() ==
        "/odd.wasm imports e\\xff\\x0a\\x5cv." + cut + "..., which WASI does not provide");
}

TEST_CASE("check_module refuses what is not a core module", "[wasm]") {
  shim::test::TempDir dir;
  shim::Status text =
      shim_wasm::check_module(write(dir, "t.wasm", "#!/bin/sh\necho hi\n"), "/t.wasm");
  CHECK(text.code() == shim::Code::kInvalidArgument);
  CHECK(text.message() == "/t.wasm is not a WebAssembly module (no \\0asm magic)");

  shim::Status component =
      shim_wasm::check_module(write(dir, "c.wasm", Bytes("\0asm\x0d\0\x01\0", 8)), "/c.wasm");
  CHECK(component.message() ==
        "/c.wasm is a WebAssembly component, not a core module (only WASI preview 1 modules run)");

  shim::Status short_file =
      shim_wasm::check_module(write(dir, "s.wasm", Bytes("\0as", 3)), "/s.wasm");
  CHECK(short_file.code() == shim::Code::kInvalidArgument);

  // A section that claims more bytes than the file has.
  shim::Status truncated = shim_wasm::check_module(
      write(dir, "tr.wasm", header() + Bytes("\x01\x7f\x01", 3)), "/tr.wasm");
  CHECK(truncated.message() == "/tr.wasm is truncated (section 1)");

  shim::Status bad_imports = shim_wasm::check_module(
      write(dir, "bi.wasm", header() + Bytes("\x02\x05\x01\x03", 4)), "/bi.wasm");
  CHECK(bad_imports.message() == "/bi.wasm has a malformed import section (import 0)");

  // Entries that end before or after their section does.
  Bytes one_import = import_section({{"wasi_unstable", "fd_write"}});
  Bytes longer = one_import;
  longer[1] = static_cast<char>(longer[1] + 2);
  shim::Status slack = shim_wasm::check_module(
      write(dir, "sl.wasm", header() + longer + Bytes("\0\0", 2)), "/sl.wasm");
  CHECK(slack.message() == "/sl.wasm has a malformed import section (its size)");
  Bytes shorter = one_import;
  shorter[1] = static_cast<char>(shorter[1] - 2);
  shim::Status overrun =
      shim_wasm::check_module(write(dir, "ov.wasm", header() + shorter), "/ov.wasm");
  CHECK(overrun.message() == "/ov.wasm has a malformed import section (its size)");
}

TEST_CASE("check_module reports a missing file as NotFound", "[wasm]") {
  shim::test::TempDir dir;
  shim::Status s = shim_wasm::check_module(dir.path() + "/none.wasm", "/none.wasm");
  CHECK(s.code() == shim::Code::kNotFound);
  CHECK(s.message() == "cannot open the module /none.wasm: No such file or directory");
  CHECK_FALSE(shim_wasm::has_wasm_magic(dir.path() + "/none.wasm"));
  CHECK(shim_wasm::has_wasm_magic(write(dir, "m.wasm", header())));
}
