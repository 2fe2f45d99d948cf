#include "protocol/mount_capability_answer.h"

#include <algorithm>

#include <fmt/format.h>

#include "common/vendor_call.h"
#include "gocompat/utf8.h"

namespace shim::detail {
namespace {

Status check_name(std::string_view kind, const std::string& name) {
  auto bad = [&](std::string_view why) {
    return invalid_argument(fmt::format("mount capabilities: {} {:?} {}", kind, name, why));
  };
  if (name.empty()) return invalid_argument(fmt::format("mount capabilities: empty {}", kind));
  if (!is_valid_utf8(name)) return bad("is not valid UTF-8");
  if (name.find(',') != std::string::npos) return bad("holds ','");
  if (name.find('/') != std::string::npos) return bad("holds '/'");
  // containerd 2.3.0 - 2.3.3 trim white space off the whole answer before decoding it,
  // and the last name's last byte ends the answer.
  bool control = std::any_of(name.begin(), name.end(), [](char c) {
    auto byte = static_cast<unsigned char>(c);
    return byte <= 0x20 || byte == 0x7f;
  });
  if (control || trim_space(name) != name) return bad("holds white space or a control character");
  return {};
}

}  // namespace

Status check_mount_capabilities(const MountCapabilities& capabilities) {
  for (const std::string& type : capabilities.types) {
    if (Status s = check_name("mount type", type); !s.ok()) return s;
  }
  for (const std::string& transform : capabilities.transforms) {
    if (Status s = check_name("transform", transform); !s.ok()) return s;
  }
  return {};
}

shim::pb::Any mount_capabilities_any(const MountCapabilities& capabilities) {
  containerd::types::MountCapabilities message;
  for (const std::string& type : capabilities.types) message.add_types(type);
  for (const std::string& transform : capabilities.transforms) message.add_transforms(transform);
  shim::pb::Any any;
  any.set_type_url(std::string(kMountCapabilitiesTypeUrl));
  any.set_value(message.SerializeAsString());
  return any;
}

std::string runtime_allow_mounts(const MountCapabilities& capabilities) {
  std::string value;
  auto add = [&](std::string_view item) {
    if (!value.empty()) value.push_back(',');
    value.append(item);
  };
  for (const std::string& type : capabilities.types) add(type);
  for (const std::string& transform : capabilities.transforms) add(transform + "/*");
  return value;
}

Status mount_capabilities_of(const Manager& manager, const std::optional<shim::pb::Any>& options,
                             std::optional<MountCapabilities>* capabilities) {
  Status asked = vendor_call("Manager::mount_capabilities", [&] {
    *capabilities = manager.mount_capabilities(options);
    return Status();
  });
  if (!asked.ok()) return asked;
  if (!*capabilities) return {};
  return check_mount_capabilities(**capabilities);
}

Status start_answer_extensions(const Manager& manager, const std::optional<shim::pb::Any>& options,
                               std::vector<shim::pb::Any>* extensions) {
  std::optional<MountCapabilities> capabilities;
  if (Status s = mount_capabilities_of(manager, options, &capabilities); !s.ok()) return s;
  if (capabilities) extensions->push_back(mount_capabilities_any(*capabilities));
  return {};
}

Status annotate_runtime_info(const Manager& manager, const std::optional<shim::pb::Any>& options,
                             containerd::types::RuntimeInfo* info) {
  std::optional<MountCapabilities> capabilities;
  if (Status s = mount_capabilities_of(manager, options, &capabilities); !s.ok()) return s;
  if (!capabilities || info->annotations().contains(kRuntimeAllowMountsAnnotation)) return {};
  std::string value = runtime_allow_mounts(*capabilities);
  if (!value.empty()) (*info->mutable_annotations())[kRuntimeAllowMountsAnnotation] = value;
  return {};
}

}  // namespace shim::detail
