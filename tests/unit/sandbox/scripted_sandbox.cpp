#include "unit/sandbox/scripted_sandbox.h"

#include <chrono>
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <thread>

#include <fmt/format.h>

namespace shim::test {

using namespace std::chrono_literals;
namespace task = containerd::task::v2;

std::vector<std::string> SandboxScript::recorded() {
  std::lock_guard lock(mu);
  return calls;
}

void SandboxScript::hold(const std::string& method) {
  std::lock_guard lock(mu);
  held_.insert(method);
}

void SandboxScript::release(const std::string& method) {
  std::lock_guard lock(mu);
  held_.erase(method);
  cv.notify_all();
}

void SandboxScript::release_all() {
  std::lock_guard lock(mu);
  held_.clear();
  cv.notify_all();
}

bool SandboxScript::wait_until_held(const std::string& method) {
  std::unique_lock lock(mu);
  return cv.wait_for(lock, 5s, [&] { return waiting_.contains(method); });
}

Status SandboxScript::enter(const std::string& method, const std::string& call) {
  std::unique_lock lock(mu);
  calls.push_back(call);
  if (held_.contains(method)) {
    auto it = waiting_.insert(method);
    cv.notify_all();
    cv.wait(lock, [&] { return !held_.contains(method); });
    waiting_.erase(it);
  }
  if (throws.contains(method)) throw std::runtime_error("boom in " + method);
  auto it = fails.find(method);
  return it == fails.end() ? Status() : it->second;
}

Status ScriptedSandbox::start(SandboxStarted* started) {
  if (Status s = script_.enter("start", "start"); !s.ok()) return s;
  std::lock_guard lock(script_.mu);
  started->pid = script_.pid;
  started->spec = script_.spec;
  return {};
}

Status ScriptedSandbox::stop(std::chrono::seconds timeout, std::uint32_t* exit_status) {
  if (Status s = script_.enter("stop", fmt::format("stop {}", timeout.count())); !s.ok()) return s;
  std::lock_guard lock(script_.mu);
  *exit_status = script_.stop_status;
  return {};
}

Status ScriptedSandbox::shutdown() { return script_.enter("shutdown", "shutdown"); }

Status ScriptedSandbox::platform(containerd::types::Platform* platform) const {
  if (Status s = script_.enter("platform", "platform"); !s.ok()) return s;
  bool implemented = false;
  {
    std::lock_guard lock(script_.mu);
    implemented = script_.platform_implemented;
  }
  if (!implemented) return Sandbox::platform(platform);
  platform->set_os("plan9");
  platform->set_architecture("mips");
  return {};
}

Status ScriptedSandbox::metrics(containerd::types::Metric* metric) {
  if (Status s = script_.enter("metrics", "metrics"); !s.ok()) return s;
  std::lock_guard lock(script_.mu);
  if (!script_.metrics_implemented) return Sandbox::metrics(metric);
  metric->set_id(script_.metrics_id);
  metric->mutable_data()->set_type_url("io.containerd.cgroups.v2.Metrics");
  metric->mutable_data()->set_value("scripted");
  return {};
}

Status ScriptedSandbox::details(boost::json::object* info) const {
  if (Status s = script_.enter("details", "details"); !s.ok()) return s;
  std::lock_guard lock(script_.mu);
  *info = script_.details;
  return {};
}

Status ScriptedSandboxRuntime::create(const SandboxConfig& config, SandboxEvents& events,
                                      std::unique_ptr<Sandbox>* sandbox) {
  Status entered = script_.enter("create", "create " + config.id);
  std::lock_guard lock(script_.mu);
  script_.config = config;
  script_.events = &events;
  if (entered.ok() || script_.create_leaves_sandbox) {
    *sandbox = std::make_unique<ScriptedSandbox>(script_);
  }
  return entered;
}

Pod::Pod() {
  context = std::make_unique<ServiceContext>(
      ServiceContext{io.executor(), reaper, publisher, clock, spawner, pool, logger,
                     shutdown_control, ShimIdentity{"ns", "sb1", dir.path(), "", "", false}});
  tasks = std::make_unique<RuntimeTaskService>(*context,
                                               std::make_unique<ScriptedRuntime>(task_script));
  sandboxes =
      std::make_unique<SandboxService>(*context, std::make_unique<ScriptedSandboxRuntime>(script));
  ttrpc::Router router;
  register_task_service(router, *tasks);
  register_sandbox_service(router, *sandboxes);
  server = std::make_unique<ttrpc::TtrpcServer>(io.executor(), std::move(router));
  REQUIRE(server->serve_path(dir.sub("pod.sock")).ok());
  client = std::make_unique<SyncClient>(dir.sub("pod.sock"));
}

Pod::~Pod() {
  script.release_all();  // a failed test may leave a pool thread in a hold
  task_script.release_all();
  client.reset();
  pool.stop();  // the pool's last results reach the loop before the services go
  io.run([this] { server->close(); });
  io.run([this] {
    sandboxes.reset();
    tasks.reset();
  });
}

CallResult Pod::create(const std::string& id) {
  sandbox_api::CreateSandboxRequest request;
  request.set_sandbox_id(id);
  request.set_bundle_path(dir.sub(id));
  return call<sandbox_api::CreateSandboxResponse>("CreateSandbox", request);
}

CallResult Pod::start(const std::string& id, sandbox_api::StartSandboxResponse* response) {
  sandbox_api::StartSandboxRequest request;
  request.set_sandbox_id(id);
  sandbox_api::StartSandboxResponse ignored;
  return call("StartSandbox", request, response != nullptr ? response : &ignored);
}

CallResult Pod::stop(const std::string& id, std::uint32_t timeout_secs) {
  sandbox_api::StopSandboxRequest request;
  request.set_sandbox_id(id);
  request.set_timeout_secs(timeout_secs);
  return call<sandbox_api::StopSandboxResponse>("StopSandbox", request);
}

CallResult Pod::shutdown(const std::string& id) {
  sandbox_api::ShutdownSandboxRequest request;
  request.set_sandbox_id(id);
  CallResult result = call<sandbox_api::ShutdownSandboxResponse>("ShutdownSandbox", request);
  settle();  // the handler asks the shim to end after its reply went out
  return result;
}

CallResult Pod::ping(const std::string& id) {
  sandbox_api::PingRequest request;
  request.set_sandbox_id(id);
  return call<sandbox_api::PingResponse>("PingSandbox", request);
}

sandbox_api::SandboxStatusResponse Pod::status(const std::string& id, bool verbose) {
  sandbox_api::SandboxStatusRequest request;
  request.set_sandbox_id(id);
  request.set_verbose(verbose);
  sandbox_api::SandboxStatusResponse response;
  CallResult result = call("SandboxStatus", request, &response);
  INFO(result.status.to_string());
  REQUIRE(result.status.ok());
  return response;
}

std::future<CallResult> Pod::wait_async(const std::string& id) {
  sandbox_api::WaitSandboxRequest request;
  request.set_sandbox_id(id);
  return call_async("WaitSandbox", request);
}

CallResult Pod::task_shutdown() {
  CallResult result = client->call("containerd.task.v3.Task", "Shutdown",
                                   task::ShutdownRequest().SerializeAsString());
  settle();
  return result;
}

CallResult Pod::create_task(const std::string& id) {
  std::string bundle = dir.sub("task-" + id);
  std::filesystem::create_directories(bundle);
  std::ofstream(bundle + "/config.json") << kPrivatePidSpec;
  task::CreateTaskRequest request;
  request.set_id(id);
  request.set_bundle(bundle);
  return client->call("containerd.task.v3.Task", "Create", request.SerializeAsString());
}

void Pod::run_task_to_deletion(const std::string& id) {
  REQUIRE(create_task(id).status.ok());
  task::StartRequest start;
  start.set_id(id);
  REQUIRE(client->call("containerd.task.v3.Task", "Start", start.SerializeAsString()).status.ok());
  reaper.exit(4000 + static_cast<int>(id.size()), 0);  // ScriptedRuntime's init pid
  task::WaitRequest wait;
  wait.set_id(id);
  REQUIRE(client->call("containerd.task.v3.Task", "Wait", wait.SerializeAsString()).status.ok());
  task::DeleteRequest remove;
  remove.set_id(id);
  REQUIRE(
      client->call("containerd.task.v3.Task", "Delete", remove.SerializeAsString()).status.ok());
}

}  // namespace shim::test
