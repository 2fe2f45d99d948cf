#include "oci/json_fields.h"

#include <fmt/format.h>
#include <boost/json/serialize.hpp>

#include "gocompat/go_compat.h"

namespace shim::oci {
namespace {

// "a string", "an object"...: the kind of what was found, for type errors.
std::string found(const boost::json::value& value) {
  std::string_view kind = go_json_kind(value);
  bool vowel = kind == "object" || kind == "array";
  return fmt::format("{} {}", vowel ? "an" : "a", kind);
}

}  // namespace

Status type_error(std::string_view field, std::string_view what, const boost::json::value& got) {
  return field_error(field, fmt::format("want {}, got {}", what, found(got)));
}

const boost::json::value* member(const boost::json::object& object, std::string_view key) {
  const boost::json::value* value = object.if_contains(key);
  return value == nullptr || value->is_null() ? nullptr : value;
}

Status field_error(std::string_view field, std::string_view what) {
  return invalid_argument(fmt::format("{}: {}", field, what));
}

Status read_object(const boost::json::value& value, std::string_view field,
                   const boost::json::object** out) {
  *out = value.if_object();
  return *out != nullptr ? Status() : type_error(field, "an object", value);
}

Status read_string(const boost::json::value& value, std::string_view field, std::string* out) {
  if (!value.is_string()) return type_error(field, "a string", value);
  *out = std::string(value.get_string());
  return {};
}

Status read_bool(const boost::json::value& value, std::string_view field, bool* out) {
  if (!value.is_bool()) return type_error(field, "true or false", value);
  *out = value.get_bool();
  return {};
}

Status read_strings(const boost::json::value& value, std::string_view field,
                    std::vector<std::string>* out) {
  const auto* array = value.if_array();
  if (array == nullptr) return type_error(field, "an array of strings", value);
  out->clear();
  for (std::size_t i = 0; i < array->size(); ++i) {
    std::string item;
    if (Status s = read_string((*array)[i], fmt::format("{}[{}]", field, i), &item); !s.ok())
      return s;
    out->push_back(std::move(item));
  }
  return {};
}

Status read_int(const boost::json::value& value, std::string_view field, std::int64_t min,
                std::int64_t max, std::int64_t* out) {
  std::string range = fmt::format("an integer in {}..{}", min, max);
  if (value.is_int64() && value.get_int64() >= min && value.get_int64() <= max) {
    *out = value.get_int64();
    return {};
  }
  if (value.is_uint64() && max >= 0 && value.get_uint64() <= static_cast<std::uint64_t>(max)) {
    *out = static_cast<std::int64_t>(value.get_uint64());
    return {};
  }
  if (value.is_int64() || value.is_uint64())
    return field_error(field, fmt::format("{} is not {}", boost::json::serialize(value), range));
  return type_error(field, range, value);
}

Status read_uint(const boost::json::value& value, std::string_view field, std::uint64_t* out,
                 std::uint64_t max) {
  std::string range = fmt::format("an integer in 0..{}", max);
  if (value.is_uint64() && value.get_uint64() <= max) {
    *out = value.get_uint64();
    return {};
  }
  if (value.is_int64() && value.get_int64() >= 0 &&
      static_cast<std::uint64_t>(value.get_int64()) <= max) {
    *out = static_cast<std::uint64_t>(value.get_int64());
    return {};
  }
  if (value.is_int64() || value.is_uint64())
    return field_error(field, fmt::format("{} is not {}", boost::json::serialize(value), range));
  return type_error(field, range, value);
}

Status read_uints(const boost::json::value& value, std::string_view field, std::uint64_t max,
                  std::vector<std::uint64_t>* out) {
  const auto* array = value.if_array();
  if (array == nullptr)
    return type_error(field, fmt::format("an array of integers in 0..{}", max), value);
  out->clear();
  for (std::size_t i = 0; i < array->size(); ++i) {
    std::uint64_t item = 0;
    if (Status s = read_uint((*array)[i], fmt::format("{}[{}]", field, i), &item, max); !s.ok())
      return s;
    out->push_back(item);
  }
  return {};
}

}  // namespace shim::oci
