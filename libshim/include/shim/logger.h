// Logger: the shim's own log, as logrus text lines (what the Go shims write to the `log`
// FIFO that containerd copies to its stderr; pkg/shim/shim.go):
//   time="2026-11-29T09:26:33.125845343Z" level=info msg="starting signal loop" pid=1 ...
// Time is RFC3339 with fixed 9-digit nanoseconds in UTC (containerd's RFC3339NanoFixed);
// fields follow msg sorted by key; a value is quoted (Go %q) unless it consists only of
// letters, digits and - . _ / @ ^ +. Not a global: an object passed around; with() makes
// a child carrying extra default fields (namespace, runtime, pid, ...).
#pragma once

#include <atomic>
#include <chrono>
#include <concepts>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "shim/clock.h"

namespace shim {

// Severity of a log line, lowest first (logrus's levels).
enum class LogLevel { kTrace, kDebug, kInfo, kWarn, kError };

// logrus names: "trace", "debug", "info", "warning", "error".
std::string_view log_level_name(LogLevel level);

// One key=value field of a log line; integers and bools are formatted as Go does.
struct LogField {
  // A field `k` with the value `v`, formatted.
  LogField(std::string k, std::string v) : key(std::move(k)), value(std::move(v)) {}
  LogField(std::string k, std::string_view v) : key(std::move(k)), value(v) {}
  LogField(std::string k, const char* v) : key(std::move(k)), value(v) {}
  LogField(std::string k, bool v) : key(std::move(k)), value(v ? "true" : "false") {}
  template <std::integral T>
    requires(!std::same_as<T, bool>)
  LogField(std::string k, T v) : key(std::move(k)), value(std::to_string(v)) {}

  std::string key;    // logrus field name
  std::string value;  // formatted value (quoted on output where Go would quote it)
};
// The fields of one line or the default fields of a Logger.
using LogFields = std::vector<LogField>;

// Where formatted lines go. write() gets one whole line including its '\n', may be
// called from any thread and must not block.
class LogSink {
 public:
  virtual ~LogSink() = default;
  // Writes one formatted line.
  virtual void write(std::string_view line) = 0;
};

// Writes to a file descriptor it does not own (the `log` FIFO dup'ed on fd 2, or stderr).
// The fd's open file description is switched to O_NONBLOCK: when the reader (containerd)
// stalls and the pipe is full, lines are dropped and counted instead of blocking the
// shim. A line cut short by a full pipe is terminated by a '\n' in front of the next
// line that gets through. The shim must ignore SIGPIPE (it does) for a vanished reader.
class FdLogSink final : public LogSink {
 public:
  // Writes to `fd`, which stays open (not owned).
  explicit FdLogSink(int fd);
  void write(std::string_view line) override;
  // Lines not written, or not written completely.
  std::uint64_t dropped() const { return dropped_.load(std::memory_order_relaxed); }

 private:
  int fd_;
  std::mutex mutex_;
  bool pending_newline_ = false;  // guarded by mutex_
  std::atomic<std::uint64_t> dropped_{0};
};

// Hands each line to a callback (tests, or a plug-in's own log transport). Calls are
// serialized; the callback must not block.
class CallbackLogSink final : public LogSink {
 public:
  // Hands each line to `callback`.
  explicit CallbackLogSink(std::function<void(std::string_view line)> callback);
  void write(std::string_view line) override;

 private:
  std::mutex mutex_;
  std::function<void(std::string_view)> callback_;
};

// Formats logrus text lines at or above its level and writes them to its sink.
class Logger {
 public:
  // `clock` must outlive the logger and its children.
  Logger(std::shared_ptr<LogSink> sink, const Clock& clock, LogLevel level = LogLevel::kInfo,
         LogFields fields = {});

  // A logger writing to the same sink with `fields` added to (or replacing same-key)
  // default fields.
  Logger with(LogFields fields) const;

  // The lowest level written.
  LogLevel level() const { return level_; }
  // Not synchronized: set the level before the logger is shared between threads.
  void set_level(LogLevel level) { level_ = level; }
  // Whether lines at `level` are written.
  bool enabled(LogLevel level) const { return level >= level_; }

  // Per-call fields override default fields with the same key.
  void log(LogLevel level, std::string_view message, const LogFields& fields = {}) const;
  // log() at that level.
  void trace(std::string_view message, const LogFields& fields = {}) const;
  void debug(std::string_view message, const LogFields& fields = {}) const;
  void info(std::string_view message, const LogFields& fields = {}) const;
  void warn(std::string_view message, const LogFields& fields = {}) const;
  void error(std::string_view message, const LogFields& fields = {}) const;

 private:
  std::shared_ptr<LogSink> sink_;
  const Clock* clock_;
  LogLevel level_;
  LogFields fields_;
};

// One logrus text line with its '\n'. When a key repeats, the last value wins; keys that
// clash with time/level/msg are renamed fields.time/fields.level/fields.msg (logrus).
std::string format_log_line(std::chrono::system_clock::time_point time, LogLevel level,
                            std::string_view message, const LogFields& fields);

// "2026-11-29T09:26:33.125845343Z" (Go layout 2006-01-02T15:04:05.000000000Z07:00, UTC).
std::string format_rfc3339_nano_fixed(std::chrono::system_clock::time_point time);

// Go's strconv.Quote (what fmt "%q" prints for a string). Unassigned code points, which
// Go escapes via its Unicode tables, are passed through unescaped.
std::string go_quote(std::string_view text);

}  // namespace shim
