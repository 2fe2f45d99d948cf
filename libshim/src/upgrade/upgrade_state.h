// The state a shim hands to its next program across a live upgrade's execve
// (docs/live-upgrade.md): one JSON document in an unnamed memory file (memfd), found by
// the new program through $LIBSHIM_UPGRADE_STATE_FD, plus the fds the document names
// (listening socket, connections, ...), which stay open across the exec. Internal.
//
// The document starts with a header line, "libshim-upgrade-state <format>\n": a program
// reads only the formats it knows (kStateFormat; -info lists them in the annotation
// kStateFormatsAnnotation) and hands any other back to the old program untouched.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include <boost/json/object.hpp>

#include "shim/status.h"

namespace shim::upgrade {

// The state format this libshim writes, and the oldest it reads (it reads every one in
// between). 2: a process's stdio may carry a binary:// logger ("binary_logger"), which a
// program reading only 1 would drop; a format-1 document has none.
inline constexpr int kStateFormat = 2;
inline constexpr int kOldestStateFormat = 1;
// -info's annotation: the state formats the binary reads, comma-separated ("1,2").
inline constexpr std::string_view kStateFormatsAnnotation = "io.libshim.upgrade.state-formats";
// The environment of the exec'd program: the memfd's number; the old program's exe (an
// O_PATH fd) to go back to; and, set on the way back, why the new program refused.
inline constexpr const char* kStateFdEnv = "LIBSHIM_UPGRADE_STATE_FD";
inline constexpr const char* kOldExeFdEnv = "LIBSHIM_UPGRADE_OLD_EXE_FD";
inline constexpr const char* kRefusedEnv = "LIBSHIM_UPGRADE_REFUSED";

// Writes "libshim-upgrade-state <format>\n<document>" into a new memfd (close-on-exec:
// KeptFds clears that just before the exec) and rewinds it.
Status write_state(const boost::json::object& document, int format, int* memfd);

// The -info annotation's value: every format this program reads ("1,2").
std::string readable_state_formats();

// Reads a state fd from its start. `*format` is set whenever the header was readable;
// the document is parsed only when this program reads the format (FailedPrecondition
// otherwise, naming the formats).
Status read_state(int fd, int* format, boost::json::object* document);

// Fds that must survive the execve: close-on-exec cleared just before it (so that no
// child spawned meanwhile inherits them), set again if the exec fails and by the new
// program once it adopted them.
class KeptFds {
 public:
  void add(int fd) { fds_.push_back(fd); }
  const std::vector<int>& fds() const { return fds_; }
  // Clears FD_CLOEXEC on every fd; on error sets it back on those already cleared.
  Status clear_cloexec();
  // Sets FD_CLOEXEC on every fd (errors ignored: an fd already closed has nothing to leak).
  void set_cloexec() const;

 private:
  std::vector<int> fds_;
};

// Sets FD_CLOEXEC on `fd`; false if fcntl failed (not an open fd).
bool set_cloexec(int fd);

}  // namespace shim::upgrade
