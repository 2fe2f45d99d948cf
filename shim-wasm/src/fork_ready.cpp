#include "fork_ready.h"

#include <optional>
#include <vector>

#include <fmt/format.h>

namespace shim_wasm {
namespace {

constexpr std::string_view kHeader("\0asm\x01\0\0\0", 8);
constexpr std::uint8_t kSectionCustom = 0;
constexpr std::uint8_t kSectionType = 1;
constexpr std::uint8_t kSectionFunction = 3;
constexpr std::uint8_t kSectionTable = 4;
constexpr std::uint8_t kSectionMemory = 5;
constexpr std::uint8_t kSectionStart = 8;
constexpr std::uint8_t kSectionCode = 10;
constexpr std::uint8_t kSectionData = 11;
constexpr std::uint8_t kSectionDataCount = 12;
constexpr std::uint8_t kFuncType = 0x60;

// A bounded reader over one section's payload.
class Reader {
 public:
  explicit Reader(std::string_view bytes) : bytes_(bytes) {}
  bool done() const { return at_ >= bytes_.size(); }
  std::optional<std::uint8_t> byte() {
    if (done()) return std::nullopt;
    return static_cast<std::uint8_t>(bytes_[at_++]);
  }
  // An unsigned LEB128 of at most 32 bits.
  std::optional<std::uint32_t> u32() {
    std::uint32_t value = 0;
    for (int shift = 0; shift < 35; shift += 7) {
      auto b = byte();
      if (!b) return std::nullopt;
      value |= static_cast<std::uint32_t>(*b & 0x7f) << shift;
      if ((*b & 0x80) == 0) return value;
    }
    return std::nullopt;
  }
  std::optional<std::string_view> take(std::uint32_t n) {
    if (n > bytes_.size() - at_) return std::nullopt;
    std::string_view out = bytes_.substr(at_, n);
    at_ += n;
    return out;
  }

 private:
  std::string_view bytes_;
  std::size_t at_ = 0;
};

// i32, i64, f32, f64, v128, funcref, externref: nothing typed by a heap type.
bool is_plain_value_type(std::uint8_t b) {
  return (b >= 0x7b && b <= 0x7f) || b == 0x70 || b == 0x6f;
}

// What the sections read so far declared that a later one needs: each type's params
// (the validator counts them as locals) and each defined function's type.
struct Declared {
  std::vector<std::uint32_t> type_params;
  std::vector<std::uint32_t> function_types;
};

std::string check_types(Reader r, Declared* declared) {
  auto count = r.u32();
  if (!count) return "a truncated type section";
  for (std::uint32_t i = 0; i < *count; ++i) {
    auto form = r.byte();
    if (!form || *form != kFuncType) return fmt::format("type {} is not a function type", i);
    for (int list = 0; list < 2; ++list) {  // params, results
      auto n = r.u32();
      if (!n) return "a truncated type section";
      if (*n > kMaxZygoteTypeArity)
        return fmt::format("type {} has {} {}", i, *n, list == 0 ? "params" : "results");
      if (list == 0) declared->type_params.push_back(*n);
      for (std::uint32_t k = 0; k < *n; ++k) {
        auto t = r.byte();
        if (!t || !is_plain_value_type(*t)) return fmt::format("type {} uses a typed reference", i);
      }
    }
  }
  return {};
}

std::string check_functions(Reader r, Declared* declared) {
  auto count = r.u32();
  if (!count) return "a truncated function section";
  for (std::uint32_t i = 0; i < *count; ++i) {
    auto type = r.u32();
    if (!type || *type >= declared->type_params.size())
      return fmt::format("function {} has no type", i);
    declared->function_types.push_back(*type);
  }
  return {};
}

// Limits with flags 0 (min) or 1 (min, max); others (shared, 64-bit) are refused.
std::optional<std::uint32_t> plain_limits_min(Reader& r) {
  auto flags = r.u32();
  if (!flags || *flags > 1) return std::nullopt;
  auto min = r.u32();
  if (!min || (*flags == 1 && !r.u32())) return std::nullopt;
  return min;
}

std::string check_tables(Reader r) {
  auto count = r.u32();
  if (!count) return "a truncated table section";
  std::uint64_t entries = 0;
  for (std::uint32_t i = 0; i < *count; ++i) {
    auto type = r.byte();
    if (!type || (*type != 0x70 && *type != 0x6f)) return fmt::format("table {} is typed", i);
    auto min = plain_limits_min(r);
    if (!min) return fmt::format("table {} has 64-bit or malformed limits", i);
    entries += *min;
  }
  if (entries > kMaxZygoteTableEntries) return fmt::format("tables of {} entries", entries);
  return {};
}

// One memory at most (WasmEdge maps each one's minimum at instantiation), of at most
// kMaxZygoteMemoryPages.
std::string check_memories(Reader r) {
  auto count = r.u32();
  if (!count) return "a truncated memory section";
  if (*count > 1) return fmt::format("{} memories", *count);
  for (std::uint32_t i = 0; i < *count; ++i) {
    auto min = plain_limits_min(r);
    if (!min) return fmt::format("memory {} is shared or 64-bit", i);
    if (*min > kMaxZygoteMemoryPages) return fmt::format("a memory of {} pages at least", *min);
  }
  return {};
}

// The validator keeps a record per local (params and declared ones), all functions' at
// once.
std::string check_code(Reader r, const Declared& functions) {
  auto count = r.u32();
  if (!count) return "a truncated code section";
  if (*count != functions.function_types.size())
    return "function and code sections of different lengths";
  std::uint64_t total = 0;
  for (std::uint32_t i = 0; i < *count; ++i) {
    auto size = r.u32();
    auto body = size ? r.take(*size) : std::nullopt;
    if (!body) return "a truncated code section";
    Reader locals(*body);
    auto groups = locals.u32();
    if (!groups) return fmt::format("function body {} is malformed", i);
    // Its params are locals too, for the validator.
    std::uint64_t declared = functions.type_params[functions.function_types[i]];
    for (std::uint32_t g = 0; g < *groups; ++g) {
      auto n = locals.u32();
      auto type = n ? locals.byte() : std::nullopt;
      if (!type) return fmt::format("function body {} is malformed", i);
      if (!is_plain_value_type(*type)) return fmt::format("function body {} has a typed local", i);
      declared += *n;
      if (declared > kMaxZygoteLocalsPerFunction)
        return fmt::format("function body {} declares {} locals or more", i, declared);
    }
    total += declared;
  }
  if (total > kMaxZygoteLocals) return fmt::format("{} locals in all", total);
  return {};
}

// An offset as clang and Rust write one: i32.const or global.get, then end. The loader
// would read any instructions there (the validator refuses them only later), so a data
// section, whose bytes are otherwise only copied, could hide what the code bound keeps
// out.
bool is_constant_offset(Reader& r) {
  auto op = r.byte();
  if (!op || (*op != 0x41 && *op != 0x23)) return false;  // i32.const, global.get
  for (;;) {                                              // its LEB128 immediate
    auto b = r.byte();
    if (!b) return false;
    if ((*b & 0x80) == 0) break;
  }
  auto end = r.byte();
  return end && *end == 0x0b;
}

// Each active segment can touch pages of its own in the memory: their number bounds
// what instantiation dirties beyond the file's own bytes.
std::string check_data(Reader r) {
  auto count = r.u32();
  if (!count) return "a truncated data section";
  if (*count > kMaxZygoteDataSegments) return fmt::format("{} data segments", *count);
  for (std::uint32_t i = 0; i < *count; ++i) {
    auto mode = r.u32();  // 0: active, memory 0; 1: passive; 2: active, memory given
    if (!mode || *mode > 2) return fmt::format("data segment {} is malformed", i);
    if (*mode == 2 && !r.u32()) return fmt::format("data segment {} is malformed", i);
    if (*mode != 1 && !is_constant_offset(r))
      return fmt::format("data segment {} has an offset that is not a constant", i);
    auto size = r.u32();
    if (!size || !r.take(*size)) return fmt::format("data segment {} is malformed", i);
  }
  return {};
}

// A custom section named "wasmedge" is universal Wasm's AOT code: native code, which
// the zygote's engine (forced to interpret) should ignore, and which must not be parsed
// outside every cgroup either.
std::string check_custom(Reader r) {
  auto size = r.u32();
  auto name = size ? r.take(*size) : std::nullopt;
  if (name && *name == "wasmedge") return "native code (a \"wasmedge\" section)";
  return {};
}

// WasmEdge's loader sizes a section's vector from its count before it reads an item
// (checking the count only against the whole file): every vector section's count must
// fit its own payload, an item a byte at least, and stay under kMaxZygoteSectionItems.
std::string check_count(std::uint8_t id, std::string_view payload) {
  if (id == kSectionCustom || id == kSectionStart || id == kSectionDataCount) return {};
  Reader r(payload);
  auto count = r.u32();
  if (!count) return fmt::format("a truncated section {}", id);
  if (*count > payload.size()) return fmt::format("section {} claims {} items", id, *count);
  if (*count > kMaxZygoteSectionItems) return fmt::format("section {} has {} items", id, *count);
  return {};
}

// What the loader makes of a section grows with its bytes (up to ~160 bytes of objects
// for a byte of element indices or nested blocks): bound the bytes of the code section
// and of all other sections but data (copied; check_data wants constant offsets) and
// custom ones.
std::string check_sizes(std::uint8_t id, std::size_t size, std::uint64_t* other_bytes) {
  if (id == kSectionCustom || id == kSectionData) return {};
  if (id == kSectionCode) {
    if (size > kMaxZygoteCodeBytes) return fmt::format("{} bytes of code", size);
    return {};
  }
  *other_bytes += size;
  if (*other_bytes > kMaxZygoteDeclarationBytes)
    return fmt::format("{} bytes of declarations or more", *other_bytes);
  return {};
}

std::string why_not(std::string_view bytes) {
  if (bytes.size() > kMaxZygoteModuleBytes) return fmt::format("a file of {} bytes", bytes.size());
  if (!bytes.starts_with(kHeader)) return "not a core module of version 1";
  Reader sections(bytes.substr(kHeader.size()));
  Declared declared;
  std::uint64_t other_bytes = 0;
  while (!sections.done()) {
    auto id = sections.byte();
    auto size = sections.u32();
    auto payload = size ? sections.take(*size) : std::nullopt;
    if (!id || !payload) return "a malformed section list";
    if (*id == kSectionStart) return "a start section";
    std::string why = check_count(*id, *payload);
    if (why.empty()) why = check_sizes(*id, payload->size(), &other_bytes);
    if (!why.empty()) return why;
    if (*id == kSectionCustom) why = check_custom(Reader(*payload));
    if (*id == kSectionType) why = check_types(Reader(*payload), &declared);
    if (*id == kSectionFunction) why = check_functions(Reader(*payload), &declared);
    if (*id == kSectionTable) why = check_tables(Reader(*payload));
    if (*id == kSectionMemory) why = check_memories(Reader(*payload));
    if (*id == kSectionCode) why = check_code(Reader(*payload), declared);
    if (*id == kSectionData) why = check_data(Reader(*payload));
    if (!why.empty()) return why;
  }
  return {};
}

}  // namespace

bool can_instantiate_before_fork(std::string_view bytes, std::string* why) {
  std::string reason = why_not(bytes);
  if (why != nullptr) *why = reason;
  return reason.empty();
}

}  // namespace shim_wasm
