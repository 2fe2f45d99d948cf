// The built shim-example daemon, started as containerd 1.6 starts it (runtime/v2/binary.go)
// and then driven over its socket as containerd drives a task: Create, Start, Wait, Delete,
// Shutdown on the task API, the stdio FIFOs, the events it forwards to TTRPC_ADDRESS. No
// containerd involved: tests/support/example_shim_sandbox.h plays it, and EventsSink below
// stands in for its events endpoint.
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include <google/protobuf/message_lite.h>

#include "shim/pb/containerd/events_service.pb.h"
#include "shim/pb/containerd/task_v2.pb.h"
#include "shim/pb/empty.pb.h"
#include "shim/status.h"
#include "shim/ttrpc/router.h"
#include "support/busybox_rootfs.h"
#include "support/example_shim_sandbox.h"
#include "support/io_thread.h"
#include "support/ttrpc_harness.h"
#include "ttrpc/server.h"

namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;
using shim::test::Caller;
using shim::test::check_clean_start;
using shim::test::kSandboxNamespace;
using shim::test::serving_daemon;
using shim::test::ShimRun;
using shim::test::ShimSandbox;
using shim::test::SubreaperScope;

// containerd's events endpoint (TTRPC_ADDRESS) for a daemon run without containerd: it
// records the topics the daemon forwards.
class EventsSink {
 public:
  explicit EventsSink(const std::string& path) {
    shim::ttrpc::Router router;
    router.add("containerd.services.events.ttrpc.v1.Events", "Forward",
               [this](const shim::ttrpc::CallInfo& call, std::string_view payload,
                      shim::ttrpc::Responder responder) {
                 containerd::services::events::ttrpc::v1::ForwardRequest request;
                 request.ParseFromArray(payload.data(), static_cast<int>(payload.size()));
                 std::lock_guard lock(mutex_);
                 topics_.push_back(request.envelope().topic() + " " +
                                   request.envelope().event().type_url() + " " +
                                   std::string(call.metadata_value("containerd-namespace-ttrpc")));
                 responder.reply("");
               });
    server_ = std::make_unique<shim::ttrpc::TtrpcServer>(io_.executor(), std::move(router));
    REQUIRE(server_->serve_path(path).ok());
  }
  ~EventsSink() {
    server_.reset();
    io_.drain();
  }
  std::vector<std::string> topics() const {
    std::lock_guard lock(mutex_);
    return topics_;
  }

 private:
  shim::test::IoThread io_;
  std::unique_ptr<shim::ttrpc::TtrpcServer> server_;
  mutable std::mutex mutex_;
  std::vector<std::string> topics_;
};

template <class Response>
Response task_call(shim::test::SyncClient& client, const std::string& method,
                   const google::protobuf::MessageLite& request) {
  auto result = client.call("containerd.task.v2.Task", method, request.SerializeAsString());
  INFO(method << ": " << result.status.to_string());
  REQUIRE(result.status.ok());
  Response response;
  REQUIRE(response.ParseFromString(result.payload));
  return response;
}

// What a FIFO holds right now (O_NONBLOCK: no waiting for a writer).
// Reads what the shim copies into a FIFO once it sees our reader, up to its EOF (the
// shim writes only to a FIFO that has a reader, and keeps the output until then).
std::string drain_fifo(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  REQUIRE(fd >= 0);
  std::string text;
  char buffer[4096];
  auto deadline = std::chrono::steady_clock::now() + 5s;
  while (std::chrono::steady_clock::now() < deadline) {
    ssize_t n = ::read(fd, buffer, sizeof buffer);
    if (n > 0) {
      text.append(buffer, static_cast<std::size_t>(n));
    } else if (n == 0 && !text.empty()) {
      break;  // the shim's copy closed its end after the process's output
    } else {
      std::this_thread::sleep_for(5ms);  // no writer yet (EOF) or nothing yet (EAGAIN)
    }
  }
  ::close(fd);
  return text;
}

// The wait status of `daemon` (our child through the subreaper) once it exited, waiting
// up to 5 s; -1 (not WIFEXITED) if it had not, so a daemon that stays fails the checks.
int wait_for_exit(pid_t daemon) {
  int status = 0;
  for (int i = 0; i < 500; ++i) {
    if (::waitpid(daemon, &status, WNOHANG) == daemon) return status;
    std::this_thread::sleep_for(10ms);
  }
  return -1;
}

}  // namespace

TEST_CASE("shim-example daemon: output written before the client opens its FIFO end is kept",
          "[shim-protocol]") {
  // ctr opens its ends of the stdio FIFOs asynchronously: a fast process may write before
  // ctr has a reader. That must neither kill it (SIGPIPE) nor lose the output.
  SubreaperScope subreaper;
  ShimSandbox sb;
  EventsSink events(sb.ttrpc());
  const std::string bundle = sb.make_bundle("t1", {}, {"/bin/sh", "-c", "echo hi; echo oops >&2"});
  shim::test::make_busybox_rootfs(bundle + "/rootfs");
  const std::string out_fifo = sb.dir() + "/t1-stdout";
  const std::string err_fifo = sb.dir() + "/t1-stderr";
  REQUIRE(::mkfifo(out_fifo.c_str(), 0600) == 0);
  REQUIRE(::mkfifo(err_fifo.c_str(), 0600) == 0);

  ShimRun run = sb.start(Caller::k1_6, "t1", bundle);
  check_clean_start(run);
  const pid_t daemon = serving_daemon(run.out);
  {
    shim::test::SyncClient client(run.out);
    containerd::task::v2::CreateTaskRequest create;
    create.set_id("t1");
    create.set_bundle(bundle);
    create.set_stdout(out_fifo);
    create.set_stderr(err_fifo);
    task_call<containerd::task::v2::CreateTaskResponse>(client, "Create", create);
    containerd::task::v2::StartRequest start;
    start.set_id("t1");
    auto started = task_call<containerd::task::v2::StartResponse>(client, "Start", start);
    CHECK(started.pid() > 0);
    containerd::task::v2::WaitRequest wait;
    wait.set_id("t1");
    auto waited = task_call<containerd::task::v2::WaitResponse>(client, "Wait", wait);
    CHECK(waited.exit_status() == 0);  // 141 = SIGPIPE: nobody held a reader
    CHECK(drain_fifo(out_fifo) == "hi\n");
    CHECK(drain_fifo(err_fifo) == "oops\n");
    containerd::task::v2::DeleteRequest remove;
    remove.set_id("t1");
    auto deleted = task_call<containerd::task::v2::DeleteResponse>(client, "Delete", remove);
    CHECK(deleted.exit_status() == 0);
    containerd::task::v2::ShutdownRequest shutdown;
    shutdown.set_id("t1");
    task_call<shim::pb::Empty>(client, "Shutdown", shutdown);
  }
  // Shutdown: the daemon flushes its events, removes its socket and exits 0.
  int status = wait_for_exit(daemon);
  CHECK(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 0);
  CHECK_FALSE(fs::exists(run.out.substr(7)));
  const std::string ns = kSandboxNamespace;
  CHECK(events.topics() ==
        std::vector<std::string>{"/tasks/create containerd.events.TaskCreate " + ns,
                                 "/tasks/start containerd.events.TaskStart " + ns,
                                 "/tasks/exit containerd.events.TaskExit " + ns,
                                 "/tasks/delete containerd.events.TaskDelete " + ns});
}

TEST_CASE("shim-example daemon: an OCI process whose args are not strings fails Create cleanly",
          "[shim-protocol]") {
  // Found reading config.json handling for tests/fuzz: boost::json::value_to threw on a
  // number in "args", on the pool, where the exception was swallowed with the reply.
  SubreaperScope subreaper;
  ShimSandbox sb;
  EventsSink events(sb.ttrpc());
  const std::string bundle = sb.make_bundle("t1");
  std::ofstream(bundle + "/config.json")
      << R"({"ociVersion":"1.0.2","process":{"args":["/bin/true",1],"env":[null],"cwd":"/"},)"
         R"("root":{"path":"rootfs"}})";
  ShimRun run = sb.start(Caller::k1_6, "t1", bundle);
  check_clean_start(run);
  const pid_t daemon = serving_daemon(run.out);
  {
    shim::test::SyncClient client(run.out);
    containerd::task::v2::CreateTaskRequest create;
    create.set_id("t1");
    create.set_bundle(bundle);
    auto created = client.call("containerd.task.v2.Task", "Create", create.SerializeAsString());
    CHECK(created.status.code() == shim::Code::kInvalidArgument);
    CHECK(created.status.message() ==
          "process.args[1]: want a string, got a number: invalid argument");
    // The shim is still sound: the failed Create left no task behind.
    containerd::task::v2::StateRequest state;
    state.set_id("t1");
    auto listed = client.call("containerd.task.v2.Task", "State", state.SerializeAsString());
    CHECK(listed.status.code() == shim::Code::kNotFound);
    containerd::task::v2::ShutdownRequest shutdown;
    shutdown.set_id("t1");
    task_call<shim::pb::Empty>(client, "Shutdown", shutdown);
  }
  int status = wait_for_exit(daemon);
  CHECK(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 0);
}
