#include "shim/oci/cli_process.h"

#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <utility>

#include <fmt/format.h>

#include "gocompat/go_compat.h"
#include "shim/process/run_command.h"

extern char** environ;

namespace shim::oci {

namespace {

// How go-runc's modes map onto run_and_capture's routes.
shim::CaptureOptions capture_options(const CommandRequest& request) {
  using shim::OutputRoute;
  shim::CaptureOptions options{
      .input = request.input, .max_output = request.max_output, .timeout = request.timeout};
  switch (request.capture) {
    case OutputCapture::kNone:
      options.out = options.err = OutputRoute::kAsRequested;
      break;
    case OutputCapture::kCombined:
      options.err = OutputRoute::kSameAsStdout;
      break;
    case OutputCapture::kStdout:
      options.err = OutputRoute::kAsRequested;  // unmapped: /dev/null
      break;
    case OutputCapture::kSeparate:
      break;
  }
  return options;
}

// The container's stdio for kNone; everything else reads /dev/null or the input.
std::vector<std::pair<int, int>> stdio_fds(const CommandRequest& request) {
  std::vector<std::pair<int, int>> fds;
  if (request.capture != OutputCapture::kNone) return fds;
  for (auto [child_fd, parent_fd] :
       {std::pair{0, request.stdio.in}, std::pair{1, request.stdio.out},
        std::pair{2, request.stdio.err}}) {
    if (parent_fd >= 0) fds.emplace_back(child_fd, parent_fd);
  }
  return fds;
}

}  // namespace

std::vector<std::string> cli_environment() {
  std::vector<std::string> env;
  for (char** entry = environ; entry != nullptr && *entry != nullptr; ++entry) {
    std::string_view variable = *entry;
    if (variable.starts_with("NOTIFY_SOCKET=")) continue;
    env.emplace_back(variable);
  }
  return env;
}

CommandResult run_cli_command(shim::Reaper& reaper, shim::Spawner& spawner,
                                  const CommandRequest& request) {
  CommandResult result;
  if (request.argv.empty()) {
    result.error = "exec: no command";
    return result;
  }
  const std::string& name = request.argv.front();
  std::string path;
  if (shim::Status s = shim::go_look_path(name, &path); !s.ok()) {
    result.error = s.message();
    return result;
  }
  if (name.find('/') != std::string::npos && ::access(path.c_str(), X_OK) != 0) {
    result.error = fmt::format("fork/exec {}: {}", path, shim::go_errno_text(errno));
    return result;
  }

  shim::SpawnRequest spawn{.path = path,
                           .argv = request.argv,
                           .env = cli_environment(),
                           .fds = stdio_fds(request),
                           .parent_death_signal = SIGKILL};
  shim::CaptureResult captured;
  shim::Status status =
      shim::run_and_capture(reaper, spawner, spawn, capture_options(request), &captured);
  result.started = captured.started;
  result.output = std::move(captured.out);
  result.error_output = std::move(captured.err);
  result.truncated = captured.out_truncated || captured.err_truncated;
  // A timeout still ends in an exit: that of the killed runtime (go-runc reports it so).
  if (!status.ok() && (!captured.started || status.code() != shim::Code::kDeadlineExceeded)) {
    result.error = status.message();
    return result;
  }
  result.exit = captured.exit;
  if (captured.exit.status != 0) {
    result.error = fmt::format("{} did not terminate successfully: {}", name,
                               shim::go_exit_status_text(captured.exit.status));
  }
  return result;
}

}  // namespace shim::oci
