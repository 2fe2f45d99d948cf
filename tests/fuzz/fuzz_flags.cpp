// The shim binary's command line and environment as containerd gives them: parse_flags
// (Go `flag` semantics) on argv words split at NUL bytes, and read_shim_env on
// "NAME=value" lines. Checked: both parse_flags overloads agree; an error is
// InvalidArgument with a message; on success the action and args are exactly the words
// left after the flags; -h/-help stops parsing.
#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "fuzz_check.h"
#include "protocol/flags.h"
#include "protocol/shim_env.h"

namespace {

std::vector<std::string> split(std::string_view text, char separator) {
  std::vector<std::string> parts;
  for (;;) {
    std::size_t at = text.find(separator);
    parts.emplace_back(text.substr(0, at));
    if (at == std::string_view::npos) return parts;
    text.remove_prefix(at + 1);
  }
}

bool same_flags(const shim::ShimFlags& a, const shim::ShimFlags& b) {
  return a.ns == b.ns && a.address == b.address &&
         a.publish_binary == b.publish_binary && a.id == b.id && a.bundle == b.bundle &&
         a.debug == b.debug && a.socket == b.socket && a.debug_socket == b.debug_socket &&
         a.version == b.version && a.info == b.info && a.help == b.help &&
         a.action == b.action && a.args == b.args;
}

void check_flags(const std::vector<std::string>& words) {
  shim::ShimFlags flags;
  shim::Status status = shim::parse_flags(std::span<const std::string>(words), &flags);
  if (!status.ok()) {
    FUZZ_CHECK(status.code() == shim::Code::kInvalidArgument);
    FUZZ_CHECK(!status.message().empty());
  } else if (!flags.help) {
    // The positional words are a suffix of argv, the action (possibly "") first.
    FUZZ_CHECK(flags.args.size() <= words.size());
    std::size_t first = words.size() - flags.args.size();
    for (std::size_t i = 0; i < flags.args.size(); ++i) FUZZ_CHECK(flags.args[i] == words[first + i]);
    if (!flags.args.empty() || !flags.action.empty()) {
      FUZZ_CHECK(first >= 1 && flags.action == words[first - 1]);
    }
  }

  // argv form: program name first; a word with a NUL cannot occur there.
  std::vector<const char*> argv = {"containerd-shim-fuzz-v1"};
  for (const std::string& word : words) argv.push_back(word.c_str());
  shim::ShimFlags from_argv;
  shim::Status argv_status = shim::parse_flags(static_cast<int>(argv.size()), argv.data(), &from_argv);
  FUZZ_CHECK(argv_status.code() == status.code());
  FUZZ_CHECK(argv_status.message() == status.message());
  if (status.ok()) FUZZ_CHECK(same_flags(flags, from_argv));
}

void check_env(const std::vector<std::string>& lines) {
  std::map<std::string, std::string, std::less<>> values;
  for (const std::string& line : lines) {
    std::size_t eq = line.find('=');
    if (eq != std::string::npos) values.emplace(line.substr(0, eq), line.substr(eq + 1));
  }
  shim::ShimEnv env = shim::read_shim_env([&values](std::string_view name) -> std::optional<std::string> {
    auto it = values.find(name);
    if (it == values.end()) return std::nullopt;
    return it->second;
  });
  auto value = [&values](std::string_view name) {
    auto it = values.find(name);
    return it == values.end() ? std::string() : it->second;
  };
  FUZZ_CHECK(env.ttrpc_address == value("TTRPC_ADDRESS"));
  FUZZ_CHECK(env.sched_core == !value("SCHED_CORE").empty());
  // MAX_SHIM_VERSION counts only when it is an int and nothing else ("2", "-1", "02").
  std::string max = value("MAX_SHIM_VERSION");
  if (env.max_shim_version) {
    FUZZ_CHECK(!max.empty() && max.find_first_not_of("-0123456789") == std::string::npos);
    FUZZ_CHECK(std::stoll(max) == *env.max_shim_version);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  // argv words, then (after a line "--env--") environment lines.
  std::size_t env_at = text.find("\n--env--\n");
  std::string_view args = text.substr(0, env_at);
  check_flags(args.empty() ? std::vector<std::string>{} : split(args, '\0'));
  if (env_at != std::string_view::npos) check_env(split(text.substr(env_at + 9), '\n'));
  return 0;
}
