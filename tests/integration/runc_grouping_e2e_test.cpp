// Per-pod shim grouping (containerd cmd/containerd-shim-runc-v2/manager/manager_linux.go) with our shim-runc under a real containerd:
// containers whose spec carries the same group annotation share one shim daemon and
// socket, each stays independently usable, and the shim ends with its last container.
#include <unistd.h>

#include <algorithm>
#include <thread>

#include <catch2/catch.hpp>
#include <fmt/format.h>

#include "support/runc_e2e.h"

namespace shim::test {
namespace {

using namespace std::chrono_literals;

// A pid-1 shell that exits with `code` on SIGTERM (a plain pid-1 sleep ignores it).
std::vector<std::string> exits_on_term(int code) {
  return {"/bin/sh", "-c", fmt::format("trap 'exit {}' TERM; /bin/sleep 600 & wait", code)};
}

std::vector<std::string> annotated(const std::string& key, const std::string& group) {
  return {"-d", "--annotation", fmt::format("{}={}", key, group)};
}

std::string address_of(const RuncE2e& s, const std::string& id) { return s.fx.shim_address(id); }

// Waits until the live shims of the namespace are exactly `expected` (a `start` or
// `delete` helper may still be running for a moment).
bool wait_live_shims(const RuncE2e& s, const std::vector<pid_t>& expected,
                     std::chrono::milliseconds timeout = 5s) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  while (live_shims(our_runc_shim(), s.fx.ns()) != expected) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(50ms);
  }
  return true;
}

pid_t shim_pid_of(const RuncE2e& s, const std::string& id) {
  auto connected = connect_task(address_of(s, id), s.fx.ns(), id);
  return connected ? static_cast<pid_t>(connected->shim_pid()) : 0;
}

bool socket_exists(const std::string& address) {
  return ::access(unix_path_of(address).c_str(), F_OK) == 0;
}

// The /tasks/exit line of container `id`'s init, or nullopt.
std::optional<std::string> init_exit(EventsSubscriber& events, const std::string& id) {
  return events.wait_for_line({"/tasks/exit", fmt::format("\"container_id\":\"{}\"", id),
                               fmt::format("\"id\":\"{}\"", id)},
                              10s);
}

void kill_and_remove(RuncE2e& s, const std::string& id) {
  REQUIRE(s.fx.ctr_ok({"task", "kill", id}).ok());
  REQUIRE(s.wait_status(id, "STOPPED", 10s));
  REQUIRE(s.fx.ctr_ok({"task", "rm", id}).ok());
  REQUIRE(s.fx.ctr_ok({"container", "rm", id}).ok());
}

TEST_CASE("containers of one group share one shim until the last is deleted",
          "[runc][grouping][runtime-binary][multi-version][sanitized]") {
  LIBSHIM_SKIP_WITHOUT_CONTAINERD();
  const std::string key = GENERATE(as<std::string>{}, "io.kubernetes.cri.sandbox-id",
                                   "io.containerd.runc.v2.group");
  INFO("annotation " << key);
  RuncE2e s;
  auto events = s.fx.subscribe_events();
  REQUIRE(s.fx.ctr_ok(s.run(annotated(key, "pod1"), "c1", exits_on_term(7))).ok());
  REQUIRE(s.fx.ctr_ok(s.run(annotated(key, "pod1"), "c2", exits_on_term(9))).ok());
  REQUIRE(s.wait_status("c1", "RUNNING", 10s));
  REQUIRE(s.wait_status("c2", "RUNNING", 10s));

  // One socket, named after the group, recorded in both bundles; one daemon behind it.
  const std::string address = address_of(s, "c1");
  CHECK(address == "unix://" + go_shim_socket_path(s.fx.grpc_address(), s.fx.ns(), "pod1"));
  CHECK(address_of(s, "c2") == address);
  CHECK(socket_exists(address));
  const pid_t shim = shim_pid_of(s, "c1");
  REQUIRE(shim > 0);
  CHECK(shim_pid_of(s, "c2") == shim);
  CHECK(wait_live_shims(s, {shim}));
  auto c1 = connect_task(address, s.fx.ns(), "c1");
  auto c2 = connect_task(address, s.fx.ns(), "c2");
  REQUIRE(c1);
  REQUIRE(c2);
  CHECK(static_cast<pid_t>(c1->task_pid()) == s.task_pid("c1"));
  CHECK(static_cast<pid_t>(c2->task_pid()) == s.task_pid("c2"));
  CHECK(c1->task_pid() != c2->task_pid());

  // The same exec id in both containers: requests are routed by container id.
  auto e1 = s.fx.ctr({"task", "exec", "--exec-id", "e1", "c1", "/bin/sh", "-c", "echo in-c1; exit 3"});
  CHECK(e1.exit_code == 3);
  CHECK(e1.out == "in-c1\n");
  auto e2 = s.fx.ctr({"task", "exec", "--exec-id", "e1", "c2", "/bin/sh", "-c", "echo in-c2; exit 4"});
  CHECK(e2.exit_code == 4);
  CHECK(e2.out == "in-c2\n");

  // Stopping and deleting c1 leaves the shim serving c2.
  REQUIRE(s.fx.ctr_ok({"task", "kill", "c1"}).ok());
  REQUIRE(s.wait_status("c1", "STOPPED", 10s));
  CHECK(s.task_status("c2") == "RUNNING");
  auto c1_exit = init_exit(*events, "c1");
  REQUIRE(c1_exit);
  CHECK(c1_exit->find("\"exit_status\":7") != std::string::npos);
  REQUIRE(s.fx.ctr_ok({"task", "rm", "c1"}).ok());
  REQUIRE(s.fx.ctr_ok({"container", "rm", "c1"}).ok());
  CHECK(wait_live_shims(s, {shim}));
  CHECK(socket_exists(address));
  CHECK(s.task_status("c2") == "RUNNING");
  CHECK(shim_pid_of(s, "c2") == shim);
  auto after = s.fx.ctr({"task", "exec", "--exec-id", "e2", "c2", "/bin/echo", "still-served"});
  CHECK(after.exit_code == 0);
  CHECK(after.out == "still-served\n");

  // Deleting the last container ends the shim and removes its socket.
  REQUIRE(s.fx.ctr_ok({"task", "kill", "c2"}).ok());
  REQUIRE(s.wait_status("c2", "STOPPED", 10s));
  auto c2_exit = init_exit(*events, "c2");
  REQUIRE(c2_exit);
  CHECK(c2_exit->find("\"exit_status\":9") != std::string::npos);
  REQUIRE(s.fx.ctr_ok({"task", "rm", "c2"}).ok());
  CHECK(wait_live_shims(s, {}));
  CHECK_FALSE(socket_exists(address));

  REQUIRE(events->wait_for_line({"/tasks/delete", "\"c2\""}, 5s));
  INFO("events:\n" << events->text());
  CHECK(event_topics_for(*events, "c1") ==
        std::vector<std::string>{"/tasks/create", "/tasks/start", "/tasks/exec-added",
                                 "/tasks/exec-started", "/tasks/exit", "/tasks/exit",
                                 "/tasks/delete"});
  CHECK(event_topics_for(*events, "c2") ==
        std::vector<std::string>{"/tasks/create", "/tasks/start", "/tasks/exec-added",
                                 "/tasks/exec-started", "/tasks/exit", "/tasks/exec-added",
                                 "/tasks/exec-started", "/tasks/exit", "/tasks/exit",
                                 "/tasks/delete"});
  // Each exec's exit names its own container and exit code.
  CHECK(events->wait_for_line({"/tasks/exit", "\"container_id\":\"c1\"", "\"id\":\"e1\"",
                               "\"exit_status\":3"}, 1s));
  CHECK(events->wait_for_line({"/tasks/exit", "\"container_id\":\"c2\"", "\"id\":\"e1\"",
                               "\"exit_status\":4"}, 1s));
}

TEST_CASE("a container without a group annotation gets its own shim",
          "[runc][grouping][runtime-binary][multi-version]") {
  LIBSHIM_SKIP_WITHOUT_CONTAINERD();
  RuncE2e s;
  const std::string key = "io.kubernetes.cri.sandbox-id";
  REQUIRE(s.fx.ctr_ok(s.run(annotated(key, "pod2"), "g1", exits_on_term(0))).ok());
  REQUIRE(s.fx.ctr_ok(s.run(annotated(key, "pod2"), "g2", exits_on_term(0))).ok());
  REQUIRE(s.fx.ctr_ok(s.run({"-d"}, "solo", exits_on_term(0))).ok());

  const std::string pod_address = address_of(s, "g1");
  const std::string solo_address = address_of(s, "solo");
  CHECK(pod_address == address_of(s, "g2"));
  CHECK(solo_address == "unix://" + go_shim_socket_path(s.fx.grpc_address(), s.fx.ns(), "solo"));
  CHECK(solo_address != pod_address);
  const pid_t pod_shim = shim_pid_of(s, "g1");
  const pid_t solo_shim = shim_pid_of(s, "solo");
  REQUIRE(pod_shim > 0);
  REQUIRE(solo_shim > 0);
  CHECK(pod_shim != solo_shim);
  CHECK(shim_pid_of(s, "g2") == pod_shim);
  std::vector<pid_t> both = {std::min(pod_shim, solo_shim), std::max(pod_shim, solo_shim)};
  CHECK(wait_live_shims(s, both));

  // The solo shim ends with its container; the pod's shim is untouched.
  kill_and_remove(s, "solo");
  CHECK(wait_live_shims(s, {pod_shim}));
  CHECK_FALSE(socket_exists(solo_address));
  CHECK(socket_exists(pod_address));
  CHECK(s.task_status("g1") == "RUNNING");
  CHECK(s.task_status("g2") == "RUNNING");

  kill_and_remove(s, "g2");
  CHECK(wait_live_shims(s, {pod_shim}));
  kill_and_remove(s, "g1");
  CHECK(wait_live_shims(s, {}));
  CHECK_FALSE(socket_exists(pod_address));
}

TEST_CASE("grouped containers stay reachable after a containerd restart",
          "[runc][grouping][runtime-binary][multi-version]") {
  LIBSHIM_SKIP_WITHOUT_CONTAINERD();
  RuncE2e s;
  const std::string key = "io.kubernetes.cri.sandbox-id";
  REQUIRE(s.fx.ctr_ok(s.run(annotated(key, "pod3"), "r1", exits_on_term(5))).ok());
  REQUIRE(s.fx.ctr_ok(s.run(annotated(key, "pod3"), "r2", exits_on_term(6))).ok());
  const pid_t shim = shim_pid_of(s, "r1");
  REQUIRE(shim > 0);
  const std::string address = address_of(s, "r1");

  s.fx.restart();
  auto events = s.fx.subscribe_events();
  CHECK(s.task_status("r1") == "RUNNING");
  CHECK(s.task_status("r2") == "RUNNING");
  CHECK(wait_live_shims(s, {shim}));
  auto exec = s.fx.ctr({"task", "exec", "--exec-id", "x", "r2", "/bin/echo", "after-restart"});
  CHECK(exec.exit_code == 0);
  CHECK(exec.out == "after-restart\n");

  REQUIRE(s.fx.ctr_ok({"task", "kill", "r1"}).ok());
  REQUIRE(s.wait_status("r1", "STOPPED", 10s));
  auto r1_exit = init_exit(*events, "r1");
  REQUIRE(r1_exit);
  CHECK(r1_exit->find("\"exit_status\":5") != std::string::npos);
  CHECK(s.task_status("r2") == "RUNNING");
  REQUIRE(s.fx.ctr_ok({"task", "rm", "r1"}).ok());
  CHECK(wait_live_shims(s, {shim}));

  REQUIRE(s.fx.ctr_ok({"task", "kill", "r2"}).ok());
  REQUIRE(s.wait_status("r2", "STOPPED", 10s));
  auto r2_exit = init_exit(*events, "r2");
  REQUIRE(r2_exit);
  CHECK(r2_exit->find("\"exit_status\":6") != std::string::npos);
  REQUIRE(s.fx.ctr_ok({"task", "rm", "r2"}).ok());
  CHECK(wait_live_shims(s, {}));
  CHECK_FALSE(socket_exists(address));
}

}  // namespace
}  // namespace shim::test
