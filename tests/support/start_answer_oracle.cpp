#include "support/start_answer_oracle.h"

#include <algorithm>
#include <cstdint>
#include <limits>

#include <fmt/format.h>
#include <boost/json.hpp>

#include "common/proto_wire.h"
#include "gocompat/go_compat.h"
#include "gocompat/utf8.h"
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

// What Go's json.Unmarshal leaves in client.BootstrapParams{Version, Address, Protocol}
// (1.7 - 2.3), or in the whole BootstrapResult (2.4: `whole`, then also extensions).
struct GoJsonFields {
  bool whole = false;
  std::int64_t version = 0;
  std::string address;
  std::string protocol;
  std::vector<pb::Any> extensions;
};

int base64_value(char c) {
  if (c >= 'A' && c <= 'Z') return c - 'A';
  if (c >= 'a' && c <= 'z') return c - 'a' + 26;
  if (c >= '0' && c <= '9') return c - '0' + 52;
  if (c == '+') return 62;
  if (c == '/') return 63;
  return -1;
}

// encoding/json's []byte: base64.StdEncoding.DecodeString (padded; \r and \n skipped).
bool go_base64_decode(std::string_view text, std::string* out) {
  std::string clean;
  for (char c : text) {
    if (c != '\r' && c != '\n') clean.push_back(c);
  }
  if (clean.size() % 4 != 0) return false;
  out->clear();
  for (std::size_t i = 0; i < clean.size(); i += 4) {
    int pad = 0;  // '=' only ends the last quad: "xx==" or "xxx="
    if (i + 4 == clean.size() && clean[i + 3] == '=') pad = clean[i + 2] == '=' ? 2 : 1;
    std::uint32_t group = 0;
    for (std::size_t j = 0; j < 4; ++j) {
      int v = j >= static_cast<std::size_t>(4 - pad) ? 0 : base64_value(clean[i + j]);
      if (v < 0) return false;
      group = group << 6 | static_cast<std::uint32_t>(v);
    }
    out->push_back(static_cast<char>(group >> 16));
    if (pad < 2) out->push_back(static_cast<char>(group >> 8 & 0xff));
    if (pad < 1) out->push_back(static_cast<char>(group & 0xff));
  }
  return true;
}

// anypb.Any from {"type_url": s, "value": base64}: false on a mistyped member.
bool assign_any(const json::object& object, pb::Any* any) {
  for (const auto& [key, member] : object) {
    if (member.is_null()) continue;
    if (go_equal_fold(key, "type_url")) {
      if (!member.is_string()) return false;
      any->set_type_url(go_string(member.as_string()));
    } else if (go_equal_fold(key, "value")) {
      std::string bytes;
      if (!member.is_string() || !go_base64_decode(member.as_string(), &bytes)) return false;
      any->set_value(bytes);
    }
  }
  return true;
}

// []*Extension: null elements stay nil (an Any-less extension here).
bool assign_extensions(const json::value& value, std::vector<pb::Any>* extensions) {
  if (!value.is_array()) return false;
  for (const json::value& element : value.as_array()) {
    pb::Any any;
    if (element.is_object()) {
      for (const auto& [key, member] : element.as_object()) {
        if (!go_equal_fold(key, "value") || member.is_null()) continue;
        if (!member.is_object() || !assign_any(member.as_object(), &any)) return false;
      }
    } else if (!element.is_null()) {
      return false;
    }
    extensions->push_back(std::move(any));
  }
  return true;
}

// BootstrapResult's other members, which only need to have their Go types.
bool typed_like_go(std::string_view key, const json::value& value) {
  if (go_equal_fold(key, "capabilities")) {
    if (!value.is_array()) return false;
    return std::all_of(value.as_array().begin(), value.as_array().end(),
                       [](const json::value& v) { return v.is_null() || v.is_int64(); });
  }
  if (go_equal_fold(key, "metadata")) {
    if (!value.is_object()) return false;
    return std::all_of(value.as_object().begin(), value.as_object().end(), [](const auto& entry) {
      return entry.value().is_string() || entry.value().is_null();
    });
  }
  return true;
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
  if (fields->whole && go_equal_fold(key, "extensions")) {
    return assign_extensions(value, &fields->extensions);
  }
  if (fields->whole && !typed_like_go(key, value)) return false;
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
  for (const auto& extension : result.extensions()) answer->extensions.push_back(extension.value());
  return true;
}

Status decode_legacy_answer(std::string_view response, ContainerdRelease reader,
                            StartAnswer* answer) {
  GoJsonFields fields;
  fields.whole = reader == ContainerdRelease::k2_4;
  bool ok = go_json_unmarshal(response, &fields);
  if (!ok || fields.version < 2) {
    fields.address = std::string(response);
    fields.protocol = "ttrpc";
    fields.extensions.clear();  // 2.4 starts over from an empty BootstrapResult
    if (reader != ContainerdRelease::k1_7) fields.version = 2;  // 1.7 keeps what it decoded
  }
  int max_version = reader == ContainerdRelease::k1_7 ? kMaxVersion1_7 : kMaxVersion2_x;
  if (fields.version > max_version) {
    return not_implemented(fmt::format("unsupported shim version ({})", fields.version));
  }
  answer->version = static_cast<int>(fields.version);
  answer->address = std::move(fields.address);
  answer->protocol = std::move(fields.protocol);
  answer->extensions = std::move(fields.extensions);
  return {};
}

}  // namespace

Status parse_start_answer(std::string_view output, ContainerdRelease reader, StartAnswer* answer) {
  *answer = StartAnswer{};
  // 2.4 (and 2.3.4) decode the raw output as proto before trimming it (binary.go Start).
  if (reader == ContainerdRelease::k2_4 &&
      output.size() <= static_cast<std::size_t>(std::numeric_limits<int>::max()) &&
      decode_proto_answer(output, answer)) {
    return {};
  }
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
