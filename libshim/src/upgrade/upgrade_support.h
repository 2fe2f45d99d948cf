// Small pieces the two sides of a live upgrade share (live_upgrade.cpp, upgrade_exec.cpp,
// upgrade_restore.cpp). Internal.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include <boost/json/object.hpp>

namespace shim::upgrade {

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

}  // namespace shim::upgrade
