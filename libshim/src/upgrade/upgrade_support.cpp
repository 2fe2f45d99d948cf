#include "upgrade/upgrade_support.h"

#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

#include <fmt/format.h>

#include "upgrade/state_fields.h"

extern char** environ;

namespace shim::upgrade {

namespace json = boost::json;

std::string hex(std::string_view bytes) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string out;
  out.reserve(bytes.size() * 2);
  for (unsigned char c : bytes) {
    out.push_back(kDigits[c >> 4]);
    out.push_back(kDigits[c & 15]);
  }
  return out;
}

bool unhex(std::string_view text, std::string* out) {
  auto value = [](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    return -1;
  };
  if (text.size() % 2 != 0) return false;
  out->clear();
  for (std::size_t i = 0; i < text.size(); i += 2) {
    int high = value(text[i]), low = value(text[i + 1]);
    if (high < 0 || low < 0) return false;
    out->push_back(static_cast<char>(high * 16 + low));
  }
  return true;
}

std::string self_exe() {
  char buffer[4096];
  ssize_t n = ::readlink("/proc/self/exe", buffer, sizeof buffer - 1);
  return n > 0 ? std::string(buffer, static_cast<std::size_t>(n)) : std::string();
}

std::int64_t monotonic_ns() {
  timespec now{};
  ::clock_gettime(CLOCK_MONOTONIC, &now);
  return std::int64_t{now.tv_sec} * 1000000000 + now.tv_nsec;
}

// The environment for the next exec: ours without LIBSHIM_UPGRADE_*, plus `extra`.
std::vector<std::string> exec_env(const std::vector<std::string>& extra) {
  std::vector<std::string> env;
  for (char** e = environ; e != nullptr && *e != nullptr; ++e) {
    if (!std::string_view(*e).starts_with("LIBSHIM_UPGRADE_")) env.emplace_back(*e);
  }
  env.insert(env.end(), extra.begin(), extra.end());
  return env;
}

std::vector<char*> c_strings(std::vector<std::string>& strings) {
  std::vector<char*> out;
  for (auto& s : strings) out.push_back(s.data());
  out.push_back(nullptr);
  return out;
}

int int_env(const char* name) {
  const char* value = std::getenv(name);
  return value != nullptr && *value != '\0' ? std::atoi(value) : -1;
}

// Every fd the document names: listeners, connections, participants' fds.
std::vector<int> fds_of(const json::object& document) {
  std::vector<int> fds;
  auto add_all = [&](const json::value* list) {
    if (list == nullptr || !list->is_array()) return;
    for (const auto& fd : list->as_array()) {
      if (fd.is_int64()) fds.push_back(static_cast<int>(fd.as_int64()));
    }
  };
  if (const auto* server = document.if_contains("server"); server && server->is_object()) {
    add_all(server->as_object().if_contains("listeners"));
    if (const auto* conns = server->as_object().if_contains("connections");
        conns && conns->is_array()) {
      for (const auto& c : conns->as_array()) {
        if (c.is_object()) {
          if (const auto* fd = c.as_object().if_contains("fd"); fd && fd->is_int64()) {
            fds.push_back(static_cast<int>(fd->as_int64()));
          }
        }
      }
    }
  }
  if (const auto* kept = document.if_contains("participant_fds"); kept && kept->is_object()) {
    for (const auto& [key, list] : kept->as_object()) add_all(&list);
  }
  return fds;
}

std::int64_t epoch_ns(std::chrono::system_clock::time_point at) {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(at.time_since_epoch()).count();
}

std::chrono::system_clock::time_point from_epoch_ns(std::int64_t ns) {
  return std::chrono::system_clock::time_point(
      std::chrono::duration_cast<std::chrono::system_clock::duration>(
          std::chrono::nanoseconds(ns)));
}

json::object saved_exit(const ProcessExit& exit) {
  return {{"pid", exit.pid},
          {"status", exit.status},
          {"wait_status", exit.wait_status},
          {"exited_at_ns", epoch_ns(exit.exited_at)}};
}

ProcessExit restored_exit(StateFields& fields) {
  ProcessExit exit;
  exit.pid = static_cast<pid_t>(fields.number("pid"));
  exit.status = static_cast<int>(fields.number("status"));
  exit.wait_status = static_cast<int>(fields.number("wait_status"));
  exit.exited_at = from_epoch_ns(fields.number("exited_at_ns"));
  return exit;
}

Status check_unreaped_child(pid_t pid, std::string_view what) {
  siginfo_t info{};
  if (::waitid(P_PID, static_cast<id_t>(pid), &info, WEXITED | WNOHANG | WNOWAIT) != 0) {
    return Status(
        Code::kFailedPrecondition,
        fmt::format("{} pid {} is not a child left to reap: {}", what, pid, std::strerror(errno)));
  }
  return {};
}

}  // namespace shim::upgrade
