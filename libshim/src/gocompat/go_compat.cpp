#include "gocompat/go_compat.h"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <vector>

#include <fmt/format.h>
#include <boost/json/serialize.hpp>
#include <boost/json/value.hpp>

#include "gocompat/utf8.h"
#include "shim/fs.h"

namespace shim {

std::string go_errno_text(int err) { return shim::errno_text(err, shim::ErrorStyle::kGo); }

std::string go_exit_status_text(int status) { return fmt::format("exit status {}", status); }

std::string go_clean_path(std::string_view path) {
  if (path.empty()) return ".";
  bool rooted = path.front() == '/';
  std::vector<std::string_view> parts;
  std::size_t pos = 0;
  while (pos <= path.size()) {
    std::size_t slash = path.find('/', pos);
    if (slash == std::string_view::npos) slash = path.size();
    std::string_view part = path.substr(pos, slash - pos);
    pos = slash + 1;
    if (part.empty() || part == ".") continue;
    if (part != "..") {
      parts.push_back(part);
      continue;
    }
    if (!parts.empty() && parts.back() != "..") {
      parts.pop_back();
    } else if (!rooted) {
      parts.push_back(part);  // a relative path keeps leading ".."
    }
  }
  std::string out = rooted ? "/" : "";
  for (std::size_t i = 0; i < parts.size(); ++i) {
    if (i > 0) out += '/';
    out += parts[i];
  }
  return out.empty() ? "." : out;
}

std::string go_join_path(std::string_view a, std::string_view b) {
  if (a.empty() && b.empty()) return "";
  if (a.empty()) return go_clean_path(b);
  if (b.empty()) return go_clean_path(a);
  std::string joined(a);
  joined += '/';
  joined += b;
  return go_clean_path(joined);
}

std::string go_abs_path(std::string_view path) {
  if (!path.empty() && path.front() == '/') return go_clean_path(path);
  std::vector<char> buffer(4096);
  while (::getcwd(buffer.data(), buffer.size()) == nullptr) {
    if (errno != ERANGE) return go_clean_path(path);  // Go would return an error here
    buffer.resize(buffer.size() * 2);
  }
  return go_join_path(buffer.data(), path);
}

std::string go_json_quote(std::string_view text) {
  std::string out = "\"";
  for (std::size_t pos = 0; pos < text.size();) {
    auto c = static_cast<unsigned char>(text[pos]);
    if (c < 0x80) {
      ++pos;
      switch (c) {
        case '"':
          out += "\\\"";
          continue;
        case '\\':
          out += "\\\\";
          continue;
        case '\n':
          out += "\\n";
          continue;
        case '\r':
          out += "\\r";
          continue;
        case '\t':
          out += "\\t";
          continue;
        default:
          break;
      }
      if (c < 0x20 || c == '<' || c == '>' || c == '&') {
        out += fmt::format("\\u00{:02x}", c);
      } else {
        out += static_cast<char>(c);
      }
      continue;
    }
    detail::Rune rune = detail::decode_rune(text, pos);
    std::size_t length = rune.size;
    auto code = static_cast<std::uint32_t>(rune.value);
    if (rune.value == detail::kRuneError && length == 1) {
      out += "\\ufffd";
      ++pos;
      continue;
    }
    if (code == 0x2028 || code == 0x2029) {
      out += fmt::format("\\u{:04x}", code);
    } else {
      out.append(text.substr(pos, length));
    }
    pos += length;
  }
  out += '"';
  return out;
}

std::string_view go_trim_space(std::string_view text) { return detail::trim_space(text); }

bool go_equal_fold(std::string_view a, std::string_view b) {
  auto lower = [](char c) { return c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c; };
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i) {
    if (lower(a[i]) != lower(b[i])) return false;
  }
  return true;
}

std::string_view go_json_kind(const boost::json::value& value) {
  switch (value.kind()) {
    case boost::json::kind::string:
      return "string";
    case boost::json::kind::bool_:
      return "bool";
    case boost::json::kind::array:
      return "array";
    case boost::json::kind::object:
      return "object";
    case boost::json::kind::null:
      return "null";
    default:
      return "number";
  }
}

shim::Status go_read_file(const std::string& path, std::string* content) {
  return shim::read_file(path, content, shim::ErrorStyle::kGo);
}

shim::Status go_write_file(const std::string& path, std::string_view content, int mode) {
  return shim::write_file(path, content, mode, shim::ErrorStyle::kGo);
}

namespace {

bool executable_file(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0 || S_ISDIR(st.st_mode)) return false;
  return (st.st_mode & 0111) != 0;
}

}  // namespace

shim::Status go_look_path(std::string_view name, std::string* path) {
  if (name.find('/') != std::string_view::npos) {
    *path = std::string(name);
    return {};
  }
  const char* env_path = std::getenv("PATH");
  std::string_view dirs = env_path == nullptr ? "" : env_path;
  // Go's filepath.SplitList: "" has no entries; an empty entry means ".".
  for (std::size_t pos = 0; !dirs.empty() && pos <= dirs.size();) {
    std::size_t colon = std::min(dirs.find(':', pos), dirs.size());
    std::string_view dir = dirs.substr(pos, colon - pos);
    std::string candidate = go_join_path(dir.empty() ? "." : dir, name);
    if (executable_file(candidate)) {
      if (candidate.front() != '/') {  // Go 1.19+ refuses these (exec.ErrDot)
        return shim::Status(
            shim::Code::kNotFound,
            fmt::format("exec: \"{}\": cannot run executable found relative to current directory",
                        name));
      }
      *path = candidate;
      return {};
    }
    pos = colon + 1;
  }
  return shim::Status(shim::Code::kNotFound,
                      fmt::format("exec: \"{}\": executable file not found in $PATH", name));
}

namespace {

void marshal_into(const boost::json::value& value, std::string* out) {
  switch (value.kind()) {
    case boost::json::kind::object: {
      out->push_back('{');
      bool first = true;
      for (const auto& [key, member] : value.get_object()) {
        if (!first) out->push_back(',');
        first = false;
        *out += go_json_quote(key);
        out->push_back(':');
        marshal_into(member, out);
      }
      out->push_back('}');
      return;
    }
    case boost::json::kind::array: {
      out->push_back('[');
      bool first = true;
      for (const auto& item : value.get_array()) {
        if (!first) out->push_back(',');
        first = false;
        marshal_into(item, out);
      }
      out->push_back(']');
      return;
    }
    case boost::json::kind::string:
      *out += go_json_quote(value.get_string());
      return;
    case boost::json::kind::int64:
      *out += std::to_string(value.get_int64());
      return;
    case boost::json::kind::uint64:
      *out += std::to_string(value.get_uint64());
      return;
    case boost::json::kind::bool_:
      *out += value.get_bool() ? "true" : "false";
      return;
    case boost::json::kind::null:
      *out += "null";
      return;
    case boost::json::kind::double_:
      // A number beyond double's range parses as an infinity, which Boost prints as
      // "Infinity": not JSON. Go's Marshal refuses such a value; null keeps the output valid.
      if (!std::isfinite(value.get_double())) {
        *out += "null";
        return;
      }
      *out += boost::json::serialize(value);
      return;
  }
}

}  // namespace

std::string go_json_marshal(const boost::json::value& value) {
  std::string out;
  marshal_into(value, &out);
  return out;
}

}  // namespace shim

namespace shim {

std::string go_base64_std(std::string_view bytes) {
  static constexpr char kAlphabet[] =
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  out.reserve((bytes.size() + 2) / 3 * 4);
  for (std::size_t i = 0; i < bytes.size(); i += 3) {
    std::uint32_t group = static_cast<std::uint32_t>(static_cast<unsigned char>(bytes[i])) << 16;
    std::size_t left = bytes.size() - i;
    if (left > 1)
      group |= static_cast<std::uint32_t>(static_cast<unsigned char>(bytes[i + 1])) << 8;
    if (left > 2) group |= static_cast<unsigned char>(bytes[i + 2]);
    out.push_back(kAlphabet[(group >> 18) & 63]);
    out.push_back(kAlphabet[(group >> 12) & 63]);
    out.push_back(left > 1 ? kAlphabet[(group >> 6) & 63] : '=');
    out.push_back(left > 2 ? kAlphabet[group & 63] : '=');
  }
  return out;
}

}  // namespace shim
