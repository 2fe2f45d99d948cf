#include "gocompat/utf8.h"

namespace shim::detail {
namespace {

bool is_continuation(unsigned char byte) { return (byte & 0xC0) == 0x80; }

}  // namespace

Rune decode_rune(std::string_view s, std::size_t pos) {
  if (pos >= s.size()) return {kRuneError, 0};
  auto b0 = static_cast<unsigned char>(s[pos]);
  if (b0 < 0x80) return {b0, 1};

  std::size_t size = 0;
  char32_t value = 0;
  char32_t min_value = 0;
  if (b0 >= 0xC2 && b0 <= 0xDF) {
    size = 2, value = b0 & 0x1F, min_value = 0x80;
  } else if (b0 >= 0xE0 && b0 <= 0xEF) {
    size = 3, value = b0 & 0x0F, min_value = 0x800;
  } else if (b0 >= 0xF0 && b0 <= 0xF4) {
    size = 4, value = b0 & 0x07, min_value = 0x10000;
  } else {
    return {kRuneError, 1};
  }
  if (s.size() - pos < size) return {kRuneError, 1};
  for (std::size_t i = 1; i < size; ++i) {
    auto byte = static_cast<unsigned char>(s[pos + i]);
    if (!is_continuation(byte)) return {kRuneError, 1};
    value = (value << 6) | (byte & 0x3F);
  }
  bool surrogate = value >= 0xD800 && value <= 0xDFFF;
  if (value < min_value || value > 0x10FFFF || surrogate) return {kRuneError, 1};
  return {value, size};
}

Rune decode_last_rune(std::string_view s) {
  if (s.empty()) return {kRuneError, 0};
  // A rune is at most 4 bytes: back up over continuation bytes to its lead byte.
  std::size_t start = s.size() - 1;
  std::size_t limit = s.size() >= 4 ? s.size() - 4 : 0;
  while (start > limit && is_continuation(static_cast<unsigned char>(s[start]))) --start;
  Rune rune = decode_rune(s, start);
  if (start + rune.size != s.size()) return {kRuneError, 1};
  return rune;
}

bool is_valid_utf8(std::string_view s) {
  for (std::size_t pos = 0; pos < s.size();) {
    Rune rune = decode_rune(s, pos);
    if (rune.value == kRuneError && rune.size == 1) return false;
    pos += rune.size;
  }
  return true;
}

std::string to_valid_utf8(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  bool in_invalid_run = false;
  for (std::size_t pos = 0; pos < s.size();) {
    Rune rune = decode_rune(s, pos);
    bool invalid = rune.value == kRuneError && rune.size == 1;
    if (!invalid) out.append(s.substr(pos, rune.size));
    if (invalid && !in_invalid_run) out.append("\xEF\xBF\xBD");  // U+FFFD
    in_invalid_run = invalid;
    pos += rune.size;
  }
  return out;
}

bool is_space(char32_t rune) {
  switch (rune) {
    case '\t':
    case '\n':
    case '\v':
    case '\f':
    case '\r':
    case ' ':
    case 0x85:
    case 0xA0:
    case 0x1680:
    case 0x2028:
    case 0x2029:
    case 0x202F:
    case 0x205F:
    case 0x3000:
      return true;
    default:
      return rune >= 0x2000 && rune <= 0x200A;
  }
}

std::string_view trim_space(std::string_view s) {
  while (!s.empty()) {
    Rune rune = decode_rune(s, 0);
    if (!is_space(rune.value)) break;
    s.remove_prefix(rune.size);
  }
  while (!s.empty()) {
    Rune rune = decode_last_rune(s);
    if (!is_space(rune.value)) break;
    s.remove_suffix(rune.size);
  }
  return s;
}

}  // namespace shim::detail
