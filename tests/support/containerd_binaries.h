// Which containerd/ctr a test runs and what version they are. The multi-version ctest
// runs point LIBSHIM_CONTAINERD_BIN / LIBSHIM_CTR_BIN at the packages that
// cmake/fetch-containerd.sh unpacked and set LIBSHIM_CONTAINERD_EXPECT (e.g. "1.7"); see
// tests/README.md.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace shim::test {

struct ContainerdVersion {
  int major = 0;
  int minor = 0;
  int patch = 0;
  std::string text;  // as printed, e.g. "1.6.20~ds1"

  bool at_least(int maj, int min) const { return major > maj || (major == maj && minor >= min); }
};

// Parses `containerd --version` output ("containerd <module> <version> <revision>").
ContainerdVersion parse_containerd_version(std::string_view output);

struct ContainerdBinaries {
  std::string containerd;
  std::string ctr;
};

// containerd: `containerd_bin`, else $LIBSHIM_CONTAINERD_BIN, else /usr/bin/containerd.
// ctr: `ctr_bin`, else $LIBSHIM_CTR_BIN, else `ctr` next to containerd, else /usr/bin/ctr.
ContainerdBinaries resolve_containerd(const std::string& containerd_bin,
                                      const std::string& ctr_bin);

// Runs `containerd --version`. nullopt, with a one-line reason in `why` naming the
// wanted version ("containerd 1.7 not available: ..."), when either binary is missing or
// containerd does not run.
std::optional<ContainerdVersion> probe_containerd(const ContainerdBinaries& bins, std::string* why);

// Throws std::runtime_error unless `version` is the major.minor in
// $LIBSHIM_CONTAINERD_EXPECT (when set): a multi-version run that silently used another
// containerd would prove nothing.
void check_expected_containerd(const ContainerdVersion& version, const std::string& bin);

// The containerd binary of `major_minor` ("2.1") that cmake/fetch-containerd.sh cached
// ($LIBSHIM_CACHE, else the configured cache dir), or "" when it is not there.
std::string cached_containerd_bin(std::string_view major_minor);

}  // namespace shim::test
