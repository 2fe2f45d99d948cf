#include "shim/oci/cli_client.h"

#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <filesystem>
#include <system_error>
#include <utility>

#include <fmt/format.h>
#include <boost/json/parse.hpp>
#include <boost/json/value.hpp>

#include "gocompat/go_compat.h"
#include "shim/fs.h"
#include "shim/logger.h"
#include "shim/oci/cli_error.h"

namespace shim::oci {

namespace {

// Go's os.TempDir() with go-runc's $XDG_RUNTIME_DIR preference.
std::string process_file_dir() { return shim::runtime_temp_dir(); }

// A temp file holding `json` plus the newline json.Encoder ends with. Removed when the
// object dies.
class ProcessFile {
 public:
  ~ProcessFile() {
    if (!path_.empty()) ::unlink(path_.c_str());
  }

  // "" or Go-style error text.
  std::string write(std::string_view json) {
    std::string pattern = shim::go_join_path(process_file_dir(), "runc-processXXXXXX");
    int fd = ::mkostemp(pattern.data(), O_CLOEXEC);
    if (fd < 0) return fmt::format("open {}: {}", pattern, shim::go_errno_text(errno));
    path_ = pattern;
    std::string content(json);
    if (content.empty() || content.back() != '\n') content += '\n';
    // Written through the mkostemp fd (mode 0600): reopening with O_TRUNC would make ext4
    // flush the file on close, ~10% of the shim's time per exec.
    std::string_view rest = content;
    while (!rest.empty()) {
      ssize_t n = ::write(fd, rest.data(), rest.size());
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) {
        int err = errno;
        ::close(fd);
        return fmt::format("write {}: {}", path_, shim::go_errno_text(err));
      }
      rest.remove_prefix(static_cast<std::size_t>(n));
    }
    if (::close(fd) != 0) return fmt::format("close {}: {}", path_, shim::go_errno_text(errno));
    return {};
  }

  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

std::string first_line(std::string_view text) {
  return std::string(text.substr(0, text.find('\n')));
}

void copy_file(const std::string& from, const std::string& to) {
  std::string content;
  // A diagnostic copy: the checkpoint's own error is reported either way.
  if (shim::go_read_file(from, &content).ok())
    shim::go_write_file(to, content, 0666).ignore_error();
}

shim::Status json_error(std::string_view what, const boost::system::error_code& ec) {
  return shim::unknown(fmt::format("{}: {}", what, ec.message()));
}

}  // namespace

CliClient::CliClient(shim::Reaper& reaper, shim::Spawner& spawner, CliConfig config,
                     CliClientOptions options)
    : reaper_(reaper), spawner_(spawner), command_line_(std::move(config)), options_(options) {}

CommandResult CliClient::run(std::vector<std::string> argv, OutputCapture capture, Stdio stdio,
                             std::string input) {
  CommandRequest request{.argv = std::move(argv),
                         .capture = capture,
                         .stdio = stdio,
                         .input = std::move(input),
                         .max_output = options_.max_output,
                         .timeout = options_.timeout};
  return run_cli_command(reaper_, spawner_, request);
}

std::string CliClient::captured_error(const CommandResult& result) {
  if (result.ok()) return {};
  // go-runc formats "%s: %s" with the output buffer, which is nil when the start failed.
  return fmt::format("{}: {}", result.error, result.started ? result.output : "<nil>");
}

std::string CliClient::run_or_error(std::vector<std::string> argv, std::string input) {
  return captured_error(run(std::move(argv), OutputCapture::kCombined, {}, std::move(input)));
}

std::string CliClient::run_with_io(std::vector<std::string> argv, const std::optional<Stdio>& io) {
  if (!io) return run_or_error(std::move(argv));
  return run(std::move(argv), OutputCapture::kNone, *io).error;
}

shim::Status CliClient::runtime_failure(std::string_view action,
                                        const std::string& runc_error) const {
  if (runc_error.empty()) return {};
  return runtime_error(command_line_.log_path(), action, runc_error);
}

shim::Status CliClient::create(std::string_view id, const CreateArgs& args,
                               const std::optional<Stdio>& io) {
  return runtime_failure(kCreateFailed, run_with_io(command_line_.create(id, args), io));
}

shim::Status CliClient::start(std::string_view id) {
  return runtime_failure(kStartFailed, run_or_error(command_line_.start(id)));
}

shim::Status CliClient::exec(std::string_view id, std::string_view exec_id,
                             std::string_view process_json, std::string_view console_socket,
                             const std::optional<Stdio>& io) {
  ProcessFile file;
  if (std::string error = file.write(process_json); !error.empty())
    return runtime_failure(kExecFailed, error);
  ExecArgs args{.exec_id = std::string(exec_id),
                .process_file = file.path(),
                .console_socket = std::string(console_socket)};
  return runtime_failure(kExecFailed, run_with_io(command_line_.exec(id, args), io));
}

shim::Status CliClient::kill(std::string_view id, int signal, bool all) {
  std::string error = run_or_error(command_line_.kill(id, signal, all));
  if (error.empty()) return {};
  return kill_error(error);
}

shim::Status CliClient::kill_all(std::string_view id) {
  return runtime_failure(kKillAllFailed, run_or_error(command_line_.kill(id, SIGKILL, true)));
}

shim::Status CliClient::remove(std::string_view id, bool force) {
  std::string error = run_or_error(command_line_.remove(id, force));
  if (error.find("does not exist") != std::string::npos) return {};
  return runtime_failure(kDeleteFailed, error);
}

shim::Status CliClient::pause(std::string_view id) {
  return runtime_failure(kPauseFailed, run_or_error(command_line_.pause(id)));
}

shim::Status CliClient::resume(std::string_view id) {
  return runtime_failure(kResumeFailed, run_or_error(command_line_.resume(id)));
}

shim::Status CliClient::ps(std::string_view id, std::vector<int>* pids) {
  pids->clear();
  CommandResult result = run(command_line_.ps(id), OutputCapture::kCombined);
  if (!result.ok()) return shim::unknown(captured_error(result));
  boost::system::error_code ec;
  boost::json::value value = boost::json::parse(result.output, ec);
  if (ec) return json_error("decode runc ps output", ec);
  if (value.is_null()) return {};
  if (!value.is_array()) return shim::unknown("decode runc ps output: not a JSON array");
  for (const boost::json::value& pid : value.get_array()) {
    if (!pid.is_int64() && !pid.is_uint64())
      return shim::unknown("decode runc ps output: not a list of pids");
    pids->push_back(static_cast<int>(pid.to_number<std::int64_t>()));
  }
  return {};
}

shim::Status CliClient::update(std::string_view id, std::string_view resources_json) {
  std::string input(resources_json);
  if (input.empty() || input.back() != '\n') input += '\n';  // json.Encoder's newline
  std::string error = run_or_error(command_line_.update(id), std::move(input));
  if (error.empty()) return {};
  return shim::unknown(std::move(error));
}

shim::Status CliClient::state(std::string_view id, CliState* state) {
  *state = CliState{};
  CommandResult result = run(command_line_.state(id), OutputCapture::kCombined);
  if (!result.ok()) return shim::unknown(captured_error(result));
  boost::system::error_code ec;
  boost::json::value value = boost::json::parse(result.output, ec);
  if (ec) return json_error("decode runc state output", ec);
  if (!value.is_object()) return shim::unknown("decode runc state output: not a JSON object");
  const boost::json::object& object = value.get_object();
  auto text = [&](std::string_view key) {
    const boost::json::value* field = object.if_contains(key);
    return field != nullptr && field->is_string() ? std::string(field->get_string()) : "";
  };
  state->id = text("id");
  state->status = text("status");
  state->bundle = text("bundle");
  state->rootfs = text("rootfs");
  if (const boost::json::value* pid = object.if_contains("pid");
      pid != nullptr && (pid->is_int64() || pid->is_uint64())) {
    state->pid = static_cast<int>(pid->to_number<std::int64_t>());
  }
  state->json = std::move(result.output);
  return {};
}

shim::Status CliClient::checkpoint(std::string_view id, CheckpointArgs args) {
  const std::string& bundle = command_line_.config().bundle;
  bool own_work_dir = args.work_path.empty();
  if (own_work_dir)
    args.work_path = shim::go_join_path(shim::go_join_path(bundle, "work"), "criu-work");
  std::string error = run_or_error(command_line_.checkpoint(id, args));
  if (!error.empty()) {
    std::string dump_log = shim::go_join_path(bundle, "criu-dump.log");
    copy_file(shim::go_join_path(args.work_path, "dump.log"), dump_log);
    error = fmt::format("{} path= {}", first_line(error), dump_log);
  }
  if (own_work_dir) {
    std::error_code ignored;
    std::filesystem::remove_all(args.work_path, ignored);
  }
  if (error.empty()) return {};
  return shim::unknown(std::move(error));
}

shim::Status CliClient::restore(std::string_view id, const RestoreArgs& args,
                                const std::optional<Stdio>& io) {
  // go-runc's Restore never captures: without IO the runtime's stdio is /dev/null.
  CommandResult result =
      run(command_line_.restore(id, args), OutputCapture::kNone, io.value_or(Stdio{}));
  return runtime_failure(kRestoreFailed, result.error);
}

shim::Status CliClient::version(CliVersion* version) {
  CommandResult result = run(command_line_.version(), OutputCapture::kStdout);
  if (!result.ok()) return shim::unknown(result.error);
  *version = parse_cli_version(result.output);
  return {};
}

shim::Status CliClient::init_pid(std::uint32_t* pid) const {
  return read_pid_file(command_line_.init_pid_file(), pid);
}

shim::Status CliClient::exec_pid(std::string_view exec_id, std::uint32_t* pid) const {
  return read_pid_file(command_line_.exec_pid_file(exec_id), pid);
}

shim::Status read_pid_file(const std::string& path, std::uint32_t* pid) {
  std::string text;
  if (shim::Status s = shim::read_file(path, &text); !s.ok()) return s;
  long value = std::strtol(text.c_str(), nullptr, 10);
  if (value <= 0) return shim::unknown(fmt::format("invalid pid {:?} in {}", text, path));
  *pid = static_cast<std::uint32_t>(value);
  return {};
}

CliVersion parse_cli_version(std::string_view output) {
  CliVersion version;
  std::string_view rest = shim::go_trim_space(output);
  std::string_view line = rest.substr(0, rest.find('\n'));
  if (!line.starts_with("runc version ")) return version;
  version.runc = std::string(line.substr(13));
  while (rest.find('\n') != std::string_view::npos) {
    rest.remove_prefix(rest.find('\n') + 1);
    line = rest.substr(0, rest.find('\n'));
    if (line.starts_with("commit: ")) version.commit = std::string(line.substr(8));
    if (line.starts_with("spec: ")) version.spec = std::string(line.substr(6));
  }
  return version;
}

shim::Status cli_features(shim::Reaper& reaper, shim::Spawner& spawner,
                          std::string_view binary_name, std::string* features_json) {
  features_json->clear();
  std::string name =
      binary_name.empty() ? std::string(kDefaultCliBinary) : std::string(binary_name);
  std::string path;
  if (shim::Status s = shim::go_look_path(name, &path); !s.ok()) {
    return shim::unknown(
        fmt::format("failed to look up the path of \"{}\": {}", name, s.message()));
  }
  CommandRequest request{.argv = cli_features_command(path), .capture = OutputCapture::kSeparate};
  CommandResult result = run_cli_command(reaper, spawner, request);
  if (!result.ok()) {
    // Go's exec.ExitError says "exit status N" without go-runc's prefix.
    std::string cause =
        result.started ? shim::go_exit_status_text(result.exit.status) : result.error;
    return shim::unknown(fmt::format("failed to execute [{} features]: {} (stderr: {})", path,
                                     cause, shim::go_quote(result.error_output)));
  }
  *features_json = std::move(result.output);
  return {};
}

}  // namespace shim::oci
