// TtrpcServer checked byte by byte over raw sockets: framing errors, limits, Go-exact
// replies; and how it listens (serve_fd, peer credentials).
#include "ttrpc/server.h"

#include <catch2/catch.hpp>

#include <fcntl.h>
#include <grp.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <climits>
#include <cstring>
#include <fstream>

#include "shim/pb/ttrpc.pb.h"
#include "support/ttrpc_harness.h"
#include "support/unix_stream.h"
#include "ttrpc_test_service.h"

namespace shim::ttrpc {
namespace {

using namespace test_service;  // with the harness names

TEST_CASE("a timeout beyond the clock's range means no deadline", "[ttrpc]") {
  Fixture f;
  UnixStream stream(f.server.socket_path());
  REQUIRE(stream.write_all(request_frame_bytes(1, "test.Echo", "Meta", "", INT64_MAX)));
  CHECK(raw_response(stream, 1).payload == "none;first-k=");
  REQUIRE(stream.write_all(request_frame_bytes(3, "test.Echo", "Meta", "", -5)));
  CHECK(raw_response(stream, 3).payload == "none;first-k=");
}

TEST_CASE("serve_fd takes a listening socket, serve_path refuses a non-socket", "[ttrpc]") {
  test::IoThread io;
  test::TempDir dir("ttrpc-");
  HeldCalls held;
  auto server = std::make_unique<TtrpcServer>(io.executor(), test_router(held));

  int not_listening = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  CHECK(server->serve_fd(not_listening).code() == Code::kInvalidArgument);

  std::string file = dir.sub("plain-file");
  { std::ofstream(file) << "x"; }
  CHECK(server->serve_path(file).code() == Code::kAlreadyExists);

  std::string path = dir.sub("fd.sock");
  int fd = ::socket(AF_UNIX, SOCK_STREAM, 0);  // blocking, no CLOEXEC: as inherited
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  std::memcpy(address.sun_path, path.c_str(), path.size());
  REQUIRE(::bind(fd, reinterpret_cast<const sockaddr*>(&address), sizeof(address)) == 0);
  REQUIRE(::listen(fd, 8) == 0);
  REQUIRE(server->serve_fd(fd).ok());
  CHECK((::fcntl(fd, F_GETFD) & FD_CLOEXEC) != 0);
  {
    SyncClient client(path);
    CHECK(client.call("test.Echo", "Echo", "via fd").payload == "via fd");
  }
  server.reset();
  io.drain();
}

TEST_CASE("peer closing mid-frame does not hurt the server", "[ttrpc]") {
  Fixture f;
  std::string frame = request_frame_bytes(1, "test.Echo", "Echo", "abc");
  {
    UnixStream half(f.server.socket_path());
    REQUIRE(half.write_all(frame.substr(0, 5)));  // half a header
  }
  {
    UnixStream half(f.server.socket_path());
    REQUIRE(half.write_all(frame.substr(0, frame.size() - 2)));  // header + part payload
  }
  CHECK(eventually([&] { return f.server.server().connection_count() == 0; }));
  UnixStream next(f.server.socket_path());
  REQUIRE(next.write_all(frame));
  CHECK(raw_response(next, 1).payload == "abc");
}

TEST_CASE("oversized request: ResourceExhausted, connection survives", "[ttrpc]") {
  Fixture f;
  UnixStream stream(f.server.socket_path());
  std::string huge(kMaxMessageSize + 1, 'x');
  std::string frame;
  append_frame(frame, 5, FrameType::kRequest, huge);
  REQUIRE(stream.write_all(frame));
  CHECK(raw_response(stream, 5).status ==
        Status(Code::kResourceExhausted,
               "message length 4194305 exceed maximum message size of 4194304"));
  REQUIRE(stream.write_all(request_frame_bytes(7, "test.Echo", "Echo", "still here")));
  CHECK(raw_response(stream, 7).payload == "still here");

  SyncClient client(f.server.socket_path());
  auto refused = client.call("test.Echo", "Echo", huge);
  CHECK(refused.status.code() == Code::kResourceExhausted);
  CHECK(client.call("test.Echo", "Echo", "y").payload == "y");
}

TEST_CASE("a reply over the limit is replaced by ResourceExhausted", "[ttrpc]") {
  Fixture f;
  SyncClient client(f.server.socket_path());
  CHECK(client.call("test.Echo", "Huge").status ==
        Status(Code::kResourceExhausted,
               "message length 4194309 exceed maximum message size of 4194304"));
  CHECK(client.call("test.Echo", "Echo", "ok").payload == "ok");
}

TEST_CASE("a request of exactly the limit is served", "[ttrpc]") {
  Fixture f;
  SyncClient client(f.server.socket_path());
  // Request{service, method, payload}: (2 + 9) + (2 + 4) + (1 + 4-byte varint) = 22 bytes
  // around the payload.
  std::string payload(kMaxMessageSize - 22, 'z');
  REQUIRE(request_frame_bytes(1, "test.Echo", "Echo", payload).size() ==
          kHeaderSize + kMaxMessageSize);
  // The reply is 4 bytes shorter (no names), so it fits as well.
  auto result = client.call("test.Echo", "Echo", payload);
  CHECK(result.status.ok());
  CHECK(result.payload == payload);
}

TEST_CASE("even stream id answers InvalidArgument and the connection goes on", "[ttrpc]") {
  Fixture f;
  UnixStream stream(f.server.socket_path());
  REQUIRE(stream.write_all(request_frame_bytes(2, "test.Echo", "Echo", "x")));
  CHECK(raw_response(stream, 2).status ==
        Status(Code::kInvalidArgument, "StreamID must be odd for client initiated streams"));
  REQUIRE(stream.write_all(request_frame_bytes(3, "test.Echo", "Echo", "y")));
  CHECK(raw_response(stream, 3).payload == "y");
}

TEST_CASE("undecodable request payload answers InvalidArgument", "[ttrpc]") {
  Fixture f;
  UnixStream stream(f.server.socket_path());
  std::string frame;
  append_frame(frame, 1, FrameType::kRequest,
               "\x0a\x7f"
               "truncated");
  REQUIRE(stream.write_all(frame));
  auto result = raw_response(stream, 1);
  CHECK(result.status.code() == Code::kInvalidArgument);
  CHECK(result.status.message().starts_with("unmarshal request error: "));
  REQUIRE(stream.write_all(request_frame_bytes(3, "test.Echo", "Echo", "y")));
  CHECK(raw_response(stream, 3).payload == "y");
}

TEST_CASE("data, response and unknown frames are ignored", "[ttrpc]") {
  Fixture f;
  UnixStream stream(f.server.socket_path());
  std::string junk;
  append_frame(junk, 1, FrameType::kData, "data", kFlagRemoteClosed);
  append_frame(junk, 3, FrameType::kResponse, "");
  append_frame(junk, 5, static_cast<FrameType>(0x42), "what");
  append_frame(junk, 7, static_cast<FrameType>(0), "");
  REQUIRE(stream.write_all(junk + request_frame_bytes(9, "test.Echo", "Echo", "z")));
  CHECK(raw_response(stream, 9).payload == "z");  // first frame back answers stream 9
}

TEST_CASE("replies are byte-exact with Go ttrpc", "[ttrpc]") {
  Fixture f;
  UnixStream stream(f.server.socket_path());
  REQUIRE(stream.write_all(request_frame_bytes(9, "test.Echo", "Echo", "")));
  CHECK(stream.read_exact(10) == std::string("\0\0\0\0\0\0\0\x09\x02\0", 10));

  REQUIRE(stream.write_all(request_frame_bytes(11, "test.Echo", "Echo", "abc")));
  CHECK(stream.read_exact(15) == std::string("\0\0\0\x05\0\0\0\x0b\x02\0\x12\x03"
                                             "abc",
                                             15));

  REQUIRE(stream.write_all(request_frame_bytes(13, "foo.Bar", "X", "")));
  ::shim::pb::ttrpc::Response expected;
  expected.mutable_status()->set_code(12);
  expected.mutable_status()->set_message("service foo.Bar");
  std::string expected_frame;
  append_frame(expected_frame, 13, FrameType::kResponse, expected.SerializeAsString());
  CHECK(stream.read_exact(expected_frame.size()) == expected_frame);
  // {status: {code 12, message "service foo.Bar"}} spelled out.
  CHECK(expected_frame.substr(kHeaderSize) == std::string("\x0a\x13\x08\x0c\x12\x0f"
                                                          "service foo.Bar"));
}

// Connects as uid/gid 65534 from a forked child, sends a request and reports: 0 = the
// server closed the connection without answering, 1 = it answered, 2+ = setup failed.
int call_as_nobody(const std::string& socket_path) {
  std::string frame = request_frame_bytes(1, "test.Echo", "Echo", "who");
  pid_t pid = ::fork();
  if (pid == 0) {
    // Only raw syscalls in the child of a threaded process.
    if (::setgroups(0, nullptr) != 0 || ::setgid(65534) != 0 || ::setuid(65534) != 0) ::_exit(2);
    int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_un address{};
    address.sun_family = AF_UNIX;
    std::memcpy(address.sun_path, socket_path.c_str(), socket_path.size());
    if (::connect(fd, reinterpret_cast<const sockaddr*>(&address), sizeof(address)) != 0)
      ::_exit(3);
    if (::write(fd, frame.data(), frame.size()) != static_cast<ssize_t>(frame.size())) ::_exit(0);
    char byte;
    ssize_t got = ::read(fd, &byte, 1);
    ::_exit(got > 0 ? 1 : 0);
  }
  int status = 0;
  ::waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 100;
}

TEST_CASE("peer credentials must match our uid and gid", "[ttrpc]") {
  if (::geteuid() != 0) {
    WARN("needs root to connect as another user; skipped");
    return;
  }
  HeldCalls held;
  bool require = GENERATE(true, false);
  ServerOptions options;
  options.require_same_user = require;
  TtrpcServerHarness server(test_router(held), options);
  REQUIRE(::chmod(server.dir().path().c_str(), 0755) == 0);
  REQUIRE(::chmod(server.socket_path().c_str(), 0777) == 0);
  CHECK(call_as_nobody(server.socket_path()) == (require ? 0 : 1));
  SyncClient same_user(server.socket_path());
  CHECK(same_user.call("test.Echo", "Echo", "me").payload == "me");
}

}  // namespace
}  // namespace shim::ttrpc
