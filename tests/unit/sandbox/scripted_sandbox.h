// The sandbox service over a scripted SandboxRuntime, next to the process tier's task
// service (over scripted_tier.h's ScriptedRuntime), both on one real ttrpc socket on
// their own loop, as the daemon serves them: what the sandbox/ unit tests drive. The
// SandboxScript records the vendor calls in order and can make any of them fail, throw
// or wait.
#pragma once

#include <condition_variable>
#include <future>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "sandbox/sandbox_service.h"
#include "shim/pb/containerd/sandbox.pb.h"
#include "shim/sandbox.h"
#include "unit/task/scripted_tier.h"

namespace shim::test {

namespace sandbox_api = ::containerd::runtime::sandbox::v1;

// What the sandbox does when called; the fields are read under `mu`.
struct SandboxScript {
  std::mutex mu;
  std::condition_variable cv;
  std::vector<std::string> calls;  // "create sb1", "start", "stop 5", "shutdown", ...
  // Methods ("create", "start", "stop", ...) that throw std::runtime_error("boom in <m>").
  std::set<std::string> throws;
  // Methods that answer this status.
  std::map<std::string, Status> fails;
  std::uint32_t pid = 4242;             // what start() answers
  std::uint32_t stop_status = 0;        // what stop() answers
  bool metrics_implemented = false;     // metrics() answers (else the Unimplemented default)
  bool platform_implemented = false;    // platform() answers "plan9/mips" (else the default)
  std::string metrics_id;               // the id metrics() sets ("" leaves it to libshim)
  std::optional<shim::pb::Any> spec;    // what start() answers as the spec
  boost::json::object details;          // what details() adds
  std::optional<SandboxConfig> config;  // what create() was given
  SandboxEvents* events = nullptr;      // what create() was given
  // A failed create() still hands out its sandbox (which must then be shut down).
  bool create_leaves_sandbox = false;

  std::vector<std::string> recorded();
  // Calls of `method` block on entry until release(method).
  void hold(const std::string& method);
  void release(const std::string& method);
  void release_all();
  // Waits (5 s at most) until a call is blocked in `method`.
  bool wait_until_held(const std::string& method);
  // What `method` does first: records `call`, waits while held, throws if scripted to,
  // then answers its scripted failure (OK if none).
  Status enter(const std::string& method, const std::string& call);

 private:
  std::set<std::string> held_;
  std::multiset<std::string> waiting_;
};

class ScriptedSandbox final : public Sandbox {
 public:
  explicit ScriptedSandbox(SandboxScript& script) : script_(script) {}
  Status start(SandboxStarted* started) override;
  Status stop(std::chrono::seconds timeout, std::uint32_t* exit_status) override;
  Status shutdown() override;
  Status platform(containerd::types::Platform* platform) const override;
  Status metrics(containerd::types::Metric* metric) override;
  Status details(boost::json::object* info) const override;

 private:
  SandboxScript& script_;
};

class ScriptedSandboxRuntime final : public SandboxRuntime {
 public:
  explicit ScriptedSandboxRuntime(SandboxScript& script) : script_(script) {}
  Status create(const SandboxConfig& config, SandboxEvents& events,
                std::unique_ptr<Sandbox>* sandbox) override;

 private:
  SandboxScript& script_;
};

// Both services on one loop and socket.
struct Pod {
  Pod();
  ~Pod();

  template <class Response, class Request>
  CallResult call(const std::string& method, const Request& request, Response* response = nullptr) {
    auto result = client->call(std::string(kSandboxService), method, request.SerializeAsString());
    if (response != nullptr && result.status.ok())
      REQUIRE(response->ParseFromString(result.payload));
    return result;
  }
  // A call answered later (WaitSandbox, a call behind a held one).
  template <class Request>
  std::future<CallResult> call_async(const std::string& method, const Request& request) {
    return client->call_async(std::string(kSandboxService), method, request.SerializeAsString());
  }

  CallResult create(const std::string& id);
  CallResult start(const std::string& id, sandbox_api::StartSandboxResponse* response = nullptr);
  CallResult stop(const std::string& id, std::uint32_t timeout_secs = 0);
  CallResult shutdown(const std::string& id);
  CallResult ping(const std::string& id);
  sandbox_api::SandboxStatusResponse status(const std::string& id, bool verbose = false);
  std::future<CallResult> wait_async(const std::string& id);
  // The task API's Shutdown (v3, as containerd 2.x sends it for a sandboxed task).
  CallResult task_shutdown();
  // A task container of the pod: Create, Start, exit 0, Delete (the task tier's own rules).
  void run_task_to_deletion(const std::string& id);
  CallResult create_task(const std::string& id);
  // Every handler posted so far has run (a reply's handler has finished after it).
  void settle() { io.drain(); }

  TempDir dir{"pod-"};
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
  Script task_script;
  SandboxScript script;
  std::unique_ptr<ServiceContext> context;
  std::unique_ptr<RuntimeTaskService> tasks;
  std::unique_ptr<SandboxService> sandboxes;
  std::unique_ptr<ttrpc::TtrpcServer> server;
  std::unique_ptr<SyncClient> client;
};

// The response of a call that succeeded (REQUIREd).
template <class Response>
Response parsed(const CallResult& result) {
  INFO(result.status.to_string());
  REQUIRE(result.status.ok());
  Response response;
  REQUIRE(response.ParseFromString(result.payload));
  return response;
}

}  // namespace shim::test
