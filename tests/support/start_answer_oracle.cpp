#include "support/start_answer_oracle.h"

#include <cstdint>
#include <limits>

#include <boost/json.hpp>
#include <fmt/format.h>

#include "common/proto_wire.h"
#include "gocompat/utf8.h"
#include "gocompat/go_compat.h"
#include "protocol/bootstrap.h"
#include "protocol/start_answer.h"

namespace shim {
namespace {

namespace json = boost::json;
using detail::WireField;
using detail::WireType;

constexpr int kMaxVersion1_7 = 2;
constexpr int kMaxVersion2_x = 3;  // CurrentShimVersion in containerd 2.x

// --- reading, the way containerd does -------------------------------------------------

// What Go's json.Unmarshal leaves in client.BootstrapParams{Version, Address, Protocol}.
struct GoJsonFields {
  std::int64_t version = 0;
  std::string address;
  std::string protocol;
};

// Go stores a JSON string with each invalid UTF-8 byte replaced by U+FFFD.
std::string go_string(std::string_view raw) {
  std::string out;
  for (std::size_t pos = 0; pos < raw.size();) {
    detail::Rune rune = detail::decode_rune(raw, pos);
    bool invalid = rune.value == detail::kRuneError && rune.size == 1;
    out.append(invalid ? std::string_view("\xEF\xBF\xBD") : raw.substr(pos, rune.size));
    pos += rune.size;
  }
  return out;
}

// Assigns one JSON member to its field; false on a type mismatch (Go saves the error and
// keeps decoding the other members).
bool assign_member(std::string_view key, const json::value& value, GoJsonFields* fields) {
  if (value.is_null()) return true;  // null leaves a Go field untouched
  if (go_equal_fold(key, "version")) {
    if (!value.is_int64()) return false;  // floats, > int64, strings: not a Go int
    fields->version = value.as_int64();
    return true;
  }
  std::string* target = go_equal_fold(key, "address")    ? &fields->address
                        : go_equal_fold(key, "protocol") ? &fields->protocol
                                                        : nullptr;
  if (target == nullptr) return true;  // unknown keys are ignored
  if (!value.is_string()) return false;
  *target = go_string(value.as_string());
  return true;
}

// Returns true when json.Unmarshal would return a nil error.
bool go_json_unmarshal(std::string_view text, GoJsonFields* fields) {
  json::parse_options options;
  options.max_depth = 10000;
  options.allow_invalid_utf8 = true;
  boost::system::error_code ec;
  json::value value = json::parse(text, ec, {}, options);
  if (ec) return false;  // syntax errors are found before anything is assigned
  if (value.is_null()) return true;
  if (!value.is_object()) return false;
  bool ok = true;
  for (const auto& [key, member] : value.as_object()) {
    if (!assign_member(key, member, fields)) ok = false;
  }
  return ok;
}

// BootstrapResult: string fields 2 and 3; map<string,string> entries in field 5.
bool proto_strings_valid(std::string_view bytes) {
  std::vector<WireField> fields;
  std::string error;
  if (!detail::split_fields(bytes, &fields, &error)) return false;
  for (const WireField& field : fields) {
    if (field.type != WireType::kLengthDelimited) continue;
    if ((field.number == 2 || field.number == 3) && !detail::is_valid_utf8(field.payload)) {
      return false;
    }
    if (field.number != 5) continue;
    std::vector<WireField> entry;
    if (!detail::split_fields(field.payload, &entry, &error)) return false;
    for (const WireField& part : entry) {
      bool is_string = part.number <= 2 && part.type == WireType::kLengthDelimited;
      if (is_string && !detail::is_valid_utf8(part.payload)) return false;
    }
  }
  return true;
}

bool decode_proto_answer(std::string_view bytes, StartAnswer* answer) {
  // Invalid UTF-8 fails Go's decode too; checking first keeps libprotobuf from logging.
  if (!proto_strings_valid(bytes)) return false;
  bootstrap_v1::BootstrapResult result;
  if (!result.ParseFromArray(bytes.data(), static_cast<int>(bytes.size()))) return false;
  answer->version = result.version();
  answer->address = result.address();
  answer->protocol = result.protocol();
  answer->decoded_as_proto = true;
  return true;
}

Status decode_legacy_answer(std::string_view response, ContainerdRelease reader,
                            StartAnswer* answer) {
  GoJsonFields fields;
  bool ok = go_json_unmarshal(response, &fields);
  if (!ok || fields.version < 2) {
    fields.address = std::string(response);
    fields.protocol = "ttrpc";
    if (reader != ContainerdRelease::k1_7) fields.version = 2;  // 1.7 keeps what it decoded
  }
  int max_version = reader == ContainerdRelease::k1_7 ? kMaxVersion1_7 : kMaxVersion2_x;
  if (fields.version > max_version) {
    return not_implemented(fmt::format("unsupported shim version ({})", fields.version));
  }
  answer->version = static_cast<int>(fields.version);
  answer->address = std::move(fields.address);
  answer->protocol = std::move(fields.protocol);
  return {};
}

}  // namespace

Status parse_start_answer(std::string_view output, ContainerdRelease reader,
                          StartAnswer* answer) {
  *answer = StartAnswer{};
  std::string_view response = detail::trim_space(output);
  if (reader == ContainerdRelease::k1_6) {
    answer->version = 2;
    answer->address = std::string(response);
    answer->protocol = "ttrpc";
    return {};
  }
  if (reader == ContainerdRelease::k2_3 &&
      response.size() <= static_cast<std::size_t>(std::numeric_limits<int>::max()) &&
      decode_proto_answer(response, answer)) {
    return {};
  }
  return decode_legacy_answer(response, reader, answer);
}

}  // namespace shim
