// shim-wasm/src/fork_ready.h: which module bytes the zygote may instantiate before the
// fork. A start section (the module's own code, run at instantiation) must never run
// there, however the sections around it are laid out.
#include <string>

#include <catch2/catch.hpp>

#include "fork_ready.h"
#include "module_payload.h"

namespace {

const std::string kHeader("\0asm\x01\0\0\0", 8);

// A section: its id, its size (one LEB128 byte: < 128), its payload.
std::string section(char id, const std::string& payload) {
  return std::string(1, id) + static_cast<char>(payload.size()) + payload;
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

TEST_CASE("module payload: the module and the rootfs round trip", "[wasm][fork-ready]") {
  auto payload = shim_wasm::decode_module_payload(
      shim_wasm::encode_module_payload({"/app/m.wasm", "/run/x/rootfs"}));
  CHECK(payload.module == "/app/m.wasm");
  CHECK(payload.rootfs == "/run/x/rootfs");
  payload = shim_wasm::decode_module_payload("/m.wasm");  // the module alone
  CHECK(payload.module == "/m.wasm");
  CHECK(payload.rootfs.empty());
}

}  // namespace
