// Wire compatibility of the events path and of the shim binary's outputs, against bytes
// captured from containerd 1.6.20 and its Go runc shim (tests/data/wire). The Forward
// requests are the shim's own traffic: a C++ shim must produce these exact frames.
#include <cstdint>
#include <functional>
#include <string>

#include <catch2/catch.hpp>

#include "shim/pb/containerd/events.pb.h"
#include "shim/pb/containerd/events_service.pb.h"
#include "shim/pb/containerd/task_v2.pb.h"
#include "ttrpc/frame.h"
#include "support/containerd_fixture.h"
#include "support/wire_capture.h"
#include "shim/pb/ttrpc.pb.h"

namespace {

namespace events = containerd::events;
namespace events_service = containerd::services::events::ttrpc::v1;
using namespace shim::test;  // the wire_capture helpers
using shim::ttrpc::FrameType;

const std::string kTmp = "/tmp/lcap.dMyRHp";
const std::string kEventsService = "containerd.services.events.ttrpc.v1.Events";
constexpr std::uint32_t kInitPid = 7703;
constexpr std::uint32_t kExecPid = 7753;

struct ForwardCase {
  const char* file;
  std::uint32_t stream_id;
  std::int64_t timeout_nano;
  shim::pb::Timestamp published;
  const char* topic;
  const char* type_url;
  // Builds the event we expect (and would publish).
  std::function<std::string()> event;
  // Field checks on the decoded event bytes.
  std::function<void(const std::string&)> check;
};

// Checks one captured Forward frame field by field, then rebuilds it from scratch.
void check_forward(const ForwardCase& c) {
  INFO(c.file);
  CapturedFrame frame = load_captured_frame(c.file);
  CHECK(frame.type == static_cast<std::uint8_t>(FrameType::kRequest));
  CHECK(frame.flags == 0);
  CHECK(frame.stream_id == c.stream_id);

  auto request = parse_as<::shim::pb::ttrpc::Request>(frame.payload);
  CHECK(request.service() == kEventsService);
  CHECK(request.method() == "Forward");
  CHECK(request.timeout_nano() == c.timeout_nano);
  REQUIRE(request.metadata_size() == 1);
  CHECK(request.metadata(0).key() == "containerd-namespace-ttrpc");
  CHECK(request.metadata(0).value() == "wire");

  auto forward = parse_as<events_service::ForwardRequest>(request.payload());
  REQUIRE(forward.has_envelope());
  const auto& envelope = forward.envelope();
  CHECK(envelope.timestamp().seconds() == c.published.seconds());
  CHECK(envelope.timestamp().nanos() == c.published.nanos());
  CHECK(envelope.namespace_() == "wire");
  CHECK(envelope.topic() == c.topic);
  CHECK(envelope.event().type_url() == c.type_url);  // bare name, no type.googleapis.com/
  c.check(envelope.event().value());

  events_service::ForwardRequest ours;
  auto* our_envelope = ours.mutable_envelope();
  *our_envelope->mutable_timestamp() = c.published;
  our_envelope->set_namespace_("wire");
  our_envelope->set_topic(c.topic);
  our_envelope->mutable_event()->set_type_url(c.type_url);
  our_envelope->mutable_event()->set_value(c.event());
  CHECK(hex(c.event()) == hex(envelope.event().value()));
  CHECK(hex(ours.SerializeAsString()) == hex(request.payload()));

  ::shim::pb::ttrpc::Request our_request;
  our_request.set_service(kEventsService);
  our_request.set_method("Forward");
  our_request.set_payload(ours.SerializeAsString());
  our_request.set_timeout_nano(c.timeout_nano);
  auto* metadata = our_request.add_metadata();
  metadata->set_key("containerd-namespace-ttrpc");
  metadata->set_value("wire");
  std::string our_frame;
  shim::ttrpc::append_frame(our_frame, c.stream_id, FrameType::kRequest,
                            our_request.SerializeAsString());
  CHECK(hex(our_frame) == hex(frame.raw));
}

}  // namespace

TEST_CASE("wire: TaskCreate and TaskStart Forward requests", "[wire]") {
  const std::string bundle = kTmp + "/state/io.containerd.runtime.v2.task/wire/t1";
  const std::string fifo = kTmp + "/fifo/2146089585/t1-";
  auto make_create = [&] {
    events::TaskCreate event;
    event.set_container_id("t1");
    event.set_bundle(bundle);
    event.mutable_io()->set_stdin(fifo + "stdin");
    event.mutable_io()->set_stdout(fifo + "stdout");
    event.mutable_io()->set_stderr(fifo + "stderr");
    event.set_pid(kInitPid);
    return event.SerializeAsString();
  };
  check_forward({"events_forward_create_request", 1, 4999988899, timestamp(1795952570, 752189432),
                 "/tasks/create", "containerd.events.TaskCreate", make_create,
                 [&](const std::string& bytes) {
                   auto event = parse_as<events::TaskCreate>(bytes);
                   CHECK(event.container_id() == "t1");
                   CHECK(event.bundle() == bundle);
                   CHECK(event.rootfs_size() == 0);
                   CHECK(event.io().stdin() == fifo + "stdin");
                   CHECK(event.io().stdout() == fifo + "stdout");
                   CHECK(event.io().stderr() == fifo + "stderr");
                   CHECK_FALSE(event.io().terminal());
                   CHECK(event.checkpoint().empty());
                   CHECK(event.pid() == kInitPid);
                 }});

  auto make_start = [] {
    events::TaskStart event;
    event.set_container_id("t1");
    event.set_pid(kInitPid);
    return event.SerializeAsString();
  };
  check_forward({"events_forward_start_request", 3, 4999991701, timestamp(1795952570, 761509956),
                 "/tasks/start", "containerd.events.TaskStart", make_start,
                 [](const std::string& bytes) {
                   auto event = parse_as<events::TaskStart>(bytes);
                   CHECK(event.container_id() == "t1");
                   CHECK(event.pid() == kInitPid);
                 }});
}

TEST_CASE("wire: exec events Forward requests", "[wire]") {
  auto make_added = [] {
    events::TaskExecAdded event;
    event.set_container_id("t1");
    event.set_exec_id("e1");
    return event.SerializeAsString();
  };
  check_forward({"events_forward_exec_added_request", 5, 4999990396,
                 timestamp(1795952571, 300202683), "/tasks/exec-added",
                 "containerd.events.TaskExecAdded", make_added, [](const std::string& bytes) {
                   auto event = parse_as<events::TaskExecAdded>(bytes);
                   CHECK(event.container_id() == "t1");
                   CHECK(event.exec_id() == "e1");
                 }});

  auto make_started = [] {
    events::TaskExecStarted event;
    event.set_container_id("t1");
    event.set_exec_id("e1");
    event.set_pid(kExecPid);
    return event.SerializeAsString();
  };
  check_forward({"events_forward_exec_started_request", 7, 4999991604,
                 timestamp(1795952571, 325681909), "/tasks/exec-started",
                 "containerd.events.TaskExecStarted", make_started, [](const std::string& bytes) {
                   auto event = parse_as<events::TaskExecStarted>(bytes);
                   CHECK(event.container_id() == "t1");
                   CHECK(event.exec_id() == "e1");
                   CHECK(event.pid() == kExecPid);
                 }});
}

TEST_CASE("wire: TaskExit (exec and init) and TaskDelete Forward requests", "[wire]") {
  struct ExitCase {
    const char* file;
    std::uint32_t stream;
    std::int64_t timeout;
    shim::pb::Timestamp published;
    const char* id;
    std::uint32_t pid;
    std::uint32_t status;
    shim::pb::Timestamp exited_at;
  };
  const ExitCase exits[] = {
      {"events_forward_exit_exec_request", 9, 4999995114, timestamp(1795952571, 326460064), "e1",
       kExecPid, 3, timestamp(1795952571, 325659803)},
      // For init, `id` repeats the container id.
      {"events_forward_exit_init_request", 11, 4999992059, timestamp(1795952571, 369687587), "t1",
       kInitPid, 137, timestamp(1795952571, 369662617)},
  };
  for (const auto& e : exits) {
    auto make = [&e] {
      events::TaskExit event;
      event.set_container_id("t1");
      event.set_id(e.id);
      event.set_pid(e.pid);
      event.set_exit_status(e.status);
      *event.mutable_exited_at() = e.exited_at;
      return event.SerializeAsString();
    };
    check_forward({e.file, e.stream, e.timeout, e.published, "/tasks/exit",
                   "containerd.events.TaskExit", make, [&e](const std::string& bytes) {
                     auto event = parse_as<events::TaskExit>(bytes);
                     CHECK(event.container_id() == "t1");
                     CHECK(event.id() == e.id);
                     CHECK(event.pid() == e.pid);
                     CHECK(event.exit_status() == e.status);
                     CHECK(event.exited_at().seconds() == e.exited_at.seconds());
                     CHECK(event.exited_at().nanos() == e.exited_at.nanos());
                   }});
  }

  auto make_delete = [] {
    events::TaskDelete event;
    event.set_container_id("t1");
    event.set_pid(kInitPid);
    event.set_exit_status(137);
    *event.mutable_exited_at() = timestamp(1795952571, 369662617);
    return event.SerializeAsString();
  };
  check_forward({"events_forward_delete_request", 13, 4999992444, timestamp(1795952571, 894716851),
                 "/tasks/delete", "containerd.events.TaskDelete", make_delete,
                 [](const std::string& bytes) {
                   auto event = parse_as<events::TaskDelete>(bytes);
                   CHECK(event.container_id() == "t1");
                   CHECK(event.pid() == kInitPid);
                   CHECK(event.exit_status() == 137);
                   CHECK(event.exited_at().seconds() == 1795952571);
                   CHECK(event.id().empty());  // init delete leaves `id` empty
                 }});
}

TEST_CASE("wire: containerd answers Forward with a bare header", "[wire]") {
  CapturedFrame frame = load_captured_frame("events_forward_response");
  CHECK(frame.raw.size() == 10);
  CHECK(frame.type == static_cast<std::uint8_t>(FrameType::kResponse));
  CHECK(frame.stream_id == 1);
  auto response = parse_as<::shim::pb::ttrpc::Response>(frame.payload);
  CHECK_FALSE(response.has_status());
  CHECK(response.payload().empty());
  shim::ttrpc::FrameHeader header = shim::ttrpc::decode_header(frame.raw.data());
  CHECK(header == shim::ttrpc::FrameHeader{0, 1, 2, 0});
}

TEST_CASE("wire: the shim binary's start and delete outputs", "[wire]") {
  const std::string address = shim::test::load_wire_hex("shim_start_stdout");
  CHECK(address.size() == 89);
  CHECK(address.back() != '\n');  // no trailing newline
  // The Go shim's socket: sha256 of "<grpc address>/<namespace>/<id>".
  CHECK(address == "unix://" + shim::test::go_shim_socket_path(kTmp + "/c.sock", "wire", "t1"));

  const std::string deleted = shim::test::load_wire_hex("shim_delete_stdout");
  auto response = parse_as<containerd::task::v2::DeleteResponse>(deleted);
  CHECK(response.pid() == kInitPid);
  CHECK(response.exit_status() == 137);
  CHECK(response.exited_at().seconds() == 1795952571);
  CHECK(response.exited_at().nanos() == 904761103);
  containerd::task::v2::DeleteResponse ours;
  ours.set_pid(kInitPid);
  ours.set_exit_status(137);
  *ours.mutable_exited_at() = timestamp(1795952571, 904761103);
  CHECK(hex(ours.SerializeAsString()) == hex(deleted));
}
