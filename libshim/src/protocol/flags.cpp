#include "protocol/flags.h"

#include <optional>
#include <string_view>

#include <fmt/format.h>

namespace shim {
namespace {

enum class FlagKind { kString, kBool };

struct FlagSpec {
  std::string_view name;
  FlagKind kind;
  std::string ShimFlags::*string_field;
  bool ShimFlags::*bool_field;
};

constexpr FlagSpec string_flag(std::string_view name, std::string ShimFlags::*field) {
  return {name, FlagKind::kString, field, nullptr};
}
constexpr FlagSpec bool_flag(std::string_view name, bool ShimFlags::*field) {
  return {name, FlagKind::kBool, nullptr, field};
}

// The union of the flags the Go shims define from 1.6 to 2.3.
const FlagSpec kFlags[] = {
    string_flag("namespace", &ShimFlags::ns),
    string_flag("address", &ShimFlags::address),
    string_flag("publish-binary", &ShimFlags::publish_binary),
    string_flag("id", &ShimFlags::id),
    string_flag("bundle", &ShimFlags::bundle),
    bool_flag("debug", &ShimFlags::debug),
    string_flag("socket", &ShimFlags::socket),
    string_flag("debug-socket", &ShimFlags::debug_socket),
    bool_flag("v", &ShimFlags::version),
    bool_flag("version", &ShimFlags::version),
    bool_flag("info", &ShimFlags::info),
};

const FlagSpec* find_flag(std::string_view name) {
  for (const FlagSpec& spec : kFlags) {
    if (spec.name == name) return &spec;
  }
  return nullptr;
}

// Go's strconv.ParseBool.
std::optional<bool> parse_go_bool(std::string_view text) {
  for (std::string_view yes : {"1", "t", "T", "TRUE", "true", "True"}) {
    if (text == yes) return true;
  }
  for (std::string_view no : {"0", "f", "F", "FALSE", "false", "False"}) {
    if (text == no) return false;
  }
  return std::nullopt;
}

Status flag_error(std::string message) {
  return Status(Code::kInvalidArgument, std::move(message));
}

enum class Step { kParsedFlag, kDone, kHelp };

// One step of Go's FlagSet.parseOne. `next` indexes the word to look at and advances past
// what was consumed; kDone leaves it at the first positional word.
Status parse_one(std::span<const std::string> args, std::size_t* next, ShimFlags* flags,
                 Step* step) {
  *step = Step::kDone;
  if (*next >= args.size()) return {};
  std::string_view word = args[*next];
  if (word.size() < 2 || word[0] != '-') return {};
  std::size_t dashes = 1;
  if (word[1] == '-') {
    dashes = 2;
    if (word.size() == 2) {  // "--" ends the flags and is consumed
      ++*next;
      return {};
    }
  }
  std::string_view name = word.substr(dashes);
  if (name.empty() || name[0] == '-' || name[0] == '=') {
    return flag_error(fmt::format("bad flag syntax: {}", word));
  }
  ++*next;

  std::optional<std::string_view> value;
  if (auto eq = name.find('='); eq != std::string_view::npos) {
    value = name.substr(eq + 1);
    name = name.substr(0, eq);
  }
  const FlagSpec* spec = find_flag(name);
  if (spec == nullptr) {
    if (name == "help" || name == "h") {
      *step = Step::kHelp;
      return {};
    }
    return flag_error(fmt::format("flag provided but not defined: -{}", name));
  }

  *step = Step::kParsedFlag;
  if (spec->kind == FlagKind::kBool) {
    std::optional<bool> enabled = value ? parse_go_bool(*value) : std::optional<bool>(true);
    if (!enabled) {
      return flag_error(
          fmt::format("invalid boolean value \"{}\" for -{}: parse error", *value, name));
    }
    flags->*(spec->bool_field) = *enabled;
    return {};
  }
  if (!value) {
    // Like Go, a string flag takes the next word even if it starts with '-'.
    if (*next >= args.size()) {
      return flag_error(fmt::format("flag needs an argument: -{}", name));
    }
    value = args[(*next)++];
  }
  flags->*(spec->string_field) = std::string(*value);
  return {};
}

}  // namespace

Status parse_flags(std::span<const std::string> args, ShimFlags* flags) {
  *flags = ShimFlags{};
  std::size_t next = 0;
  for (;;) {
    Step step = Step::kDone;
    if (Status status = parse_one(args, &next, flags, &step); !status.ok()) return status;
    if (step == Step::kHelp) {
      flags->help = true;
      return {};
    }
    if (step == Step::kDone) break;
  }
  if (next < args.size()) flags->action = args[next++];
  flags->args.assign(args.begin() + static_cast<std::ptrdiff_t>(next), args.end());
  return {};
}

Status parse_flags(int argc, const char* const* argv, ShimFlags* flags) {
  std::vector<std::string> args;
  for (int i = 1; i < argc; ++i) args.emplace_back(argv[i]);
  return parse_flags(std::span<const std::string>(args), flags);
}

}  // namespace shim
