// The process tier's task service over a scripted Runtime, served on a real ttrpc socket:
// the order of events and runtime calls libshim guarantees a vendor, and its defaults.
// Exits are injected through a fake reaper, so no container process is needed.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <filesystem>
#include <future>
#include <fstream>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <catch2/catch.hpp>
#include <fmt/format.h>

#include "process/posix_spawner.h"
#include "shim/clock.h"
#include "shim/events/lifecycle_events.h"
#include "shim/logger.h"
#include "shim/pb/containerd/task_v2.pb.h"
#include "shim/process/reaper.h"
#include "shim/process/work_pool.h"
#include "shim/service_context.h"
#include "shim/unique_fd.h"
#include "support/io_thread.h"
#include "support/recording_publisher.h"
#include "support/temp_dir.h"
#include "support/ttrpc_harness.h"
#include "task/runtime_task_service.h"
#include "ttrpc/server.h"

namespace {

using namespace std::chrono_literals;
namespace task = containerd::task::v2;

// Delivers exits the test makes up, on the loop, like the real reaper.
class FakeReaper final : public shim::Reaper {
 public:
  explicit FakeReaper(boost::asio::any_io_executor loop) : loop_(std::move(loop)) {}
  shim::Subscription subscribe(shim::ExitCallback callback) override {
    callback_ = std::move(callback);
    return shim::Subscription([this] { callback_ = nullptr; });
  }
  shim::Subscription subscribe(boost::asio::any_io_executor, shim::ExitCallback callback) override {
    return subscribe(std::move(callback));
  }
  shim::Status spawn_claimed(shim::Spawner&, const shim::SpawnRequest&, shim::ClaimedProcess*) override {
    return shim::not_implemented("spawn_claimed");
  }
  void exit(int pid, int status) {
    boost::asio::post(loop_, [this, pid, status] {
      if (callback_) callback_(shim::ProcessExit{pid, status, std::chrono::system_clock::now()});
    });
  }

 private:
  boost::asio::any_io_executor loop_;
  shim::ExitCallback callback_;
};

// What the instances did, in order, and a gate a test can close to hold kill().
struct Script {
  std::mutex mu;
  std::condition_variable cv;
  std::vector<std::string> calls;
  bool hold_kill = false;
  bool kill_override = true;
  std::string output;  // what the init writes to its stdout at create

  void record(std::string call) {
    std::lock_guard lock(mu);
    calls.push_back(std::move(call));
    cv.notify_all();
  }
  bool wait_for_call(const std::string& call) {
    std::unique_lock lock(mu);
    return cv.wait_for(lock, 5s, [&] { return std::find(calls.begin(), calls.end(), call) != calls.end(); });
  }
  void release_kill() {
    std::lock_guard lock(mu);
    hold_kill = false;
    cv.notify_all();
  }
};

class ScriptedInstance final : public shim::Instance {
 public:
  ScriptedInstance(Script& script, std::uint32_t pid) : script_(script), pid_(pid) {}
  shim::Status create(const shim::ProcessStdio& stdio, std::uint32_t* pid) override {
    *pid = pid_;
    // On a pool thread, so no Catch2 assertion here: the test checks what arrives.
    if (!script_.output.empty() && stdio.stdout >= 0) {
      [[maybe_unused]] ssize_t n = ::write(stdio.stdout, script_.output.data(), script_.output.size());
    }
    script_.record("create");
    return {};
  }
  shim::Status start(std::uint32_t*) override {
    script_.record("start");
    return {};
  }
  shim::Status exec(const shim::ExecConfig& exec, std::uint32_t* pid) override {
    *pid = pid_ + 1;
    script_.record("exec " + exec.exec_id);
    return {};
  }
  shim::Status kill(int signal, bool all) override {
    if (!script_.kill_override) return shim::Instance::kill(signal, all);
    std::unique_lock lock(script_.mu);
    script_.cv.wait(lock, [&] { return !script_.hold_kill; });
    script_.calls.push_back(fmt::format("kill {}{}", signal, all ? " all" : ""));
    script_.cv.notify_all();
    return {};
  }
  shim::Status remove() override {
    script_.record("remove");
    return {};
  }

 private:
  Script& script_;
  std::uint32_t pid_;
};

class ScriptedRuntime final : public shim::Runtime {
 public:
  explicit ScriptedRuntime(Script& script) : script_(script) {}
  shim::Status open(const shim::ContainerConfig& config, std::unique_ptr<shim::Instance>* instance) override {
    if (config.id == "refused") return shim::invalid_argument("refused by the runtime");
    *instance = std::make_unique<ScriptedInstance>(script_, 4000 + static_cast<std::uint32_t>(config.id.size()));
    return {};
  }

 private:
  Script& script_;
};

struct NoShutdown final : shim::ShutdownControl {
  void request_shutdown() override {}
};

// The task service on its own loop and socket.
struct Tier {
  Tier() {
    context = std::make_unique<shim::ServiceContext>(shim::ServiceContext{
        io.executor(), reaper, publisher, clock, spawner, pool, logger, shutdown,
        shim::ShimIdentity{"ns", "t", dir.path(), "", "", false}});
    service = std::make_unique<shim::RuntimeTaskService>(*context, std::make_unique<ScriptedRuntime>(script));
    shim::ttrpc::Router router;
    shim::register_task_service(router, *service);
    server = std::make_unique<shim::ttrpc::TtrpcServer>(io.executor(), std::move(router));
    REQUIRE(server->serve_path(dir.sub("task.sock")).ok());
    client = std::make_unique<shim::test::SyncClient>(dir.sub("task.sock"));
  }
  ~Tier() {
    client.reset();
    io.run([this] { server->close(); });
    io.run([this] { service.reset(); });
    pool.stop();
  }
  std::string bundle(const std::string& id, const std::string& spec) {
    std::string path = dir.sub(id);
    std::filesystem::create_directories(path);
    std::ofstream(path + "/config.json") << spec;
    return path;
  }
  template <class Response, class Request>
  shim::test::CallResult call(const std::string& method, const Request& request, Response* response = nullptr) {
    auto result = client->call("containerd.task.v2.Task", method, request.SerializeAsString());
    if (response != nullptr && result.status.ok()) REQUIRE(response->ParseFromString(result.payload));
    return result;
  }
  shim::test::CallResult create(const std::string& id, const std::string& spec,
                                const std::string& stdout_path = "") {
    task::CreateTaskRequest request;
    request.set_id(id);
    request.set_bundle(bundle(id, spec));
    request.set_stdout(stdout_path);
    task::CreateTaskResponse response;
    return call("Create", request, &response);
  }
  shim::test::CallResult start(const std::string& id) {
    task::StartRequest request;
    request.set_id(id);
    task::StartResponse response;
    return call("Start", request, &response);
  }
  bool published(const std::string& topic) {
    auto topics = publisher.topics();
    return std::find(topics.begin(), topics.end(), topic) != topics.end();
  }

  shim::test::TempDir dir{"tier-"};
  shim::test::IoThread io;
  FakeReaper reaper{io.executor()};
  shim::testing::RecordingPublisher publisher;
  shim::SystemClock clock;
  shim::PosixSpawner spawner;
  shim::WorkPool pool{2};
  shim::Logger logger{std::make_shared<shim::CallbackLogSink>([](std::string_view) {}), clock};
  NoShutdown shutdown;
  Script script;
  std::unique_ptr<shim::ServiceContext> context;
  std::unique_ptr<shim::RuntimeTaskService> service;
  std::unique_ptr<shim::ttrpc::TtrpcServer> server;
  std::unique_ptr<shim::test::SyncClient> client;
};

constexpr const char* kSharedPidSpec =
    R"({"ociVersion":"1.0.2","process":{"args":["sh"]},"linux":{"namespaces":[{"type":"pid","path":"/proc/1/ns/pid"}]}})";
constexpr const char* kPrivatePidSpec =
    R"({"ociVersion":"1.0.2","process":{"args":["sh"]},"linux":{"namespaces":[{"type":"pid"}]}})";

}  // namespace

TEST_CASE("tier: the rest of a container without its own pid namespace is killed before its TaskExit",
          "[tier]") {
  Tier tier;
  REQUIRE(tier.create("c1", kSharedPidSpec).status.ok());
  REQUIRE(tier.start("c1").status.ok());
  {
    std::lock_guard lock(tier.script.mu);
    tier.script.hold_kill = true;
  }
  tier.reaper.exit(4002, 0);  // the init (pid 4000 + id length)
  std::this_thread::sleep_for(100ms);
  CHECK_FALSE(tier.published("/tasks/exit"));  // held while the kill runs
  // A Delete arriving meanwhile waits behind the kill, in order.
  task::DeleteRequest remove;
  remove.set_id("c1");
  auto deleted = std::async(std::launch::async, [&] {
    task::DeleteResponse response;
    return tier.call("Delete", remove, &response);
  });
  std::this_thread::sleep_for(50ms);
  tier.script.release_kill();
  REQUIRE(tier.script.wait_for_call("remove"));
  CHECK(deleted.get().status.ok());
  std::vector<std::string> calls;
  {
    std::lock_guard lock(tier.script.mu);
    calls = tier.script.calls;
  }
  CHECK(calls == std::vector<std::string>{"create", "start", "kill 9 all", "remove"});
  CHECK(tier.publisher.topics() ==
        std::vector<std::string>{"/tasks/create", "/tasks/start", "/tasks/exit", "/tasks/delete"});
}

TEST_CASE("tier: a container with its own pid namespace is not killed again at its init's exit",
          "[tier]") {
  Tier tier;
  REQUIRE(tier.create("c2", kPrivatePidSpec).status.ok());
  REQUIRE(tier.start("c2").status.ok());
  tier.reaper.exit(4002, 137);
  for (int i = 0; i < 100 && !tier.published("/tasks/exit"); ++i) std::this_thread::sleep_for(10ms);
  CHECK(tier.published("/tasks/exit"));
  std::lock_guard lock(tier.script.mu);
  CHECK(tier.script.calls == std::vector<std::string>{"create", "start"});
}

// ctr 1.6.20 closes its FIFOs as soon as it learns of the exit: output it has not read
// then is lost. So the TaskExit waits for the client's reads (for at most 100 ms without
// any). Only the lower bound is checked: it holds however loaded the machine is.
TEST_CASE("tier: a TaskExit waits for the client to read the process's last output", "[tier]") {
  Tier tier;
  tier.script.output = "last words\n";
  const std::string fifo = tier.dir.sub("c3-stdout");
  REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
  shim::UniqueFd client(::open(fifo.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC));  // ctr's end
  REQUIRE(client.valid());
  REQUIRE(tier.create("c3", kPrivatePidSpec, fifo).status.ok());
  REQUIRE(tier.start("c3").status.ok());
  const bool reads = GENERATE(false, true);
  const auto exited = std::chrono::steady_clock::now();
  tier.reaper.exit(4002, 0);
  char buffer[64];
  ssize_t got = 0;
  for (int i = 0; i < 400 && !tier.published("/tasks/exit"); ++i) {
    if (reads && got <= 0) got = ::read(client.get(), buffer, sizeof buffer);
    std::this_thread::sleep_for(5ms);
  }
  const auto held = std::chrono::steady_clock::now() - exited;
  REQUIRE(tier.published("/tasks/exit"));
  if (reads) {
    CHECK(std::string(buffer, static_cast<std::size_t>(std::max<ssize_t>(got, 0))) == "last words\n");
  } else {
    CHECK(held >= 95ms);  // nobody read: held for the stall time, then published
    CHECK(::read(client.get(), buffer, sizeof buffer) == 11);  // nothing taken from the client
  }
}

// A Delete that comes while the exit waits (`ctr task rm` right after a kill) waits for
// the TaskExit: /tasks/delete must follow it.
TEST_CASE("tier: a Delete while the TaskExit waits for the output comes after it", "[tier]") {
  Tier tier;
  tier.script.output = "never read\n";
  const std::string fifo = tier.dir.sub("c4-stdout");
  REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
  shim::UniqueFd client(::open(fifo.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC));
  REQUIRE(client.valid());
  REQUIRE(tier.create("c4", kPrivatePidSpec, fifo).status.ok());
  REQUIRE(tier.start("c4").status.ok());
  tier.reaper.exit(4002, 3);
  // The Delete may run once State says stopped, which is at once.
  task::StateRequest state;
  state.set_id("c4");
  task::StateResponse status;
  for (int i = 0; i < 200; ++i) {
    REQUIRE(tier.call("State", state, &status).status.ok());
    if (status.status() == containerd::v1::types::STOPPED) break;
    std::this_thread::sleep_for(1ms);
  }
  task::DeleteRequest remove;
  remove.set_id("c4");
  task::DeleteResponse deleted;
  REQUIRE(tier.call("Delete", remove, &deleted).status.ok());
  CHECK(deleted.exit_status() == 3);
  CHECK(tier.publisher.topics() ==
        std::vector<std::string>{"/tasks/create", "/tasks/start", "/tasks/exit", "/tasks/delete"});
}

TEST_CASE("tier: a runtime's refusal at open leaves no container and no event", "[tier]") {
  Tier tier;
  auto refused = tier.create("refused", kPrivatePidSpec);
  CHECK(refused.status.code() == shim::Code::kInvalidArgument);
  CHECK(refused.status.message() == "refused by the runtime: invalid argument");
  CHECK(tier.start("refused").status.message() == "container not created: not found");
  CHECK(tier.publisher.topics().empty());
  // The id is free again.
  CHECK(tier.create("refused2", kPrivatePidSpec).status.ok());
}

TEST_CASE("tier: Go's state machine texts come before any runtime call", "[tier]") {
  Tier tier;
  REQUIRE(tier.create("c3", kPrivatePidSpec).status.ok());
  task::PauseRequest pause;
  pause.set_id("c3");
  CHECK(tier.call<shim::pb::Empty>("Pause", pause).status.message() == "cannot pause task in created state");
  REQUIRE(tier.start("c3").status.ok());
  CHECK(tier.start("c3").status.message() == "cannot start a running process");
  // The scripted runtime has no pause: containerd hears Unimplemented.
  CHECK(tier.call<shim::pb::Empty>("Pause", pause).status.code() == shim::Code::kUnimplemented);
  task::StatsRequest stats;
  stats.set_id("c3");
  // No cgroup was found for the made-up pid: Go's NotFound.
  CHECK(tier.call<task::StatsResponse>("Stats", stats).status.message() == "cgroup does not exist: not found");
}

TEST_CASE("tier: kill of an Instance without kill() falls back to the init's pidfd", "[tier]") {
  Tier tier;
  tier.script.kill_override = false;
  REQUIRE(tier.create("c4", kPrivatePidSpec).status.ok());
  task::KillRequest kill;
  kill.set_id("c4");
  kill.set_signal(15);
  // Pid 4002 was made up: no pidfd could be opened, so the init counts as gone.
  CHECK(tier.call<shim::pb::Empty>("Kill", kill).status.message() == "process already finished: not found");
}
