#include "oci/process_fields.h"

#include <set>
#include <string>

#include <fmt/format.h>

#include "linux/capability_names.h"
#include "linux/rlimit_names.h"
#include "oci/json_fields.h"

namespace shim::oci {
namespace {

constexpr std::uint64_t kMaxId = UINT32_MAX;

Status read_id(const boost::json::object& object, std::string_view key, std::string_view field,
               std::uint64_t* id) {
  *id = 0;
  const boost::json::value* value = member(object, key);
  return value != nullptr ? read_uint(*value, field, id, kMaxId) : Status();
}

Status read_rlimit(const boost::json::value& value, std::size_t index, SpawnRlimit* limit) {
  std::string field = fmt::format("process.rlimits[{}]", index);
  const boost::json::object* object = nullptr;
  if (Status s = read_object(value, field, &object); !s.ok()) return s;
  const boost::json::value* type = member(*object, "type");
  if (type == nullptr) return field_error(field + ".type", "missing");
  std::string name;
  if (Status s = read_string(*type, field + ".type", &name); !s.ok()) return s;
  std::optional<int> resource = rlimit_resource(name);
  if (!resource)
    return field_error(field + ".type", fmt::format("unknown resource limit \"{}\"", name));
  limit->resource = *resource;
  for (auto [key, out] : {std::pair{"soft", &limit->soft}, std::pair{"hard", &limit->hard}}) {
    const boost::json::value* number = member(*object, key);
    if (number == nullptr) return field_error(fmt::format("{}.{}", field, key), "missing");
    if (Status s = read_uint(*number, fmt::format("{}.{}", field, key), out); !s.ok()) return s;
  }
  if (limit->soft > limit->hard) {
    return field_error(field, fmt::format("{}: the soft limit {} is above the hard limit {}", name,
                                          limit->soft, limit->hard));
  }
  return {};
}

// One capability set: the names' bits.
Status read_capability_set(const boost::json::object& capabilities, const char* key,
                           std::uint64_t* bits) {
  *bits = 0;
  const boost::json::value* value = member(capabilities, key);
  if (value == nullptr) return {};
  std::string field = fmt::format("process.capabilities.{}", key);
  std::vector<std::string> names;
  if (Status s = read_strings(*value, field, &names); !s.ok()) return s;
  for (std::size_t i = 0; i < names.size(); ++i) {
    std::optional<int> number = capability_number(names[i]);
    if (!number)
      return field_error(fmt::format("{}[{}]", field, i),
                         fmt::format("unknown capability \"{}\"", names[i]));
    *bits |= std::uint64_t{1} << *number;
  }
  return {};
}

}  // namespace

Status read_user(const boost::json::object& process, SpawnUser* user,
                 std::optional<mode_t>* umask) {
  *user = SpawnUser{};
  umask->reset();
  const boost::json::value* value = member(process, "user");
  if (value == nullptr) return {};  // uid 0, gid 0, no groups (Go's zero User)
  const boost::json::object* object = nullptr;
  if (Status s = read_object(*value, "process.user", &object); !s.ok()) return s;
  std::uint64_t uid = 0, gid = 0;
  if (Status s = read_id(*object, "uid", "process.user.uid", &uid); !s.ok()) return s;
  if (Status s = read_id(*object, "gid", "process.user.gid", &gid); !s.ok()) return s;
  user->uid = static_cast<uid_t>(uid);
  user->gid = static_cast<gid_t>(gid);
  if (const boost::json::value* groups = member(*object, "additionalGids")) {
    std::vector<std::uint64_t> ids;
    if (Status s = read_uints(*groups, "process.user.additionalGids", kMaxId, &ids); !s.ok())
      return s;
    for (std::uint64_t id : ids) user->additional_gids.push_back(static_cast<gid_t>(id));
  }
  if (const boost::json::value* mask = member(*object, "umask")) {
    std::uint64_t bits = 0;
    if (Status s = read_uint(*mask, "process.user.umask", &bits, 0777); !s.ok()) return s;
    *umask = static_cast<mode_t>(bits);
  }
  const boost::json::value* name = member(*object, "username");
  if (name != nullptr && !(name->is_string() && name->get_string().empty())) {
    return field_error("process.user.username", "a Windows field, not supported on Linux");
  }
  return {};
}

Status read_rlimits(const boost::json::object& process, std::vector<SpawnRlimit>* rlimits) {
  rlimits->clear();
  const boost::json::value* value = member(process, "rlimits");
  if (value == nullptr) return {};
  const auto* array = value->if_array();
  if (array == nullptr) return type_error("process.rlimits", "an array of objects", *value);
  std::set<int> seen;
  for (std::size_t i = 0; i < array->size(); ++i) {
    SpawnRlimit limit;
    if (Status s = read_rlimit((*array)[i], i, &limit); !s.ok()) return s;
    if (!seen.insert(limit.resource).second) {
      return field_error(fmt::format("process.rlimits[{}].type", i),
                         fmt::format("{} is set twice", rlimit_name(limit.resource)));
    }
    rlimits->push_back(limit);
  }
  return {};
}

Status read_capabilities(const boost::json::object& process, std::optional<CapabilitySets>* sets) {
  sets->reset();
  const boost::json::value* value = member(process, "capabilities");
  if (value == nullptr) return {};
  const boost::json::object* object = nullptr;
  if (Status s = read_object(*value, "process.capabilities", &object); !s.ok()) return s;
  CapabilitySets read;
  for (auto [key, bits] :
       {std::pair{"bounding", &read.bounding}, std::pair{"effective", &read.effective},
        std::pair{"permitted", &read.permitted}, std::pair{"inheritable", &read.inheritable},
        std::pair{"ambient", &read.ambient}}) {
    if (Status s = read_capability_set(*object, key, bits); !s.ok()) return s;
  }
  std::uint64_t not_raisable = read.ambient & ~(read.permitted & read.inheritable);
  for (int cap = 0; cap < 64; ++cap) {
    if ((not_raisable >> cap & 1) == 0) continue;
    return field_error(
        "process.capabilities.ambient",
        fmt::format("{} is not both permitted and inheritable", capability_name(cap)));
  }
  *sets = read;
  return {};
}

Status read_oom_score_adj(const boost::json::object& process, std::optional<int>* adj) {
  adj->reset();
  const boost::json::value* value = member(process, "oomScoreAdj");
  if (value == nullptr) return {};
  std::int64_t number = 0;
  if (Status s = read_int(*value, "process.oomScoreAdj", -1000, 1000, &number); !s.ok()) return s;
  *adj = static_cast<int>(number);
  return {};
}

}  // namespace shim::oci
