// shim-wasm/src/fork_ready.h: which module bytes the zygote may instantiate before the
// fork. A start section (the module's own code, run at instantiation) must never run
// there, however the sections around it are laid out.
#include <string>

#include <fmt/format.h>
#include <catch2/catch.hpp>

#include "fork_ready.h"
#include "module_payload.h"

namespace {

const std::string kHeader("\0asm\x01\0\0\0", 8);

std::string leb128(std::size_t n) {
  std::string out;
  do {
    unsigned char b = n & 0x7f;
    n >>= 7;
    out.push_back(static_cast<char>(n != 0 ? b | 0x80 : b));
  } while (n != 0);
  return out;
}

// A section: its id, its size, its payload.
std::string section(char id, const std::string& payload) {
  return std::string(1, id) + leb128(payload.size()) + payload;
}

// A type section with one () -> () type and a function section declaring `n` functions
// of it: what a code section of `n` bodies needs before it.
std::string functions(std::size_t n, const std::string& type = std::string("\x60\x00\x00", 3)) {
  std::string indices = leb128(n);
  for (std::size_t i = 0; i < n; ++i) indices += '\0';
  return section(1, "\x01" + type) + section(3, indices);
}

TEST_CASE("can_instantiate_before_fork: core modules without a start section",
          "[wasm][fork-ready]") {
  using shim_wasm::can_instantiate_before_fork;
  CHECK(can_instantiate_before_fork(kHeader));  // empty module
  const std::string types = section(1, std::string("\x01\x60\x00\x00", 4));
  const std::string custom = section(0, std::string("\x04name", 5));
  CHECK(can_instantiate_before_fork(kHeader + types + custom));
  // A start section anywhere, after a custom section too, keeps the module out.
  CHECK_FALSE(can_instantiate_before_fork(kHeader + types + section(8, "\x00")));
  CHECK_FALSE(can_instantiate_before_fork(kHeader + custom + section(8, "\x00") + types));
  // A section whose size runs past the end, or a truncated LEB128: not a module to trust.
  CHECK_FALSE(can_instantiate_before_fork(kHeader + std::string("\x01\x10\x00", 3)));
  CHECK_FALSE(can_instantiate_before_fork(kHeader + std::string("\x01\x80", 2)));
  // Not a core module of version 1: a component, another file, a short one.
  CHECK_FALSE(can_instantiate_before_fork(std::string("\0asm\x0d\0\x01\0", 8)));
  CHECK_FALSE(can_instantiate_before_fork("#!/bin/sh\n"));
  CHECK_FALSE(can_instantiate_before_fork(std::string("\0asm", 4)));
}

// What instantiation allocates must stay bounded in the zygote, which all containers
// share: WasmEdge fills a table's minimum at once, GC types allow allocations in
// initializers, shared or 64-bit memories are not plain ones.
TEST_CASE("can_instantiate_before_fork: bounded declarations only", "[wasm][fork-ready]") {
  using shim_wasm::can_instantiate_before_fork;
  std::string why;
  const std::string small_table = section(4, std::string("\x01\x70\x00\x10", 4));
  CHECK(can_instantiate_before_fork(kHeader + small_table, &why));
  CHECK(why.empty());
  // (table 0xffffffff funcref): min as a 5-byte LEB128.
  const std::string huge_table = section(4, std::string("\x01\x70\x00\xff\xff\xff\xff\x0f", 8));
  CHECK_FALSE(can_instantiate_before_fork(kHeader + huge_table, &why));
  CHECK(why == "tables of 4294967295 entries");
  // Two tables under the bound each (540672 entries), over it together.
  const std::string two =
      section(4, std::string("\x02\x70\x00\x80\x80\x21\x6f\x00\x80\x80\x21", 11));
  CHECK_FALSE(can_instantiate_before_fork(kHeader + two, &why));
  CHECK(why == "tables of 1081344 entries");
  // A GC struct type (0x5f) and a function type with a typed reference (0x64) for a
  // result, each laid out so that a plain function type's reading would accept it.
  CHECK_FALSE(
      can_instantiate_before_fork(kHeader + section(1, std::string("\x01\x5f\x00\x00", 4)), &why));
  CHECK(why == "type 0 is not a function type");
  CHECK_FALSE(can_instantiate_before_fork(
      kHeader + section(1, std::string("\x01\x60\x00\x01\x64", 5)), &why));
  CHECK(why == "type 0 uses a typed reference");
  // Memories: plain (flags 0 or 1) taken; shared (3) and 64-bit (4) not.
  CHECK(can_instantiate_before_fork(kHeader + section(5, std::string("\x01\x01\x01\x02", 4))));
  CHECK_FALSE(
      can_instantiate_before_fork(kHeader + section(5, std::string("\x01\x03\x01\x02", 4))));
  CHECK_FALSE(can_instantiate_before_fork(kHeader + section(5, std::string("\x01\x04\x01", 3))));
}

// The walk follows section sizes: an 8 inside a payload is data, a size may take
// several LEB128 bytes.
TEST_CASE("can_instantiate_before_fork: section sizes, not bytes, find a start section",
          "[wasm][fork-ready]") {
  using shim_wasm::can_instantiate_before_fork;
  CHECK(can_instantiate_before_fork(kHeader + section(0, std::string("\x01\x08\x08\x01", 4))));
  std::string custom(200, '\x08');
  custom[0] = 1;                                                            // name length 1
  const std::string long_custom = std::string("\x00\xc8\x01", 3) + custom;  // size 200
  CHECK(can_instantiate_before_fork(kHeader + long_custom));
  CHECK_FALSE(
      can_instantiate_before_fork(kHeader + long_custom + section(8, std::string(1, '\0'))));
}

// The validator keeps a record per declared local; each data segment may dirty pages of
// its own; WasmEdge maps each memory's minimum.
TEST_CASE("can_instantiate_before_fork: locals, data segments, memories", "[wasm][fork-ready]") {
  using shim_wasm::can_instantiate_before_fork;
  std::string why;
  // One body declaring 60000 i32 locals (0xe0 0xd4 0x03), then `end`.
  const std::string many_locals = std::string("\x01\xe0\xd4\x03\x7f\x0b", 6);
  const std::string code =
      section(10, std::string("\x01", 1) + static_cast<char>(many_locals.size()) + many_locals);
  CHECK_FALSE(can_instantiate_before_fork(kHeader + functions(1) + code, &why));
  CHECK(why == "function body 0 declares 60000 locals or more");
  // Two groups of 30000 each in one body: summed.
  const std::string split = std::string("\x02\xb0\xea\x01\x7f\xb0\xea\x01\x7e\x0b", 10);
  CHECK_FALSE(can_instantiate_before_fork(
      kHeader + functions(1) +
          section(10, std::string("\x01", 1) + static_cast<char>(split.size()) + split),
      &why));
  CHECK(why == "function body 0 declares 60000 locals or more");
  // 27 bodies of 40000 locals: each within the bound, over 2^20 together.
  const std::string body = std::string("\x01\xc0\xb8\x02\x7f\x0b", 6);
  std::string bodies = leb128(27);
  for (int i = 0; i < 27; ++i) bodies += static_cast<char>(body.size()) + body;
  CHECK_FALSE(can_instantiate_before_fork(kHeader + functions(27) + section(10, bodies), &why));
  CHECK(why == "1080000 locals in all");
  // A few locals are fine.
  const std::string few = std::string("\x01\x04\x7f\x0b", 4);
  CHECK(can_instantiate_before_fork(
      kHeader + functions(1) +
      section(10, std::string("\x01", 1) + static_cast<char>(few.size()) + few)));
  // The validator counts params as locals too: 1000 of a function's type (a type's most)
  // and 49001 declared is one past the bound; 1100 functions of 1000 params each are
  // over 2^20 in all.
  const std::string wide = std::string(1, '\x60') + leb128(1000) + std::string(1000, '\x7f') + '\0';
  const std::string declared = std::string("\x01\xe9\xfe\x02\x7f\x0b", 6);  // 49001 i32s
  CHECK_FALSE(can_instantiate_before_fork(
      kHeader + functions(1, wide) + section(10, leb128(1) + leb128(declared.size()) + declared),
      &why));
  CHECK(why == "function body 0 declares 50001 locals or more");
  std::string empty_bodies = leb128(1100);
  for (int i = 0; i < 1100; ++i) empty_bodies += std::string("\x02\x00\x0b", 3);
  CHECK_FALSE(can_instantiate_before_fork(
      kHeader + functions(1100, wide) + section(10, empty_bodies), &why));
  CHECK(why == "1100000 locals in all");
  // 1025 data segments (only the count is read, and the bytes to match).
  CHECK_FALSE(can_instantiate_before_fork(
      kHeader + section(11, leb128(1025) + std::string(1025, '\0')), &why));
  CHECK(why == "1025 data segments");
  CHECK(can_instantiate_before_fork(kHeader + section(11, std::string("\x00", 1))));
  // Two memories; one past 1 GiB (16385 pages).
  CHECK_FALSE(can_instantiate_before_fork(
      kHeader + section(5, std::string("\x02\x00\x01\x00\x01", 5)), &why));
  CHECK(why == "2 memories");
  CHECK_FALSE(can_instantiate_before_fork(
      kHeader + section(5, std::string("\x01\x00\x81\x80\x01", 5)), &why));
  CHECK(why == "a memory of 16385 pages at least");
}

// What the loader builds grows with a section's bytes (an instruction or expression for
// a byte of code or element indices), and the validator's records with a type's params.
TEST_CASE("can_instantiate_before_fork: code and declaration bytes, params, function types",
          "[wasm][fork-ready]") {
  using shim_wasm::can_instantiate_before_fork;
  std::string why;
  // One body of 512 KiB of nops (0x01) and more: past kMaxZygoteCodeBytes.
  const std::string nops = std::string(1, '\0') + std::string(512u << 10, '\x01') + "\x0b";
  const std::string code = leb128(1) + leb128(nops.size()) + nops;
  CHECK_FALSE(can_instantiate_before_fork(kHeader + functions(1) + section(10, code), &why));
  CHECK(why == fmt::format("{} bytes of code", code.size()));
  // Element and global sections of 64 KiB and 64 KiB + 1: past 128 KiB together.
  const std::string elements = leb128(1) + std::string((64u << 10) - 1, '\0');
  const std::string globals = leb128(1) + std::string(64u << 10, '\0');
  CHECK_FALSE(
      can_instantiate_before_fork(kHeader + section(9, elements) + section(6, globals), &why));
  CHECK(why == fmt::format("{} bytes of declarations or more", (128u << 10) + 1));
  CHECK(can_instantiate_before_fork(kHeader + section(9, elements)));
  // A type of 1001 params; one of 1001 results.
  CHECK_FALSE(can_instantiate_before_fork(
      kHeader + section(1, "\x01\x60" + leb128(1001) + std::string(1001, '\x7f') + '\0'), &why));
  CHECK(why == "type 0 has 1001 params");
  CHECK_FALSE(can_instantiate_before_fork(
      kHeader +
          section(1, std::string("\x01\x60\x00", 3) + leb128(1001) + std::string(1001, '\x7f')),
      &why));
  CHECK(why == "type 0 has 1001 results");
  // A function of a type that is not there; bodies for functions not declared.
  CHECK_FALSE(can_instantiate_before_fork(kHeader + section(3, std::string("\x01\x00", 2)), &why));
  CHECK(why == "function 0 has no type");
  const std::string body = std::string("\x02\x00\x0b", 3);
  CHECK_FALSE(can_instantiate_before_fork(
      kHeader + functions(1) + section(10, "\x02" + body + body), &why));
  CHECK(why == "function and code sections of different lengths");
  CHECK(can_instantiate_before_fork(kHeader + functions(2) + section(10, "\x02" + body + body)));
  // A data segment's offset is a constant, else the loader would build whatever
  // instructions are there: 100 nested blocks where i32.const belongs.
  const std::string hello = std::string("\x00\x41\x10\x0b\x05hello", 10);
  CHECK(can_instantiate_before_fork(kHeader + section(11, "\x01" + hello)));
  const std::string passive = std::string("\x01\x02hi", 4);
  const std::string on_memory_0 = std::string("\x02\x00\x23\x00\x0b\x00", 6);  // global.get 0
  CHECK(can_instantiate_before_fork(kHeader + section(11, "\x02" + passive + on_memory_0)));
  std::string blocks = std::string(1, '\0');
  for (int i = 0; i < 100; ++i) blocks += "\x02\x40";
  blocks += std::string(101, '\x0b') + '\0';
  CHECK_FALSE(can_instantiate_before_fork(kHeader + section(11, "\x01" + blocks), &why));
  CHECK(why == "data segment 0 has an offset that is not a constant");
  CHECK_FALSE(
      can_instantiate_before_fork(kHeader + section(11, "\x01" + hello.substr(0, 8)), &why));
  CHECK(why == "data segment 0 is malformed");
  // Universal Wasm's AOT code: native code, never loaded there.
  CHECK_FALSE(can_instantiate_before_fork(kHeader + section(0, "\x08wasmedge\x01"), &why));
  CHECK(why == "native code (a \"wasmedge\" section)");
  CHECK(can_instantiate_before_fork(kHeader + section(0, "\x08wasmedgf\x01")));
}

// WasmEdge's loader sizes a vector from its count before reading an item: a count past
// its section's bytes, or past the bound, keeps the module out; so does a large file.
TEST_CASE("can_instantiate_before_fork: vector counts and the file's size", "[wasm][fork-ready]") {
  using shim_wasm::can_instantiate_before_fork;
  std::string why;
  // A global section claiming 1000 globals in 2 bytes.
  CHECK_FALSE(can_instantiate_before_fork(kHeader + section(6, leb128(1000)), &why));
  CHECK(why == "section 6 claims 1000 items");
  // 2^18 + 1 exports with the bytes to match (only the count is read).
  const std::string exports = leb128((1u << 18) + 1) + std::string(300000, '\0');
  CHECK_FALSE(can_instantiate_before_fork(kHeader + section(7, exports), &why));
  CHECK(why == "section 7 has 262145 items");
  // A custom section holds no vector: any bytes (a name claiming more than there is).
  CHECK(can_instantiate_before_fork(kHeader + section(0, leb128(100) + "names")));
  // Nor does the data count section (clang and Rust emit it with bulk memory).
  CHECK(can_instantiate_before_fork(kHeader + section(12, leb128(5))));
  // Past 4 MiB, whatever it holds.
  const std::string big = kHeader + section(0, leb128(1) + "x" + std::string(4u << 20, 'y'));
  CHECK_FALSE(can_instantiate_before_fork(big, &why));
  CHECK(why == fmt::format("a file of {} bytes", big.size()));
}

TEST_CASE("module payload: the module and the rootfs round trip", "[wasm][fork-ready]") {
  auto payload = shim_wasm::decode_module_payload(
      shim_wasm::encode_module_payload({"/app/m.wasm", "/run/x/rootfs"}));
  CHECK(payload.module == "/app/m.wasm");
  CHECK(payload.rootfs == "/run/x/rootfs");
  payload = shim_wasm::decode_module_payload("/m.wasm");  // the module alone
  CHECK(payload.module == "/m.wasm");
  CHECK(payload.rootfs.empty());
  // What encode_module_payload never makes names no file, rather than another one.
  using namespace std::string_literals;
  for (std::string_view odd : {"/etc/shadow\0/\0/run/x/rootfs"s, "m.wasm\0/rootfs"s,
                               "/m.wasm\0rootfs"s, "relative.wasm"s}) {
    payload = shim_wasm::decode_module_payload(odd);
    CHECK(payload.module.empty());
    CHECK(payload.rootfs.empty());
  }
}

}  // namespace
