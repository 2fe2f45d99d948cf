#include "stdio/output_annotations.h"

#include <sys/stat.h>

#include <charconv>
#include <string_view>

#include <fmt/format.h>

namespace shim::stdio {
namespace {

shim::Status bad(const char* annotation, std::string_view value, std::string_view why) {
  return shim::Status(shim::Code::kInvalidArgument,
                      fmt::format("annotation {}: \"{}\" {}", annotation, value, why));
}

shim::Status parse_size(const char* annotation, std::string_view value, std::uint64_t max,
                        std::uint64_t* out) {
  std::string_view digits = value;
  unsigned shift = 0;
  for (auto [suffix, bits] : {std::pair{"Ki", 10u}, std::pair{"Mi", 20u}, std::pair{"Gi", 30u}}) {
    if (digits.ends_with(suffix)) {
      digits.remove_suffix(2);
      shift = bits;
      break;
    }
  }
  std::uint64_t number = 0;
  auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), number);
  if (digits.empty() || ec != std::errc() || end != digits.data() + digits.size()) {
    return bad(annotation, value,
               "is not a size in bytes (a number, optionally with Ki, Mi or Gi)");
  }
  if (number > (max >> shift)) {
    return bad(annotation, value, fmt::format("is above the limit of {} bytes", max));
  }
  *out = number << shift;
  return {};
}

}  // namespace

shim::Status apply_output_annotations(const boost::json::object& spec,
                                      OutputBufferOptions* options) {
  const boost::json::value* annotations = spec.if_contains("annotations");
  if (annotations == nullptr || !annotations->is_object()) return {};
  const boost::json::object& all = annotations->as_object();
  auto text = [&](const char* name, std::string_view* value) -> shim::Status {
    const boost::json::value* found = all.if_contains(name);
    if (found == nullptr) return shim::Status(shim::Code::kNotFound, "");
    if (!found->is_string()) {
      return shim::Status(shim::Code::kInvalidArgument,
                          fmt::format("annotation {}: not a string", name));
    }
    *value = found->as_string();
    return {};
  };
  OutputBufferOptions result = *options;
  std::string_view value;
  if (shim::Status s = text(kOutputBufferBytesAnnotation, &value); s.ok()) {
    if (s = parse_size(kOutputBufferBytesAnnotation, value, kMaxOutputBufferBytes,
                       &result.memory_bytes);
        !s.ok()) {
      return s;
    }
  } else if (s.code() != shim::Code::kNotFound) {
    return s;
  }
  if (shim::Status s = text(kOutputSpillBytesAnnotation, &value); s.ok()) {
    if (s = parse_size(kOutputSpillBytesAnnotation, value, kMaxOutputSpillBytes,
                       &result.spill_bytes);
        !s.ok()) {
      return s;
    }
  } else if (s.code() != shim::Code::kNotFound) {
    return s;
  }
  if (shim::Status s = text(kOutputOverflowAnnotation, &value); s.ok()) {
    if (value == "block") {
      result.overflow = OutputOverflow::kBlock;
    } else if (value == "drop") {
      result.overflow = OutputOverflow::kDrop;
    } else {
      return bad(kOutputOverflowAnnotation, value, "is not block or drop");
    }
  } else if (s.code() != shim::Code::kNotFound) {
    return s;
  }
  *options = std::move(result);
  return {};
}

std::string output_spill_dir(const std::string& bundle) {
  std::string work = bundle + "/work";
  struct stat st {};
  if (::stat(work.c_str(), &st) == 0 && S_ISDIR(st.st_mode)) return work;
  return bundle;
}

}  // namespace shim::stdio
