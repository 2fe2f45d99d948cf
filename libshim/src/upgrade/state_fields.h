// Reading a live upgrade's state document (docs/live-upgrade.md): the fields of one JSON
// object, keeping the first error with where it was, so a reader checks once at the end.
// Internal; any thread.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>

#include <fmt/format.h>
#include <boost/json/array.hpp>
#include <boost/json/object.hpp>
#include <boost/json/value.hpp>

#include "shim/status.h"

namespace shim::upgrade {

// Reads fields of one JSON object, keeping the first error (with where it was).
class StateFields {
 public:
  StateFields(const boost::json::value& value, std::string where) : where_(std::move(where)) {
    object_ = value.if_object();
    if (object_ == nullptr) fail("", "an object");
  }

  std::string text(std::string_view key) {
    const boost::json::value* v = find(key);
    if (v != nullptr && v->is_string()) return std::string(v->as_string());
    fail(key, "a string");
    return {};
  }
  std::int64_t number(std::string_view key) {
    const boost::json::value* v = find(key);
    if (v != nullptr && v->is_int64()) return v->as_int64();
    if (v != nullptr && v->is_uint64() && v->as_uint64() <= INT64_MAX)
      return static_cast<std::int64_t>(v->as_uint64());
    fail(key, "an integer");
    return 0;
  }
  // A byte count or position (>= 0).
  std::uint64_t count(std::string_view key) {
    std::int64_t n = number(key);
    if (n >= 0) return static_cast<std::uint64_t>(n);
    fail(key, "a count");
    return 0;
  }
  // An fd the old program kept open across the exec, or -1 for none.
  int fd(std::string_view key) {
    std::int64_t n = number(key);
    if (n >= -1 && n <= INT32_MAX) return static_cast<int>(n);
    fail(key, "an fd");
    return -1;
  }
  bool flag(std::string_view key) {
    const boost::json::value* v = find(key);
    if (v != nullptr && v->is_bool()) return v->as_bool();
    fail(key, "a boolean");
    return false;
  }
  // nullptr (and no error) when absent and `optional`.
  const boost::json::value* object(std::string_view key, bool optional = false) {
    const boost::json::value* v = object_ == nullptr ? nullptr : object_->if_contains(key);
    if (v == nullptr && optional) return nullptr;
    if (v != nullptr && v->is_object()) return v;
    fail(key, "an object");
    return nullptr;
  }
  const boost::json::array* array(std::string_view key) {
    const boost::json::value* v = find(key);
    if (v != nullptr && v->is_array()) return &v->as_array();
    fail(key, "an array");
    return nullptr;
  }
  void fail(std::string_view key, std::string_view what) {
    if (!error_.ok()) return;
    error_ = Status(
        Code::kFailedPrecondition,
        fmt::format("upgrade state: {}{}{} is not {}", where_, key.empty() ? "" : ".", key, what));
  }
  const Status& status() const { return error_; }

 private:
  const boost::json::value* find(std::string_view key) const {
    return object_ == nullptr ? nullptr : object_->if_contains(key);
  }

  const boost::json::object* object_ = nullptr;
  std::string where_;
  Status error_;
};

}  // namespace shim::upgrade
