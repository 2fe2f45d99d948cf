#include "unit/task/scripted_tier.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <stdexcept>

#include <fmt/format.h>

namespace shim::test {

using namespace std::chrono_literals;
namespace task = containerd::task::v2;

Subscription FakeReaper::subscribe(ExitCallback callback) {
  callback_ = std::move(callback);
  return Subscription([this] { callback_ = nullptr; });
}

Subscription FakeReaper::subscribe(boost::asio::any_io_executor, ExitCallback callback) {
  return subscribe(std::move(callback));
}

Status FakeReaper::spawn_claimed(Spawner&, const SpawnRequest&, ClaimedProcess*) {
  return not_implemented("spawn_claimed");
}

void FakeReaper::exit(int pid, int status) {
  boost::asio::post(loop_, [this, pid, status] {
    if (callback_) callback_(ProcessExit{pid, status, std::chrono::system_clock::now()});
  });
}

void Script::record(std::string call) {
  std::lock_guard lock(mu);
  calls.push_back(std::move(call));
  cv.notify_all();
}

bool Script::wait_for_call(const std::string& call) {
  std::unique_lock lock(mu);
  return cv.wait_for(lock, 5s,
                     [&] { return std::find(calls.begin(), calls.end(), call) != calls.end(); });
}

void Script::release_kill() {
  std::lock_guard lock(mu);
  hold_kill = false;
  cv.notify_all();
}

void Script::release_create() {
  std::lock_guard lock(mu);
  hold_create = false;
  cv.notify_all();
}

void Script::maybe_throw(const std::string& method) {
  bool throws_now = false;
  {
    std::lock_guard lock(mu);
    throws_now = throws.contains(method);
  }
  if (throws_now) throw std::runtime_error("boom in " + method);
}

void Script::stop_throwing(const std::string& method) {
  std::lock_guard lock(mu);
  throws.erase(method);
}

std::vector<std::string> Script::recorded() {
  std::lock_guard lock(mu);
  return calls;
}

void Script::hold(const std::string& hold) {
  std::lock_guard lock(mu);
  held_.insert(hold);
}

bool Script::wait_until_held(const std::string& hold) {
  std::unique_lock lock(mu);
  return cv.wait_for(lock, 5s, [&] { return waiting_.contains(hold); });
}

void Script::release(const std::string& hold) {
  std::lock_guard lock(mu);
  held_.erase(hold);
  cv.notify_all();
}

void Script::release_all() {
  std::lock_guard lock(mu);
  held_.clear();
  hold_kill = false;
  hold_create = false;
  cv.notify_all();
}

Status Script::enter(const std::string& method, const std::string& id) {
  {
    std::unique_lock lock(mu);
    for (const std::string& hold : {method, method + " " + id}) {
      if (!held_.contains(hold)) continue;
      auto it = waiting_.insert(hold);
      cv.notify_all();
      cv.wait(lock, [&] { return !held_.contains(hold); });
      waiting_.erase(it);
    }
  }
  maybe_throw(method);
  std::lock_guard lock(mu);
  auto it = fails.find(method);
  return it == fails.end() ? Status() : it->second;
}

namespace {

// A dup of `fd` (-1 stays -1), kept as the process would keep its stdin.
UniqueFd dup_of(int fd) { return UniqueFd(fd < 0 ? -1 : ::fcntl(fd, F_DUPFD_CLOEXEC, 0)); }

}  // namespace

StdioOwner ScriptedInstance::stdio_owner() const {
  script_.maybe_throw("stdio_owner");
  return {};
}

Status ScriptedInstance::create(const ProcessStdio& stdio, std::uint32_t* pid) {
  if (Status s = script_.enter("create", id_); !s.ok()) return s;
  {
    std::unique_lock lock(script_.mu);
    if (script_.hold_create) {
      script_.calls.push_back("create held");
      script_.cv.notify_all();
      script_.cv.wait(lock, [&] { return !script_.hold_create; });
    }
  }
  *pid = pid_;
  // On a pool thread, so no Catch2 assertion here: the test checks what arrives.
  if (!script_.output.empty() && stdio.stdout >= 0) {
    [[maybe_unused]] ssize_t n =
        ::write(stdio.stdout, script_.output.data(), script_.output.size());
  }
  {
    std::lock_guard lock(script_.mu);
    if (auto it = script_.pids.find(id_); it != script_.pids.end()) *pid = it->second;
    script_.stdin_of[id_] = dup_of(stdio.stdin);
  }
  script_.record("create");
  return {};
}

Status ScriptedInstance::start(std::uint32_t*) {
  if (Status s = script_.enter("start", id_); !s.ok()) return s;
  script_.record("start");
  return {};
}

Status ScriptedInstance::exec(const ExecConfig& exec, std::uint32_t* pid) {
  if (Status s = script_.enter("exec", id_); !s.ok()) return s;
  *pid = pid_ + 1;
  {
    std::lock_guard lock(script_.mu);
    if (auto it = script_.pids.find(exec.exec_id); it != script_.pids.end()) *pid = it->second;
    script_.stdin_of[exec.exec_id] = dup_of(exec.stdio.stdin);
  }
  script_.record("exec " + exec.exec_id);
  return {};
}

Status ScriptedInstance::delete_exec(const std::string& exec_id) {
  script_.record("delete_exec " + exec_id);
  script_.maybe_throw("delete_exec");
  return {};
}

Status ScriptedInstance::kill(int signal, bool all) {
  if (Status s = script_.enter("kill", id_); !s.ok()) return s;
  if (!script_.kill_override) return Instance::kill(signal, all);
  std::unique_lock lock(script_.mu);
  script_.cv.wait(lock, [&] { return !script_.hold_kill; });
  script_.calls.push_back(fmt::format("kill {}{}", signal, all ? " all" : ""));
  script_.cv.notify_all();
  return {};
}

ExitSource ScriptedInstance::exit_source() const {
  return instance_exits_ ? ExitSource::kInstance : ExitSource::kReaper;
}

Status ScriptedInstance::kill_exec(const std::string& exec_id, int signal) {
  if (!instance_exits_) return Instance::kill_exec(exec_id, signal);
  script_.record(fmt::format("kill_exec {} {}", exec_id, signal));
  return {};
}

Status ScriptedInstance::remove() {
  if (Status s = script_.enter("remove", id_); !s.ok()) return s;
  script_.record("remove");
  return {};
}

namespace {

bool implements(Script& script, const std::string& method) {
  std::lock_guard lock(script.mu);
  return script.implemented.contains(method);
}

}  // namespace

Status ScriptedInstance::pause() {
  if (Status s = script_.enter("pause", id_); !s.ok()) return s;
  if (!script_.pause_resume) return Instance::pause();
  script_.record("pause");
  return {};
}

Status ScriptedInstance::resume() {
  if (Status s = script_.enter("resume", id_); !s.ok()) return s;
  if (!script_.pause_resume) return Instance::resume();
  script_.record("resume");
  return {};
}

Status ScriptedInstance::update(std::string_view resources_json) {
  if (Status s = script_.enter("update", id_); !s.ok()) return s;
  if (!implements(script_, "update")) return Instance::update(resources_json);
  script_.record(fmt::format("update {}", resources_json));
  return {};
}

Status ScriptedInstance::checkpoint(const CheckpointConfig& config) {
  if (Status s = script_.enter("checkpoint", id_); !s.ok()) return s;
  if (!implements(script_, "checkpoint")) return Instance::checkpoint(config);
  script_.record("checkpoint " + config.path);
  return {};
}

Status ScriptedInstance::stats(pb::Any* metrics) {
  if (Status s = script_.enter("stats", id_); !s.ok()) return s;
  if (!implements(script_, "stats")) return Instance::stats(metrics);
  metrics->set_type_url("scripted.Metrics");
  metrics->set_value(id_);
  script_.record("stats");
  return {};
}

Status ScriptedInstance::pids(std::vector<std::uint32_t>* pids) {
  if (Status s = script_.enter("pids", id_); !s.ok()) return s;
  if (!implements(script_, "pids")) return Instance::pids(pids);
  {
    std::lock_guard lock(script_.mu);
    *pids = script_.pid_list;
  }
  script_.record("pids");
  return {};
}

Status ScriptedRuntime::open(const ContainerConfig& config, std::unique_ptr<Instance>* instance) {
  script_.maybe_throw("open");
  if (config.id == "refused") return invalid_argument("refused by the runtime");
  {
    std::lock_guard lock(script_.mu);
    script_.events_of[config.id] = config.events;
  }
  *instance = std::make_unique<ScriptedInstance>(
      script_, config.id, 4000 + static_cast<std::uint32_t>(config.id.size()));
  return {};
}

Status ScriptedInstance::save_for_upgrade(boost::json::object* state) {
  (*state)["pid"] = pid_;
  return {};
}

Status ScriptedRuntime::reopen(const ContainerConfig& config, const boost::json::object& saved,
                               std::unique_ptr<Instance>* instance) {
  const boost::json::value* pid = saved.if_contains("pid");
  if (pid == nullptr || !pid->is_number()) return invalid_argument("no pid saved");
  *instance =
      std::make_unique<ScriptedInstance>(script_, config.id, pid->to_number<std::uint32_t>());
  return {};
}

Tier::Tier(std::unique_ptr<Runtime> runtime) {
  if (runtime == nullptr) runtime = std::make_unique<ScriptedRuntime>(script);
  context = std::make_unique<ServiceContext>(
      ServiceContext{io.executor(), reaper, publisher, clock, spawner, pool, logger,
                     shutdown_control, ShimIdentity{"ns", "t", dir.path(), "", "", false}});
  service = std::make_unique<RuntimeTaskService>(*context, std::move(runtime));
  ttrpc::Router router;
  register_task_service(router, *service);
  server = std::make_unique<ttrpc::TtrpcServer>(io.executor(), std::move(router));
  REQUIRE(server->serve_path(dir.sub("task.sock")).ok());
  client = std::make_unique<SyncClient>(dir.sub("task.sock"));
}

Tier::~Tier() {
  script.release_all();  // a failed test may leave a pool thread in a hold
  client.reset();
  // The pool's last results reach the loop before the service goes.
  pool.stop();
  io.run([this] { server->close(); });
  io.run([this] { service.reset(); });
}

std::string Tier::bundle(const std::string& id, const std::string& spec) {
  std::string path = dir.sub(id);
  std::filesystem::create_directories(path);
  std::ofstream(path + "/config.json") << spec;
  return path;
}

CallResult Tier::create(const std::string& id, const std::string& spec,
                        const std::string& stdout_path) {
  task::CreateTaskRequest request;
  request.set_id(id);
  request.set_bundle(bundle(id, spec));
  request.set_stdout(stdout_path);
  task::CreateTaskResponse response;
  return call("Create", request, &response);
}

CallResult Tier::start(const std::string& id, const std::string& exec_id) {
  task::StartRequest request;
  request.set_id(id);
  request.set_exec_id(exec_id);
  task::StartResponse response;
  return call("Start", request, &response);
}

CallResult Tier::pause(const std::string& id) {
  task::PauseRequest request;
  request.set_id(id);
  return call<pb::Empty>("Pause", request);
}

CallResult Tier::resume(const std::string& id) {
  task::ResumeRequest request;
  request.set_id(id);
  return call<pb::Empty>("Resume", request);
}

CallResult Tier::kill(const std::string& id, int signal, bool all, const std::string& exec_id) {
  task::KillRequest request;
  request.set_id(id);
  request.set_exec_id(exec_id);
  request.set_signal(static_cast<std::uint32_t>(signal));
  request.set_all(all);
  return call<pb::Empty>("Kill", request);
}

CallResult Tier::remove(const std::string& id, const std::string& exec_id) {
  task::DeleteRequest request;
  request.set_id(id);
  request.set_exec_id(exec_id);
  task::DeleteResponse response;
  return call("Delete", request, &response);
}

CallResult Tier::exec(const std::string& id, const std::string& exec_id) {
  task::ExecProcessRequest request;
  request.set_id(id);
  request.set_exec_id(exec_id);
  request.mutable_spec()->set_value(R"({"args":["true"],"cwd":"/"})");
  return call<pb::Empty>("Exec", request);
}

CallResult Tier::shutdown() {
  task::ShutdownRequest request;
  CallResult result = call<pb::Empty>("Shutdown", request);
  task::ConnectRequest connect;
  REQUIRE(call<task::ConnectResponse>("Connect", connect).status.ok());
  return result;
}

containerd::v1::types::Status Tier::state(const std::string& id, const std::string& exec_id) {
  task::StateRequest request;
  request.set_id(id);
  request.set_exec_id(exec_id);
  task::StateResponse response;
  auto result = call("State", request, &response);
  REQUIRE(result.status.ok());
  return response.status();
}

bool Tier::published(const std::string& topic) {
  auto topics = publisher.topics();
  return std::find(topics.begin(), topics.end(), topic) != topics.end();
}

bool Tier::wait_published(const std::string& topic, std::size_t count) {
  return eventually([&] {
    auto topics = publisher.topics();
    return static_cast<std::size_t>(std::count(topics.begin(), topics.end(), topic)) >= count;
  });
}

std::vector<std::string> Tier::trail(const std::string& id) {
  std::vector<std::string> out;
  for (const auto& event : publisher.events()) {
    // Every task event has the container id as field 1: TaskOOM reads just that.
    containerd::events::TaskOOM any;
    REQUIRE(any.ParseFromString(event.bytes));
    if (any.container_id() != id) continue;
    std::string entry = event.topic;
    if (event.topic == "/tasks/exit") {
      containerd::events::TaskExit exit;
      REQUIRE(exit.ParseFromString(event.bytes));
      entry += " " + exit.id();
    } else if (event.topic == "/tasks/exec-added" || event.topic == "/tasks/exec-started") {
      containerd::events::TaskExecStarted exec;  // exec_id is field 2 in both
      REQUIRE(exec.ParseFromString(event.bytes));
      entry += " " + exec.exec_id();
    }
    out.push_back(entry);
  }
  return out;
}

}  // namespace shim::test
