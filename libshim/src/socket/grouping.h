// Shim grouping (containerd cmd/containerd-shim-runc-v2/manager/manager_linux.go): containers whose
// OCI spec names the same group share one shim process and socket. CRI labels every container of a
// pod with its sandbox id, so one shim serves the whole pod.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "shim/status.h"

namespace shim {

// The Go runc shim's list, same from 1.6 to 2.3; order matters (first present wins).
std::vector<std::string> default_group_annotations();

// Group id for task `id` from the text of the bundle's config.json: the value of the
// first annotation in `annotations` that is present (even if empty, as in Go), else
// `ungrouped` (DaemonOptions::shared_group), or `id` if that is empty.
// Like the Go shim (json.Decoder into a shallow struct) only the first JSON value is
// read and only `annotations` is checked: it must be an object of strings or null.
// Malformed JSON fails with InvalidArgument, because the Go shim fails `start` then.
Status group_id(std::string_view config_json, std::string_view id, std::string* group,
                const std::vector<std::string>& annotations = default_group_annotations(),
                std::string_view ungrouped = {});

// Group id for task `id` whose bundle is `bundle`: group_id() of its config.json, or `id`
// (never `ungrouped`) when the bundle has none: containerd 2.x's shim-mode sandbox
// (plugins/sandbox/ controller.go, Create) starts the shim in a bundle that has a config.json only
// if the sandbox has a spec, and CRI's has none then (internal/cri/server/sandbox_run.go). The Go
// runc shim fails `start` there; a sandbox shim must not. Any other read error fails.
Status bundle_group_id(const std::string& bundle, std::string_view id, std::string* group,
                       const std::vector<std::string>& annotations = default_group_annotations(),
                       std::string_view ungrouped = {});

}  // namespace shim
