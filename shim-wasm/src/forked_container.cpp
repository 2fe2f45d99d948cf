#include "forked_container.h"

#include <signal.h>

#include <chrono>
#include <thread>
#include <vector>

#include <fmt/format.h>
#include <boost/json/parse.hpp>

#include "module_payload.h"
#include "wasm_module.h"
#include "wasm_spec.h"

namespace shim_wasm {
namespace {

namespace json = boost::json;

shim::Status with_prefix(const shim::Status& s) {
  return s.ok() ? s : shim::Status(s.code(), fmt::format("wasm: {}", s.message()));
}

}  // namespace

ForkedContainer::ForkedContainer(shim::ServiceContext& context, WasmZygote& zygote,
                                 std::string rootfs)
    : context_(context), zygote_(zygote), rootfs_(std::move(rootfs)) {}

shim::Status ForkedContainer::launch(ForkPlan plan, std::uint32_t* pid) {
  if (shim::Status s = shim::ContainerCgroup::create({}, shim::host_cgroup_version(),
                                                     plan.cgroup_path, plan.resources, &cgroup_);
      !s.ok()) {
    return s.code() == shim::Code::kUnimplemented ? s : with_prefix(s);
  }
  shim::SpawnRequest& request = plan.spawn.request;
  request.cgroup_procs = cgroup_.procs_files();
  shim::Status status =
      zygote_.spawn(request, encode_module_payload({request.path, rootfs_}), &init_);
  if (status.ok()) status = plan.spawn.send_console();
  if (!status.ok()) {
    init_ = shim::SpawnedProcess();   // a held child ends when its gate closes
    cgroup_.remove().ignore_error();  // the error to report is the spawn's
    return shim::Status(
        status.code() == shim::Code::kUnimplemented ? shim::Code::kUnknown : status.code(),
        fmt::format("wasm: {}", status.message()));
  }
  *pid = static_cast<std::uint32_t>(init_.pid);
  return {};
}

shim::Status ForkedContainer::create(const shim::ProcessStdio&, std::uint32_t*) {
  return shim::Status(shim::Code::kInternal, "wasm: a forked container is made by launch()");
}

shim::Status ForkedContainer::start(std::uint32_t* pid) {
  *pid = static_cast<std::uint32_t>(init_.pid);
  return with_prefix(init_.gate.release());
}

shim::Status ForkedContainer::pause() {
  paused_ = true;
  shim::Status status = cgroup_.freeze();
  if (!status.ok()) cgroup_.thaw().ignore_error();  // the freeze's error is what matters
  paused_ = status.ok();
  return with_prefix(status);
}

shim::Status ForkedContainer::resume() {
  shim::Status status = cgroup_.thaw();
  if (status.ok()) paused_ = false;
  return with_prefix(status);
}

shim::Status ForkedContainer::exec(const shim::ExecConfig& exec, std::uint32_t* pid) {
  if (paused_) {
    // runc's text (libcontainer's container_linux.go).
    return shim::Status(shim::Code::kFailedPrecondition, "cannot exec in a paused container");
  }
  json::error_code ec;
  json::value process = json::parse(exec.spec, ec);
  if (ec || !process.is_object()) {
    return shim::Status(
        shim::Code::kInvalidArgument,
        fmt::format("wasm: exec {}: the process is not a JSON object", exec.exec_id));
  }
  Entrypoint entry;
  if (shim::Status s = classify(process.get_object(), rootfs_, &entry); !s.ok())
    return with_prefix(s);
  // As at Create: a bad module gets its reason here, not exit 134 after Start. Read
  // through the init's root, which holds the spec's mounts (a volume), not the rootfs
  // dir; the init is the shim's child, so its pid is its own until reaped.
  if (entry.wasm) {
    const std::string root = fmt::format("/proc/{}/root", init_.pid);
    if (shim::Status s = check_module_in_rootfs(root, entry.path); !s.ok()) return with_prefix(s);
  }
  shim::oci::ProcessSpawn spawn;
  if (shim::Status s = plan_exec(process.get_object(), rootfs_, entry, exec.stdio,
                                 init_.handle.pidfd(), cgroup_.procs_files(), &spawn);
      !s.ok()) {
    return s;
  }
  shim::SpawnedProcess child;
  shim::Status status;
  if (entry.wasm) {
    status = zygote_.spawn(spawn.request, encode_module_payload({entry.path, rootfs_}), &child);
    if (status.ok()) status = spawn.send_console();
    if (status.ok()) status = child.gate.release();
  } else {
    status = context_.spawner.spawn(spawn.request, &child);
    if (status.ok()) status = spawn.send_console();
  }
  if (!status.ok()) return with_prefix(status);
  *pid = static_cast<std::uint32_t>(child.pid);
  return {};
}

shim::Status ForkedContainer::remove() {
  if (init_.gate.valid()) {
    // Never started: it ends without running anything once its gate closes; SIGKILL
    // makes sure before the cgroup goes.
    init_.handle.signal(SIGKILL).ignore_error();  // gone already: fine
    init_.gate = shim::ProcessGate();
  }
  // What is left in the cgroup (execs, when the pid namespace is shared and the init's
  // death did not end them) dies with it, as runc's destroy does: thawed first, since a
  // frozen process never gets its SIGKILL.
  if (paused_) cgroup_.thaw().ignore_error();  // the kill below is what matters
  for (int round = 0; round < 100; ++round) {
    std::vector<std::uint32_t> pids;
    if (!shim::read_cgroup_pids(cgroup_.paths(), &pids).ok() || pids.empty()) break;
    for (std::uint32_t p : pids) ::kill(static_cast<pid_t>(p), SIGKILL);
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return with_prefix(cgroup_.remove());
}

shim::Status ForkedContainer::update(std::string_view resources_json) {
  json::error_code ec;
  json::value resources = json::parse(resources_json, ec);
  if (ec || !resources.is_object()) {
    return shim::Status(shim::Code::kInvalidArgument,
                        "wasm: update: resources are not a JSON object");
  }
  return with_prefix(cgroup_.update(resources.get_object()));
}

shim::Status ForkedContainer::checkpoint(const shim::CheckpointConfig&) {
  return shim::Status(shim::Code::kUnimplemented,
                      "wasm: checkpoint of a WebAssembly container is not supported");
}

}  // namespace shim_wasm
