#include "linux/rlimit_names.h"

#include <sys/resource.h>

#include <fmt/format.h>

namespace shim {
namespace {

struct Named {
  std::string_view name;
  int resource;
};

// getrlimit(2)'s resources, all of Linux's RLIM_NLIMITS.
constexpr Named kLimits[] = {
    {"RLIMIT_CPU", RLIMIT_CPU},           {"RLIMIT_FSIZE", RLIMIT_FSIZE},
    {"RLIMIT_DATA", RLIMIT_DATA},         {"RLIMIT_STACK", RLIMIT_STACK},
    {"RLIMIT_CORE", RLIMIT_CORE},         {"RLIMIT_RSS", RLIMIT_RSS},
    {"RLIMIT_NPROC", RLIMIT_NPROC},       {"RLIMIT_NOFILE", RLIMIT_NOFILE},
    {"RLIMIT_MEMLOCK", RLIMIT_MEMLOCK},   {"RLIMIT_AS", RLIMIT_AS},
    {"RLIMIT_LOCKS", RLIMIT_LOCKS},       {"RLIMIT_SIGPENDING", RLIMIT_SIGPENDING},
    {"RLIMIT_MSGQUEUE", RLIMIT_MSGQUEUE}, {"RLIMIT_NICE", RLIMIT_NICE},
    {"RLIMIT_RTPRIO", RLIMIT_RTPRIO},     {"RLIMIT_RTTIME", RLIMIT_RTTIME}};

static_assert(std::size(kLimits) == RLIM_NLIMITS);

}  // namespace

std::optional<int> rlimit_resource(std::string_view name) {
  for (const Named& limit : kLimits) {
    if (limit.name == name) return limit.resource;
  }
  return std::nullopt;
}

std::string rlimit_name(int resource) {
  for (const Named& limit : kLimits) {
    if (limit.resource == resource) return std::string(limit.name);
  }
  return fmt::format("resource {}", resource);
}

}  // namespace shim
