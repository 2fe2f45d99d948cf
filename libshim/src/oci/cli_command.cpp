#include "shim/oci/cli_command.h"

#include <utility>

#include "gocompat/go_compat.h"

namespace shim::oci {

namespace {

void append(std::vector<std::string>* argv, std::initializer_list<std::string_view> args) {
  for (std::string_view arg : args) argv->emplace_back(arg);
}

}  // namespace

CliCommandLine::CliCommandLine(CliConfig config) : config_(std::move(config)) {}

std::string CliCommandLine::binary() const {
  return config_.binary.empty() ? std::string(kDefaultCliBinary) : config_.binary;
}

std::string CliCommandLine::state_root() const {
  std::string_view root = config_.root.empty() ? kDefaultCliRoot : config_.root;
  return shim::go_join_path(root, config_.ns);
}

std::string CliCommandLine::log_path() const { return shim::go_join_path(config_.bundle, "log.json"); }

std::string CliCommandLine::init_pid_file() const {
  return shim::go_abs_path(shim::go_join_path(config_.bundle, "init.pid"));
}

std::string CliCommandLine::exec_pid_file(std::string_view exec_id) const {
  return shim::go_abs_path(shim::go_join_path(config_.bundle, std::string(exec_id) + ".pid"));
}

std::vector<std::string> CliCommandLine::prefix() const {
  // go-runc's Runc.args(): --root, [--debug], --log, --log-format, [--criu],
  // [--systemd-cgroup].
  std::vector<std::string> argv{binary(), "--root", state_root(), "--log", log_path(),
                                "--log-format", "json"};
  if (!config_.criu.empty()) append(&argv, {"--criu", config_.criu});
  if (config_.systemd_cgroup) argv.emplace_back("--systemd-cgroup");
  return argv;
}

std::vector<std::string> CliCommandLine::with_prefix(
    std::initializer_list<std::string_view> args) const {
  std::vector<std::string> argv = prefix();
  append(&argv, args);
  return argv;
}

std::vector<std::string> CliCommandLine::create(std::string_view id,
                                                 const CreateArgs& args) const {
  std::vector<std::string> argv =
      with_prefix({"create", "--bundle", config_.bundle, "--pid-file", init_pid_file()});
  if (!args.console_socket.empty()) append(&argv, {"--console-socket", args.console_socket});
  if (args.no_pivot) argv.emplace_back("--no-pivot");
  if (args.no_new_keyring) argv.emplace_back("--no-new-keyring");
  argv.emplace_back(id);
  return argv;
}

std::vector<std::string> CliCommandLine::start(std::string_view id) const {
  return with_prefix({"start", id});
}

std::vector<std::string> CliCommandLine::exec(std::string_view id, const ExecArgs& args) const {
  std::vector<std::string> argv = with_prefix({"exec", "--process", args.process_file});
  if (!args.console_socket.empty()) append(&argv, {"--console-socket", args.console_socket});
  append(&argv, {"--detach", "--pid-file", exec_pid_file(args.exec_id), id});
  return argv;
}

std::vector<std::string> CliCommandLine::kill(std::string_view id, int signal, bool all) const {
  std::vector<std::string> argv = with_prefix({"kill"});
  if (all) argv.emplace_back("--all");
  append(&argv, {id, std::to_string(signal)});
  return argv;
}

std::vector<std::string> CliCommandLine::remove(std::string_view id, bool force) const {
  std::vector<std::string> argv = with_prefix({"delete"});
  if (force) argv.emplace_back("--force");
  argv.emplace_back(id);
  return argv;
}

std::vector<std::string> CliCommandLine::pause(std::string_view id) const {
  return with_prefix({"pause", id});
}

std::vector<std::string> CliCommandLine::resume(std::string_view id) const {
  return with_prefix({"resume", id});
}

std::vector<std::string> CliCommandLine::ps(std::string_view id) const {
  return with_prefix({"ps", "--format", "json", id});
}

std::vector<std::string> CliCommandLine::update(std::string_view id) const {
  return with_prefix({"update", "--resources=-", id});
}

std::vector<std::string> CliCommandLine::state(std::string_view id) const {
  return with_prefix({"state", id});
}

namespace {

// go-runc's CheckpointOpts.args(), shared by checkpoint and restore.
void append_checkpoint_paths(std::vector<std::string>* argv, const std::string& image,
                             const std::string& work, const std::string& parent) {
  if (!image.empty()) append(argv, {"--image-path", image});
  if (!work.empty()) append(argv, {"--work-path", work});
  if (!parent.empty()) append(argv, {"--parent-path", parent});
}

}  // namespace

std::vector<std::string> CliCommandLine::checkpoint(std::string_view id,
                                                     const CheckpointArgs& args) const {
  std::vector<std::string> argv = with_prefix({"checkpoint"});
  append_checkpoint_paths(&argv, args.image_path, args.work_path, args.parent_path);
  if (args.open_tcp) argv.emplace_back("--tcp-established");
  if (args.external_unix_sockets) argv.emplace_back("--ext-unix-sk");
  if (args.terminal) argv.emplace_back("--shell-job");
  if (args.file_locks) argv.emplace_back("--file-locks");
  if (!args.cgroups_mode.empty()) append(&argv, {"--manage-cgroups-mode", args.cgroups_mode});
  for (const std::string& ns : args.empty_namespaces) append(&argv, {"--empty-ns", ns});
  if (args.leave_running) argv.emplace_back("--leave-running");
  argv.emplace_back(id);
  return argv;
}

std::vector<std::string> CliCommandLine::restore(std::string_view id,
                                                  const RestoreArgs& args) const {
  std::vector<std::string> argv = with_prefix({"restore"});
  append_checkpoint_paths(&argv, args.image_path, args.work_path, args.parent_path);
  append(&argv, {"--detach", "--pid-file", init_pid_file()});
  if (!args.console_socket.empty()) append(&argv, {"--console-socket", args.console_socket});
  if (args.no_pivot) argv.emplace_back("--no-pivot");
  // Single dash: literally what go-runc passes (runc's flag parser accepts both).
  append(&argv, {"-no-subreaper", "--bundle", config_.bundle, id});
  return argv;
}

std::vector<std::string> CliCommandLine::version() const { return with_prefix({"--version"}); }

std::vector<std::string> cli_features_command(std::string_view binary_path) {
  return {std::string(binary_path), "features"};
}

}  // namespace shim::oci
