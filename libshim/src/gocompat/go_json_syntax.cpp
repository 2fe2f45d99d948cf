#include "gocompat/go_json_syntax.h"

#include <vector>

#include <fmt/format.h>

namespace shim {
namespace {

constexpr std::size_t kMaxNestingDepth = 10000;  // Go's maxNestingDepth

bool is_space(unsigned char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\n'; }
bool is_digit(unsigned char c) { return c >= '0' && c <= '9'; }
bool is_hex(unsigned char c) {
  return is_digit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}

// strconv.IsPrint for runes up to U+00FF.
bool go_printable_latin1(unsigned char c) {
  if (c >= 0x20 && c <= 0x7e) return true;
  return c >= 0xa1 && c != 0xad;
}

// The byte's rune (U+0000..U+00FF) encoded as UTF-8.
std::string latin1_as_utf8(unsigned char c) {
  if (c < 0x80) return std::string(1, static_cast<char>(c));
  return {static_cast<char>(0xc0 | (c >> 6)), static_cast<char>(0x80 | (c & 0x3f))};
}

// A byte-at-a-time JSON syntax checker with the states and error contexts of Go's
// encoding/json scanner, so every error names the same byte with the same words.
class Scanner {
 public:
  // False once the input is invalid; error() then has Go's text.
  bool feed(unsigned char c) {
    for (;;) {
      switch (step(c)) {
        case Action::kConsumed: return true;
        case Action::kError: return false;
        case Action::kReprocess: continue;
      }
    }
  }

  // End of input: as Go's eof(), which feeds one more space first.
  bool finish() {
    if (!error_.empty()) return false;
    if (end_top_) return true;
    if (!feed(' ')) return false;
    if (end_top_) return true;
    error_ = "unexpected end of JSON input";
    return false;
  }

  const std::string& error() const { return error_; }

 private:
  enum class Action { kConsumed, kError, kReprocess };
  enum class Step {
    kBeginValue, kBeginValueOrEmpty, kBeginStringOrEmpty, kBeginString, kEndValue, kEndTop,
    kInString, kInStringEsc, kInStringEscU, kNeg, kOne, kZero, kDot, kDot0, kE, kESign, kE0,
    kLiteral,
  };
  enum class Parse { kObjectKey, kObjectValue, kArrayValue };

  Action fail(unsigned char c, std::string_view context) {
    error_ = fmt::format("invalid character {} {}", go_json_quote_byte(c), context);
    return Action::kError;
  }
  Action go(Step next) {
    step_ = next;
    return Action::kConsumed;
  }
  Action again(Step next) {
    step_ = next;
    return Action::kReprocess;
  }
  Action push(unsigned char c, Parse parse, Step next) {
    stack_.push_back(parse);
    if (stack_.size() > kMaxNestingDepth) return fail(c, "exceeded max depth");
    return go(next);
  }
  Action pop() {
    stack_.pop_back();
    if (stack_.empty()) {
      end_top_ = true;
      return go(Step::kEndTop);
    }
    return go(Step::kEndValue);
  }
  Action literal(const char* word) {
    literal_ = word;
    literal_pos_ = 1;
    return go(Step::kLiteral);
  }

  Action step(unsigned char c) {
    switch (step_) {
      case Step::kBeginValueOrEmpty:
        if (is_space(c)) return Action::kConsumed;
        if (c == ']') return again(Step::kEndValue);
        return again(Step::kBeginValue);
      case Step::kBeginValue: return begin_value(c);
      case Step::kBeginStringOrEmpty:
        if (is_space(c)) return Action::kConsumed;
        if (c == '}') {
          stack_.back() = Parse::kObjectValue;
          return again(Step::kEndValue);
        }
        return again(Step::kBeginString);
      case Step::kBeginString:
        if (is_space(c)) return Action::kConsumed;
        if (c == '"') return go(Step::kInString);
        return fail(c, "looking for beginning of object key string");
      case Step::kEndValue: return end_value(c);
      case Step::kEndTop:
        if (!is_space(c)) return fail(c, "after top-level value");
        return Action::kConsumed;
      default: return in_token(c);
    }
  }

  Action begin_value(unsigned char c) {
    if (is_space(c)) return Action::kConsumed;
    switch (c) {
      case '{': return push(c, Parse::kObjectKey, Step::kBeginStringOrEmpty);
      case '[': return push(c, Parse::kArrayValue, Step::kBeginValueOrEmpty);
      case '"': return go(Step::kInString);
      case '-': return go(Step::kNeg);
      case '0': return go(Step::kZero);
      case 't': return literal("true");
      case 'f': return literal("false");
      case 'n': return literal("null");
      default: break;
    }
    if (c >= '1' && c <= '9') return go(Step::kOne);
    return fail(c, "looking for beginning of value");
  }

  Action end_value(unsigned char c) {
    if (stack_.empty()) {
      end_top_ = true;
      return again(Step::kEndTop);
    }
    if (is_space(c)) return go(Step::kEndValue);
    switch (stack_.back()) {
      case Parse::kObjectKey:
        if (c == ':') {
          stack_.back() = Parse::kObjectValue;
          return go(Step::kBeginValue);
        }
        return fail(c, "after object key");
      case Parse::kObjectValue:
        if (c == ',') {
          stack_.back() = Parse::kObjectKey;
          return go(Step::kBeginString);
        }
        if (c == '}') return pop();
        return fail(c, "after object key:value pair");
      case Parse::kArrayValue:
        if (c == ',') return go(Step::kBeginValue);
        if (c == ']') return pop();
        return fail(c, "after array element");
    }
    return fail(c, "after array element");
  }

  // Inside a string, number or literal.
  Action in_token(unsigned char c) {
    switch (step_) {
      case Step::kInString:
        if (c == '"') return go(Step::kEndValue);
        if (c == '\\') return go(Step::kInStringEsc);
        if (c < 0x20) return fail(c, "in string literal");
        return Action::kConsumed;
      case Step::kInStringEsc:
        if (c == 'u') {
          hex_left_ = 4;
          return go(Step::kInStringEscU);
        }
        if (std::string_view("bfnrt\\/\"").find(static_cast<char>(c)) != std::string_view::npos) {
          return go(Step::kInString);
        }
        return fail(c, "in string escape code");
      case Step::kInStringEscU:
        if (!is_hex(c)) return fail(c, "in \\u hexadecimal character escape");
        return --hex_left_ == 0 ? go(Step::kInString) : Action::kConsumed;
      case Step::kNeg:
        if (c == '0') return go(Step::kZero);
        if (c >= '1' && c <= '9') return go(Step::kOne);
        return fail(c, "in numeric literal");
      case Step::kOne:
        if (is_digit(c)) return Action::kConsumed;
        return again(Step::kZero);
      case Step::kZero:
        if (c == '.') return go(Step::kDot);
        if (c == 'e' || c == 'E') return go(Step::kE);
        return again(Step::kEndValue);
      case Step::kDot:
        if (is_digit(c)) return go(Step::kDot0);
        return fail(c, "after decimal point in numeric literal");
      case Step::kDot0:
        if (is_digit(c)) return Action::kConsumed;
        if (c == 'e' || c == 'E') return go(Step::kE);
        return again(Step::kEndValue);
      case Step::kE:
        if (c == '+' || c == '-') return go(Step::kESign);
        return again(Step::kESign);
      case Step::kESign:
        if (is_digit(c)) return go(Step::kE0);
        return fail(c, "in exponent of numeric literal");
      case Step::kE0:
        if (is_digit(c)) return Action::kConsumed;
        return again(Step::kEndValue);
      case Step::kLiteral: return in_literal(c);
      default: return fail(c, "looking for beginning of value");  // not reached
    }
  }

  Action in_literal(unsigned char c) {
    const char expected = literal_[literal_pos_];
    if (c != static_cast<unsigned char>(expected)) {
      return fail(c, fmt::format("in literal {} (expecting '{}')", literal_, expected));
    }
    ++literal_pos_;
    return literal_[literal_pos_] == '\0' ? go(Step::kEndValue) : Action::kConsumed;
  }

  Step step_ = Step::kBeginValue;
  std::vector<Parse> stack_;
  bool end_top_ = false;
  const char* literal_ = "";
  std::size_t literal_pos_ = 0;
  int hex_left_ = 0;
  std::string error_;
};

}  // namespace

std::string go_json_quote_byte(unsigned char c) {
  if (c == '\'') return R"('\'')";
  if (c == '"') return R"('"')";
  if (c == '\\') return R"('\\')";
  // Not "'" + ... + "'": GCC 12 at -O3 sees a false overlap in that operator+ (-Wrestrict).
  if (go_printable_latin1(c)) return fmt::format("'{}'", latin1_as_utf8(c));
  switch (c) {
    case '\a': return R"('\a')";
    case '\b': return R"('\b')";
    case '\f': return R"('\f')";
    case '\n': return R"('\n')";
    case '\r': return R"('\r')";
    case '\t': return R"('\t')";
    case '\v': return R"('\v')";
    default: break;
  }
  if (c < 0x20 || c == 0x7f) return fmt::format("'\\x{:02x}'", c);
  return fmt::format("'\\u{:04x}'", c);
}

shim::Status go_json_syntax_check(std::string_view text) {
  Scanner scanner;
  for (char c : text) {
    if (!scanner.feed(static_cast<unsigned char>(c))) return shim::unknown(scanner.error());
  }
  if (!scanner.finish()) return shim::unknown(scanner.error());
  return {};
}

}  // namespace shim
