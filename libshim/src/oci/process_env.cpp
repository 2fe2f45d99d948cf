#include "oci/process_env.h"

#include <algorithm>
#include <charconv>
#include <set>
#include <sstream>
#include <string_view>

#include <fmt/format.h>

#include "linux/root_path.h"
#include "oci/json_fields.h"
#include "shim/fs.h"

namespace shim::oci {
namespace {

// One /etc/passwd line's uid and home (fields 3 and 6 of 7), if it has them.
bool passwd_entry(std::string_view line, uid_t* uid, std::string* home) {
  std::vector<std::string_view> fields;
  for (std::size_t pos = 0;;) {
    std::size_t colon = line.find(':', pos);
    fields.push_back(line.substr(pos, colon == std::string_view::npos ? colon : colon - pos));
    if (colon == std::string_view::npos) break;
    pos = colon + 1;
  }
  if (fields.size() < 6) return false;
  std::string_view id = fields[2];
  auto [end, error] = std::from_chars(id.data(), id.data() + id.size(), *uid);
  if (error != std::errc() || end != id.data() + id.size() || id.empty()) return false;
  *home = std::string(fields[5]);
  return true;
}

Status check_entry(const std::string& entry, std::size_t index) {
  std::string field = fmt::format("process.env[{}]", index);
  std::size_t equals = entry.find('=');
  if (equals == std::string::npos)
    return field_error(field, "invalid environment variable: missing '='");
  if (equals == 0) return field_error(field, "invalid environment variable: name cannot be empty");
  if (entry.find('\0') != std::string::npos) {
    return field_error(field,
                       fmt::format("invalid environment variable \"{}\": contains nul byte (\\x00)",
                                   entry.substr(0, equals)));
  }
  return {};
}

}  // namespace

std::string home_of(const std::string& root, uid_t uid) {
  std::string passwd;
  std::string text;
  if (!root_path(root.empty() ? "/" : root, "/etc/passwd", &passwd).ok() ||
      !read_file(passwd, &text).ok())
    return "/";
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);) {
    uid_t entry_uid = 0;
    std::string home;
    if (passwd_entry(line, &entry_uid, &home) && entry_uid == uid) return home;
  }
  return "/";
}

Status prepare_env(const std::vector<std::string>& env, const std::string& root, uid_t uid,
                   std::vector<std::string>* out, std::optional<std::string>* path) {
  out->clear();
  path->reset();
  std::set<std::string, std::less<>> seen;
  bool home_set = false;
  // From the end, so the last value of a name wins; reversed again below.
  for (std::size_t i = env.size(); i-- > 0;) {
    if (Status s = check_entry(env[i], i); !s.ok()) return s;
    std::string_view entry = env[i];
    std::string_view name = entry.substr(0, entry.find('='));
    std::string_view value = entry.substr(name.size() + 1);
    if (!seen.emplace(name).second) continue;
    if (name == "PATH") *path = std::string(value);
    if (name == "HOME") {
      if (value.empty()) continue;  // replaced below, as runc does
      home_set = true;
    }
    out->emplace_back(entry);
  }
  std::reverse(out->begin(), out->end());
  if (!home_set) out->push_back("HOME=" + home_of(root, uid));
  return {};
}

}  // namespace shim::oci
