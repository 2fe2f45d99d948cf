// Wire compatibility with containerd 1.6.20 and its Go runc shim, checked against real
// captured task-API frames (tests/data/wire, made by tests/tools/capture_go_shim_wire.sh).
// Every frame is decoded with our generated classes, checked field by field, and then
// rebuilt from scratch with our classes and libshim's frame writer: the bytes must be
// identical to what the Go peers sent.
#include <cstdint>
#include <string>

#include <catch2/catch.hpp>

#include "shim/pb/runc/runc_options.pb.h"
#include "shim/pb/containerd/task_types.pb.h"
#include "shim/pb/containerd/task_v2.pb.h"
#include "shim/status.h"
#include "ttrpc/frame.h"
#include "support/wire_capture.h"
#include "shim/pb/ttrpc.pb.h"

namespace {

namespace task = containerd::task::v2;
namespace types = containerd::v1::types;
using namespace shim::test;  // the wire_capture helpers
using shim::ttrpc::FrameType;

// Values of the committed capture (see tests/data/wire/README.md).
constexpr std::int64_t kGoZeroTimeSeconds = -62135596800;  // 0001-01-01T00:00:00Z
constexpr std::uint32_t kInitPid = 7703;
constexpr std::uint32_t kExecPid = 7753;
constexpr std::uint32_t kShimPid = 7634;
const std::string kTmp = "/tmp/lcap.dMyRHp";
const std::string kBundle = kTmp + "/state/io.containerd.runtime.v2.task/wire/t1";
const std::string kInitFifo = kTmp + "/fifo/2146089585/t1-";
const std::string kExecFifo = kTmp + "/fifo/3742492948/e1-";
const std::string kTaskService = "containerd.task.v2.Task";

::shim::pb::ttrpc::Request captured_request(const CapturedFrame& frame, std::uint32_t stream_id,
                                  const std::string& method) {
  CHECK(frame.type == static_cast<std::uint8_t>(FrameType::kRequest));
  CHECK(frame.flags == 0);
  CHECK(frame.stream_id == stream_id);
  auto request = parse_as<::shim::pb::ttrpc::Request>(frame.payload);
  CHECK(request.service() == kTaskService);
  CHECK(request.method() == method);
  CHECK(request.metadata_size() == 0);  // containerd 1.6 sends none to shims
  return request;
}

::shim::pb::ttrpc::Response captured_response(const CapturedFrame& frame, std::uint32_t stream_id) {
  CHECK(frame.type == static_cast<std::uint8_t>(FrameType::kResponse));
  CHECK(frame.flags == 0);
  CHECK(frame.stream_id == stream_id);
  auto response = parse_as<::shim::pb::ttrpc::Response>(frame.payload);
  CHECK_FALSE(response.has_status());  // success: status omitted
  return response;
}

std::string our_frame(std::uint32_t stream_id, FrameType type, const std::string& message) {
  std::string out;
  shim::ttrpc::append_frame(out, stream_id, type, message);
  return out;
}

// containerd's Request rebuilt by us must match the captured frame byte for byte.
void check_request_bytes(const CapturedFrame& frame, const std::string& method,
                         const google::protobuf::MessageLite& inner,
                         std::int64_t timeout_nano = 0) {
  ::shim::pb::ttrpc::Request ours;
  ours.set_service(kTaskService);
  ours.set_method(method);
  ours.set_payload(inner.SerializeAsString());
  ours.set_timeout_nano(timeout_nano);
  CHECK(hex(inner.SerializeAsString()) == hex(parse_as<::shim::pb::ttrpc::Request>(frame.payload).payload()));
  CHECK(hex(ours.SerializeAsString()) == hex(frame.payload));
  CHECK(hex(our_frame(frame.stream_id, FrameType::kRequest, ours.SerializeAsString())) ==
        hex(frame.raw));
}

// The shim's successful Response rebuilt by us must match the captured frame.
void check_response_bytes(const CapturedFrame& frame, const google::protobuf::MessageLite& reply) {
  ::shim::pb::ttrpc::Response ours;
  ours.set_payload(reply.SerializeAsString());
  CHECK(hex(reply.SerializeAsString()) == hex(parse_as<::shim::pb::ttrpc::Response>(frame.payload).payload()));
  CHECK(hex(ours.SerializeAsString()) == hex(frame.payload));
  CHECK(hex(our_frame(frame.stream_id, FrameType::kResponse, ours.SerializeAsString())) ==
        hex(frame.raw));
}

// Kill, Exec, CloseIO, Shutdown reply google.protobuf.Empty: a bare 10-byte header.
void check_empty_response(const std::string& name, std::uint32_t stream_id) {
  auto frame = load_captured_frame(name);
  CHECK(frame.raw.size() == 10);
  CHECK(frame.length == 0);
  auto response = captured_response(frame, stream_id);
  CHECK(response.payload().empty());
  CHECK(hex(our_frame(stream_id, FrameType::kResponse, ::shim::pb::ttrpc::Response().SerializeAsString())) ==
        hex(frame.raw));
}

task::StateResponse state_of(const std::string& id, std::uint32_t pid, types::Status status,
                             const std::string& fifo) {
  task::StateResponse state;
  state.set_id(id);
  state.set_bundle(kBundle);
  state.set_pid(pid);
  state.set_status(status);
  state.set_stdin(fifo + "stdin");
  state.set_stdout(fifo + "stdout");
  state.set_stderr(fifo + "stderr");
  return state;
}

}  // namespace

TEST_CASE("wire: State of a running init carries the Go zero time", "[wire]") {
  auto request_frame = load_captured_frame("task_state_init_request");
  auto request = captured_request(request_frame, 7, "State");
  CHECK(request.timeout_nano() == 0);
  auto state_request = parse_as<task::StateRequest>(request.payload());
  CHECK(state_request.id() == "t1");
  CHECK(state_request.exec_id().empty());
  check_request_bytes(request_frame, "State", state_request);

  auto frame = load_captured_frame("task_state_init_response_running");
  CHECK(frame.length == 0xda);
  auto state = parse_as<task::StateResponse>(captured_response(frame, 7).payload());
  CHECK(state.id() == "t1");
  CHECK(state.bundle() == kBundle);
  CHECK(state.pid() == kInitPid);
  CHECK(state.status() == types::RUNNING);
  CHECK(state.stdin() == kInitFifo + "stdin");
  CHECK(state.stdout() == kInitFifo + "stdout");
  CHECK(state.stderr() == kInitFifo + "stderr");
  CHECK_FALSE(state.terminal());
  CHECK(state.exit_status() == 0);
  REQUIRE(state.has_exited_at());
  CHECK(state.exited_at().seconds() == kGoZeroTimeSeconds);
  CHECK(state.exited_at().nanos() == 0);
  CHECK(state.exec_id().empty());  // the Go shim leaves field 11 empty

  auto ours = state_of("t1", kInitPid, types::RUNNING, kInitFifo);
  *ours.mutable_exited_at() = timestamp(kGoZeroTimeSeconds, 0);
  check_response_bytes(frame, ours);
}

TEST_CASE("wire: State of a stopped init and of a created exec", "[wire]") {
  auto stopped_frame = load_captured_frame("task_state_init_response_stopped");
  auto stopped = parse_as<task::StateResponse>(captured_response(stopped_frame, 49).payload());
  CHECK(stopped.status() == types::STOPPED);
  CHECK(stopped.pid() == kInitPid);
  CHECK(stopped.exit_status() == 137);
  CHECK(stopped.exited_at().seconds() == 1795952571);
  CHECK(stopped.exited_at().nanos() == 369662617);
  auto ours_stopped = state_of("t1", kInitPid, types::STOPPED, kInitFifo);
  ours_stopped.set_exit_status(137);
  *ours_stopped.mutable_exited_at() = timestamp(1795952571, 369662617);
  check_response_bytes(stopped_frame, ours_stopped);

  auto request_frame = load_captured_frame("task_state_exec_request");
  auto request = parse_as<task::StateRequest>(captured_request(request_frame, 19, "State").payload());
  CHECK(request.id() == "t1");
  CHECK(request.exec_id() == "e1");
  check_request_bytes(request_frame, "State", request);

  // Exec added but not started yet: pid 0 and status CREATED are omitted or set as such.
  auto exec_frame = load_captured_frame("task_state_exec_response");
  auto exec = parse_as<task::StateResponse>(captured_response(exec_frame, 21).payload());
  CHECK(exec.id() == "e1");
  CHECK(exec.pid() == 0);
  CHECK(exec.status() == types::CREATED);
  CHECK(exec.bundle() == kBundle);
  CHECK(exec.exited_at().seconds() == kGoZeroTimeSeconds);
  auto ours_exec = state_of("e1", 0, types::CREATED, kExecFifo);
  *ours_exec.mutable_exited_at() = timestamp(kGoZeroTimeSeconds, 0);
  check_response_bytes(exec_frame, ours_exec);
}

TEST_CASE("wire: an error status for an unknown exec", "[wire]") {
  auto request_frame = load_captured_frame("task_state_exec_unknown_request");
  auto request = parse_as<task::StateRequest>(captured_request(request_frame, 43, "State").payload());
  CHECK(request.exec_id() == "nope");
  check_request_bytes(request_frame, "State", request);

  auto frame = load_captured_frame("task_state_exec_unknown_error_response");
  CHECK(frame.type == static_cast<std::uint8_t>(FrameType::kResponse));
  CHECK(frame.stream_id == 43);
  auto response = parse_as<::shim::pb::ttrpc::Response>(frame.payload);
  REQUIRE(response.has_status());
  CHECK(response.status().code() == 5);
  CHECK(response.status().message() == "process does not exist nope: not found");
  CHECK(response.status().details_size() == 0);
  CHECK(response.payload().empty());

  // libshim's NotFound helper produces the same status text.
  shim::Status status = shim::not_found("process does not exist nope");
  ::shim::pb::ttrpc::Response ours;
  ours.mutable_status()->set_code(static_cast<int>(status.code()));
  ours.mutable_status()->set_message(status.message());
  CHECK(hex(our_frame(43, FrameType::kResponse, ours.SerializeAsString())) == hex(frame.raw));
}

TEST_CASE("wire: Create with runc options and its pid", "[wire]") {
  auto frame = load_captured_frame("task_create_request");
  auto request = captured_request(frame, 1, "Create");
  CHECK(request.timeout_nano() == 0);
  auto create = parse_as<task::CreateTaskRequest>(request.payload());
  CHECK(create.id() == "t1");
  CHECK(create.bundle() == kBundle);
  CHECK(create.rootfs_size() == 0);  // ctr --rootfs: the spec's root.path is used as is
  CHECK_FALSE(create.terminal());
  CHECK(create.stdin() == kInitFifo + "stdin");
  CHECK(create.stdout() == kInitFifo + "stdout");
  CHECK(create.stderr() == kInitFifo + "stderr");
  CHECK(create.checkpoint().empty());
  REQUIRE(create.has_options());
  CHECK(create.options().type_url() == "containerd.runc.v1.Options");
  auto options = parse_as<containerd::runc::v1::Options>(create.options().value());
  CHECK(options.root() == kTmp + "/runc");
  CHECK(options.binary_name().empty());
  CHECK_FALSE(options.systemd_cgroup());

  task::CreateTaskRequest ours;
  ours.set_id("t1");
  ours.set_bundle(kBundle);
  ours.set_stdin(kInitFifo + "stdin");
  ours.set_stdout(kInitFifo + "stdout");
  ours.set_stderr(kInitFifo + "stderr");
  containerd::runc::v1::Options our_options;
  our_options.set_root(kTmp + "/runc");
  ours.mutable_options()->set_type_url("containerd.runc.v1.Options");
  ours.mutable_options()->set_value(our_options.SerializeAsString());
  check_request_bytes(frame, "Create", ours);

  auto reply_frame = load_captured_frame("task_create_response");
  auto reply = parse_as<task::CreateTaskResponse>(captured_response(reply_frame, 1).payload());
  CHECK(reply.pid() == kInitPid);
  task::CreateTaskResponse our_reply;
  our_reply.set_pid(kInitPid);
  check_response_bytes(reply_frame, our_reply);
}

TEST_CASE("wire: Connect Start and Pids", "[wire]") {
  auto connect_frame = load_captured_frame("task_connect_request");
  auto connect = parse_as<task::ConnectRequest>(captured_request(connect_frame, 3, "Connect").payload());
  CHECK(connect.id() == "t1");
  check_request_bytes(connect_frame, "Connect", connect);
  auto connected_frame = load_captured_frame("task_connect_response");
  auto connected = parse_as<task::ConnectResponse>(captured_response(connected_frame, 3).payload());
  CHECK(connected.shim_pid() == kShimPid);
  CHECK(connected.task_pid() == kInitPid);
  CHECK(connected.version().empty());
  task::ConnectResponse our_connected;
  our_connected.set_shim_pid(kShimPid);
  our_connected.set_task_pid(kInitPid);
  check_response_bytes(connected_frame, our_connected);

  struct StartCase {
    const char* name;
    std::uint32_t stream;
    const char* exec_id;
    std::uint32_t pid;
  };
  for (const StartCase& c : {StartCase{"task_start_init", 5, "", kInitPid},
                             StartCase{"task_start_exec", 29, "e1", kExecPid}}) {
    INFO(c.name);
    auto frame = load_captured_frame(std::string(c.name) + "_request");
    auto start = parse_as<task::StartRequest>(captured_request(frame, c.stream, "Start").payload());
    CHECK(start.id() == "t1");
    CHECK(start.exec_id() == c.exec_id);
    task::StartRequest ours;
    ours.set_id("t1");
    ours.set_exec_id(c.exec_id);
    check_request_bytes(frame, "Start", ours);
    auto reply_frame = load_captured_frame(std::string(c.name) + "_response");
    auto reply = parse_as<task::StartResponse>(captured_response(reply_frame, c.stream).payload());
    CHECK(reply.pid() == c.pid);
    task::StartResponse our_reply;
    our_reply.set_pid(c.pid);
    check_response_bytes(reply_frame, our_reply);
  }

  auto pids_frame = load_captured_frame("task_pids_request");
  auto pids = parse_as<task::PidsRequest>(captured_request(pids_frame, 13, "Pids").payload());
  CHECK(pids.id() == "t1");
  check_request_bytes(pids_frame, "Pids", pids);
  auto listed_frame = load_captured_frame("task_pids_response");
  auto listed = parse_as<task::PidsResponse>(captured_response(listed_frame, 13).payload());
  REQUIRE(listed.processes_size() == 1);
  CHECK(listed.processes(0).pid() == kInitPid);
  CHECK_FALSE(listed.processes(0).has_info());  // init: no ProcessDetails
  task::PidsResponse our_listed;
  our_listed.add_processes()->set_pid(kInitPid);
  check_response_bytes(listed_frame, our_listed);
}

TEST_CASE("wire: Exec with a JSON process spec then Kill CloseIO Shutdown", "[wire]") {
  auto frame = load_captured_frame("task_exec_request");
  auto exec = parse_as<task::ExecProcessRequest>(captured_request(frame, 17, "Exec").payload());
  CHECK(exec.id() == "t1");
  CHECK(exec.exec_id() == "e1");
  CHECK_FALSE(exec.terminal());
  CHECK(exec.stdin() == kExecFifo + "stdin");
  CHECK(exec.stdout() == kExecFifo + "stdout");
  CHECK(exec.stderr() == kExecFifo + "stderr");
  CHECK(exec.spec().type_url() == "types.containerd.io/opencontainers/runtime-spec/1/Process");
  const std::string& spec = exec.spec().value();
  CHECK(spec.rfind("{\"user\":{\"uid\":0,\"gid\":0},\"args\":[\"/bin/sh\",\"-c\",\"echo hi; exit 3\"]", 0) == 0);
  task::ExecProcessRequest ours;
  ours.set_id("t1");
  ours.set_exec_id("e1");
  ours.set_stdin(kExecFifo + "stdin");
  ours.set_stdout(kExecFifo + "stdout");
  ours.set_stderr(kExecFifo + "stderr");
  ours.mutable_spec()->set_type_url(exec.spec().type_url());
  ours.mutable_spec()->set_value(spec);
  check_request_bytes(frame, "Exec", ours);
  check_empty_response("task_exec_response", 17);

  auto kill_frame = load_captured_frame("task_kill_request");
  auto kill = parse_as<task::KillRequest>(captured_request(kill_frame, 47, "Kill").payload());
  CHECK(kill.id() == "t1");
  CHECK(kill.exec_id().empty());
  CHECK(kill.signal() == 9);
  CHECK_FALSE(kill.all());
  task::KillRequest our_kill;
  our_kill.set_id("t1");
  our_kill.set_signal(9);
  check_request_bytes(kill_frame, "Kill", our_kill);
  check_empty_response("task_kill_response", 47);

  auto close_frame = load_captured_frame("task_closeio_request");
  auto close = parse_as<task::CloseIORequest>(captured_request(close_frame, 27, "CloseIO").payload());
  CHECK(close.id() == "t1");
  CHECK(close.exec_id() == "e1");
  CHECK(close.stdin());
  task::CloseIORequest our_close;
  our_close.set_id("t1");
  our_close.set_exec_id("e1");
  our_close.set_stdin(true);
  check_request_bytes(close_frame, "CloseIO", our_close);
  check_empty_response("task_closeio_response", 27);

  auto shutdown_frame = load_captured_frame("task_shutdown_request");
  auto shutdown_request = captured_request(shutdown_frame, 57, "Shutdown");
  CHECK(shutdown_request.timeout_nano() == 2999985019);  // containerd's 3 s shutdown timeout
  auto shutdown = parse_as<task::ShutdownRequest>(shutdown_request.payload());
  CHECK(shutdown.id() == "t1");
  CHECK_FALSE(shutdown.now());
  check_request_bytes(shutdown_frame, "Shutdown", shutdown, 2999985019);
  check_empty_response("task_shutdown_response", 57);
}

TEST_CASE("wire: Wait and Delete of an exec and of an init", "[wire]") {
  struct ExitCase {
    const char* method;
    const char* name;
    std::uint32_t stream;
    const char* id;
    const char* exec_id;
    std::uint32_t pid;  // Delete only
    std::uint32_t exit_status;
    shim::pb::Timestamp exited_at;
  };
  const ExitCase cases[] = {
      {"Wait", "task_wait_exec", 23, "t1", "e1", 0, 3, timestamp(1795952571, 325659803)},
      {"Wait", "task_wait_init", 9, "t2", "", 0, 3, timestamp(1795952572, 154409513)},
      {"Delete", "task_delete_exec", 39, "t1", "e1", kExecPid, 3, timestamp(1795952571, 325659803)},
      {"Delete", "task_delete_init", 55, "t1", "", kInitPid, 137,
       timestamp(1795952571, 369662617)},
  };
  for (const auto& c : cases) {
    INFO(c.name);
    const bool wait = std::string(c.method) == "Wait";
    auto frame = load_captured_frame(std::string(c.name) + "_request");
    auto request = captured_request(frame, c.stream, c.method);
    if (wait) {
      auto decoded = parse_as<task::WaitRequest>(request.payload());
      CHECK(decoded.id() == c.id);
      CHECK(decoded.exec_id() == c.exec_id);
      task::WaitRequest ours;
      ours.set_id(c.id);
      ours.set_exec_id(c.exec_id);
      check_request_bytes(frame, c.method, ours);
    } else {
      auto decoded = parse_as<task::DeleteRequest>(request.payload());
      CHECK(decoded.id() == c.id);
      CHECK(decoded.exec_id() == c.exec_id);
      task::DeleteRequest ours;
      ours.set_id(c.id);
      ours.set_exec_id(c.exec_id);
      check_request_bytes(frame, c.method, ours);
    }

    auto reply_frame = load_captured_frame(std::string(c.name) + "_response");
    auto reply = captured_response(reply_frame, c.stream);
    if (wait) {
      auto decoded = parse_as<task::WaitResponse>(reply.payload());
      CHECK(decoded.exit_status() == c.exit_status);
      CHECK(decoded.exited_at().seconds() == c.exited_at.seconds());
      CHECK(decoded.exited_at().nanos() == c.exited_at.nanos());
      task::WaitResponse ours;
      ours.set_exit_status(c.exit_status);
      *ours.mutable_exited_at() = c.exited_at;
      check_response_bytes(reply_frame, ours);
    } else {
      auto decoded = parse_as<task::DeleteResponse>(reply.payload());
      CHECK(decoded.pid() == c.pid);
      CHECK(decoded.exit_status() == c.exit_status);
      CHECK(decoded.exited_at().seconds() == c.exited_at.seconds());
      CHECK(decoded.exited_at().nanos() == c.exited_at.nanos());
      task::DeleteResponse ours;
      ours.set_pid(c.pid);
      ours.set_exit_status(c.exit_status);
      *ours.mutable_exited_at() = c.exited_at;
      check_response_bytes(reply_frame, ours);
    }
  }
}
