// find_engine and engine_root on fake engine roots in a temp dir.
#include <stdlib.h>

#include <filesystem>

#include <catch2/catch.hpp>

#include "engine.h"
#include "shim/fs.h"
#include "support/temp_dir.h"

namespace {

void touch(const std::string& path) {
  std::filesystem::create_directories(std::filesystem::path(path).parent_path());
  REQUIRE(shim::write_file(path, "", 0755).ok());
}

}  // namespace

TEST_CASE("find_engine finds the CLI, the loader and the libraries", "[wasm]") {
  shim::test::TempDir root;
  shim_wasm::Engine engine;
  shim::Status none = shim_wasm::find_engine(root.path(), &engine);
  CHECK(none.code() == shim::Code::kFailedPrecondition);
  CHECK(none.message() == "the WasmEdge engine is not usable at " + root.path() +
                              ": no usr/bin/wasmedge (set LIBSHIM_WASMEDGE_ROOT to the root whose "
                              "usr/ holds it, or run cmake/fetch-wasmedge.sh)");
  touch(root.path() + "/usr/bin/wasmedge");
  CHECK(shim_wasm::find_engine(root.path(), &engine).message().find("no ELF loader") !=
        std::string::npos);
  touch(root.path() + "/usr/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2");
  CHECK(shim_wasm::find_engine(root.path(), &engine).message().find("no libwasmedge.so") !=
        std::string::npos);
  touch(root.path() + "/usr/lib/x86_64-linux-gnu/libwasmedge.so.0");
  REQUIRE(shim_wasm::find_engine(root.path(), &engine).ok());
  CHECK(engine.loader == "lib/x86_64-linux-gnu/ld-linux-x86-64.so.2");
  CHECK(engine.library_dirs == std::vector<std::string>{"lib/x86_64-linux-gnu"});
  CHECK(engine.host_command({"--version"}) ==
        std::vector<std::string>{root.path() + "/usr/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2",
                                 "--inhibit-cache", "--library-path",
                                 root.path() + "/usr/lib/x86_64-linux-gnu",
                                 root.path() + "/usr/bin/wasmedge", "--version"});
}

TEST_CASE("engine_root: the environment, then the build's root if it holds the engine, then /",
          "[wasm]") {
  shim::test::TempDir root;
  const char* saved = ::getenv(shim_wasm::kEngineRootEnv);
  std::string saved_value = saved ? saved : "";
  ::unsetenv(shim_wasm::kEngineRootEnv);
  CHECK(shim_wasm::engine_root(root.path()) == "/");
  touch(root.path() + "/usr/bin/wasmedge");
  CHECK(shim_wasm::engine_root(root.path()) == root.path());
  ::setenv(shim_wasm::kEngineRootEnv, "/opt/wasmedge", 1);
  CHECK(shim_wasm::engine_root(root.path()) == "/opt/wasmedge");
  if (saved) {
    ::setenv(shim_wasm::kEngineRootEnv, saved_value.c_str(), 1);
  } else {
    ::unsetenv(shim_wasm::kEngineRootEnv);
  }
}
