// The daemon's shutdown sequence (protocol/shutdown_sequence.h) with a linger, on a real
// loop, ttrpc server and socket: a lingering shim keeps its socket until the linger ends,
// stays if something came to keep it, and never removes a socket file that is not its.
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <chrono>
#include <string>

#include <catch2/catch.hpp>

#include "events/event_forwarder.h"
#include "protocol/shutdown_sequence.h"
#include "shim/clock.h"
#include "support/temp_dir.h"
#include "ttrpc/server.h"

namespace {

using namespace std::chrono_literals;

bool exists(const std::string& path) { return ::access(path.c_str(), F_OK) == 0; }

struct Daemon {
  shim::test::TempDir dir{"seq-"};
  std::string socket = dir.sub("shim.sock");
  boost::asio::io_context loop{1};
  shim::SystemClock clock;
  shim::Logger logger{std::make_shared<shim::CallbackLogSink>([](std::string_view) {}), clock};
  shim::ttrpc::TtrpcServer server{loop.get_executor(), shim::ttrpc::Router()};
  shim::EventForwarder forwarder{
      loop.get_executor(), {.ttrpc_address = dir.sub("none"), .ns = "t"}, clock, logger};
  shim::detail::ShutdownSequence sequence{loop, logger};

  explicit Daemon(std::chrono::milliseconds linger) {
    REQUIRE(server.serve_path(socket).ok());
    sequence.set_linger(linger);
    sequence.attach(&server, &forwarder, socket);
  }
};

}  // namespace

TEST_CASE("shutdown sequence: an unused shim lingers, then ends and removes its socket",
          "[shutdown-sequence]") {
  Daemon d(300ms);
  CHECK(d.sequence.shutdown_if_unused().empty());
  d.loop.run_for(150ms);
  CHECK_FALSE(d.loop.stopped());
  CHECK_FALSE(d.sequence.ending());
  CHECK(exists(d.socket));
  d.loop.run_for(5s);  // the linger ends: the sequence runs and stops the loop
  CHECK(d.loop.stopped());
  CHECK(d.sequence.ending());
  CHECK_FALSE(exists(d.socket));
}

TEST_CASE("shutdown sequence: what comes during the linger keeps the shim", "[shutdown-sequence]") {
  Daemon d(200ms);
  CHECK(d.sequence.shutdown_if_unused().empty());
  std::string tasks = "1 container(s)";
  d.sequence.set_keeper("tasks", [&] { return tasks; });
  d.loop.run_for(500ms);  // the linger ended and found the keeper
  CHECK_FALSE(d.loop.stopped());
  CHECK_FALSE(d.sequence.ending());
  CHECK(exists(d.socket));
  tasks.clear();  // the container went: its Shutdown starts the linger again
  CHECK(d.sequence.shutdown_if_unused().empty());
  d.loop.run_for(5s);
  CHECK(d.loop.stopped());
  CHECK_FALSE(exists(d.socket));
}

TEST_CASE("shutdown sequence: a socket file another shim bound at the path stays",
          "[shutdown-sequence]") {
  Daemon d(0ms);
  REQUIRE(::unlink(d.socket.c_str()) == 0);  // as an ending shim's close, then a new bind
  int other = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  d.socket.copy(addr.sun_path, d.socket.size());
  REQUIRE(::bind(other, reinterpret_cast<const sockaddr*>(&addr), sizeof addr) == 0);
  d.sequence.request_shutdown();
  CHECK(d.sequence.ending());
  d.loop.run_for(5s);
  CHECK(d.loop.stopped());
  CHECK(exists(d.socket));  // not ours: left alone
  ::close(other);
}
