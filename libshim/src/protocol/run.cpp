// shim::run: flag parsing and action dispatch for every libshim-based shim binary.
#include <unistd.h>

#include <cerrno>
#include <climits>

#include <fmt/format.h>

#include "common/vendor_call.h"
#include "protocol/actions.h"

namespace shim {
namespace detail {

std::string read_stdin(std::size_t limit) {
  std::string bytes;
  char buffer[65536];
  for (;;) {
    ssize_t n = ::read(STDIN_FILENO, buffer, sizeof buffer);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;  // EOF, or no usable stdin at all (closed fd): no options
    if (bytes.size() < limit) {
      bytes.append(buffer,
                   std::min<std::size_t>(static_cast<std::size_t>(n), limit - bytes.size()));
    }
  }
  return bytes;
}

bool write_fd(int fd, std::string_view bytes) {
  while (!bytes.empty()) {
    ssize_t n = ::write(fd, bytes.data(), bytes.size());
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return false;
    bytes.remove_prefix(static_cast<std::size_t>(n));
  }
  return true;
}

int fail(const Manager& manager, const Status& status) {
  write_fd(STDERR_FILENO, fmt::format("{}: {}", manager_name(manager), status.message()));
  return 1;
}

std::string manager_name(const Manager& manager) noexcept {
  std::string name = "shim";
  Status s = vendor_call("Manager::name", [&] {
    name = manager.name();
    return Status();
  });
  return s.ok() ? name : "shim";
}

Status daemon_options_of(const Manager& manager, const StartContext& context,
                         DaemonOptions* options) {
  return vendor_call("Manager::daemon_options", [&] {
    *options = manager.daemon_options(context);
    return Status();
  });
}

std::string current_dir() {
  char buffer[PATH_MAX];
  if (::getcwd(buffer, sizeof buffer) == nullptr) return ".";
  return buffer;
}

namespace {

int print_version(const char* program, const Manager& manager) {
  std::string version, revision;
  Status asked = vendor_call("Manager::version", [&] {
    version = manager.version();
    revision = manager.revision();
    return Status();
  });
  if (!asked.ok()) return fail(manager, asked);
  std::string text = fmt::format("{}:\n  Version:  {}\n", program, version);
  if (!revision.empty()) text += fmt::format("  Revision: {}\n", revision);
  text += fmt::format("  libshim:  {}\n", LIBSHIM_VERSION);
  return write_fd(STDOUT_FILENO, text) ? 0 : 1;
}

int print_usage(const char* program) {
  write_fd(STDERR_FILENO,
           fmt::format("Usage of {}:\n"
                       "  -namespace string   namespace that owns the shim\n"
                       "  -id string          id of the task\n"
                       "  -address string     grpc address back to main containerd\n"
                       "  -publish-binary string  path to the containerd binary\n"
                       "  -bundle string      path to the bundle if not workdir\n"
                       "  -socket string      socket path to serve\n"
                       "  -debug              enable debug output in logs\n"
                       "  -info               print runtime info and exit\n"
                       "  -v, -version        show the shim version and exit\n"
                       "actions: start, delete, upgrade, upgrade-all (none: serve)\n",
                       program));
  return 0;
}

}  // namespace
}  // namespace detail

namespace {

int run_action(int argc, char** argv, Manager& manager) {
  ShimFlags flags;
  if (Status status = parse_flags(argc, argv, &flags); !status.ok()) {
    detail::write_fd(STDERR_FILENO, status.message() + "\n");
    detail::print_usage(argc > 0 ? argv[0] : "shim");
    return 2;
  }
  const char* program = argc > 0 ? argv[0] : "shim";
  flags.argv.assign(argv, argv + argc);
  if (flags.help) return detail::print_usage(program);
  if (flags.version) return detail::print_version(program, manager);
  ShimEnv env = read_shim_env(process_env());
  if (flags.info) return detail::run_info(flags, env, manager);

  if (flags.action == "start") return detail::run_start(flags, env, manager);
  if (flags.action == "delete") return detail::run_delete(flags, env, manager);
  if (flags.action == "upgrade") return detail::run_upgrade(flags, env, manager);
  if (flags.action == "upgrade-all") return detail::run_upgrade_all(flags, env, manager);
  if (!flags.action.empty()) {
    return detail::fail(manager, Status(Code::kInvalidArgument,
                                        fmt::format("unknown action \"{}\"", flags.action)));
  }
  return detail::run_serve(flags, env, manager);
}

}  // namespace

// The actions guard each plug-in call themselves; this catches what escapes anyway (our
// own code out of memory, say), so the binary fails with a message, never a terminate.
int run(int argc, char** argv, Manager& manager) {
  try {
    return run_action(argc, argv, manager);
  } catch (...) {
    return detail::fail(manager, vendor_exception_status("the shim"));
  }
}

}  // namespace shim
