// An OCI process's environment as runc prepares it (libcontainer/env.go's prepareEnv).
#pragma once

#include <sys/types.h>

#include <optional>
#include <string>
#include <vector>

#include "shim/status.h"

namespace shim::oci {

// `env` checked ("NAME=VALUE", a name, no NUL: errors name "process.env[i]"), each name
// once with its last value, in the order of those last values; HOME added when missing
// or empty (the home of `uid` in `root`'s /etc/passwd, else "/"). `*path` is PATH's
// value (the search list for the executable), nullopt when env has none.
Status prepare_env(const std::vector<std::string>& env, const std::string& root, uid_t uid,
                   std::vector<std::string>* out, std::optional<std::string>* path);

// The home directory of `uid` in `root`'s /etc/passwd (symlinks resolved inside root),
// "/" when there is no such entry or file (runc's getUserHome).
std::string home_of(const std::string& root, uid_t uid);

}  // namespace shim::oci
