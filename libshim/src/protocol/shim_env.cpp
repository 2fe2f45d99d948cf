#include "protocol/shim_env.h"

#include <charconv>
#include <cstdlib>

namespace shim {
namespace {

std::optional<int> parse_int(const std::optional<std::string>& text) {
  if (!text || text->empty()) return std::nullopt;
  int value = 0;
  const char* end = text->data() + text->size();
  auto [ptr, ec] = std::from_chars(text->data(), end, value);
  if (ec != std::errc() || ptr != end) return std::nullopt;
  return value;
}

}  // namespace

EnvLookup process_env() {
  return [](std::string_view name) -> std::optional<std::string> {
    const char* value = std::getenv(std::string(name).c_str());
    if (value == nullptr) return std::nullopt;
    return std::string(value);
  };
}

bool ShimEnv::from_containerd_1_7_or_later() const {
  return !grpc_address.empty() || !ns.empty() || max_shim_version.has_value();
}

ShimEnv read_shim_env(const EnvLookup& lookup) {
  ShimEnv env;
  env.ttrpc_address = lookup("TTRPC_ADDRESS").value_or("");
  env.grpc_address = lookup("GRPC_ADDRESS").value_or("");
  env.ns = lookup("NAMESPACE").value_or("");
  env.max_shim_version = parse_int(lookup("MAX_SHIM_VERSION"));
  env.sched_core = !lookup("SCHED_CORE").value_or("").empty();
  return env;
}

}  // namespace shim
