#include "shim/logger.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <ctime>

#include <fmt/format.h>

#include "gocompat/utf8.h"

namespace shim {
namespace {

// Go's unicode.IsPrint for the code points that matter in practice: controls, spaces
// other than ' ', format characters, private use and noncharacters are not printable.
bool is_printable(char32_t r) {
  if (r < 0x80) return r >= 0x20 && r < 0x7F;
  if (r < 0xA1 || r == 0xAD) return false;  // C1 controls, NBSP, soft hyphen
  if (detail::is_space(r)) return false;
  struct Range { char32_t first, last; };
  static constexpr Range kNotPrintable[] = {
      {0x0600, 0x0605}, {0x061C, 0x061C}, {0x06DD, 0x06DD}, {0x070F, 0x070F},
      {0x180E, 0x180E}, {0x200B, 0x200F}, {0x202A, 0x202E}, {0x2060, 0x206F},
      {0xD800, 0xF8FF}, {0xFDD0, 0xFDEF}, {0xFEFF, 0xFEFF}, {0xFFF9, 0xFFFB},
      {0xFFFE, 0xFFFF}, {0xE0001, 0xE007F}, {0xF0000, 0x10FFFF}};
  return std::none_of(std::begin(kNotPrintable), std::end(kNotPrintable),
                      [r](const Range& range) { return r >= range.first && r <= range.last; });
}

void append_escaped_rune(char32_t r, std::string_view raw, std::string* out) {
  if (r == '"' || r == '\\') {
    out->push_back('\\');
    out->push_back(static_cast<char>(r));
    return;
  }
  if (is_printable(r)) {
    out->append(raw);
    return;
  }
  switch (r) {
    case '\a': *out += "\\a"; return;
    case '\b': *out += "\\b"; return;
    case '\f': *out += "\\f"; return;
    case '\n': *out += "\\n"; return;
    case '\r': *out += "\\r"; return;
    case '\t': *out += "\\t"; return;
    case '\v': *out += "\\v"; return;
    default: break;
  }
  auto code = static_cast<std::uint32_t>(r);
  if (r < ' ' || r == 0x7F) {
    *out += fmt::format("\\x{:02x}", code);
  } else if (r < 0x10000) {
    *out += fmt::format("\\u{:04x}", code);
  } else {
    *out += fmt::format("\\U{:08x}", code);
  }
}

// logrus TextFormatter.needsQuoting.
bool needs_quoting(std::string_view text) {
  return std::any_of(text.begin(), text.end(), [](char c) {
    bool plain = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                 c == '-' || c == '.' || c == '_' || c == '/' || c == '@' || c == '^' ||
                 c == '+';
    return !plain;
  });
}

void append_pair(std::string_view key, std::string_view value, std::string* line) {
  if (!line->empty()) line->push_back(' ');
  line->append(key);
  line->push_back('=');
  if (needs_quoting(value)) {
    line->append(go_quote(value));
  } else {
    line->append(value);
  }
}

// Last value per key wins; clashes with the fixed keys are renamed; sorted by key.
LogFields normalized(const LogFields& fields) {
  LogFields out;
  for (const LogField& field : fields) {
    std::string key = field.key;
    if (key == "time" || key == "level" || key == "msg") key = "fields." + key;
    auto same = std::find_if(out.begin(), out.end(),
                             [&](const LogField& existing) { return existing.key == key; });
    if (same != out.end()) {
      same->value = field.value;
    } else {
      out.emplace_back(std::move(key), field.value);
    }
  }
  std::sort(out.begin(), out.end(),
            [](const LogField& a, const LogField& b) { return a.key < b.key; });
  return out;
}

void merge_into(LogFields* base, const LogFields& extra) {
  for (const LogField& field : extra) {
    auto same = std::find_if(base->begin(), base->end(),
                             [&](const LogField& existing) { return existing.key == field.key; });
    if (same != base->end()) {
      same->value = field.value;
    } else {
      base->push_back(field);
    }
  }
}

}  // namespace

std::string_view log_level_name(LogLevel level) {
  switch (level) {
    case LogLevel::kTrace: return "trace";
    case LogLevel::kDebug: return "debug";
    case LogLevel::kInfo: return "info";
    case LogLevel::kWarn: return "warning";
    case LogLevel::kError: return "error";
  }
  return "unknown";
}

std::string go_quote(std::string_view text) {
  std::string out = "\"";
  for (std::size_t pos = 0; pos < text.size();) {
    detail::Rune rune = detail::decode_rune(text, pos);
    if (rune.value == detail::kRuneError && rune.size == 1) {
      out += fmt::format("\\x{:02x}", static_cast<unsigned char>(text[pos]));
    } else {
      append_escaped_rune(rune.value, text.substr(pos, rune.size), &out);
    }
    pos += rune.size;
  }
  out.push_back('"');
  return out;
}

std::string format_rfc3339_nano_fixed(std::chrono::system_clock::time_point time) {
  using namespace std::chrono;
  auto since_epoch = duration_cast<nanoseconds>(time.time_since_epoch());
  auto seconds = floor<std::chrono::seconds>(since_epoch);
  auto nanos = (since_epoch - seconds).count();
  std::time_t whole = static_cast<std::time_t>(seconds.count());
  std::tm utc{};
  ::gmtime_r(&whole, &utc);
  return fmt::format("{:04}-{:02}-{:02}T{:02}:{:02}:{:02}.{:09}Z", utc.tm_year + 1900,
                     utc.tm_mon + 1, utc.tm_mday, utc.tm_hour, utc.tm_min, utc.tm_sec, nanos);
}

std::string format_log_line(std::chrono::system_clock::time_point time, LogLevel level,
                            std::string_view message, const LogFields& fields) {
  std::string line;
  append_pair("time", format_rfc3339_nano_fixed(time), &line);
  append_pair("level", log_level_name(level), &line);
  if (!message.empty()) append_pair("msg", message, &line);
  for (const LogField& field : normalized(fields)) append_pair(field.key, field.value, &line);
  line.push_back('\n');
  return line;
}

FdLogSink::FdLogSink(int fd) : fd_(fd) {
  int flags = ::fcntl(fd_, F_GETFL);
  if (flags >= 0 && (flags & O_NONBLOCK) == 0) ::fcntl(fd_, F_SETFL, flags | O_NONBLOCK);
}

void FdLogSink::write(std::string_view line) {
  std::lock_guard<std::mutex> lock(mutex_);
  std::string buffer;
  if (pending_newline_) {
    buffer.reserve(line.size() + 1);
    buffer.push_back('\n');
    buffer.append(line);
    line = buffer;
  }
  std::size_t written = 0;
  while (written < line.size()) {
    ssize_t n = ::write(fd_, line.data() + written, line.size() - written);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;  // EAGAIN (pipe full), EPIPE, EBADF: never wait
    written += static_cast<std::size_t>(n);
  }
  if (written == line.size()) {
    pending_newline_ = false;
    return;
  }
  dropped_.fetch_add(1, std::memory_order_relaxed);
  if (written == 0) return;  // nothing went out; a pending newline stays pending
  // Some bytes went out. If they were only the pending '\n', the earlier cut line is now
  // ended and nothing of this one was written; otherwise this line is cut and must be
  // ended before the next.
  bool only_prefix_written = pending_newline_ && written == 1;
  pending_newline_ = !only_prefix_written;
}

CallbackLogSink::CallbackLogSink(std::function<void(std::string_view line)> callback)
    : callback_(std::move(callback)) {}

void CallbackLogSink::write(std::string_view line) {
  std::lock_guard<std::mutex> lock(mutex_);
  callback_(line);
}

Logger::Logger(std::shared_ptr<LogSink> sink, const Clock& clock, LogLevel level,
               LogFields fields)
    : sink_(std::move(sink)), clock_(&clock), level_(level), fields_(std::move(fields)) {}

Logger Logger::with(LogFields fields) const {
  Logger child = *this;
  merge_into(&child.fields_, fields);
  return child;
}

void Logger::log(LogLevel level, std::string_view message, const LogFields& fields) const {
  if (!enabled(level) || !sink_) return;
  LogFields all = fields_;
  merge_into(&all, fields);
  sink_->write(format_log_line(clock_->now(), level, message, all));
}

void Logger::trace(std::string_view message, const LogFields& fields) const {
  log(LogLevel::kTrace, message, fields);
}
void Logger::debug(std::string_view message, const LogFields& fields) const {
  log(LogLevel::kDebug, message, fields);
}
void Logger::info(std::string_view message, const LogFields& fields) const {
  log(LogLevel::kInfo, message, fields);
}
void Logger::warn(std::string_view message, const LogFields& fields) const {
  log(LogLevel::kWarn, message, fields);
}
void Logger::error(std::string_view message, const LogFields& fields) const {
  log(LogLevel::kError, message, fields);
}

}  // namespace shim
