#include "shim/process/fork_server.h"

#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <exception>
#include <fstream>
#include <memory>
#include <sstream>

#include <fmt/format.h>

#include "process/fork_request.h"
#include "process/posix_spawner.h"

namespace shim {
namespace {

Status socket_pair(UniqueFd* ours, UniqueFd* theirs) {
  int fds[2];
  if (::socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, fds) < 0)
    return unknown(fmt::format("fork server: socketpair: {}", std::strerror(errno)));
  ours->reset(fds[0]);
  theirs->reset(fds[1]);
  return {};
}

using fork_wire::receive_message;
using fork_wire::send_message;

int thread_count() {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind("Threads:", 0) == 0) return std::atoi(line.c_str() + 8);
  }
  return 1;
}

// The program's before_fork is its own code: what it throws costs that request its
// preparation, never the server.
void prepare(const ForkServerHooks& hooks, const ForkedChild& child, const std::string& path) {
  if (!hooks.before_fork) return;
  try {
    hooks.before_fork(child);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "fork server: before_fork for %s threw: %s\n", path.c_str(), e.what());
  } catch (...) {
    std::fprintf(stderr, "fork server: before_fork for %s threw a non-exception\n", path.c_str());
  }
}

// Serves one request; what goes wrong goes back to the shim as the answer.
void serve_one(Spawner& spawner, const std::string& bytes, std::vector<UniqueFd>& received,
               const ForkServerHooks& hooks, bool* serving) {
  int answer = received.front().get();
  std::vector<int> fds;
  for (const UniqueFd& fd : received) fds.push_back(fd.get());
  SpawnRequest request;
  ForkedChild child;
  Status status = fork_wire::decode_request(bytes, fds, &request, &child.payload);
  SpawnedProcess spawned;
  if (status.ok()) {
    child.argv = request.argv;
    if (request.env) child.env = *request.env;
    request.hold = true;
    request.clone_parent = true;
    prepare(hooks, child, request.path);
    request.run_in_child = [&hooks, &child] { return hooks.entry(child); };
    if (int threads = hooks.before_fork ? thread_count() : 1; threads != 1) {
      // A child would hold locks of threads it does not have, and the threads stay: this
      // server can serve no more (Unavailable: the shim starts another).
      status = unavailable(fmt::format("spawn {}: the fork server's before_fork left {} threads",
                                       request.path, threads));
      *serving = false;
    } else {
      status = spawner.spawn(request, &spawned);
    }
  }
  std::vector<int> answer_fds;
  if (status.ok()) {
    answer_fds = {spawned.handle.pidfd(), spawned.gate.go_fd(), spawned.gate.result_fd()};
    if (answer_fds[0] < 0) answer_fds.erase(answer_fds.begin());  // no pidfd (old kernel)
  }
  int error = send_message(answer, fork_wire::encode_answer(status, spawned.pid), answer_fds);
  if (error != 0) {
    // The shim gave up waiting: the held child ends when our gate closes below.
    std::fprintf(stderr, "fork server: answer for %s: %s\n", request.path.c_str(),
                 std::strerror(error));
  }
}

}  // namespace

ForkServer::ForkServer(ClaimedProcess process, UniqueFd control)
    : process_(std::move(process)), control_(std::move(control)) {}

Status ForkServer::start(Reaper& reaper, Spawner& spawner, SpawnRequest server,
                         std::unique_ptr<ForkServer>* out) {
  UniqueFd ours, theirs;
  if (Status s = socket_pair(&ours, &theirs); !s.ok()) return s;
  server.fds.emplace_back(kForkServerFd, theirs.get());
  ClaimedProcess process;
  if (Status s = reaper.spawn_claimed(spawner, server, &process); !s.ok()) return s;
  out->reset(new ForkServer(std::move(process), std::move(ours)));
  return {};
}

ForkServer::~ForkServer() {
  control_.reset();
  if (!exited()) process_.handle.signal(SIGKILL).ignore_error();  // gone already: fine
}

bool ForkServer::exited() const { return process_.exit.ready(); }

Status ForkServer::spawn(const SpawnRequest& request, std::string_view payload,
                         SpawnedProcess* child, std::chrono::milliseconds timeout) {
  *child = SpawnedProcess{};
  std::string bytes;
  std::vector<int> fds;
  if (Status s = fork_wire::encode_request(request, payload, &bytes, &fds); !s.ok()) return s;
  UniqueFd answer, theirs;
  if (Status s = socket_pair(&answer, &theirs); !s.ok()) return s;
  fds.insert(fds.begin(), theirs.get());
  if (int error = send_message(control_.get(), bytes, fds); error != 0) {
    return unavailable(fmt::format("spawn {}: the fork server (pid {}) is gone: {}", request.path,
                                   pid(), std::strerror(error)));
  }
  theirs.reset();  // EOF on `answer` if the server dies before answering
  pollfd ready{answer.get(), POLLIN, 0};
  int n;
  do {
    n = ::poll(&ready, 1, static_cast<int>(timeout.count()));
  } while (n < 0 && errno == EINTR);
  if (n == 0) {
    return unavailable(fmt::format("spawn {}: the fork server (pid {}) did not answer in {} ms",
                                   request.path, pid(), timeout.count()));
  }
  if (n < 0) {
    return unknown(
        fmt::format("spawn {}: wait for the fork server: {}", request.path, std::strerror(errno)));
  }
  std::vector<UniqueFd> received;
  int error = receive_message(answer.get(), &bytes, &received);
  if (error != 0 || bytes.empty()) {
    return unavailable(fmt::format("spawn {}: the fork server (pid {}) is gone: {}", request.path,
                                   pid(), error != 0 ? std::strerror(error) : "no answer"));
  }
  pid_t child_pid = -1;
  if (Status s = fork_wire::decode_answer(bytes, &child_pid); !s.ok()) return s;
  if (received.size() < 2) {
    return unknown(fmt::format("spawn {}: the fork server sent {} fds, not a gate", request.path,
                               received.size()));
  }
  std::size_t gate = received.size() - 2;
  child->pid = child_pid;
  child->handle = ProcessHandle(child_pid, gate == 1 ? received[0].release() : -1);
  child->gate = ProcessGate(received[gate].release(), received[gate + 1].release(), request.path);
  return {};
}

namespace {

// Waits up to `timeout` for a request on `control_fd`: true when none came (nor EOF).
bool idle_for(int control_fd, std::chrono::milliseconds timeout) {
  pollfd control{control_fd, POLLIN, 0};
  int n = ::poll(&control, 1, static_cast<int>(timeout.count()));
  return n == 0;  // EINTR or an error: not idle; the receive below tells
}

}  // namespace

int serve_forks(int control_fd, std::function<int(const ForkedChild&)> entry,
                std::function<void()> when_idle, std::chrono::milliseconds idle_after) {
  return serve_forks(control_fd, ForkServerHooks{.entry = std::move(entry),
                                                 .when_idle = std::move(when_idle),
                                                 .idle_after = idle_after});
}

int serve_forks(int control_fd, ForkServerHooks hooks) {
  if (int threads = thread_count(); threads != 1) {
    std::fprintf(stderr, "fork server: %d threads; a fork copies only one, so it cannot serve\n",
                 threads);
    return 1;
  }
  // Its stderr is the shim's log, which can close under it (a shared shim's is the first
  // task's log FIFO, closed when that task is gone): a line written then must fail, not
  // kill the server. The children get every signal's default back (spawn_child.cpp).
  ::signal(SIGPIPE, SIG_IGN);
  PosixSpawner spawner;
  for (;;) {
    if (hooks.when_idle && idle_for(control_fd, hooks.idle_after)) {
      hooks.when_idle();
      hooks.when_idle = nullptr;  // once
    }
    std::string bytes;
    std::vector<UniqueFd> received;
    int error = receive_message(control_fd, &bytes, &received);
    if (error == 0 && bytes.empty() && received.empty()) return 0;  // the shim closed it
    if (error != 0 && error != EMSGSIZE) {
      std::fprintf(stderr, "fork server: control socket: %s\n", std::strerror(error));
      return 1;
    }
    if (received.empty()) continue;  // no answer socket: nobody to tell
    if (error == EMSGSIZE) {
      send_message(received.front().get(),
                   fork_wire::encode_answer(
                       invalid_argument("fork server request: larger than 1 MiB or 64 fds"), -1),
                   {});
      continue;
    }
    bool serving = true;
    serve_one(spawner, bytes, received, hooks, &serving);
    if (!serving) {
      std::fprintf(stderr, "fork server: before_fork started threads; it cannot serve on\n");
      return 1;
    }
  }
}

}  // namespace shim
