// The process tier's task service over a scripted Runtime, served on a real ttrpc socket
// on its own loop: what the task/ unit tests drive. Exits are injected through a fake
// reaper, so no container process is needed; the Script records the Instance calls in
// order and can make any of them throw.
#pragma once

#include <condition_variable>
#include <future>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "process/posix_spawner.h"
#include "shim/clock.h"
#include "shim/logger.h"
#include "shim/pb/containerd/task_v2.pb.h"
#include "shim/process/reaper.h"
#include "shim/process/work_pool.h"
#include "shim/runtime.h"
#include "shim/service_context.h"
#include "shim/unique_fd.h"
#include "support/io_thread.h"
#include "support/recording_publisher.h"
#include "support/temp_dir.h"
#include "support/ttrpc_harness.h"
#include "task/runtime_task_service.h"
#include "ttrpc/server.h"

namespace shim::test {

// Delivers exits the test makes up, on the loop, like the real reaper.
class FakeReaper final : public Reaper {
 public:
  explicit FakeReaper(boost::asio::any_io_executor loop) : loop_(std::move(loop)) {}
  Subscription subscribe(ExitCallback callback) override;
  Subscription subscribe(boost::asio::any_io_executor, ExitCallback callback) override;
  Status spawn_claimed(Spawner&, const SpawnRequest&, ClaimedProcess*) override;
  // Delivers pid's exit with `status` on the loop.
  void exit(int pid, int status);

 private:
  boost::asio::any_io_executor loop_;
  ExitCallback callback_;
};

// What the instances did, in order; which methods throw, fail or wait; a gate to hold
// kill(). Set the fields before the calls they change (or under `mu`).
struct Script {
  std::mutex mu;
  std::condition_variable cv;
  std::vector<std::string> calls;
  bool hold_kill = false;
  // create() records "create held" and waits until release_create().
  bool hold_create = false;
  bool kill_override = true;
  std::string output;  // what the init writes to its stdout at create
  // Methods ("open", "create", "pause", ...) that throw std::runtime_error("boom in <m>").
  std::set<std::string> throws;
  // pause() and resume() succeed instead of answering Unimplemented.
  bool pause_resume = false;
  // Methods ("create", "start", "exec", "kill", "pause", ...) that answer this status.
  std::map<std::string, Status> fails;
  // Optional methods ("update", "checkpoint", "stats", "pids") that succeed and record
  // the call ("update <json>", "checkpoint <path>", "stats", "pids").
  std::set<std::string> implemented;
  std::vector<std::uint32_t> pid_list;  // what an implemented pids() answers
  // The pid create() reports for container <id> (key <id>) or exec() for exec <exec_id>
  // (key <exec_id>), instead of the made-up one: a real process, or distinct pids.
  std::map<std::string, std::uint32_t> pids;
  // A dup of the stdin fd each process got (key: container id or exec id), as the
  // process would hold it: a test reads what reaches it and sees it closed.
  std::map<std::string, UniqueFd> stdin_of;
  // Instances answer ExitSource::kInstance: their exits come through `events_of` (key:
  // container id, ContainerConfig::events), and kill_exec records "kill_exec <id> <sig>".
  bool instance_exits = false;
  std::map<std::string, std::shared_ptr<InstanceEvents>> events_of;

  void record(std::string call);
  bool wait_for_call(const std::string& call);
  void release_kill();
  void release_create();
  // Throws if `method` is in `throws`.
  void maybe_throw(const std::string& method);
  // Stops throwing in `method`.
  void stop_throwing(const std::string& method);
  std::vector<std::string> recorded();

  // Calls of `hold` ("start": every container's; "start c1": container c1's) block on
  // entry until release(hold): a call under way, on demand.
  void hold(const std::string& hold);
  // Waits (5 s at most) until a call is blocked in `hold`.
  bool wait_until_held(const std::string& hold);
  void release(const std::string& hold);
  // Releases every hold (kill's and create's too): the Tier does so before it stops the
  // pool.
  void release_all();
  // What `method` of container `id` does first: waits while held, throws if scripted
  // to, then answers its scripted failure (OK if none).
  Status enter(const std::string& method, const std::string& id);

 private:
  std::set<std::string> held_;
  std::multiset<std::string> waiting_;
};

class ScriptedInstance final : public Instance {
 public:
  ScriptedInstance(Script& script, std::string id, std::uint32_t pid)
      : script_(script), id_(std::move(id)), pid_(pid), instance_exits_(script.instance_exits) {}
  StdioOwner stdio_owner() const override;
  ExitSource exit_source() const override;
  Status kill_exec(const std::string& exec_id, int signal) override;
  Status create(const ProcessStdio& stdio, std::uint32_t* pid) override;
  Status start(std::uint32_t*) override;
  Status exec(const ExecConfig& exec, std::uint32_t* pid) override;
  Status delete_exec(const std::string& exec_id) override;
  Status kill(int signal, bool all) override;
  Status remove() override;
  // These record the call (and may throw or fail), then answer Instance's default unless
  // the Script implements them.
  Status pause() override;
  Status resume() override;
  Status update(std::string_view resources_json) override;
  Status checkpoint(const CheckpointConfig& config) override;
  Status stats(pb::Any* metrics) override;
  Status pids(std::vector<std::uint32_t>* pids) override;
  // Live upgrade: nothing to carry but the container's pid.
  Status save_for_upgrade(boost::json::object* state) override;

 private:
  Script& script_;
  std::string id_;
  std::uint32_t pid_;
  bool instance_exits_;  // Script::instance_exits when it was opened
};

// Opens a ScriptedInstance per container, pid 4000 + the id's length; refuses id "refused".
class ScriptedRuntime final : public Runtime {
 public:
  explicit ScriptedRuntime(Script& script) : script_(script) {}
  Status open(const ContainerConfig& config, std::unique_ptr<Instance>* instance) override;
  Status reopen(const ContainerConfig& config, const boost::json::object& saved,
                std::unique_ptr<Instance>* instance) override;

 private:
  Script& script_;
};

struct CountingShutdown final : ShutdownControl {
  void request_shutdown() override { ++requests; }
  std::atomic<int> requests{0};
};

// The task service on its own loop and socket.
struct Tier {
  // Serves `runtime`; null: a ScriptedRuntime over `script`.
  explicit Tier(std::unique_ptr<Runtime> runtime = nullptr);
  ~Tier();
  // A bundle dir for `id` holding `spec` as config.json.
  std::string bundle(const std::string& id, const std::string& spec);
  template <class Response, class Request>
  CallResult call(const std::string& method, const Request& request, Response* response = nullptr) {
    auto result = client->call("containerd.task.v2.Task", method, request.SerializeAsString());
    if (response != nullptr && result.status.ok())
      REQUIRE(response->ParseFromString(result.payload));
    return result;
  }
  // A call answered later: for calls that wait (Wait, a Delete behind an exit, a held
  // runtime call). The payload is the serialized response.
  template <class Request>
  std::future<CallResult> call_async(const std::string& method, const Request& request) {
    return client->call_async("containerd.task.v2.Task", method, request.SerializeAsString());
  }
  CallResult create(const std::string& id, const std::string& spec,
                    const std::string& stdout_path = "");
  CallResult start(const std::string& id, const std::string& exec_id = "");
  // Empty-answered calls by id (and exec id).
  CallResult pause(const std::string& id);
  CallResult resume(const std::string& id);
  CallResult kill(const std::string& id, int signal, bool all = false,
                  const std::string& exec_id = "");
  CallResult remove(const std::string& id, const std::string& exec_id = "");
  CallResult exec(const std::string& id, const std::string& exec_id);
  // Shutdown, then a Connect round trip: the Shutdown handler has finished by its answer
  // (the handler replies before it asks the shim to end).
  CallResult shutdown();
  // The init's or exec's status (containerd's enum) from State.
  containerd::v1::types::Status state(const std::string& id, const std::string& exec_id = "");
  bool published(const std::string& topic);
  // Waits (5 s at most) until `count` events of `topic` went out.
  bool wait_published(const std::string& topic, std::size_t count = 1);
  // The events of container `id` in order, each as "<topic>" or, for events about one
  // process, "<topic> <exec id or container id>" ("/tasks/exit e1").
  std::vector<std::string> trail(const std::string& id);

  TempDir dir{"tier-"};
  IoThread io;
  FakeReaper reaper{io.executor()};
  testing::RecordingPublisher publisher;
  SystemClock clock;
  PosixSpawner spawner;
  WorkPool pool{2};
  std::mutex log_mu;
  std::vector<std::string> log_lines;
  Logger logger{std::make_shared<CallbackLogSink>([this](std::string_view line) {
                  std::lock_guard lock(log_mu);
                  log_lines.emplace_back(line);
                }),
                clock};
  CountingShutdown shutdown_control;
  Script script;
  std::unique_ptr<ServiceContext> context;
  std::unique_ptr<RuntimeTaskService> service;
  std::unique_ptr<ttrpc::TtrpcServer> server;
  std::unique_ptr<SyncClient> client;
};

inline constexpr const char* kSharedPidSpec =
    R"({"ociVersion":"1.0.2","process":{"args":["sh"]},"linux":{"namespaces":[{"type":"pid","path":"/proc/1/ns/pid"}]}})";
inline constexpr const char* kPrivatePidSpec =
    R"({"ociVersion":"1.0.2","process":{"args":["sh"]},"linux":{"namespaces":[{"type":"pid"}]}})";

}  // namespace shim::test
