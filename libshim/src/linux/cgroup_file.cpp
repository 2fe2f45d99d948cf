#include "linux/cgroup_file.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <optional>

#include <fmt/format.h>

#include "gocompat/utf8.h"
#include "gocompat/go_compat.h"
#include "shim/logger.h"

namespace shim {

namespace {

bool is_space(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f';
}

bool all_digits(std::string_view text) {
  return !text.empty() && std::all_of(text.begin(), text.end(), [](char c) { return c >= '0' && c <= '9'; });
}

shim::Status parse_uint_error(std::string_view text, std::string_view why) {
  return shim::unknown(fmt::format("strconv.ParseUint: parsing {}: {}", shim::go_quote(text), why));
}

// Names under `dir` in sorted order (Go's ioutil.ReadDir sorts).
std::vector<std::string> sorted_entries(const std::string& dir) {
  std::vector<std::string> names;
  DIR* handle = ::opendir(dir.c_str());
  if (handle == nullptr) return names;
  while (dirent* entry = ::readdir(handle)) {
    std::string name = entry->d_name;
    if (name != "." && name != "..") names.push_back(std::move(name));
  }
  ::closedir(handle);
  std::sort(names.begin(), names.end());
  return names;
}

// "hugepages-2048kB" -> 2048 (kB); nullopt for any other shape.
std::optional<std::uint64_t> hugepage_kib(std::string_view name) {
  constexpr std::string_view kPrefix = "hugepages-";
  constexpr std::string_view kSuffix = "kB";
  if (!name.starts_with(kPrefix) || !name.ends_with(kSuffix)) return std::nullopt;
  name.remove_prefix(kPrefix.size());
  name.remove_suffix(kSuffix.size());
  std::uint64_t kib = 0;
  if (!all_digits(name) || !parse_uint_strict(name, &kib).ok()) return std::nullopt;
  return kib;
}

}  // namespace

bool is_not_exist(const shim::Status& status) { return status.code() == shim::Code::kNotFound; }

std::vector<std::string_view> split_fields(std::string_view text) {
  std::vector<std::string_view> fields;
  std::size_t pos = 0;
  while (pos < text.size()) {
    while (pos < text.size() && is_space(text[pos])) ++pos;
    std::size_t start = pos;
    while (pos < text.size() && !is_space(text[pos])) ++pos;
    if (pos > start) fields.push_back(text.substr(start, pos - start));
  }
  return fields;
}

std::vector<std::string_view> split_lines(std::string_view text) {
  std::vector<std::string_view> lines;
  while (!text.empty()) {
    std::size_t newline = text.find('\n');
    if (newline == std::string_view::npos) {
      lines.push_back(text);
      break;
    }
    lines.push_back(text.substr(0, newline));
    text.remove_prefix(newline + 1);
  }
  return lines;
}

shim::Status parse_uint_strict(std::string_view text, std::uint64_t* value) {
  if (!all_digits(text)) return parse_uint_error(text, "invalid syntax");
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), *value);
  if (ec == std::errc::result_out_of_range) return parse_uint_error(text, "value out of range");
  if (ec != std::errc() || end != text.data() + text.size())
    return parse_uint_error(text, "invalid syntax");
  return {};
}

shim::Status parse_uint_lenient(std::string_view text, std::uint64_t* value) {
  shim::Status status = parse_uint_strict(text, value);
  if (status.ok()) return status;
  // Negative numbers, even below INT64_MIN, read as 0 (memory.limit_in_bytes can be -1).
  std::string_view digits = text.substr(text.empty() ? 0 : 1);
  bool negative = text.starts_with('-') && all_digits(digits) &&
                  digits.find_first_not_of('0') != std::string_view::npos;
  if (!negative) return status;
  *value = 0;
  return {};
}

shim::Status parse_kv(std::string_view line, std::string* key, std::uint64_t* value) {
  std::vector<std::string_view> fields = split_fields(line);
  if (fields.size() != 2) return shim::unknown("cgroups: parsing file with invalid format failed");
  shim::Status status = parse_uint_lenient(fields[1], value);
  if (!status.ok()) return status;
  *key = std::string(fields[0]);
  return {};
}

shim::Status read_uint_file(const std::string& path, std::uint64_t* value) {
  std::string content;
  shim::Status status = go_read_file(path, &content);
  if (!status.ok()) return status;
  return parse_uint_lenient(go_trim_space(content), value);
}

shim::Status parse_kv_lines(std::string_view text, std::map<std::string, std::uint64_t>* out,
                            std::size_t* bad_line) {
  std::vector<std::string_view> lines = split_lines(text);
  for (std::size_t i = 0; i < lines.size(); ++i) {
    std::string key;
    std::uint64_t value = 0;
    shim::Status status = parse_kv(lines[i], &key, &value);
    if (!status.ok()) {
      *bad_line = i;
      return status;
    }
    (*out)[key] = value;
  }
  return {};
}

std::vector<RdmaLine> parse_rdma_lines(std::string_view text) {
  std::vector<RdmaLine> lines;
  for (std::string_view line : split_lines(text)) {
    std::vector<std::string_view> parts = split_fields(line);
    // The device becomes a proto3 string, which must be UTF-8 (kernel names are ASCII):
    // a corrupt line is skipped rather than sent unparseable to containerd.
    if (parts.size() != 3 || !detail::is_valid_utf8(parts[0])) continue;
    RdmaLine& entry = lines.emplace_back(RdmaLine{.device = std::string(parts[0])});
    for (std::string_view pair : {parts[1], parts[2]}) {
      std::size_t equals = pair.find('=');
      if (equals == std::string_view::npos) continue;
      std::string_view key = pair.substr(0, equals);
      std::string_view text_value = pair.substr(equals + 1);
      std::uint64_t value = 0xffffffffu;
      if (text_value != "max" &&
          (!parse_uint_lenient(text_value, &value).ok() || value > 0xffffffffu))
        continue;
      if (key == "hca_handle") entry.hca_handles = static_cast<std::uint32_t>(value);
      if (key == "hca_object") entry.hca_objects = static_cast<std::uint32_t>(value);
    }
  }
  return lines;
}

std::vector<std::string> hugepage_sizes_v1(const std::string& dir) {
  static constexpr const char* kUnits[] = {"B", "KB", "MB", "GB", "TB", "PB"};
  std::vector<std::string> sizes;
  for (const std::string& name : sorted_entries(dir)) {
    std::optional<std::uint64_t> kib = hugepage_kib(name);
    if (!kib) continue;
    double size = static_cast<double>(*kib) * 1024.0;
    std::size_t unit = 0;
    while (size >= 1024.0 && unit + 1 < std::size(kUnits)) {
      size /= 1024.0;
      ++unit;
    }
    sizes.push_back(fmt::format("{}{}", size, kUnits[unit]));
  }
  return sizes;
}

std::vector<std::string> hugepage_sizes_v2(const std::string& dir) {
  std::vector<std::string> sizes;
  for (const std::string& name : sorted_entries(dir)) {
    std::optional<std::uint64_t> kib = hugepage_kib(name);
    if (!kib) continue;
    if (*kib >= (1u << 20)) {
      sizes.push_back(fmt::format("{}GB", *kib >> 20));
    } else if (*kib >= (1u << 10)) {
      sizes.push_back(fmt::format("{}MB", *kib >> 10));
    } else {
      sizes.push_back(fmt::format("{}KB", *kib));
    }
  }
  return sizes;
}

shim::Status write_control_file(const std::string& path, std::string_view content) {
  int fd = ::open(path.c_str(), O_WRONLY | O_CLOEXEC);
  if (fd < 0) return shim::unknown(fmt::format("open {}: {}", path, go_errno_text(errno)));
  ssize_t n = ::write(fd, content.data(), content.size());
  int err = errno;
  ::close(fd);
  if (n < 0) return shim::unknown(fmt::format("write {}: {}", path, go_errno_text(err)));
  return {};
}

bool path_exists(const std::string& path) {
  struct stat st {};
  return ::lstat(path.c_str(), &st) == 0;
}

}  // namespace shim
