#include "shim/oci/cli_error.h"

#include <sys/statvfs.h>

#include <cerrno>
#include <optional>

#include <boost/json/stream_parser.hpp>
#include <boost/json/value.hpp>
#include <fmt/format.h>

#include "gocompat/go_compat.h"

namespace shim::oci {

namespace {

// The Go type the shim decodes each log entry into, as Go names it in type errors.
constexpr std::string_view kEntryType = "struct { Level string; Msg string; Time time.Time }";

bool json_space(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\n'; }

bool starts_json_value(char c) {
  return c == '{' || c == '[' || c == '"' || c == '-' || (c >= '0' && c <= '9') || c == 't' ||
         c == 'f' || c == 'n';
}

// Go's quoteChar() in encoding/json's scanner errors.
std::string go_quote_char(char c) {
  if (c == '\'') return "'\\''";
  if (c == '"') return "'\"'";
  auto byte = static_cast<unsigned char>(c);
  if (byte >= 0x20 && byte < 0x7f) return fmt::format("'{}'", c);
  return fmt::format("'\\x{:02x}'", byte);
}

// The reused Go struct: fields persist from one entry to the next.
struct LogEntry {
  std::string level;
  std::string msg;
};

// Assigns one decoded value like json.Unmarshal into LogEntry. Returns the first type
// error (Go keeps assigning the other fields, then reports it).
std::optional<std::string> assign_entry(const boost::json::value& value, LogEntry* entry) {
  if (value.is_null()) return std::nullopt;
  if (!value.is_object()) {
    return fmt::format("json: cannot unmarshal {} into Go value of type {}", shim::go_json_kind(value),
                       kEntryType);
  }
  std::optional<std::string> error;
  for (const auto& member : value.get_object()) {
    std::string_view key = member.key();
    const boost::json::value& field = member.value();
    std::string* target = nullptr;
    std::string_view name;
    if (shim::go_equal_fold(key, "level")) {
      target = &entry->level;
      name = "Level";
    } else if (shim::go_equal_fold(key, "msg")) {
      target = &entry->msg;
      name = "Msg";
    } else if (shim::go_equal_fold(key, "time")) {
      if (!field.is_string() && !field.is_null() && !error)
        error = "Time.UnmarshalJSON: input is not a JSON string";
      continue;
    } else {
      continue;  // unknown keys are ignored
    }
    if (field.is_string()) {
      *target = std::string(field.get_string());
    } else if (!field.is_null() && !error) {
      error = fmt::format("json: cannot unmarshal {} into Go struct field .{} of type string",
                          shim::go_json_kind(field), name);
    }
  }
  return error;
}

// Parses the value starting at content[*pos]; advances *pos past it.
std::optional<std::string> next_value(std::string_view content, std::size_t* pos,
                                      boost::json::value* value) {
  boost::json::parse_options options;
  options.max_depth = 10000;  // Go's limit
  options.allow_invalid_utf8 = true;
  boost::json::stream_parser parser({}, options);
  boost::system::error_code ec;
  std::size_t used = parser.write_some(content.data() + *pos, content.size() - *pos, ec);
  if (!ec && !parser.done()) parser.finish(ec);
  if (ec) {
    std::size_t at = *pos + used;
    if (at >= content.size()) return std::string("unexpected EOF");
    return fmt::format("invalid character {} in log entry ({})", go_quote_char(content[at]),
                       ec.message());
  }
  *pos += used;
  *value = parser.release();
  return std::nullopt;
}

}  // namespace

shim::Status last_runtime_error_in(std::string_view content, std::string* message) {
  message->clear();
  LogEntry entry;
  std::size_t pos = 0;
  for (;;) {
    while (pos < content.size() && json_space(content[pos])) ++pos;
    if (pos == content.size()) return {};
    if (!starts_json_value(content[pos])) {
      return shim::unknown(fmt::format("invalid character {} looking for beginning of value",
                                       go_quote_char(content[pos])));
    }
    boost::json::value value;
    if (auto error = next_value(content, &pos, &value)) return shim::unknown(*error);
    if (auto error = assign_entry(value, &entry)) return shim::unknown(*error);
    if (entry.level == "error") *message = std::string(shim::go_trim_space(entry.msg));
  }
}

shim::Status last_runtime_error(const std::string& log_path, std::string* message) {
  message->clear();
  std::string content;
  if (shim::Status status = shim::go_read_file(log_path, &content); !status.ok()) return status;
  return last_runtime_error_in(content, message);
}

namespace {

// When runc left no error in log.json, the reason may be that it could not write there:
// the bundle's filesystem full or read-only. Said then (Go's shim says nothing more than
// "exit status 1"), empty otherwise.
std::string bundle_fs_reason(const std::string& log_path) {
  std::string dir = log_path.substr(0, log_path.rfind('/'));
  struct statvfs fs {};
  if (dir.empty() || ::statvfs(dir.c_str(), &fs) != 0) return {};
  if ((fs.f_flag & ST_RDONLY) != 0) return fmt::format(": bundle {}: read-only file system", dir);
  if (fs.f_bavail == 0) return fmt::format(": bundle {}: no space left on device", dir);
  return {};
}

}  // namespace

shim::Status runtime_error(const std::string& log_path, std::string_view action,
                           std::string_view runc_error) {
  std::string message;
  shim::Status read = last_runtime_error(log_path, &message);
  if (!read.ok()) {
    return shim::unknown(fmt::format("{}: unable to retrieve OCI runtime error ({}): {}{}", action,
                                     read.message(), runc_error, bundle_fs_reason(log_path)));
  }
  if (message.empty()) {
    return shim::unknown(fmt::format("{}: {}{}", action, runc_error, bundle_fs_reason(log_path)));
  }
  return shim::unknown(fmt::format("{}: {}", action, message));
}

shim::Status kill_error(std::string_view runc_error) {
  std::string lower(runc_error);
  for (char& c : lower) {
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  }
  bool finished = runc_error.find("os: process already finished") != std::string_view::npos ||
                  runc_error.find("container not running") != std::string_view::npos ||
                  lower.find("no such process") != std::string::npos;
  if (finished) return shim::not_found("process already finished");
  if (runc_error.find("does not exist") != std::string_view::npos)
    return shim::not_found("no such container");
  return shim::unknown(fmt::format("unknown error after kill: {}", runc_error));
}

shim::Status kill_errno_error(int err) {
  // Go compares with ESRCH, whose text "no such process" the text check covers as well.
  if (err == ESRCH) return shim::not_found("process already finished");
  return kill_error(shim::go_errno_text(err));
}

}  // namespace shim::oci
