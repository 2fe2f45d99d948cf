// The -info action (containerd 2.x): runtime options Any on stdin (or nothing), a
// containerd.types.RuntimeInfo on stdout.
#include <unistd.h>

#include "common/vendor_call.h"
#include "protocol/action_setting.h"
#include "protocol/actions.h"
#include "protocol/mount_capability_answer.h"
#include "upgrade/upgrade_state.h"

namespace shim::detail {

// The answer also carries the Manager's mount capabilities as an annotation, for
// containerd 2.2 - 2.4.0-beta.0 (shim/mount_capabilities.h).
int run_info(const ShimFlags& flags, const ShimEnv& env, Manager& manager) {
  std::string bytes = read_stdin(std::size_t{10} << 20);
  std::optional<shim::pb::Any> options;
  if (!bytes.empty()) {
    shim::pb::Any any;
    if (any.ParseFromString(bytes) && !any.type_url().empty()) options = std::move(any);
  }
  ActionSetting setting(
      "info",
      ShimIdentity{.ns = !flags.ns.empty() ? flags.ns : env.ns,
                   .id = flags.id,
                   .bundle = !flags.bundle.empty() ? flags.bundle : current_dir(),
                   .grpc_address = !flags.address.empty() ? flags.address : env.grpc_address,
                   .ttrpc_address = env.ttrpc_address,
                   .debug = flags.debug});
  if (Status s = setting.status(); !s.ok()) return fail(manager, s);
  ActionContext& context = setting.context();
  containerd::types::RuntimeInfo info;
  Status status = vendor_call(
      "Manager::info", [&] { return manager.info(context, options, &info); }, &context.logger);
  if (!status.ok()) return fail(manager, status);
  if (Status s = annotate_runtime_info(manager, options, &info); !s.ok()) {
    return fail(manager, s);
  }
  // Which live-upgrade state formats this binary reads (docs/live-upgrade.md).
  (*info.mutable_annotations())[std::string(upgrade::kStateFormatsAnnotation)] =
      upgrade::readable_state_formats();
  return write_fd(STDOUT_FILENO, info.SerializeAsString()) ? 0 : 1;
}

}  // namespace shim::detail
