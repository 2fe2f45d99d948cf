// TtrpcClient against a server played by hand over a raw unix socket.
#include "shim/ttrpc/client.h"

#include <linux/vm_sockets.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include <catch2/catch.hpp>
#include <fmt/format.h>

#include "support/ttrpc_harness.h"
#include "support/skip.h"
#include "support/unix_stream.h"
#include "ttrpc/dial_address.h"
#include "shim/pb/ttrpc.pb.h"

namespace shim::ttrpc {
namespace {

using namespace std::chrono_literals;
using test::CallResult;
using test::read_frame;
using test::SyncClient;
using test::UnixStream;

struct HandPlayedServer {
  test::TempDir dir{"ttrpc-"};
  std::string path = dir.sub("s.sock");
  test::UnixStreamListener listener{path};
};

::shim::pb::ttrpc::Request read_request(UnixStream& stream, std::uint32_t expected_id) {
  auto frame = read_frame(stream);
  REQUIRE(frame);
  CHECK(frame->header.stream_id == expected_id);
  CHECK(frame->header.type == 1);
  CHECK(frame->header.flags == 0);
  ::shim::pb::ttrpc::Request request;
  REQUIRE(request.ParseFromString(frame->payload));
  return request;
}

std::string response_bytes(std::uint32_t id, const Status& status, const std::string& payload) {
  ::shim::pb::ttrpc::Response response;
  if (!status.ok()) {
    response.mutable_status()->set_code(static_cast<int>(status.code()));
    response.mutable_status()->set_message(status.message());
  }
  response.set_payload(payload);
  std::string frame;
  append_frame(frame, id, FrameType::kResponse, response.SerializeAsString());
  return frame;
}

TEST_CASE("client sends odd stream ids from 1, with timeout and metadata", "[ttrpc]") {
  HandPlayedServer server;
  SyncClient client("unix://" + server.path);
  auto peer = server.listener.accept();
  REQUIRE(peer);

  CallOptions options;
  options.timeout = 2s;
  options.metadata = {{"containerd-namespace-ttrpc", "default"}, {"k", "v"}};
  auto first = client.call_async("containerd.task.v2.Task", "State", "\x0a\x02t1", options);
  auto second = client.call_async("svc", "M", "");
  auto third = client.call_async("svc", "M", "3");

  auto request = read_request(*peer, 1);
  CHECK(request.service() == "containerd.task.v2.Task");
  CHECK(request.method() == "State");
  CHECK(request.payload() == "\x0a\x02t1");
  CHECK(request.timeout_nano() == 2'000'000'000);
  REQUIRE(request.metadata_size() == 2);
  CHECK(request.metadata(0).key() == "containerd-namespace-ttrpc");
  CHECK(request.metadata(0).value() == "default");
  CHECK(request.metadata(1).key() == "k");
  CHECK(request.metadata(1).value() == "v");

  auto plain = read_request(*peer, 3);
  CHECK(plain.timeout_nano() == 0);
  CHECK(plain.metadata_size() == 0);
  CHECK(plain.payload().empty());
  CHECK(read_request(*peer, 5).payload() == "3");

  // Answers out of order, one of them an error status.
  REQUIRE(peer->write_all(response_bytes(5, Status(), "three") +
                          response_bytes(1, Status(Code::kNotFound, "container t1: not found"), "") +
                          response_bytes(3, Status(), "")));
  auto third_result = third.get();
  CHECK(third_result.status.ok());
  CHECK(third_result.payload == "three");
  CHECK(first.get().status == Status(Code::kNotFound, "container t1: not found"));
  auto second_result = second.get();
  CHECK(second_result.status.ok());
  CHECK(second_result.payload.empty());
}

TEST_CASE("client request bytes match the protobuf encoding", "[ttrpc]") {
  HandPlayedServer server;
  SyncClient client(server.path);
  auto peer = server.listener.accept();
  REQUIRE(peer);
  CallOptions options;
  options.timeout = 5s;
  options.metadata = {{"a", "b"}, {"", ""}};
  auto pending = client.call_async("s.S", "M", std::string("\0p", 2), options);
  auto frame = read_frame(*peer);
  REQUIRE(frame);
  ::shim::pb::ttrpc::Request expected;
  expected.set_service("s.S");
  expected.set_method("M");
  expected.set_payload(std::string("\0p", 2));
  expected.set_timeout_nano(5'000'000'000);
  auto* pair = expected.add_metadata();
  pair->set_key("a");
  pair->set_value("b");
  expected.add_metadata();
  CHECK(frame->payload == expected.SerializeAsString());
}

TEST_CASE("client: peer going away fails pending and later calls", "[ttrpc]") {
  HandPlayedServer server;
  SyncClient client(server.path);
  std::promise<Status> closed;
  client.client().on_close([&closed](Status status) { closed.set_value(status); });
  auto peer = server.listener.accept();
  REQUIRE(peer);
  CHECK(client.client().connected());

  auto pending = client.call_async("svc", "M", "x");
  read_request(*peer, 1);
  REQUIRE(peer->write_all(std::string("\0\0\0\x10\0\0", 6)));  // half a header, then gone
  peer->close();

  CHECK(pending.get().status == Status(Code::kUnavailable, "ttrpc: closed"));
  auto close_future = closed.get_future();
  REQUIRE(close_future.wait_for(5s) == std::future_status::ready);
  CHECK(close_future.get() == Status(Code::kUnavailable, "ttrpc: closed"));
  CHECK_FALSE(client.client().connected());
  CHECK(client.call("svc", "M").status == Status(Code::kUnavailable, "ttrpc: closed"));

  std::promise<Status> late;
  client.client().on_close([&late](Status status) { late.set_value(status); });
  CHECK(late.get_future().wait_for(5s) == std::future_status::ready);
}

TEST_CASE("client deadline fails the call and ignores the late response", "[ttrpc]") {
  HandPlayedServer server;
  SyncClient client(server.path);
  auto peer = server.listener.accept();
  REQUIRE(peer);
  CallOptions options;
  options.timeout = 30ms;
  auto result = client.call("svc", "Slow", "", options);
  CHECK(result.status == Status(Code::kDeadlineExceeded, "context deadline exceeded"));
  CHECK(read_request(*peer, 1).timeout_nano() == 30'000'000);

  auto next = client.call_async("svc", "Fast", "");
  read_request(*peer, 3);
  REQUIRE(peer->write_all(response_bytes(1, Status(), "late") + response_bytes(3, Status(), "ok")));
  auto next_result = next.get();
  CHECK(next_result.status.ok());
  CHECK(next_result.payload == "ok");

  options.timeout = 0ns;
  CHECK(client.call("svc", "M", "", options).status.code() == Code::kDeadlineExceeded);
}

TEST_CASE("client ignores frames it did not ask for and survives oversized ones", "[ttrpc]") {
  HandPlayedServer server;
  SyncClient client(server.path);
  auto peer = server.listener.accept();
  REQUIRE(peer);
  auto big = client.call_async("svc", "Big", "");
  auto small = client.call_async("svc", "Small", "");
  read_request(*peer, 1);
  read_request(*peer, 3);

  std::string noise;
  append_frame(noise, 1, FrameType::kData, "d");
  append_frame(noise, 1, FrameType::kRequest, "r");
  append_frame(noise, 77, FrameType::kResponse, "");  // nobody waits for 77
  append_frame(noise, 1, FrameType::kResponse, std::string(kMaxMessageSize + 1, 'x'));
  REQUIRE(peer->write_all(noise + response_bytes(3, Status(), "small")));
  CHECK(big.get().status ==
        Status(Code::kResourceExhausted, "message length 4194305 exceed maximum message size of 4194304"));
  CHECK(small.get().payload == "small");
}

TEST_CASE("client connect errors and addresses", "[ttrpc]") {
  std::string path;
  CHECK(unix_socket_path("unix:///run/x.sock", &path).ok());
  CHECK(path == "/run/x.sock");
  CHECK(unix_socket_path("/run/y.sock", &path).ok());
  CHECK(path == "/run/y.sock");
  CHECK(unix_socket_path("tcp://1.2.3.4:5", &path).code() == Code::kInvalidArgument);
  CHECK(unix_socket_path("", &path).code() == Code::kInvalidArgument);
  CHECK(unix_socket_path("/" + std::string(200, 'a'), &path).code() == Code::kInvalidArgument);

  test::IoThread io;
  test::TempDir dir("ttrpc-");
  auto client = TtrpcClient::create(io.executor());
  std::promise<CallResult> early;
  client->call("s", "m", "", {}, [&early](Status status, std::string) {
    early.set_value({status, {}});
  });
  CHECK(early.get_future().get().status == Status(Code::kUnavailable, "ttrpc: not connected"));

  std::promise<Status> connected;
  client->connect(dir.sub("missing.sock"), [&connected](Status status) { connected.set_value(status); });
  Status status = connected.get_future().get();
  CHECK(status.code() == Code::kUnavailable);
  CHECK_THAT(status.message(), Catch::Contains("missing.sock"));
  CHECK_FALSE(client->connected());
  client.reset();
  io.drain();
}

TEST_CASE("dropping the client closes the connection", "[ttrpc]") {
  HandPlayedServer server;
  test::IoThread io;
  auto client = TtrpcClient::create(io.executor());
  std::promise<Status> connected;
  client->connect(server.path, [&connected](Status status) { connected.set_value(status); });
  REQUIRE(connected.get_future().get().ok());
  auto peer = server.listener.accept();
  REQUIRE(peer);
  std::promise<Status> call_status;
  client->call("s", "m", "", {}, [&call_status](Status status, std::string) {
    call_status.set_value(status);
  });
  read_request(*peer, 1);
  client.reset();
  CHECK(call_status.get_future().get() == Status(Code::kUnavailable, "ttrpc: closed"));
  CHECK(peer->wait_closed());
}

}  // namespace
}  // namespace shim::ttrpc

// ---- dial addresses and vsock ----------------------------------------------------------

namespace shim::ttrpc {
namespace {

TEST_CASE("dial addresses: unix paths and vsock CID:PORT", "[ttrpc]") {
  DialAddress unix_address;
  REQUIRE(parse_dial_address("unix:///run/x.sock", &unix_address).ok());
  CHECK(unix_address.family == AF_UNIX);
  CHECK(unix_address.description == "unix /run/x.sock");
  REQUIRE(parse_dial_address("/run/y.sock", &unix_address).ok());
  CHECK(unix_address.description == "unix /run/y.sock");

  DialAddress vsock;
  REQUIRE(parse_dial_address("vsock://3:1024", &vsock).ok());
  CHECK(vsock.family == AF_VSOCK);
  CHECK(vsock.length == sizeof(sockaddr_vm));
  const auto* vm = reinterpret_cast<const sockaddr_vm*>(&vsock.storage);
  CHECK(vm->svm_cid == 3);
  CHECK(vm->svm_port == 1024);
  CHECK(vsock.description == "vsock 3:1024");

  for (const char* bad : {"vsock://3", "vsock://:1", "vsock://x:1", "vsock://1:99999999999", "tcp://h:1", ""}) {
    INFO(bad);
    DialAddress ignored;
    CHECK(parse_dial_address(bad, &ignored).code() == Code::kInvalidArgument);
  }
}

// A listener on the local vsock CID (1, VMADDR_CID_LOCAL), or -1 with the reason.
int vsock_loopback_listener(std::uint32_t* port, std::string* reason) {
  int fd = ::socket(AF_VSOCK, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) {
    *reason = fmt::format("no AF_VSOCK sockets here: {}", std::strerror(errno));
    return -1;
  }
  sockaddr_vm address{};
  address.svm_family = AF_VSOCK;
  address.svm_cid = VMADDR_CID_LOCAL;
  address.svm_port = VMADDR_PORT_ANY;
  socklen_t length = sizeof address;
  if (::bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0 || ::listen(fd, 1) != 0 ||
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length) != 0) {
    *reason = fmt::format("cannot listen on vsock CID 1 (kernel without vsock_loopback?): {}", std::strerror(errno));
    ::close(fd);
    return -1;
  }
  *port = address.svm_port;
  return fd;
}

TEST_CASE("client calls over vsock (loopback CID)", "[ttrpc][vsock]") {
  std::uint32_t port = 0;
  std::string reason;
  int listener = vsock_loopback_listener(&port, &reason);
  if (listener < 0) LIBSHIM_SKIP(reason);
  SyncClient client(fmt::format("vsock://1:{}", port));
  int accepted = ::accept4(listener, nullptr, nullptr, SOCK_CLOEXEC);
  ::close(listener);
  REQUIRE(accepted >= 0);
  UnixStream peer(accepted);  // any connected stream socket
  auto pending = client.call_async("agent.Agent", "Ping", "p");
  auto request = read_request(peer, 1);
  CHECK(request.service() == "agent.Agent");
  REQUIRE(peer.write_all(response_bytes(1, Status(), "pong")));
  auto result = pending.get();
  CHECK(result.status.ok());
  CHECK(result.payload == "pong");
}

}  // namespace
}  // namespace shim::ttrpc
