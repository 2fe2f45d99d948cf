#include "wasm_zygote.h"

#include <unistd.h>

#include <cstdlib>
#include <filesystem>

#include <fmt/format.h>

#include "module_payload.h"
#include "shim/logger.h"
#include "shim/process/work_pool.h"
#include "stderr_relay.h"

namespace shim_wasm {

std::string zygote_program(std::string* why) {
  namespace fs = std::filesystem;
  std::string program;
  if (const char* env = std::getenv(kZygoteEnv); env != nullptr && *env != '\0') {
    if (std::string_view(env) == "off") {
      *why = fmt::format("{}=off", kZygoteEnv);
      return "";
    }
    program = env;
  } else {
    std::error_code ec;
    program =
        (fs::read_symlink("/proc/self/exe", ec).parent_path() / "libshim-wasm-zygote").string();
  }
  if (::access(program.c_str(), X_OK) != 0) {
    *why = fmt::format("no zygote program at {}", program);
    return "";
  }
  why->clear();
  return program;
}

WasmZygote::WasmZygote(shim::ServiceContext& context, const Engine& engine, bool engine_ok)
    : context_(context), engine_(engine), program_(zygote_program(&why_)) {
  if (!engine_ok && why_.empty()) why_ = "the engine is not usable";
  if (!why_.empty()) {
    context_.logger.info("wasm zygote off: modules run through runc", {{"reason", why_}});
    return;
  }
  // Loading the engine takes tens of milliseconds: start now, off the event loop.
  context_.pool.post([this] {
    std::shared_ptr<shim::ForkServer> server;
    if (shim::Status s = this->server(&server); !s.ok()) {
      context_.logger.warn("wasm zygote did not start", {{"error", s.message()}});
    }
  });
}

shim::Status WasmZygote::server(std::shared_ptr<shim::ForkServer>* out) {
  std::unique_lock lock(mu_);
  started_.wait(lock, [this] { return !starting_; });
  if (server_ != nullptr && !server_->exited()) {
    *out = server_;
    return {};
  }
  starting_ = true;
  lock.unlock();
  std::shared_ptr<shim::ForkServer> started;
  shim::Status status;
  try {
    status = start_server(&started);
  } catch (...) {
    status = shim::Status(shim::Code::kUnknown, "wasm: start the zygote: an exception");
  }
  lock.lock();
  starting_ = false;  // whatever happened: the waiters must not wait for ever
  if (status.ok()) server_ = started;
  lock.unlock();
  started_.notify_all();
  *out = std::move(started);
  return status;
}

shim::Status WasmZygote::start_server(std::shared_ptr<shim::ForkServer>* out) {
  shim::SpawnRequest request;
  request.argv = engine_.zygote_command(program_);
  request.path = request.argv.front();
  // What it says goes to the shim's log, wherever that is by then (stderr_relay.h): its
  // own lines on kZygoteLogFd, the engine's on its stderr.
  shim::UniqueFd said, own;
  if (shim::Status s =
          start_stderr_relay(context_.executor, context_.logger, RelayedLines::kSaid, &said);
      !s.ok())
    return s;
  if (shim::Status s =
          start_stderr_relay(context_.executor, context_.logger, RelayedLines::kStructured, &own);
      !s.ok())
    return s;
  request.fds.emplace_back(2, said.get());
  request.fds.emplace_back(kZygoteLogFd, own.get());
  std::unique_ptr<shim::ForkServer> started;
  if (shim::Status s =
          shim::ForkServer::start(context_.reaper, context_.spawner, request, &started);
      !s.ok()) {
    return shim::Status(s.code(),
                        fmt::format("wasm: start the zygote {}: {}", program_, s.message()));
  }
  context_.logger.info("wasm zygote started", {{"pid", std::to_string(started->pid())}});
  *out = std::move(started);
  return {};
}

shim::Status WasmZygote::spawn(const shim::SpawnRequest& request, std::string_view payload,
                               shim::SpawnedProcess* child) {
  for (int attempt = 0;; ++attempt) {
    std::shared_ptr<shim::ForkServer> server;
    if (shim::Status s = this->server(&server); !s.ok()) return s;
    shim::Status s = server->spawn(request, payload, child);
    // A zygote that died since (or could not start its loop) is started once more.
    if (s.code() != shim::Code::kUnavailable || attempt > 0) return s;
    context_.logger.warn("wasm zygote gone, starting another", {{"error", s.message()}});
    std::lock_guard lock(mu_);
    if (server_ == server) server_.reset();  // one that hangs is killed with its last user
  }
}

}  // namespace shim_wasm
