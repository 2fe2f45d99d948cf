// A shared shim's reservations and linger (protocol/shim_sharing.h): a reservation keeps
// the shim for its window and then asks whether it is still used; Reserve over ttrpc
// fails Unavailable once the shim is ending, so `start` binds a new one.
#include <atomic>
#include <chrono>
#include <string>
#include <thread>

#include <catch2/catch.hpp>

#include <fmt/format.h>

#include "protocol/shim_sharing.h"
#include "shim/clock.h"
#include "shim/pb/containerd/task_v2.pb.h"
#include "shim/task_service.h"
#include "support/io_thread.h"
#include "support/temp_dir.h"
#include "ttrpc/server.h"

namespace {

using namespace std::chrono_literals;
using shim::Code;

// Counts what ShutdownControl's rule does: the shim ends (request_shutdown) or, as a
// lingering shim does, is told it is unused (when_unused).
struct LingeringShutdown final : shim::ShutdownControl {
  void request_shutdown() override { ++ended; }
  void when_unused() override { ++unused; }
  std::atomic<int> ended{0};
  std::atomic<int> unused{0};
};

struct Logs {
  shim::SystemClock clock;
  std::shared_ptr<shim::CallbackLogSink> sink =
      std::make_shared<shim::CallbackLogSink>([this](std::string_view line) {
        std::lock_guard lock(mutex);
        text += line;
      });
  shim::Logger logger{sink, clock, shim::LogLevel::kDebug};
  std::mutex mutex;
  std::string text;
};

}  // namespace

TEST_CASE("shutdown rule: when_unused replaces the end for a shim that lingers", "[sharing]") {
  LingeringShutdown control;
  CHECK(control.shutdown_if_unused().empty());
  CHECK(control.unused == 1);
  CHECK(control.ended == 0);
  control.set_keeper("tasks", [] { return "1 container(s)"; });
  CHECK(control.why_kept() == "tasks: 1 container(s)");
  CHECK(control.shutdown_if_unused() == "tasks: 1 container(s)");
  CHECK(control.unused == 1);  // why_kept() and a kept shim ask nothing of it
}

TEST_CASE("shim sharing: a reservation holds the shim for its window, a later one extends it",
          "[sharing]") {
  boost::asio::io_context loop(1);
  LingeringShutdown control;
  Logs logs;
  bool ending = false;
  shim::detail::ShimReservations reservations(
      loop.get_executor(), control, logs.logger, [&] { return ending; }, false, 800ms);
  CHECK(control.why_kept().empty());

  REQUIRE(reservations.reserve("t1"));
  CHECK_THAT(control.why_kept(), Catch::Equals("reservations: reserved for the Create of t1"));
  CHECK_FALSE(control.shutdown_if_unused().empty());
  loop.run_for(400ms);
  REQUIRE(reservations.reserve("t2"));  // 400 ms in: t2's window ends 1200 ms in
  loop.run_for(600ms);
  CHECK(control.unused == 0);  // 1000 ms in: t1's window is over, t2's is not
  CHECK_THAT(control.why_kept(), Catch::Equals("reservations: reserved for the Create of t2"));
  loop.run_for(600ms);
  CHECK(control.unused == 1);  // the window ended: the shim was asked whether it is used
  CHECK(control.why_kept().empty());

  // A Create ends its task's reservation, and asks nothing: the task holds the shim.
  REQUIRE(reservations.reserve("t3"));
  REQUIRE(reservations.reserve("t4"));
  CHECK(control.why_kept() == "reservations: reserved for the Create of t3, t4");
  reservations.release("t3");
  reservations.release("t4");
  CHECK(control.why_kept().empty());
  loop.run_for(200ms);
  CHECK(control.unused == 1);

  ending = true;
  CHECK_FALSE(reservations.reserve("t5"));
  CHECK(control.why_kept().empty());
}

TEST_CASE("shim sharing: the task service's Create ends its task's reservation", "[sharing]") {
  boost::asio::io_context loop(1);
  LingeringShutdown control;
  Logs logs;
  shim::detail::ShimReservations reservations(
      loop.get_executor(), control, logs.logger, [] { return false; }, false, 10s);
  shim::ttrpc::Router router;
  std::vector<std::string> created;
  for (std::string_view service : {shim::kTaskServiceV2, shim::kTaskServiceV3}) {
    router.add(service, "Create",
               [&created, service](const shim::ttrpc::CallInfo&, std::string_view payload,
                                   shim::ttrpc::Responder) {
                 created.push_back(fmt::format("{} {}", service, payload.size()));
               });
  }
  reservations.register_on(router);
  REQUIRE(reservations.reserve("c1"));
  REQUIRE(reservations.reserve("c2"));
  containerd::task::v2::CreateTaskRequest request;
  request.set_id("c1");
  request.set_bundle("/b");
  std::string payload = request.SerializeAsString();
  shim::Status missing;
  const shim::ttrpc::Handler* create = router.find(shim::kTaskServiceV3, "Create", &missing);
  REQUIRE(create != nullptr);
  (*create)(shim::ttrpc::CallInfo{}, payload, shim::ttrpc::Responder(nullptr));
  CHECK(created ==
        std::vector<std::string>{fmt::format("containerd.task.v3.Task {}", payload.size())});
  CHECK(control.why_kept() == "reservations: reserved for the Create of c2");
  CHECK(router.has_service(shim::detail::kSharingService));
}

TEST_CASE("shim sharing: the window's end leaves a shim with containers alone", "[sharing]") {
  boost::asio::io_context loop(1);
  LingeringShutdown control;
  Logs logs;
  shim::detail::ShimReservations reservations(
      loop.get_executor(), control, logs.logger, [] { return false; }, false, 50ms);
  std::string tasks = "1 container(s)";
  control.set_keeper("tasks", [&] { return tasks; });
  REQUIRE(reservations.reserve("t1"));
  loop.run_for(300ms);
  CHECK(control.unused == 0);
  CHECK(control.ended == 0);
  tasks.clear();  // the container is gone: the next Shutdown finds the shim unused
  CHECK(control.shutdown_if_unused().empty());
  CHECK(control.unused == 1);
}

TEST_CASE("shim sharing: Reserve over ttrpc, from a live, an ending and a foreign shim",
          "[sharing]") {
  shim::test::TempDir dir("sharing-");
  std::string socket = dir.sub("shim.sock");
  shim::test::IoThread io;
  LingeringShutdown control;
  Logs logs;
  std::atomic<bool> ending{false};
  auto reservations = io.run([&] {
    return std::make_unique<shim::detail::ShimReservations>(
        io.executor(), control, logs.logger, [&] { return ending.load(); }, false, 10s);
  });
  std::unique_ptr<shim::ttrpc::TtrpcServer> server = io.run([&] {
    shim::ttrpc::Router router;
    reservations->register_on(router);
    auto made = std::make_unique<shim::ttrpc::TtrpcServer>(io.executor(), std::move(router));
    REQUIRE(made->serve_path(socket).ok());
    return made;
  });

  shim::Status reserved =
      shim::detail::reserve_shared_shim("unix://" + socket, "t1", dir.path(), 2000ms);
  INFO(reserved.to_string());
  CHECK(reserved.ok());
  CHECK_THAT(io.run([&] { return control.why_kept(); }),
             Catch::Equals("reservations: reserved for the Create of t1"));
  {
    std::lock_guard lock(logs.mutex);
    CHECK_THAT(logs.text, Catch::Contains("msg=\"shared shim reserved\" id=t1"));
  }

  ending = true;
  shim::Status refused = shim::detail::reserve_shared_shim(socket, "t2", "", 2000ms);
  CHECK(refused.code() == Code::kUnavailable);
  CHECK(refused.message() == "the shared shim is shutting down");

  // A shim that serves no sharing (a per-task shim, an older libshim).
  std::string other_socket = dir.sub("other.sock");
  auto other = io.run([&] {
    auto made = std::make_unique<shim::ttrpc::TtrpcServer>(io.executor(), shim::ttrpc::Router());
    REQUIRE(made->serve_path(other_socket).ok());
    return made;
  });
  shim::Status foreign = shim::detail::reserve_shared_shim(other_socket, "t3", "", 2000ms);
  CHECK(foreign.code() == Code::kUnimplemented);

  shim::Status gone = shim::detail::reserve_shared_shim(dir.sub("none.sock"), "t4", "", 2000ms);
  CHECK(gone.code() == Code::kUnavailable);

  io.run([&] {
    server.reset();
    other.reset();
    reservations.reset();
  });
}

TEST_CASE("shim sharing: the shared group's key names the binary and the shim cgroup",
          "[sharing]") {
  shim::DaemonOptions options;
  options.shared_group = "io.example.shared";
  std::string key = shim::detail::shared_group_key(options);
  CHECK_THAT(key, Catch::Matches("io\\.example\\.shared-[0-9a-f]{12}"));
  CHECK(shim::detail::shared_group_key(options) == key);
  options.cgroup = "/shims";
  CHECK(shim::detail::shared_group_key(options) != key);
}
