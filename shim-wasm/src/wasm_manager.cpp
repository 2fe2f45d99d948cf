#include "wasm_manager.h"

#include <cerrno>
#include <cstdlib>
#include <stdexcept>

#include <fmt/format.h>

#include "engine.h"
#include "shim/process/run_command.h"
#include "wasm_runtime.h"

namespace shim_wasm {
namespace {

// "wasmedge <version>" from `wasmedge --version`'s first line ("<argv0> version 0.17.1").
std::string engine_version(const shim::ActionContext& context, const Engine& engine) {
  shim::SpawnRequest request;
  request.argv = engine.host_command({"--version"});
  request.path = request.argv.front();
  shim::CaptureResult result;
  shim::CaptureOptions options;
  options.err = shim::OutputRoute::kSameAsStdout;
  options.timeout = std::chrono::seconds(10);
  shim::Status s =
      shim::run_and_capture(context.reaper, context.spawner, request, options, &result);
  if (!s.ok()) return fmt::format("unknown ({})", s.message());
  std::string line = result.out.substr(0, result.out.find('\n'));
  if (result.exit.status != 0) return fmt::format("unknown (--version: {})", line);
  if (auto at = line.find(" version "); at != std::string::npos) {
    return "wasmedge " + line.substr(at + 9);
  }
  return fmt::format("unknown (--version: {})", line);
}

// kShimLingerEnv: seconds, a decimal number from 0 to a day.
std::chrono::milliseconds shim_linger() {
  const char* text = std::getenv(kShimLingerEnv);
  if (text == nullptr || *text == '\0') return std::chrono::seconds(10);
  char* end = nullptr;
  errno = 0;
  double seconds = std::strtod(text, &end);
  if (errno != 0 || *end != '\0' || !(seconds >= 0 && seconds <= 86400)) {
    throw std::invalid_argument(
        fmt::format("{}={:?} is not a number of seconds from 0 to 86400", kShimLingerEnv, text));
  }
  return std::chrono::milliseconds(static_cast<std::int64_t>(seconds * 1000));
}

}  // namespace

shim::DaemonOptions WasmManager::daemon_options(const shim::StartContext& context) const {
  shim::DaemonOptions options = CliManager::daemon_options(context);
  const char* sharing = std::getenv(kSharedShimEnv);
  std::string_view mode = sharing != nullptr && *sharing != '\0' ? sharing : "namespace";
  if (mode == "off") return options;
  if (mode != "namespace") {
    throw std::invalid_argument(
        fmt::format("{}={:?}: the choices are \"namespace\" and \"off\"", kSharedShimEnv, mode));
  }
  options.shared_group = kSharedGroup;
  options.shared_linger = shim_linger();
  return options;
}

shim::Status WasmManager::info(const shim::ActionContext& context,
                               const std::optional<shim::pb::Any>& options,
                               containerd::types::RuntimeInfo* info) const {
  if (shim::Status s = CliManager::info(context, options, info); !s.ok()) return s;
  Engine engine;
  std::string root = engine_root(build_engine_root_);
  shim::Status found = find_engine(root, &engine);
  auto& annotations = *info->mutable_annotations();
  annotations[kEngineRootAnnotation] = root;
  annotations[kEngineAnnotation] =
      found.ok() ? engine_version(context, engine) : fmt::format("none ({})", found.message());
  return {};
}

std::unique_ptr<shim::Runtime> WasmManager::create_runtime(shim::ServiceContext& context) {
  Engine engine;
  std::string root = engine_root(build_engine_root_);
  shim::Status found = find_engine(root, &engine);
  if (found.ok()) {
    context.logger.info("wasm engine", {{"root", root}, {"loader", engine.loader}});
  } else {
    context.logger.warn("wasm engine not usable", {{"error", found.message()}});
  }
  return std::make_unique<WasmRuntime>(context, std::move(engine), std::move(found));
}

}  // namespace shim_wasm
