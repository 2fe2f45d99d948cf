// What a fork server needs of PosixSpawner (shim/process/fork_server.h): the wire form of
// a request, a child that runs a function instead of an executable, and a container made
// without an OCI CLI (its cgroup, hostname, mounts, pivot_root). Root only, as the suite;
// the children are reaped by pid here. The server itself runs under containerd in the
// Wasm shim's tests (tests/wasm).
#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <stdexcept>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include <fmt/format.h>
#include <catch2/catch.hpp>

#include "process/fork_request.h"
#include "process/posix_spawner.h"
#include "shim/fs.h"
#include "shim/linux/container_cgroup.h"
#include "shim/process/fork_server.h"
#include "support/busybox_rootfs.h"
#include "support/temp_dir.h"
#include "unit/process/child_wait.h"

namespace {

using shim::SpawnRequest;

TEST_CASE("fork server wire: a request and its fds round trip", "[fork-server]") {
  SpawnRequest r;
  r.path = "/m.wasm";
  r.argv = {"/m.wasm", "a b"};
  r.env = std::vector<std::string>{"K=v"};
  r.cwd = "/w";
  r.fds = {{0, 10}, {1, 11}, {2, 11}};
  r.new_namespaces = CLONE_NEWPID | CLONE_NEWNS;
  r.join_pidfd = 12;
  r.join_namespaces = CLONE_NEWNET;
  r.root = "/r";
  r.mount_proc = true;
  r.oom_score_adj = -5;
  r.rlimits = {{RLIMIT_NOFILE, 10, 20}};
  r.capabilities = shim::CapabilitySets{1, 2, 3, 4, 5};
  r.user = shim::SpawnUser{1000, 1001, {5, 6}};
  r.no_new_privileges = true;
  r.cgroup_procs = {"/cg/cgroup.procs"};
  r.join_namespace_files = {{CLONE_NEWIPC, 13}};
  r.hostname = "h";
  r.mounts = {{"tmpfs", "/run", "tmpfs", {"size=1m"}}};
  r.pivot_root = true;
  std::string json;
  std::vector<int> fds;
  REQUIRE(shim::fork_wire::encode_request(r, "payload", &json, &fds).ok());
  CHECK(fds == std::vector<int>{10, 11, 11, 12, 13});
  // As received: the answer socket first, then new numbers.
  std::vector<int> received{99, 20, 21, 22, 23, 24};
  SpawnRequest back;
  std::string payload;
  REQUIRE(shim::fork_wire::decode_request(json, received, &back, &payload).ok());
  CHECK(payload == "payload");
  CHECK(back.argv == r.argv);
  CHECK(back.env == r.env);
  CHECK(back.fds == std::vector<std::pair<int, int>>{{0, 20}, {1, 21}, {2, 22}});
  CHECK(back.join_pidfd == 23);
  CHECK(back.join_namespace_files == std::vector<std::pair<int, int>>{{CLONE_NEWIPC, 24}});
  CHECK(back.new_namespaces == r.new_namespaces);
  CHECK(back.oom_score_adj == -5);
  CHECK(back.capabilities->ambient == 5);
  CHECK(back.user->additional_gids == std::vector<gid_t>{5, 6});
  CHECK(back.mounts.size() == 1);
  CHECK(back.mounts[0].options == std::vector<std::string>{"size=1m"});
  CHECK(back.pivot_root);
  CHECK(back.hostname == "h");

  CHECK(shim::fork_wire::decode_request(json, {99}, &back, &payload).code() ==
        shim::Code::kInvalidArgument);  // fd indexes beyond what came
  CHECK(shim::fork_wire::decode_request("{", {99}, &back, &payload).code() ==
        shim::Code::kInvalidArgument);
  // Only namespaces reach clone3: CLONE_VM would run the child on the server's memory.
  SpawnRequest hostile = r;
  hostile.new_namespaces |= CLONE_VM;
  REQUIRE(shim::fork_wire::encode_request(hostile, "", &json, &fds).ok());
  CHECK(shim::fork_wire::decode_request(json, received, &back, &payload).code() ==
        shim::Code::kInvalidArgument);
  r.parent_death_signal = SIGKILL;
  CHECK(shim::fork_wire::encode_request(r, "", &json, &fds).code() == shim::Code::kInvalidArgument);

  pid_t pid = 0;
  CHECK(shim::fork_wire::decode_answer(shim::fork_wire::encode_answer({}, 42), &pid).ok());
  CHECK(pid == 42);
  shim::Status error = shim::fork_wire::decode_answer(
      shim::fork_wire::encode_answer(shim::unknown("spawn x: no"), -1), &pid);
  CHECK(error == shim::unknown("spawn x: no"));
}

TEST_CASE("a held child runs a function instead of an executable", "[fork-server]") {
  int out[2];
  REQUIRE(::pipe2(out, O_CLOEXEC) == 0);
  SpawnRequest request;
  request.path = "entry";
  request.fds = {{1, out[1]}};
  request.hold = true;
  request.run_in_child = [] {
    (void)!::write(1, "in the child\n", 13);
    return 7;
  };
  shim::SpawnedProcess child;
  REQUIRE(shim::PosixSpawner().spawn(request, &child).ok());
  ::close(out[1]);
  REQUIRE(child.gate.release().ok());  // EOF on the report pipe: it runs
  CHECK(shim_test::read_to_end(out[0]) == "in the child\n");
  ::close(out[0]);
  int status = shim_test::wait_for_child(child.pid);
  CHECK(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 7);
}

TEST_CASE("a container child: its cgroup, hostname, mounts and a root pivoted into",
          "[fork-server]") {
  shim::test::TempDir dir("fork-");
  std::string root = dir.path() + "/rootfs";
  shim::test::make_busybox_rootfs(root);
  std::string host_file = dir.path() + "/host-only";
  REQUIRE(shim::write_file(host_file, "host\n", 0644).ok());
  std::filesystem::create_directories(dir.path() + "/data");
  REQUIRE(shim::write_file(dir.path() + "/data/file", "from the host\n", 0644).ok());

  shim::ContainerCgroup cgroup;
  std::string cgroup_path = fmt::format("/libshim-unit-fork-{}", ::getpid());
  REQUIRE(shim::ContainerCgroup::create({}, shim::host_cgroup_version(), cgroup_path, {}, &cgroup)
              .ok());
  int out[2];
  REQUIRE(::pipe2(out, O_CLOEXEC) == 0);
  SpawnRequest request;
  request.path = "/bin/sh";
  request.argv = {"sh", "-c",
                  fmt::format("hostname; grep -q {} /proc/self/cgroup && echo cgroup; "
                              "test -e {} || echo no-host; cat /data/file; "
                              "grep ' /run ' /proc/mounts | cut -d' ' -f3; "
                              "echo x > /data/new || echo read-only",
                              cgroup_path, host_file)};
  request.env = std::vector<std::string>{"PATH=/bin"};
  request.fds = {{1, out[1]}, {2, out[1]}};
  request.new_namespaces = CLONE_NEWPID | CLONE_NEWNS | CLONE_NEWUTS;
  request.root = root;
  request.pivot_root = true;
  request.mount_proc = true;
  request.hostname = "forked";
  request.cgroup_procs = cgroup.procs_files();
  request.mounts = {{"tmpfs", "/run", "tmpfs", {"nosuid", "size=1m"}},
                    {dir.path() + "/data", "/data", "bind", {"rbind", "ro"}}};
  shim::SpawnedProcess child;
  shim::Status s = shim::PosixSpawner().spawn(request, &child);
  INFO(s.to_string());
  REQUIRE(s.ok());
  ::close(out[1]);
  std::string text = shim_test::read_to_end(out[0]);
  ::close(out[0]);
  shim_test::wait_for_child(child.pid);
  CHECK(text.starts_with("forked\ncgroup\nno-host\nfrom the host\ntmpfs\n"));
  CHECK(text.ends_with("read-only\n"));
  CHECK_FALSE(std::filesystem::exists(dir.path() + "/data/new"));
  CHECK(cgroup.remove().ok());

  request.hostname = "x";
  request.new_namespaces = CLONE_NEWNS;
  s = shim::PosixSpawner().spawn(request, &child);
  CHECK(s.code() == shim::Code::kInvalidArgument);  // a hostname needs a UTS namespace
}

}  // namespace

// serve_forks' when_idle runs once, the first time no request came for idle_after, and
// the loop ends (0) when the shim closes the control socket. The server runs in a
// forked child: it must be single-threaded.
TEST_CASE("a fork server runs its idle work once when no request comes, and ends at EOF",
          "[fork-server]") {
  int control[2], idle[2];
  REQUIRE(::socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, control) == 0);
  REQUIRE(::pipe2(idle, O_CLOEXEC) == 0);
  pid_t server = ::fork();
  REQUIRE(server >= 0);
  if (server == 0) {
    ::close(control[0]);
    ::close(idle[0]);
    int code = shim::serve_forks(
        control[1], [](const shim::ForkedChild&) { return 0; },
        [&] { (void)!::write(idle[1], "i", 1); }, std::chrono::milliseconds(50));
    ::_exit(code);
  }
  ::close(control[1]);
  ::close(idle[1]);
  pollfd ready{idle[0], POLLIN, 0};
  CHECK(::poll(&ready, 1, 5000) == 1);            // ~50 ms: no request came
  ::close(control[0]);                            // the shim is gone
  CHECK(shim_test::read_to_end(idle[0]) == "i");  // once, then EOF when the server ended
  ::close(idle[0]);
  int status = shim_test::wait_for_child(server);
  CHECK(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 0);
}

namespace {

// One request over the wire as ForkServer::spawn sends it (an answer socket first, then
// the request's fds); the child's pid and its gate come back. The server runs in a
// forked child of this process; its children are ours (CLONE_PARENT).
// The server's answer: its status, and on success the child's pid and gate.
shim::Status fork_through(int control, std::string_view payload, pid_t* child,
                          shim::ProcessGate* gate) {
  SpawnRequest request;
  request.path = "/entry";
  request.argv = {"entry"};
  std::string bytes;
  std::vector<int> fds;
  REQUIRE(shim::fork_wire::encode_request(request, payload, &bytes, &fds).ok());
  int answer[2];
  REQUIRE(::socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, answer) == 0);
  fds.insert(fds.begin(), answer[1]);
  REQUIRE(shim::fork_wire::send_message(control, bytes, fds) == 0);
  ::close(answer[1]);
  std::string reply;
  std::vector<shim::UniqueFd> got;
  REQUIRE(shim::fork_wire::receive_message(answer[0], &reply, &got) == 0);
  ::close(answer[0]);
  REQUIRE(!reply.empty());
  pid_t pid = -1;
  if (shim::Status s = shim::fork_wire::decode_answer(reply, &pid); !s.ok()) return s;
  REQUIRE(got.size() >= 2);
  // got[0] is the pidfd when there are three; it closes with `got`.
  const std::size_t go = got.size() - 2;
  *gate = shim::ProcessGate(got[go].release(), got[go + 1].release(), "/entry");
  *child = pid;
  return {};
}

// Runs serve_forks(hooks) in a forked child of this process, its control socket's other
// end in *control; the server's pid.
pid_t start_server(shim::ForkServerHooks hooks, int* control) {
  int pair[2];
  REQUIRE(::socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, pair) == 0);
  pid_t server = ::fork();
  REQUIRE(server >= 0);
  if (server == 0) {
    ::close(pair[0]);
    ::_exit(shim::serve_forks(pair[1], std::move(hooks)));
  }
  ::close(pair[1]);
  *control = pair[0];
  return server;
}

}  // namespace

// before_fork runs in the server before each fork: the child inherits what it prepared
// (here the payload's number, its exit status). One that throws costs only its own
// preparation: the fork goes on and the server serves the next request. The server
// ignores SIGPIPE; its children do not.
TEST_CASE("a fork server's before_fork prepares what the child inherits, and may throw",
          "[fork-server]") {
  // Each child's copy of the server's `prepared`: the server runs in a forked child.
  int prepared = 0;
  shim::ForkServerHooks hooks;
  hooks.before_fork = [&prepared](const shim::ForkedChild& child) {
    struct sigaction pipe_action {};
    ::sigaction(SIGPIPE, nullptr, &pipe_action);
    if (pipe_action.sa_handler != SIG_IGN) {  // a closed stderr would end the server
      prepared = 98;
      return;
    }
    if (child.payload == "throw") throw std::runtime_error("no preparation");
    prepared = std::stoi(child.payload);
  };
  hooks.entry = [&prepared](const shim::ForkedChild&) {
    struct sigaction pipe_action {};
    ::sigaction(SIGPIPE, nullptr, &pipe_action);
    return pipe_action.sa_handler == SIG_DFL ? prepared : 99;  // the server ignores it
  };
  int control = -1;
  pid_t server = start_server(std::move(hooks), &control);
  std::vector<int> statuses;
  for (std::string_view payload : {"7", "throw", "9"}) {
    shim::ProcessGate gate;
    pid_t child = -1;
    REQUIRE(fork_through(control, payload, &child, &gate).ok());
    REQUIRE(gate.release().ok());
    int status = shim_test::wait_for_child(child);
    statuses.push_back(WIFEXITED(status) ? WEXITSTATUS(status) : -1);
  }
  ::close(control);
  int status = shim_test::wait_for_child(server);
  CHECK(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 0);
  // The throw left the previous preparation in place: entry must not rely on it.
  CHECK(statuses == std::vector<int>{7, 7, 9});
}

// A before_fork that leaves a thread behind: no child is forked with it (it would hold
// that thread's locks), the request fails Unavailable (the shim then starts another
// server) and the loop ends with 1.
TEST_CASE("a fork server whose before_fork starts a thread stops serving", "[fork-server]") {
  shim::ForkServerHooks hooks;
  hooks.before_fork = [](const shim::ForkedChild&) { std::thread([] { ::pause(); }).detach(); };
  hooks.entry = [](const shim::ForkedChild&) { return 0; };
  int control = -1;
  pid_t server = start_server(std::move(hooks), &control);
  shim::ProcessGate gate;
  pid_t child = -1;
  shim::Status s = fork_through(control, "x", &child, &gate);
  CHECK(s.code() == shim::Code::kUnavailable);
  CHECK(s.message().find("before_fork left 2 threads") != std::string::npos);
  CHECK(child == -1);
  ::close(control);  // a server still serving would now end with 0
  int status = shim_test::wait_for_child(server);
  CHECK(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 1);
}
