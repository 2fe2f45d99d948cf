// Linux capability names as OCI specs and capabilities(7) write them ("CAP_CHOWN").
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace shim {

// The number of `name` ("CAP_SYS_ADMIN" -> 21), or nullopt for a name libshim does not
// know. Known: CAP_CHOWN (0) to CAP_CHECKPOINT_RESTORE (40), Linux 5.9's set.
std::optional<int> capability_number(std::string_view name);

// The name of capability `number` ("CAP_CHOWN"), or "capability <n>" beyond the table.
std::string capability_name(int number);

}  // namespace shim
