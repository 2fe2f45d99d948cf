#include "shim/events/lifecycle_events.h"

#include <catch2/catch.hpp>

#include "support/recording_publisher.h"

namespace shim {
namespace {

using testing::RecordingPublisher;
using Topics = std::vector<std::string>;

ProcessExit exit_of(int pid, int status) {
  ProcessExit exit{};
  exit.pid = pid;
  exit.status = status;
  exit.exited_at = std::chrono::system_clock::time_point(std::chrono::seconds(1700000000));
  return exit;
}

containerd::events::TaskCreate create_event(const std::string& id, std::uint32_t pid) {
  containerd::events::TaskCreate event;
  event.set_container_id(id);
  event.set_pid(pid);
  return event;
}

containerd::events::TaskExit last_exit(const RecordingPublisher& publisher) {
  containerd::events::TaskExit exit;
  for (const auto& e : publisher.events()) {
    if (e.topic == "/tasks/exit") REQUIRE(exit.ParseFromString(e.bytes));
  }
  return exit;
}

struct Fixture {
  RecordingPublisher publisher;
  std::vector<std::string> reaped;
  std::vector<std::string> waited;
  LifecycleEvents events{
      publisher,
      LifecycleEvents::Hooks{
          [this](const ProcessRef& p, const ProcessExit&) { reaped.push_back(p.exec_id); },
          [this](const ProcessRef& p, const ProcessExit&) { waited.push_back(p.exec_id); }}};
};

TEST_CASE("start is published before the exit of a process that dies during start", "[lifecycle]") {
  Fixture f;
  f.events.created(create_event("c1", 100));
  auto token = f.events.begin_start({"c1", ""});
  f.events.handle_exit(exit_of(100, 0));  // init died before runc start returned
  CHECK(f.publisher.topics() == Topics{"/tasks/create"});
  CHECK(f.waited.empty());
  f.events.start_succeeded(token, 100);
  CHECK(f.publisher.topics() == Topics{"/tasks/create", "/tasks/start", "/tasks/exit"});
  CHECK(f.waited == std::vector<std::string>{""});
  auto exit = last_exit(f.publisher);
  CHECK(exit.container_id() == "c1");
  CHECK(exit.id() == "c1");
  CHECK(exit.pid() == 100);
  CHECK(exit.exited_at().seconds() == 1700000000);
}

TEST_CASE("an exec that exits before its pid is known is held until exec-started", "[lifecycle]") {
  Fixture f;
  f.events.created(create_event("c1", 100));
  f.events.start_succeeded(f.events.begin_start({"c1", ""}), 100);
  f.events.exec_added("c1", "e1");
  auto token = f.events.begin_start({"c1", "e1"});
  f.events.handle_exit(exit_of(200, 7));  // unknown pid while a start is under way
  CHECK(f.events.held_exit_count() == 1);
  f.events.start_succeeded(token, 200);
  CHECK(f.publisher.topics() == Topics{"/tasks/create", "/tasks/start", "/tasks/exec-added",
                                       "/tasks/exec-started", "/tasks/exit"});
  auto exit = last_exit(f.publisher);
  CHECK(exit.id() == "e1");
  CHECK(exit.exit_status() == 7);
  CHECK(f.events.held_exit_count() == 0);
}

TEST_CASE("init exit waits for the exits of running execs", "[lifecycle]") {
  Fixture f;
  f.events.created(create_event("c1", 100));
  f.events.start_succeeded(f.events.begin_start({"c1", ""}), 100);
  f.events.start_succeeded(f.events.begin_start({"c1", "e1"}), 201);
  f.events.start_succeeded(f.events.begin_start({"c1", "e2"}), 202);

  f.events.handle_exit(exit_of(100, 137));
  CHECK(f.reaped == std::vector<std::string>{""});  // the plug-in hears of it at once
  CHECK(f.waited.empty());                          // but Wait and the event wait
  f.events.handle_exit(exit_of(202, 137));
  f.events.handle_exit(exit_of(201, 137));
  auto topics = f.publisher.topics();
  REQUIRE(topics.size() == 7);
  CHECK(f.waited == std::vector<std::string>{"e2", "e1", ""});
  auto events = f.publisher.events();
  containerd::events::TaskExit last;
  REQUIRE(last.ParseFromString(events.back().bytes));
  CHECK(last.id() == "c1");
  CHECK(last.exit_status() == 137);
}

TEST_CASE("an exec that fails to start does not hold the init exit", "[lifecycle]") {
  Fixture f;
  f.events.created(create_event("c1", 100));
  f.events.start_succeeded(f.events.begin_start({"c1", ""}), 100);
  auto token = f.events.begin_start({"c1", "e1"});
  f.events.handle_exit(exit_of(100, 0));
  CHECK(f.waited.empty());
  f.events.start_failed(token);
  CHECK(f.waited == std::vector<std::string>{""});
  CHECK(f.publisher.topics().back() == "/tasks/exit");
}

TEST_CASE("a created init that is killed before start publishes its exit", "[lifecycle]") {
  Fixture f;
  f.events.created(create_event("c1", 100));
  f.events.handle_exit(exit_of(100, 137));
  CHECK(f.publisher.topics() == Topics{"/tasks/create", "/tasks/exit"});
}

TEST_CASE("exits of unknown pids are ignored when no start is under way", "[lifecycle]") {
  Fixture f;
  f.events.created(create_event("c1", 100));
  f.events.handle_exit(exit_of(555, 1));
  CHECK(f.events.held_exit_count() == 0);
  CHECK(f.reaped.empty());
  CHECK(f.publisher.topics() == Topics{"/tasks/create"});
}

TEST_CASE("a reused pid after reaping belongs to the new process", "[lifecycle]") {
  Fixture f;
  f.events.created(create_event("c1", 100));
  f.events.start_succeeded(f.events.begin_start({"c1", ""}), 100);
  f.events.start_succeeded(f.events.begin_start({"c1", "e1"}), 300);
  f.events.handle_exit(exit_of(300, 0));
  f.events.start_succeeded(f.events.begin_start({"c1", "e2"}), 300);  // pid reused
  f.events.handle_exit(exit_of(300, 5));
  auto exit = last_exit(f.publisher);
  CHECK(exit.id() == "e2");
  CHECK(exit.exit_status() == 5);
}

TEST_CASE("oom published from on_reaped precedes the exit", "[lifecycle]") {
  RecordingPublisher publisher;
  LifecycleEvents* self = nullptr;
  LifecycleEvents events(
      publisher,
      LifecycleEvents::Hooks{
          [&](const ProcessRef& p, const ProcessExit&) { self->oom(p.container_id); }, nullptr});
  self = &events;
  events.created(create_event("c1", 100));
  events.start_succeeded(events.begin_start({"c1", ""}), 100);
  events.handle_exit(exit_of(100, 137));
  CHECK(publisher.topics() == Topics{"/tasks/create", "/tasks/start", "/tasks/oom", "/tasks/exit"});
  CHECK(publisher.events()[2].type_url == "containerd.events.TaskOOM");
}

// Seen first in the sanitized end-to-end run (tests/support/sanitized_shims.h): a shim
// slower to return from `runc start` let the OOM watcher's TaskOOM overtake TaskStart.
TEST_CASE("an oom seen while the init is being started follows its start", "[lifecycle]") {
  Fixture f;
  f.events.created(create_event("c1", 100));
  f.events.created(create_event("c2", 200));
  auto token = f.events.begin_start({"c1", ""});
  auto exec = f.events.begin_start({"c2", "e1"});  // an exec's start holds nothing back
  f.events.oom("c1");
  f.events.oom("c2");
  f.events.handle_exit(exit_of(100, 137));
  CHECK(f.publisher.topics() == Topics{"/tasks/create", "/tasks/create", "/tasks/oom"});
  f.events.start_succeeded(token, 100);
  CHECK(f.publisher.topics() == Topics{"/tasks/create", "/tasks/create", "/tasks/oom",
                                       "/tasks/start", "/tasks/oom", "/tasks/exit"});
  f.events.start_failed(exec);

  auto failed = f.events.begin_start({"c2", ""});
  f.events.oom("c2");
  f.events.start_failed(failed);  // the OOM still happened: containerd hears of it
  CHECK(f.publisher.topics().back() == "/tasks/oom");
  CHECK(f.publisher.topics().size() == 7);
}

}  // namespace
}  // namespace shim

namespace shim {
namespace {

TEST_CASE("an init that dies while runc create runs is reported after create", "[lifecycle]") {
  Fixture f;
  auto hold = f.events.hold_exits();
  f.events.handle_exit(exit_of(100, 1));  // pid not known yet
  f.events.created(create_event("c1", 100));
  f.events.release_hold(hold);
  CHECK(f.publisher.topics() == Topics{"/tasks/create", "/tasks/exit"});
  CHECK(f.events.held_exit_count() == 0);
}

TEST_CASE("held unknown exits are dropped when the hold ends unclaimed", "[lifecycle]") {
  Fixture f;
  auto hold = f.events.hold_exits();
  f.events.handle_exit(exit_of(777, 0));
  CHECK(f.events.held_exit_count() == 1);
  f.events.release_hold(hold);
  CHECK(f.events.held_exit_count() == 0);
  CHECK(f.publisher.topics().empty());
}

}  // namespace
}  // namespace shim

namespace shim {
namespace {

// Live upgrade: the new program's LifecycleEvents, restored from the records, matches
// exits and orders them as the old one would have.
TEST_CASE("restored processes: exits matched, the init's TaskExit after its live exec's",
          "[lifecycle][upgrade]") {
  Fixture f;
  f.events.restore_process({"c1", ""}, 100, true, false);
  f.events.restore_process({"c1", "e1"}, 200, true, false);  // running
  f.events.restore_process({"c1", "e2"}, 300, true, true);   // exited and published before
  f.events.restore_process({"c1", "e3"}, 0, false, false);   // added, never started
  CHECK(f.events.settled());
  f.events.handle_exit(exit_of(300, 0));  // not ours any more: ignored
  f.events.handle_exit(exit_of(100, 137));
  CHECK(f.publisher.topics().empty());  // held for e1
  CHECK_FALSE(f.events.settled());
  f.events.handle_exit(exit_of(200, 137));
  CHECK(f.publisher.topics() == Topics{"/tasks/exit", "/tasks/exit"});
  CHECK(f.waited == std::vector<std::string>{"e1", ""});
  CHECK(last_exit(f.publisher).id() == "c1");
  CHECK(f.events.settled());
}

TEST_CASE("settled: not while a start is under way or an exit is held", "[lifecycle][upgrade]") {
  Fixture f;
  CHECK(f.events.settled());
  auto hold = f.events.hold_exits();
  CHECK_FALSE(f.events.settled());
  f.events.release_hold(hold);
  f.events.created(create_event("c1", 100));
  auto token = f.events.begin_start({"c1", ""});
  CHECK_FALSE(f.events.settled());
  f.events.start_succeeded(token, 100);
  CHECK(f.events.settled());
}

}  // namespace
}  // namespace shim

namespace shim {
namespace {

TEST_CASE("a container's own pid domain: host exits never match its pids", "[lifecycle]") {
  Fixture f;
  f.events.use_pid_domain("vm", 7);
  f.events.created(create_event("vm", 1));  // the guest's pid 1
  f.events.created(create_event("host", 1000));
  auto start = f.events.begin_start({"vm", ""});
  f.events.start_succeeded(start, 1);
  // The host's pid 1, or any host pid equal to a guest's, is not the guest's process.
  f.events.handle_exit(exit_of(1, 0));
  CHECK(f.reaped.empty());
  // The same number from the VM's domain is.
  f.events.handle_exit(7, exit_of(1, 3));
  CHECK(f.reaped == std::vector<std::string>{""});
  CHECK(last_exit(f.publisher).container_id() == "vm");
  CHECK(last_exit(f.publisher).exit_status() == 3);
  CHECK(last_exit(f.publisher).pid() == 1);
  // Another domain's report of the host container's pid matches nothing either.
  f.events.handle_exit(7, exit_of(1000, 0));
  CHECK(f.reaped.size() == 1);
}

TEST_CASE("an exit reported in a pid domain during the start is held until it", "[lifecycle]") {
  Fixture f;
  f.events.use_pid_domain("vm", 2);
  f.events.created(create_event("vm", 0));
  auto start = f.events.begin_start({"vm", ""});
  f.events.handle_exit(2, exit_of(5, 1));  // the guest process ended before start returned
  CHECK(f.publisher.topics() == Topics{"/tasks/create"});
  f.events.start_succeeded(start, 5);
  CHECK(f.publisher.topics() == Topics{"/tasks/create", "/tasks/start", "/tasks/exit"});
}

}  // namespace
}  // namespace shim
