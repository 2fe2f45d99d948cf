// Small pieces the two sides of a live upgrade share (live_upgrade.cpp, upgrade_exec.cpp,
// upgrade_restore.cpp). Internal.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include <boost/json/object.hpp>

#include "shim/process/exit.h"
#include "shim/status.h"

namespace shim::upgrade {

class StateFields;

// Bytes as lower-case hex, and back (false on anything else).
std::string hex(std::string_view bytes);
bool unhex(std::string_view text, std::string* out);
// What /proc/self/exe names ("" if unreadable).
std::string self_exe();
// CLOCK_MONOTONIC in ns: one clock for both programs (the swap time).
std::int64_t monotonic_ns();
// Our environment without LIBSHIM_UPGRADE_*, plus `extra`.
std::vector<std::string> exec_env(const std::vector<std::string>& extra);
// argv/envp for exec: pointers into `strings`, null-terminated.
std::vector<char*> c_strings(std::vector<std::string>& strings);
// $name as an int; -1 when unset or empty.
int int_env(const char* name);
// Every fd an upgrade document names: listeners, connections, participants' fds.
std::vector<int> fds_of(const boost::json::object& document);
// A wall-clock time as the documents write it (ns since the epoch), and back.
std::int64_t epoch_ns(std::chrono::system_clock::time_point at);
std::chrono::system_clock::time_point from_epoch_ns(std::int64_t ns);
// A reaped exit as the documents write it ({pid, status, wait_status, exited_at_ns}), and
// back (errors stay in `fields`).
boost::json::object saved_exit(const ProcessExit& exit);
ProcessExit restored_exit(StateFields& fields);
// OK if `pid` is a child of this process not reaped yet (running, or a zombie): what the
// new program may take over. waitid with WNOWAIT only looks. FailedPrecondition naming
// `what` otherwise.
Status check_unreaped_child(pid_t pid, std::string_view what);

}  // namespace shim::upgrade
