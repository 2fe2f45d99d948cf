#include "linux/container_cgroup_resources.h"

#include <cstdint>
#include <optional>
#include <string>

#include <fmt/format.h>
#include <boost/json.hpp>

#include "linux/cgroup_file.h"

namespace shim {
namespace json = boost::json;
namespace {

// A numeric field of `o`, or nullopt when missing or null; throws on another type.
std::optional<std::int64_t> number(const json::object& o, std::string_view key) {
  const json::value* v = o.if_contains(key);
  if (v == nullptr || v->is_null()) return std::nullopt;
  if (v->is_uint64()) return static_cast<std::int64_t>(v->as_uint64());
  return v->as_int64();
}

// A number that is set: 0 is unset for the memory values, as runc reads them.
std::optional<std::int64_t> set_value(const json::object& o, std::string_view key) {
  auto v = number(o, key);
  return v && *v != 0 ? v : std::nullopt;
}

std::optional<std::string> text(const json::object& o, std::string_view key) {
  const json::value* v = o.if_contains(key);
  if (v == nullptr || v->is_null()) return std::nullopt;
  return std::string(v->as_string());
}

const json::object* section(const json::object& o, std::string_view key) {
  const json::value* v = o.if_contains(key);
  return v == nullptr || v->is_null() ? nullptr : &v->as_object();
}

bool set(const json::value* v) {
  if (v == nullptr || v->is_null()) return false;
  if (v->is_array()) return !v->as_array().empty();
  if (v->is_object()) return !v->as_object().empty();
  if (v->is_int64()) return v->as_int64() != 0;
  if (v->is_uint64()) return v->as_uint64() != 0;
  return true;
}

Status write(const CgroupPaths& paths, std::string_view controller, const std::string& file,
             const std::string& value) {
  std::string dir = paths.dir(controller);
  if (dir.empty()) {
    return failed_precondition(
        fmt::format("cgroup: no {} controller for {} = {}", controller, file, value));
  }
  return write_control_file(dir + "/" + file, value);
}

Status apply_memory_v1(const CgroupPaths& p, const json::object& m) {
  // 0 is unset, as for runc. memsw may never be below memory: when a write of the limit
  // is refused (raising both), the swap limit goes first (runc's setMemoryAndSwap).
  auto limit = set_value(m, "limit");
  auto swap = set_value(m, "swap");
  if (!path_exists(p.dir("memory") + "/memory.memsw.limit_in_bytes")) swap.reset();
  auto write_limit = [&] {
    return limit ? write(p, "memory", "memory.limit_in_bytes", std::to_string(*limit)) : Status();
  };
  auto write_swap = [&] {
    return swap ? write(p, "memory", "memory.memsw.limit_in_bytes", std::to_string(*swap))
                : Status();
  };
  if (Status s = write_limit(); !s.ok()) {
    if (!swap) return s;
    if (Status w = write_swap(); !w.ok()) return w;
    if (Status again = write_limit(); !again.ok()) return again;
  } else if (Status w = write_swap(); !w.ok()) {
    return w;
  }
  if (auto v = set_value(m, "reservation")) {
    if (Status s = write(p, "memory", "memory.soft_limit_in_bytes", std::to_string(*v)); !s.ok())
      return s;
  }
  if (auto v = number(m, "swappiness"); v && *v >= 0 && *v <= 100) {
    if (Status s = write(p, "memory", "memory.swappiness", std::to_string(*v)); !s.ok()) return s;
  }
  if (const json::value* v = m.if_contains("disableOOMKiller"); v && v->is_bool() && v->as_bool()) {
    if (Status s = write(p, "memory", "memory.oom_control", "1"); !s.ok()) return s;
  }
  return {};
}

Status apply_memory_v2(const CgroupPaths& p, const json::object& m) {
  auto limit = set_value(m, "limit");
  auto max = [](std::int64_t v) { return v < 0 ? std::string("max") : std::to_string(v); };
  if (limit) {
    if (Status s = write(p, "memory", "memory.max", max(*limit)); !s.ok()) return s;
  }
  // v2's swap limit is the swap alone (runc's ConvertMemorySwapToCgroupV2Value): the
  // v1-style memory+swap value less the limit.
  if (auto swap = set_value(m, "swap"); swap && path_exists(p.unified + "/memory.swap.max")) {
    std::string value;
    if (*swap < 0) {
      value = "max";
    } else if (!limit || *limit < 0) {
      return invalid_argument("linux.resources.memory.swap without a memory limit");
    } else if (*swap < *limit) {
      return invalid_argument("linux.resources.memory.swap below memory.limit");
    } else {
      value = std::to_string(*swap - *limit);
    }
    if (Status s = write(p, "memory", "memory.swap.max", value); !s.ok()) return s;
  }
  if (auto v = set_value(m, "reservation")) {
    if (Status s = write(p, "memory", "memory.low", max(*v)); !s.ok()) return s;
  }
  return {};
}

Status apply_cpu(const CgroupPaths& p, const json::object& c) {
  bool v2 = p.version == CgroupVersion::kV2;
  if (auto shares = number(c, "shares"); shares && *shares != 0) {
    // runc's ConvertCPUSharesToCgroupV2Value: [2, 262144] onto [1, 10000].
    std::string value =
        v2 ? std::to_string(1 + ((*shares - 2) * 9999) / 262142) : std::to_string(*shares);
    if (Status s = write(p, "cpu", v2 ? "cpu.weight" : "cpu.shares", value); !s.ok()) return s;
  }
  auto quota = number(c, "quota");
  auto period = number(c, "period");
  if (v2 && (quota || period)) {
    std::string value = fmt::format("{} {}", quota && *quota > 0 ? std::to_string(*quota) : "max",
                                    period && *period > 0 ? *period : 100000);
    if (Status s = write(p, "cpu", "cpu.max", value); !s.ok()) return s;
  } else if (!v2) {
    if (period && *period != 0) {
      if (Status s = write(p, "cpu", "cpu.cfs_period_us", std::to_string(*period)); !s.ok())
        return s;
    }
    if (quota && *quota != 0) {
      if (Status s = write(p, "cpu", "cpu.cfs_quota_us", std::to_string(*quota)); !s.ok()) return s;
    }
  }
  for (const char* key : {"cpus", "mems"}) {
    if (auto v = text(c, key); v && !v->empty()) {
      if (Status s = write(p, "cpuset", fmt::format("cpuset.{}", key), *v); !s.ok()) return s;
    }
  }
  return {};
}

// v1 device rules in order ("a *:* rwm" into devices.deny, ...), as runc's fs driver.
Status apply_devices_v1(const CgroupPaths& p, const json::array& rules) {
  for (const json::value& rule : rules) {
    const json::object& r = rule.as_object();
    bool allow = r.at("allow").as_bool();
    auto id = [&](std::string_view key) {
      auto v = number(r, key);
      return v && *v >= 0 ? std::to_string(*v) : std::string("*");
    };
    std::string line = fmt::format("{} {}:{} {}", text(r, "type").value_or("a"), id("major"),
                                   id("minor"), text(r, "access").value_or("rwm"));
    if (Status s = write(p, "devices", allow ? "devices.allow" : "devices.deny", line); !s.ok())
      return s;
  }
  return {};
}

}  // namespace

Status check_cgroup_resources(const json::object& resources) {
  for (const char* field : {"blockIO", "hugepageLimits", "network", "rdma", "unified"}) {
    if (set(resources.if_contains(field))) {
      return not_implemented(fmt::format("linux.resources.{}", field));
    }
  }
  try {
    if (const json::object* cpu = section(resources, "cpu")) {
      for (const char* field : {"realtimeRuntime", "realtimePeriod"}) {
        if (set(cpu->if_contains(field))) {
          return not_implemented(fmt::format("linux.resources.cpu.{}", field));
        }
      }
      for (const char* field : {"shares", "quota", "period"}) (void)number(*cpu, field);
      for (const char* field : {"cpus", "mems"}) (void)text(*cpu, field);
    }
    if (const json::object* memory = section(resources, "memory")) {
      for (const char* field : {"limit", "reservation", "swap", "swappiness"})
        (void)number(*memory, field);
    }
    if (const json::object* pids = section(resources, "pids")) (void)number(*pids, "limit");
    if (const json::value* devices = resources.if_contains("devices"); set(devices)) {
      for (const json::value& rule : devices->as_array())
        (void)rule.as_object().at("allow").as_bool();
    }
  } catch (const std::exception& e) {
    return invalid_argument(fmt::format("linux.resources: {}", e.what()));
  }
  return {};
}

Status apply_cgroup_resources(const CgroupPaths& p, const json::object& resources) {
  if (Status s = check_cgroup_resources(resources); !s.ok()) return s;
  bool v2 = p.version == CgroupVersion::kV2;
  if (const json::object* memory = section(resources, "memory")) {
    if (Status s = v2 ? apply_memory_v2(p, *memory) : apply_memory_v1(p, *memory); !s.ok())
      return s;
  }
  if (const json::object* cpu = section(resources, "cpu")) {
    if (Status s = apply_cpu(p, *cpu); !s.ok()) return s;
  }
  if (const json::object* pids = section(resources, "pids")) {
    if (auto limit = number(*pids, "limit")) {
      std::string value = *limit <= 0 ? "max" : std::to_string(*limit);
      if (Status s = write(p, "pids", "pids.max", value); !s.ok()) return s;
    }
  }
  if (const json::value* devices = resources.if_contains("devices"); !v2 && set(devices)) {
    if (Status s = apply_devices_v1(p, devices->as_array()); !s.ok()) return s;
  }
  return {};
}

}  // namespace shim
