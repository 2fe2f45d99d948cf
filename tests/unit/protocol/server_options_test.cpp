// The knobs a vendor's Manager has over the long-lived server (ServerOptions, its own
// reaper, extra ttrpc services), through shim::run() serving in a forked child.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <memory>
#include <string>
#include <thread>

#include <catch2/catch.hpp>

#include "shim/manager.h"
#include "shim/pb/empty.pb.h"
#include "shim/process/subscription.h"
#include "shim/ttrpc/typed.h"
#include "support/temp_dir.h"
#include "support/ttrpc_harness.h"

namespace {

using namespace std::chrono_literals;

// A reaper that reaps nothing: what a VM shim without container children would bring.
class IdleReaper final : public shim::Reaper {
 public:
  explicit IdleReaper(shim::Logger logger) { logger.info("vendor reaper in use"); }
  shim::Subscription subscribe(shim::ExitCallback) override { return {}; }
  shim::Subscription subscribe(boost::asio::any_io_executor, shim::ExitCallback) override { return {}; }
  shim::Status spawn_claimed(shim::Spawner&, const shim::SpawnRequest&, shim::ClaimedProcess*) override {
    return shim::not_implemented("spawn_claimed");
  }
};

class KnobsManager final : public shim::Manager {
 public:
  explicit KnobsManager(int log_fd) : log_fd_(log_fd) {}

  std::string name() const override { return "io.libshim.knobs.v1"; }
  shim::Status stop(const shim::ActionContext&, shim::task::DeleteResponse*) override { return {}; }
  std::unique_ptr<shim::TaskService> create_task_service(shim::ServiceContext&) override {
    return std::make_unique<shim::TaskService>();
  }
  shim::ServerOptions server_options() const override {
    shim::ServerOptions options;
    options.pool_threads = 1;
    options.subreaper = false;
    options.log_to_fifo = false;
    int fd = log_fd_;
    options.log_sink = std::make_shared<shim::CallbackLogSink>([fd](std::string_view line) {
      [[maybe_unused]] ssize_t n = ::write(fd, line.data(), line.size());
    });
    return options;
  }
  std::unique_ptr<shim::Reaper> create_reaper(boost::asio::any_io_executor) override {
    return std::make_unique<IdleReaper>(shim::Logger(server_options().log_sink, clock_));
  }
  void register_services(shim::ttrpc::Router& router, shim::ServiceContext&) override {
    router.add("vendor.Sandbox", "Ping",
               shim::ttrpc::typed_handler<shim::pb::Empty, shim::pb::Empty>(
                   [](const shim::ttrpc::CallInfo&, shim::pb::Empty, shim::ttrpc::Reply<shim::pb::Empty> reply) {
                     reply(shim::pb::Empty());
                   }));
  }

 private:
  int log_fd_;
  shim::SystemClock clock_;
};

std::string read_available(int fd, std::chrono::milliseconds wait) {
  std::this_thread::sleep_for(wait);
  std::string text;
  char buffer[4096];
  ssize_t n = 0;
  while ((n = ::read(fd, buffer, sizeof buffer)) > 0) text.append(buffer, static_cast<std::size_t>(n));
  return text;
}

// Kills and reaps the serving child on every way out of the test: a failed REQUIRE must not
// leave it running with ctest's output pipe open (that made a failure a 300 s timeout).
struct ReapOnExit {
  pid_t pid;
  ~ReapOnExit() {
    if (pid <= 0) return;
    ::kill(pid, SIGKILL);
    ::waitpid(pid, nullptr, 0);
  }
};

// The socket file appears at bind(), before listen(): a connect in between is refused
// (seen under load), so retry until the server accepts or 10 s pass.
std::unique_ptr<shim::test::SyncClient> connect_when_listening(const std::string& socket) {
  auto deadline = std::chrono::steady_clock::now() + 10s;
  for (;;) {
    try {
      return std::make_unique<shim::test::SyncClient>(socket);
    } catch (const std::exception& e) {
      if (std::chrono::steady_clock::now() > deadline) {
        UNSCOPED_INFO("connect to " << socket << ": " << e.what());
        return nullptr;
      }
    }
    std::this_thread::sleep_for(10ms);
  }
}

}  // namespace

TEST_CASE("a Manager's server options, reaper and extra services reach the server", "[server-options]") {
  shim::test::TempDir dir("knobs-");
  const std::string socket = dir.sub("s.sock");
  int log_pipe[2];
  REQUIRE(::pipe2(log_pipe, O_CLOEXEC | O_NONBLOCK) == 0);
  pid_t child = ::fork();
  REQUIRE(child >= 0);
  if (child == 0) {
    ::close(log_pipe[0]);
    KnobsManager manager(log_pipe[1]);
    std::string args[] = {"knobs-shim", "-namespace", "ns1", "-id", "t1", "-socket", socket};
    char* argv[] = {args[0].data(), args[1].data(), args[2].data(), args[3].data(),
                    args[4].data(), args[5].data(), args[6].data(), nullptr};
    ::_exit(shim::run(7, argv, manager));
  }
  ReapOnExit served{child};
  ::close(log_pipe[1]);
  {
    std::unique_ptr<shim::test::SyncClient> client = connect_when_listening(socket);
    REQUIRE(client);
    auto ping = client->call("vendor.Sandbox", "Ping");
    CHECK(ping.status.ok());
    // The task service is there too, next to it.
    auto state = client->call("containerd.task.v2.Task", "State", "");
    CHECK(state.status.code() == shim::Code::kUnimplemented);
  }
  ::kill(child, SIGTERM);  // the shutdown sequence: exit 0
  int status = 0;
  REQUIRE(::waitpid(child, &status, 0) == child);
  served.pid = -1;
  CHECK(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 0);
  std::string log = read_available(log_pipe[0], 0ms);
  ::close(log_pipe[0]);
  INFO(log);
  CHECK(log.find("msg=\"vendor reaper in use\"") != std::string::npos);
  CHECK(log.find("msg=\"starting signal loop\"") != std::string::npos);
  CHECK(log.find("runtime=io.libshim.knobs.v1") != std::string::npos);
  CHECK(log.find("msg=\"shim exited\"") != std::string::npos);
}
