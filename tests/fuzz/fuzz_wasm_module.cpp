// A WebAssembly file as an image hands it to the Wasm shim: check_module (the shim's
// check at Create, streamed from the file) and can_instantiate_before_fork (the zygote's
// bounds before it instantiates a module outside every container's cgroup). Checked:
//  - check_module fails only InvalidArgument, its error names the file first and is
//    printable ASCII of bounded size (it reaches containerd, ctr and logs);
//  - what it accepts imports only WASI, no more imports than the file has bytes;
//  - a file the zygote takes is well formed to its end: check_module does not call it
//    truncated or its section list malformed, and it is at most the zygote's 4 MiB;
//  - the zygote's answer holds when a custom section is appended (still taken) or a
//    start section (then refused: "a start section"), and its reason is empty exactly
//    when it takes the file.
#include <sys/mman.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include <fmt/format.h>

#include "fork_ready.h"
#include "fuzz_check.h"
#include "wasm_module.h"

namespace {

constexpr std::string_view kShown = "/fuzz.wasm";

bool printable_ascii(std::string_view text) {
  for (unsigned char c : text) {
    if (c < 0x20 || c > 0x7e) return false;
  }
  return true;
}

// The file's bytes behind a path, as the shim reads a rootfs file.
class MemoryFile {
 public:
  explicit MemoryFile(std::string_view bytes) : fd_(::memfd_create("fuzz.wasm", MFD_CLOEXEC)) {
    FUZZ_CHECK(fd_ >= 0);
    std::size_t done = 0;
    while (done < bytes.size()) {
      ssize_t n = ::write(fd_, bytes.data() + done, bytes.size() - done);
      FUZZ_CHECK(n > 0);
      done += static_cast<std::size_t>(n);
    }
  }
  ~MemoryFile() { ::close(fd_); }
  MemoryFile(const MemoryFile&) = delete;
  MemoryFile& operator=(const MemoryFile&) = delete;
  std::string path() const { return fmt::format("/proc/self/fd/{}", fd_); }

 private:
  int fd_;
};

shim::Status check_shim_side(std::string_view bytes) {
  MemoryFile file(bytes);
  shim_wasm::ModuleSummary summary;
  shim::Status status = shim_wasm::check_module(file.path(), std::string(kShown), &summary);
  if (!status.ok()) {
    FUZZ_CHECK(status.code() == shim::Code::kInvalidArgument);
    FUZZ_CHECK(status.message().starts_with(kShown));
    FUZZ_CHECK(printable_ascii(status.message()));
    FUZZ_CHECK(status.message().size() <= 2 * 132 + 200);  // two names cut at 128, "..."
    return status;
  }
  FUZZ_CHECK(summary.imports.size() <= bytes.size());
  for (const std::string& import : summary.imports) {
    FUZZ_CHECK(shim_wasm::is_wasi_import_module(import.substr(0, import.find('.'))));
  }
  return status;
}

void check_zygote_side(std::string_view bytes, const shim::Status& shim_side) {
  std::string why;
  bool taken = shim_wasm::can_instantiate_before_fork(bytes, &why);
  FUZZ_CHECK(taken == why.empty());
  FUZZ_CHECK(printable_ascii(why) && why.size() <= 200);
  if (!taken) return;
  FUZZ_CHECK(bytes.size() <= shim_wasm::kMaxZygoteModuleBytes);
  std::string_view error = shim_side.message();
  if (!error.empty()) error.remove_prefix(kShown.size());
  for (std::string_view framing :
       {" is truncated", " has a truncated section header", " is not a WebAssembly",
        " has WebAssembly version", " is a WebAssembly component"}) {
    FUZZ_CHECK(!error.starts_with(framing));
  }
  if (bytes.size() + 16 > shim_wasm::kMaxZygoteModuleBytes) return;
  std::string with_custom(bytes);
  with_custom.append("\x00\x02\x01x", 4);  // a custom section named "x"
  FUZZ_CHECK(shim_wasm::can_instantiate_before_fork(with_custom));
  std::string with_start(bytes);
  with_start.append("\x08\x01\x00", 3);  // start: function 0
  FUZZ_CHECK(!shim_wasm::can_instantiate_before_fork(with_start, &why));
  FUZZ_CHECK(why == "a start section");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string_view bytes(reinterpret_cast<const char*>(data), size);
  check_zygote_side(bytes, check_shim_side(bytes));
  return 0;
}
