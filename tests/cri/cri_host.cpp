#include "cri_host.h"

#include <signal.h>

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include <fmt/format.h>

namespace shim::test::cri {
namespace {

namespace fs = std::filesystem;

std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

std::vector<std::string> argv_of(const std::string& pid) {
  const std::string raw = slurp(fmt::format("/proc/{}/cmdline", pid));
  std::vector<std::string> argv;
  std::string current;
  for (char c : raw) {
    if (c == '\0') {
      argv.push_back(current);
      current.clear();
    } else {
      current.push_back(c);
    }
  }
  if (!current.empty()) argv.push_back(current);
  return argv;
}

std::string flag_value(const std::vector<std::string>& argv, const std::string& flag) {
  for (std::size_t i = 0; i + 1 < argv.size(); ++i) {
    if (argv[i] == flag || argv[i] == "-" + flag) return argv[i + 1];
  }
  return {};
}

std::string unescape(const std::string& field) {
  std::string out;
  for (std::size_t i = 0; i < field.size(); ++i) {
    if (field[i] == '\\' && i + 3 < field.size()) {
      out.push_back(static_cast<char>(std::stoi(field.substr(i + 1, 3), nullptr, 8)));
      i += 3;
    } else {
      out.push_back(field[i]);
    }
  }
  return out;
}

}  // namespace

std::vector<ShimProcess> shim_processes(const std::string& grpc_address) {
  std::vector<ShimProcess> shims;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator("/proc", ec)) {
    const std::string pid = entry.path().filename().string();
    if (pid.empty() || !std::all_of(pid.begin(), pid.end(), ::isdigit)) continue;
    const std::vector<std::string> argv = argv_of(pid);
    if (argv.empty() || argv[0].find("containerd-shim") == std::string::npos) continue;
    if (flag_value(argv, "-address") != grpc_address) continue;
    ShimProcess shim;
    shim.pid = std::stoi(pid);
    shim.exe = fs::read_symlink(entry.path() / "exe", ec).string();
    shim.id = flag_value(argv, "-id");
    shims.push_back(shim);
  }
  return shims;
}

std::vector<std::string> mounts_under(const std::string& dir) {
  std::vector<std::string> found;
  std::istringstream mountinfo(slurp("/proc/self/mountinfo"));
  for (std::string line; std::getline(mountinfo, line);) {
    std::istringstream fields(line);
    std::string id, parent, devno, root, mount_point;
    fields >> id >> parent >> devno >> root >> mount_point;
    const std::string path = unescape(mount_point);
    if (path == dir || path.rfind(dir + "/", 0) == 0) found.push_back(path);
  }
  return found;
}

std::vector<std::string> cgroup_dirs(const std::string& relative) {
  std::vector<std::string> found;
  std::error_code ec;
  for (const auto& controller : fs::directory_iterator("/sys/fs/cgroup", ec)) {
    const fs::path dir = controller.path().string() + relative;
    if (fs::is_directory(dir, ec)) found.push_back(dir.string());
  }
  if (fs::is_directory("/sys/fs/cgroup" + relative, ec))
    found.push_back("/sys/fs/cgroup" + relative);
  return found;
}

std::string cgroup_value(const std::string& controller, const std::string& relative,
                         const std::string& file) {
  std::string value = slurp(fmt::format("/sys/fs/cgroup/{}{}/{}", controller, relative, file));
  while (!value.empty() && std::isspace(static_cast<unsigned char>(value.back()))) value.pop_back();
  return value;
}

bool process_alive(pid_t pid) { return pid > 0 && ::kill(pid, 0) == 0; }

long pss_kib(pid_t pid) {
  std::istringstream in(slurp(fmt::format("/proc/{}/smaps_rollup", pid)));
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("Pss:", 0) == 0) return std::stol(line.substr(4));
  }
  return -1;
}

long cpu_ticks(pid_t pid) {
  const std::string stat = slurp(fmt::format("/proc/{}/stat", pid));
  const std::size_t close = stat.rfind(')');
  if (close == std::string::npos) return -1;
  std::istringstream fields(stat.substr(close + 2));
  std::string field;
  long utime = 0, stime = 0;
  for (int i = 3; fields >> field; ++i) {  // field 3 is the state
    if (i == 14) utime = std::stol(field);
    if (i == 15) {
      stime = std::stol(field);
      break;
    }
  }
  return utime + stime;
}

std::vector<std::string> dir_entries(const std::string& dir) {
  std::vector<std::string> names;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    names.push_back(entry.path().filename().string());
  }
  std::sort(names.begin(), names.end());
  return names;
}

namespace {

// pid -> parent pid of every process on the host.
std::map<pid_t, pid_t> parent_pids() {
  std::map<pid_t, pid_t> parents;
  for (const auto& entry : fs::directory_iterator("/proc")) {
    const std::string name = entry.path().filename().string();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    std::ifstream in(entry.path() / "stat");
    std::string stat((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    const auto close = stat.rfind(')');
    if (close == std::string::npos) continue;
    std::istringstream rest(stat.substr(close + 2));
    char state = 0;
    pid_t ppid = 0;
    rest >> state >> ppid;
    parents[std::stoi(name)] = ppid;
  }
  return parents;
}

}  // namespace

std::vector<pid_t> process_tree(pid_t root) {
  const std::map<pid_t, pid_t> parents = parent_pids();
  std::vector<pid_t> tree = {root};
  for (std::size_t i = 0; i < tree.size(); ++i) {
    for (const auto& [pid, ppid] : parents) {
      if (ppid == tree[i]) tree.push_back(pid);
    }
  }
  return tree;
}

}  // namespace shim::test::cri
