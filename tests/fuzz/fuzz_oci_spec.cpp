// The bundle's config.json as the shim reads it:
//  - `start` (grouping): group_id reads the first JSON value, Go-style (invalid UTF-8
//    replaced, depth up to 10000), and only its "annotations";
//  - the process tier (RuntimeTaskService): the whole file parsed as one object, then
//    has_private_pid_namespace decides whether an init exit kills the rest;
//  - an exec's OCI Process, which the tier re-serializes with "terminal" set;
//  - the OCI process as shim::oci::spawn_request_from_process reads it (the text, and
//    a spec's "process"), never throwing.
// Checked: group_id fails only with InvalidArgument, with its prefix; the kill-all
// decision depends on "linux" only; exec_spec accepts exactly the JSON objects whose
// numbers fit a double and gives back the same value with "terminal" set to the request's;
// spawn_request_from_process fails only with InvalidArgument naming a "process" field,
// and what it accepts has args, an absolute cwd and one HOME.
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include <boost/json.hpp>

#include "fuzz_check.h"
#include "json_compare.h"
#include "shim/oci/process_spec.h"
#include "socket/grouping.h"
#include "task/task_records.h"

namespace {

namespace json = boost::json;

void check_group(std::string_view text) {
  std::string group;
  shim::Status status = shim::group_id(text, "the-id", &group);
  if (status.ok()) return;
  FUZZ_CHECK(status.code() == shim::Code::kInvalidArgument);
  FUZZ_CHECK(status.message().starts_with("read OCI spec (config.json): "));
}

void check_pid_namespace(std::string_view text) {
  boost::system::error_code ec;
  json::value spec = json::parse(text, ec);
  if (ec || !spec.is_object()) return;
  const json::object& object = spec.as_object();
  bool private_ns = shim::has_private_pid_namespace(object);
  // Only "linux" matters: a spec with nothing else decides the same.
  json::object reduced;
  if (const json::value* linux_section = object.if_contains("linux"))
    reduced["linux"] = *linux_section;
  if (!object.empty() && reduced.empty()) {
    FUZZ_CHECK(!private_ns);  // no linux section: the host's pid namespace
  } else if (!object.empty()) {
    FUZZ_CHECK(shim::has_private_pid_namespace(reduced) == private_ns);
  }
}

// A number beyond a double's range parses as an infinity (regression-exec-spec-infinity).
bool all_finite(const json::value& value) {
  if (value.is_double()) return std::isfinite(value.get_double());
  if (value.is_object()) {
    for (const auto& member : value.get_object()) {
      if (!all_finite(member.value())) return false;
    }
  }
  if (value.is_array()) {
    for (const auto& item : value.get_array()) {
      if (!all_finite(item)) return false;
    }
  }
  return true;
}

void check_exec_spec(std::string_view text, bool terminal) {
  containerd::task::v2::ExecProcessRequest request;
  request.mutable_spec()->set_value(std::string(text));
  request.set_terminal(terminal);
  std::string serialized;
  boost::system::error_code ec;
  json::value original = json::parse(text, ec);
  shim::Status status = shim::exec_spec(request, &serialized);
  bool object = !ec && original.is_object();
  FUZZ_CHECK(status.ok() == (object && all_finite(original)));
  if (!status.ok()) {
    FUZZ_CHECK(status.code() == shim::Code::kInvalidArgument);
    if (object) FUZZ_CHECK(status.message().starts_with("exec spec: the number at /"));
    return;
  }
  json::value back = json::parse(serialized, ec);
  FUZZ_CHECK(!ec && back.is_object());
  const json::value* forced = back.as_object().if_contains("terminal");
  FUZZ_CHECK(forced != nullptr && forced->is_bool() && forced->as_bool() == terminal);
  back.as_object().erase("terminal");
  original.as_object().erase("terminal");
  bool has_double = false;
  FUZZ_CHECK(fuzz::same_document(original, back, &has_double));
}

void check_process_result(const shim::Status& status, const shim::oci::ProcessSpawn& spawn) {
  FUZZ_CHECK(!spawn.pty.valid());  // no console socket: never a pty
  if (!status.ok()) {
    FUZZ_CHECK(status.code() == shim::Code::kInvalidArgument);
    FUZZ_CHECK(status.message().starts_with("process"));
    return;
  }
  const shim::SpawnRequest& request = spawn.request;
  FUZZ_CHECK(!request.argv.empty() && request.path == request.argv[0] && !request.path.empty());
  FUZZ_CHECK(request.cwd.starts_with('/'));
  FUZZ_CHECK(request.env.has_value());
  int homes = 0;  // exactly one, not empty (runc adds it when missing or empty)
  for (const std::string& entry : *request.env)
    homes += entry.starts_with("HOME=") && entry.size() > 5 ? 1 : 0;
  FUZZ_CHECK(homes == 1);
  FUZZ_CHECK(request.search_path.has_value() && request.user.has_value());
}

// The text as an exec's process, and a spec's "process" as a container's.
void check_process(std::string_view text) {
  shim::oci::ProcessSpawn spawn;
  check_process_result(shim::oci::spawn_request_from_process(text, {}, &spawn), spawn);
  boost::system::error_code ec;
  json::value spec = json::parse(text, ec);
  const json::value* process =
      !ec && spec.is_object() ? spec.as_object().if_contains("process") : nullptr;
  if (process == nullptr) return;
  check_process_result(shim::oci::spawn_request_from_process(*process, {}, &spawn), spawn);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  check_group(text);
  check_pid_namespace(text);
  check_exec_spec(text, size % 2 == 1);
  check_process(text);
  return 0;
}
