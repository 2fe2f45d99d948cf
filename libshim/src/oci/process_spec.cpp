// OCI process -> SpawnRequest, as runc reads a process: libcontainer/specconv (the
// fields), utils_linux.go's validateProcessSpec (cwd, args), env.go's prepareEnv (env,
// PATH for the executable's search, HOME), init_linux.go's setupConsole (the pty).
#include "shim/oci/process_spec.h"

#include <fmt/format.h>
#include <boost/json/parse.hpp>

#include "oci/json_fields.h"
#include "oci/process_env.h"
#include "oci/process_fields.h"
#include "shim/stdio/console_sender.h"

namespace shim::oci {
namespace {

// Fields of the runtime spec this runtime cannot apply, and why. An empty string is
// "unset" (Go's omitempty), anything else an error: never silently ignored.
struct Unsupported {
  const char* key;
  const char* why;
};
constexpr Unsupported kUnsupported[] = {
    {"apparmorProfile", "AppArmor profiles are not supported by this runtime"},
    {"selinuxLabel", "SELinux labels are not supported by this runtime"},
    {"scheduler", "scheduling policies are not supported by this runtime"},
    {"ioPriority", "I/O priorities are not supported by this runtime"},
    {"execCPUAffinity", "CPU affinity is not supported by this runtime"},
    {"commandLine", "a Windows field, not supported on Linux"},
};

Status check_unsupported(const boost::json::object& process) {
  for (const Unsupported& field : kUnsupported) {
    const boost::json::value* value = member(process, field.key);
    if (value == nullptr || (value->is_string() && value->get_string().empty())) continue;
    return field_error(fmt::format("process.{}", field.key), field.why);
  }
  return {};
}

Status read_args(const boost::json::object& process, SpawnRequest* request) {
  const boost::json::value* args = member(process, "args");
  if (args == nullptr)
    return field_error("process.args", "missing (at least the executable is needed)");
  if (Status s = read_strings(*args, "process.args", &request->argv); !s.ok()) return s;
  if (request->argv.empty())
    return field_error("process.args", "empty (at least the executable is needed)");
  if (request->argv[0].empty()) return field_error("process.args[0]", "empty");
  request->path = request->argv[0];
  return {};
}

Status read_cwd(const boost::json::object& process, SpawnRequest* request) {
  const boost::json::value* cwd = member(process, "cwd");
  if (cwd == nullptr) return field_error("process.cwd", "missing");
  if (Status s = read_string(*cwd, "process.cwd", &request->cwd); !s.ok()) return s;
  if (!request->cwd.starts_with('/')) {
    return field_error("process.cwd", fmt::format("\"{}\" is not an absolute path", request->cwd));
  }
  return {};
}

// env, then PATH as the executable's search list: with no PATH in env there is none
// (runc's init starts from an empty environment), so a bare args[0] is not found.
Status read_env(const boost::json::object& process, const ProcessTarget& target,
                SpawnRequest* request) {
  std::vector<std::string> env;
  if (const boost::json::value* value = member(process, "env")) {
    if (Status s = read_strings(*value, "process.env", &env); !s.ok()) return s;
  }
  std::optional<std::string> path;
  std::vector<std::string> prepared;
  if (Status s = prepare_env(env, target.root, request->user->uid, &prepared, &path); !s.ok())
    return s;
  request->env = std::move(prepared);
  request->search_path = path.value_or("");
  return {};
}

Status read_settings(const boost::json::object& process, SpawnRequest* request) {
  SpawnUser user;
  if (Status s = read_user(process, &user, &request->umask); !s.ok()) return s;
  request->user = std::move(user);
  if (Status s = read_rlimits(process, &request->rlimits); !s.ok()) return s;
  if (Status s = read_capabilities(process, &request->capabilities); !s.ok()) return s;
  if (Status s = read_oom_score_adj(process, &request->oom_score_adj); !s.ok()) return s;
  if (const boost::json::value* nnp = member(process, "noNewPrivileges")) {
    if (Status s = read_bool(*nnp, "process.noNewPrivileges", &request->no_new_privileges); !s.ok())
      return s;
  }
  return {};
}

// consoleSize as {rows, columns}; {0, 0} when absent (runc sizes only when both are set).
Status read_console_size(const boost::json::object& process, unsigned* rows, unsigned* columns) {
  *rows = *columns = 0;
  const boost::json::value* value = member(process, "consoleSize");
  if (value == nullptr) return {};
  const boost::json::object* size = nullptr;
  if (Status s = read_object(*value, "process.consoleSize", &size); !s.ok()) return s;
  for (auto [key, out] : {std::pair{"height", rows}, std::pair{"width", columns}}) {
    std::uint64_t number = 0;
    const boost::json::value* dimension = member(*size, key);
    std::string field = fmt::format("process.consoleSize.{}", key);
    if (dimension == nullptr) return field_error(field, "missing");
    if (Status s = read_uint(*dimension, field, &number, UINT16_MAX); !s.ok()) return s;
    *out = static_cast<unsigned>(number);
  }
  return {};
}

// The process's stdio: the target's fds, or with `terminal` a new pty whose slave is
// all three and the controlling terminal. The two must agree, as runc refuses a console
// socket without a terminal and a terminal without a console socket.
Status attach_stdio(const boost::json::object& process, const ProcessTarget& target,
                    ProcessSpawn* spawn) {
  bool terminal = false;
  if (const boost::json::value* value = member(process, "terminal")) {
    if (Status s = read_bool(*value, "process.terminal", &terminal); !s.ok()) return s;
  }
  const ProcessStdio& stdio = target.stdio;
  if (terminal != stdio.terminal()) {
    return field_error("process.terminal",
                       terminal ? "true, but the process was given no console socket"
                                : "false, but the process was given a console socket");
  }
  SpawnRequest& request = spawn->request;
  if (!terminal) {
    for (auto [child_fd, fd] : {std::pair{0, stdio.stdin}, {1, stdio.stdout}, {2, stdio.stderr}}) {
      if (fd >= 0) request.fds.emplace_back(child_fd, fd);  // unset: /dev/null
    }
    return {};
  }
  unsigned rows = 0, columns = 0;
  if (Status s = read_console_size(process, &rows, &columns); !s.ok()) return s;
  if (Status s = Pty::open(&spawn->pty); !s.ok()) return s;
  if (rows != 0 && columns != 0) {
    if (Status s = spawn->pty.resize(rows, columns); !s.ok()) return s;
  }
  for (int child_fd : {0, 1, 2}) request.fds.emplace_back(child_fd, spawn->pty.slave());
  request.controlling_terminal = true;
  spawn->console_socket = stdio.console_socket;
  return {};
}

}  // namespace

Status ProcessSpawn::send_console() {
  if (!pty.valid()) return {};
  Status status = shim::send_console(console_socket, pty.master(), pty.name());
  pty = Pty();  // the process has the slave, the console socket the master
  return status;
}

Status spawn_request_from_process(const boost::json::value& process, const ProcessTarget& target,
                                  ProcessSpawn* spawn) {
  *spawn = ProcessSpawn();
  const boost::json::object* object = nullptr;
  if (Status s = read_object(process, "process", &object); !s.ok()) return s;
  if (Status s = check_unsupported(*object); !s.ok()) return s;
  SpawnRequest& request = spawn->request;
  if (Status s = read_args(*object, &request); !s.ok()) return s;
  if (Status s = read_cwd(*object, &request); !s.ok()) return s;
  if (Status s = read_settings(*object, &request); !s.ok()) return s;
  if (Status s = read_env(*object, target, &request); !s.ok()) return s;
  request.root = target.root;
  Status status = attach_stdio(*object, target, spawn);
  if (!status.ok()) *spawn = ProcessSpawn();  // no half-made pty
  return status;
}

Status spawn_request_from_process(std::string_view process_json, const ProcessTarget& target,
                                  ProcessSpawn* spawn) {
  boost::system::error_code ec;
  boost::json::value process = boost::json::parse(process_json, ec);
  if (ec) return field_error("process", fmt::format("not JSON: {}", ec.message()));
  return spawn_request_from_process(process, target, spawn);
}

}  // namespace shim::oci
