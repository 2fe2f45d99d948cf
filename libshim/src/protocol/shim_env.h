// The environment containerd gives the shim binary (runtime/v2/binary.go, core/runtime/v2/binary.go), read through an
// injected lookup so tests never touch the process environment.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <string_view>

namespace shim {

// Returns the value of an environment variable, or nullopt when it is unset.
using EnvLookup = std::function<std::optional<std::string>(std::string_view name)>;

// A lookup backed by the real environment (::getenv).
EnvLookup process_env();

struct ShimEnv {
  std::string ttrpc_address;  // TTRPC_ADDRESS: containerd's ttrpc socket (events go here)
  std::string grpc_address;   // GRPC_ADDRESS (1.7+), same as -address
  std::string ns;     // NAMESPACE (1.7+), same as -namespace
  // MAX_SHIM_VERSION (1.7+): always 2, even under 2.3, so it tells 1.6 from later
  // releases but nothing more. nullopt when unset or not an integer.
  std::optional<int> max_shim_version;
  bool sched_core = false;    // SCHED_CORE non-empty: create a core-scheduling cookie

  // True when containerd is 1.7 or later: GRPC_ADDRESS, NAMESPACE and MAX_SHIM_VERSION
  // appeared together in 1.7. False means 1.6 (or an unknown caller), where only a
  // plain-address `start` answer is understood.
  bool from_containerd_1_7_or_later() const;
};

ShimEnv read_shim_env(const EnvLookup& lookup);

}  // namespace shim
