#include "wasm_module.h"

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <optional>

#include <fmt/format.h>

#include "rootfs_file.h"

namespace shim_wasm {
namespace {

constexpr unsigned char kMagic[4] = {0x00, 0x61, 0x73, 0x6d};
constexpr unsigned char kCoreVersion[4] = {0x01, 0x00, 0x00, 0x00};
// Components (the component model's binary format) share the magic; their "version"
// field is 0x0d (layer 1 in the two high bytes).
constexpr std::uint8_t kSectionImport = 2;
// Names longer than this are not a real module's; they end the read early.
constexpr std::uint32_t kMaxName = 64 * 1024;

// A bounded reader over the file: each read fails cleanly at the end.
class Reader {
 public:
  Reader(std::ifstream& in, std::uint64_t size) : in_(in), size_(size) {}

  std::optional<std::uint8_t> byte() {
    char c;
    if (!in_.get(c)) return std::nullopt;
    return static_cast<std::uint8_t>(c);
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
  std::optional<std::string> name() {
    auto size = u32();
    if (!size || *size > kMaxName) return std::nullopt;
    std::string s(*size, '\0');
    if (*size != 0 && !in_.read(s.data(), *size)) return std::nullopt;
    return s;
  }
  std::uint64_t position() {
    return static_cast<std::uint64_t>(std::max<std::streamoff>(in_.tellg(), 0));
  }
  // seekg past the end succeeds: the file's size bounds it.
  bool skip(std::uint32_t n) {
    auto at = in_.tellg();
    if (at < 0 || static_cast<std::uint64_t>(at) + n > size_) return false;
    in_.seekg(n, std::ios::cur);
    return static_cast<bool>(in_);
  }

 private:
  std::ifstream& in_;
  std::uint64_t size_;
};

// An import's name as an error shows it: bytes of the module's, so printable ASCII as
// it is and any other byte as \xNN (the error reaches containerd, ctr and logs, which
// want UTF-8 without control characters), at most kMaxShownName bytes of it.
constexpr std::size_t kMaxShownName = 128;

std::string shown_name(std::string_view name) {
  std::string out;
  for (unsigned char c : name) {
    if (out.size() >= kMaxShownName) return out + "...";
    if (c < 0x20 || c > 0x7e || c == '\\') {
      out += fmt::format("\\x{:02x}", c);
    } else {
      out += static_cast<char>(c);
    }
  }
  return out;
}

shim::Status invalid(std::string text) {
  return shim::Status(shim::Code::kInvalidArgument, std::move(text));
}

// Skips an import's descriptor (func, table, memory, global, tag).
bool skip_import_desc(Reader& r, std::uint8_t kind) {
  auto limits = [&r]() {
    auto flags = r.u32();
    if (!flags || !r.u32()) return false;
    return (*flags & 1) == 0 || r.u32().has_value();
  };
  switch (kind) {
    case 0:
      return r.u32().has_value();  // type index
    case 1:
      return r.byte().has_value() && limits();  // reftype, limits
    case 2:
      return limits();
    case 3:
      return r.byte().has_value() && r.byte().has_value();  // valtype, mut
    case 4:
      return r.byte().has_value() && r.u32().has_value();  // attribute, type
    default:
      return false;
  }
}

// Reads the import section's entries into `imports`.
shim::Status read_imports(Reader& r, const std::string& shown, std::vector<std::string>* imports) {
  auto count = r.u32();
  if (!count) return invalid(fmt::format("{} has a truncated import section", shown));
  for (std::uint32_t i = 0; i < *count; ++i) {
    auto module = r.name();
    auto field = module ? r.name() : std::nullopt;
    auto kind = field ? r.byte() : std::nullopt;
    if (!kind || !skip_import_desc(r, *kind)) {
      return invalid(fmt::format("{} has a malformed import section (import {})", shown, i));
    }
    if (!is_wasi_import_module(*module)) {
      return invalid(fmt::format("{} imports {}.{}, which WASI does not provide", shown,
                                 shown_name(*module), shown_name(*field)));
    }
    imports->push_back(fmt::format("{}.{}", *module, *field));
  }
  return {};
}

}  // namespace

bool is_wasi_import_module(std::string_view name) {
  return name == "wasi_snapshot_preview1" || name == "wasi_unstable";
}

bool has_wasm_magic(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  unsigned char head[4];
  return in.read(reinterpret_cast<char*>(head), 4) && std::memcmp(head, kMagic, 4) == 0;
}

shim::Status check_module(const std::string& path, const std::string& shown,
                          ModuleSummary* summary) {
  std::ifstream in(path, std::ios::binary | std::ios::ate);
  if (!in) {
    return shim::Status(errno == ENOENT ? shim::Code::kNotFound : shim::Code::kInvalidArgument,
                        fmt::format("cannot open the module {}: {}", shown, std::strerror(errno)));
  }
  auto size = static_cast<std::uint64_t>(std::max<std::streamoff>(in.tellg(), 0));
  in.seekg(0);
  unsigned char head[8];
  if (!in.read(reinterpret_cast<char*>(head), 8) || std::memcmp(head, kMagic, 4) != 0) {
    return invalid(fmt::format("{} is not a WebAssembly module (no \\0asm magic)", shown));
  }
  if (std::memcmp(head + 4, kCoreVersion, 4) != 0) {
    if (head[6] == 0x01 && head[7] == 0x00) {
      return invalid(
          fmt::format("{} is a WebAssembly component, not a core module (only WASI "
                      "preview 1 modules run)",
                      shown));
    }
    return invalid(fmt::format("{} has WebAssembly version {:02x}{:02x}{:02x}{:02x}, not 1", shown,
                               head[4], head[5], head[6], head[7]));
  }
  Reader r(in, size);
  std::vector<std::string> imports;
  // Sections in order until the import section (id 2), which comes before any with a
  // higher id; custom sections (0) may come anywhere.
  while (auto id = r.byte()) {
    auto size = r.u32();
    if (!size) return invalid(fmt::format("{} has a truncated section header", shown));
    if (*id == kSectionImport) {
      std::uint64_t start = r.position();
      if (auto s = read_imports(r, shown, &imports); !s.ok()) return s;
      // Its entries must fill the section exactly, as the engine's loader wants.
      if (r.position() - start != *size)
        return invalid(fmt::format("{} has a malformed import section (its size)", shown));
      break;
    }
    if (*id > kSectionImport) break;
    if (!r.skip(*size)) return invalid(fmt::format("{} is truncated (section {})", shown, *id));
  }
  if (summary) summary->imports = std::move(imports);
  return {};
}

shim::Status check_module_in_rootfs(const std::string& rootfs, const std::string& path) {
  shim::UniqueFd fd = open_in_rootfs(rootfs, path);
  if (fd.get() < 0) {
    return shim::Status(shim::Code::kNotFound,
                        fmt::format("the module {} is not in the container's rootfs ({}: {})", path,
                                    rootfs, std::strerror(errno)));
  }
  return check_module(fmt::format("/proc/self/fd/{}", fd.get()), path);
}

}  // namespace shim_wasm
