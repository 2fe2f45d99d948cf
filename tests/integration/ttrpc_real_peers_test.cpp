// libshim's ttrpc client and server against real Go peers: containerd 1.6's ttrpc events
// service, and `ctr shim ... state` (a Go ttrpc client of the task API).
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "shim/pb/containerd/events.pb.h"
#include "shim/pb/containerd/events_service.pb.h"
#include "shim/pb/containerd/task_v2.pb.h"
#include "shim/ttrpc/router.h"
#include "ttrpc/server.h"
#include "shim/ttrpc/typed.h"
#include "support/containerd_fixture.h"
#include "support/io_thread.h"
#include "support/ttrpc_harness.h"

namespace {

using namespace std::chrono_literals;
using shim::test::PrivateContainerd;

namespace task = containerd::task::v2;
namespace events_service = containerd::services::events::ttrpc::v1;

const std::string kEventsService = "containerd.services.events.ttrpc.v1.Events";
constexpr std::int64_t kGoZeroTimeSeconds = -62135596800;

shim::pb::Timestamp timestamp(std::int64_t seconds, std::int32_t nanos) {
  shim::pb::Timestamp ts;
  ts.set_seconds(seconds);
  ts.set_nanos(nanos);
  return ts;
}

// A Forward request carrying a TaskExit, as a shim publishes it.
std::string forward_exit(const std::string& ns, const std::string& topic,
                         const std::string& container_id) {
  containerd::events::TaskExit exit;
  exit.set_container_id(container_id);
  exit.set_id(container_id);
  exit.set_pid(4242);
  exit.set_exit_status(7);
  *exit.mutable_exited_at() = timestamp(981173106, 5000);
  events_service::ForwardRequest request;
  auto* envelope = request.mutable_envelope();
  // 2001-02-03 04:05:06.000000007 UTC: distinctive in ctr's printout.
  *envelope->mutable_timestamp() = timestamp(981173106, 7);
  envelope->set_namespace_(ns);
  envelope->set_topic(topic);
  envelope->mutable_event()->set_type_url("containerd.events.TaskExit");
  envelope->mutable_event()->set_value(exit.SerializeAsString());
  return request.SerializeAsString();
}

shim::ttrpc::CallOptions namespaced(const std::string& ns) {
  shim::ttrpc::CallOptions options;
  options.timeout = 5s;
  options.metadata = {{"containerd-namespace-ttrpc", ns}};
  return options;
}

// Removes a socket file on scope exit (the Go socket dir is outside any temp dir).
struct UnlinkOnExit {
  std::string path;
  ~UnlinkOnExit() { ::unlink(path.c_str()); }
};

}  // namespace

TEST_CASE("TtrpcClient forwards a TaskExit to containerd's ttrpc events service",
          "[ttrpc-real]") {
  PrivateContainerd fx;
  INFO("containerd " << fx.version().text << "; log tail:\n" << fx.log_tail());
  auto events = fx.subscribe_events();
  shim::test::SyncClient client(fx.ttrpc_address());

  const std::string container_id = "libshim-forwarded-1";
  auto result = client.call(kEventsService, "Forward",
                            forward_exit(fx.ns(), "/tasks/exit", container_id),
                            namespaced(fx.ns()));
  INFO(result.status.to_string());
  REQUIRE(result.status.ok());
  CHECK(result.payload.empty());  // google.protobuf.Empty

  // ctr resolves the Any by its type URL: the JSON only appears if the type survived.
  auto line = events->wait_for_line({"/tasks/exit", container_id}, 10s);
  INFO("events:\n" << events->text());
  REQUIRE(line);
  CHECK(line->rfind("2001-02-03 04:05:06.000000007 +0000 UTC " + fx.ns() + " /tasks/exit {", 0) ==
        0);
  CHECK(line->find("\"container_id\":\"" + container_id + "\"") != std::string::npos);
  CHECK(line->find("\"id\":\"" + container_id + "\"") != std::string::npos);
  CHECK(line->find("\"pid\":4242") != std::string::npos);
  CHECK(line->find("\"exit_status\":7") != std::string::npos);
  CHECK(line->find("\"exited_at\":\"2001-02-03T04:05:06.000005Z\"") != std::string::npos);
}

TEST_CASE("containerd rejects a Forward with an invalid topic or namespace", "[ttrpc-real]") {
  PrivateContainerd fx;
  shim::test::SyncClient client(fx.ttrpc_address());

  auto bad_topic = client.call(kEventsService, "Forward",
                               forward_exit(fx.ns(), "tasks/exit", "libshim-bad-topic"),
                               namespaced(fx.ns()));
  INFO(bad_topic.status.to_string());
  CHECK(bad_topic.status.code() == shim::Code::kInvalidArgument);
  // containerd 1.6: `envelope topic "tasks/exit": must start with '/': invalid argument`.
  CHECK_THAT(bad_topic.status.message(),
             Catch::Contains("\"tasks/exit\"") && Catch::EndsWith(": invalid argument"));

  auto bad_namespace = client.call(kEventsService, "Forward",
                                   forward_exit("not a namespace!", "/tasks/exit", "libshim-bad-ns"),
                                   namespaced(fx.ns()));
  INFO(bad_namespace.status.to_string());
  CHECK(bad_namespace.status.code() == shim::Code::kInvalidArgument);
  CHECK_THAT(bad_namespace.status.message(),
             Catch::Contains("invalid namespace") && Catch::Contains("not a namespace!"));

  // The connection stays usable after errors.
  auto good = client.call(kEventsService, "Forward",
                          forward_exit(fx.ns(), "/tasks/exit", "libshim-after-errors"),
                          namespaced(fx.ns()));
  CHECK(good.status.ok());

  auto unknown = client.call(kEventsService, "Publish", {}, namespaced(fx.ns()));
  CHECK(unknown.status.code() == shim::Code::kUnimplemented);
  CHECK(unknown.status.message() == "method Publish");
}

TEST_CASE("TtrpcServer answers `ctr shim state` with a typed State handler", "[ttrpc-real]") {
  // ctr shim never talks to containerd: it dials the socket it computes itself.
  PrivateContainerd fx(shim::test::ContainerdOptions{.start = false});
  const std::string id = "libshim-ctr-state";
  // ctr 1.6 (cmd/ctr/commands/shim): /run/containerd/s/<sha256("<address>/<ns>/<id>")>.
  const std::string socket = shim::test::go_shim_socket_path(fx.grpc_address(), fx.ns(), id);
  const std::string socket_dir = std::filesystem::path(socket).parent_path().string();
  if (!std::filesystem::exists(socket_dir)) {
    std::filesystem::create_directories(socket_dir);
    ::chmod(socket_dir.c_str(), 0700);
  }
  UnlinkOnExit unlink_socket{socket};

  std::mutex mutex;
  std::vector<task::StateRequest> seen;
  std::vector<shim::ttrpc::CallInfo> calls;
  shim::ttrpc::Router router;
  router.add("containerd.task.v2.Task", "State",
             shim::ttrpc::typed_handler<task::StateRequest, task::StateResponse>(
                 [&](const shim::ttrpc::CallInfo& call, task::StateRequest request,
                     shim::ttrpc::Reply<task::StateResponse> reply) {
                   {
                     std::lock_guard lock(mutex);
                     seen.push_back(request);
                     calls.push_back(call);
                   }
                   task::StateResponse state;
                   state.set_id(request.id());
                   state.set_bundle("/libshim/bundle/" + request.id());
                   state.set_pid(4242);
                   state.set_status(containerd::v1::types::RUNNING);
                   state.set_stdin("/libshim/fifo/stdin");
                   state.set_stdout("/libshim/fifo/stdout");
                   state.set_stderr("/libshim/fifo/stderr");
                   state.set_terminal(true);
                   state.set_exit_status(0);
                   *state.mutable_exited_at() = timestamp(kGoZeroTimeSeconds, 0);
                   reply(state);
                 }));

  shim::test::IoThread io;
  auto server = std::make_unique<shim::ttrpc::TtrpcServer>(io.executor(), std::move(router));
  shim::Status listening = server->serve_path(socket);
  REQUIRE(listening.ok());

  auto result = fx.ctr({"shim", "--id", id, "state"}, 30s);
  io.run([&server] { server->close(); });
  io.drain();
  server.reset();

  INFO(result.describe());
  REQUIRE(result.ok());
  {
    std::lock_guard lock(mutex);
    REQUIRE(seen.size() == 1);
    CHECK(seen[0].id() == id);
    CHECK(seen[0].exec_id().empty());
    CHECK(calls[0].service == "containerd.task.v2.Task");
    CHECK(calls[0].method == "State");
    CHECK(calls[0].stream_id == 1);  // a fresh Go client starts at 1
  }
  // ctr prints the decoded StateResponse as indented JSON.
  const std::string& out = result.out;
  CHECK(out.find("\"id\": \"" + id + "\"") != std::string::npos);
  CHECK(out.find("\"bundle\": \"/libshim/bundle/" + id + "\"") != std::string::npos);
  CHECK(out.find("\"pid\": 4242") != std::string::npos);
  CHECK(out.find("\"status\": 2") != std::string::npos);
  CHECK(out.find("\"stdin\": \"/libshim/fifo/stdin\"") != std::string::npos);
  CHECK(out.find("\"stdout\": \"/libshim/fifo/stdout\"") != std::string::npos);
  CHECK(out.find("\"stderr\": \"/libshim/fifo/stderr\"") != std::string::npos);
  CHECK(out.find("\"terminal\": true") != std::string::npos);
  // Go's zero time decodes back to year 1.
  CHECK(out.find("\"exited_at\": \"0001-01-01T00:00:00Z\"") != std::string::npos);
}
