// The shim's zygote: libshim-wasm-zygote (shim-wasm/zygote/main.cpp), a fork server
// (shim/process/fork_server.h) run on the engine's loader, which makes the processes of
// Wasm containers (fork_plan.h) from an engine it loaded once. Started when the runtime
// is made, so the engine loads while containerd is still creating the task; started
// again at the next spawn if it died.
//
// Which program: $LIBSHIM_WASM_ZYGOTE (a path; "off": none, every module runs through
// runc and the engine's CLI), else libshim-wasm-zygote beside the shim's executable.
//
// Threading: spawn() on pool threads, any number at once.
#pragma once

#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>

#include "engine.h"
#include "shim/process/fork_server.h"
#include "shim/service_context.h"

namespace shim_wasm {

// The environment variable naming the zygote program ("off" for none).
inline constexpr const char* kZygoteEnv = "LIBSHIM_WASM_ZYGOTE";

// The zygote program to use: $LIBSHIM_WASM_ZYGOTE, else libshim-wasm-zygote beside
// /proc/self/exe; "" when it is "off" or missing (*why says which).
std::string zygote_program(std::string* why);

class WasmZygote {
 public:
  // Finds the program (zygote_program()) and, when there is one and the engine is
  // usable, starts it on the context's pool.
  WasmZygote(shim::ServiceContext& context, const Engine& engine, bool engine_ok);

  // Why modules cannot go through the zygote ("" when they can).
  const std::string& unavailable() const { return why_; }
  // A held child from the zygote (ForkServer::spawn), starting it first if needed.
  shim::Status spawn(const shim::SpawnRequest& request, std::string_view payload,
                     shim::SpawnedProcess* child);

 private:
  // The running server, started if there is none or it exited. One caller starts it,
  // without holding mu_ across the fork and exec; the others wait for that one.
  shim::Status server(std::shared_ptr<shim::ForkServer>* out);
  // Starts a zygote and the relays of its lines (no lock held).
  shim::Status start_server(std::shared_ptr<shim::ForkServer>* out);

  shim::ServiceContext& context_;
  const Engine& engine_;
  std::string why_;  // before program_, which zygote_program() fills it with
  std::string program_;
  std::mutex mu_;
  std::condition_variable started_;
  bool starting_ = false;                     // guarded by mu_
  std::shared_ptr<shim::ForkServer> server_;  // guarded by mu_
};

}  // namespace shim_wasm
