// Resource limit names as OCI specs and getrlimit(2) write them ("RLIMIT_NOFILE").
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace shim {

// The resource number of `name` (RLIMIT_NOFILE...), or nullopt for an unknown name.
std::optional<int> rlimit_resource(std::string_view name);

// The name of resource `resource` ("RLIMIT_NOFILE"), or "resource <n>" if unknown.
std::string rlimit_name(int resource);

}  // namespace shim
