#include "process/fork_request.h"

#include <sched.h>
#include <sys/socket.h>

#include <cerrno>
#include <cstring>
#include <memory>
#include <stdexcept>

#include <fmt/format.h>
#include <boost/json.hpp>

namespace shim::fork_wire {
namespace json = boost::json;
namespace {

// What a request may ask clone3 and setns for: namespaces, nothing else (CLONE_VM or
// CLONE_THREAD would run the child on the server's own memory and stack).
constexpr int kNamespaceFlags = CLONE_NEWNS | CLONE_NEWCGROUP | CLONE_NEWUTS | CLONE_NEWIPC |
                                CLONE_NEWUSER | CLONE_NEWPID | CLONE_NEWNET;

json::array strings(const std::vector<std::string>& values) {
  json::array out;
  for (const std::string& value : values) out.emplace_back(value);
  return out;
}

// Reading: every accessor throws on a wrong type, caught once in decode_request.
std::vector<std::string> strings_of(const json::value& value) {
  std::vector<std::string> out;
  for (const json::value& item : value.as_array()) out.emplace_back(item.as_string());
  return out;
}

int fd_at(const std::vector<int>& fds, std::int64_t index) {
  if (index < kFirstRequestFd || static_cast<std::size_t>(index) >= fds.size())
    throw std::out_of_range(fmt::format("fd index {} of {} fds", index, fds.size()));
  return fds[static_cast<std::size_t>(index)];
}

// Sends `fd` along; its index in the message.
std::int64_t add_fd(std::vector<int>* fds, int fd) {
  fds->push_back(fd);
  return static_cast<std::int64_t>(fds->size()) - 1 + kFirstRequestFd;
}

void encode_settings(const SpawnRequest& r, json::object& o) {
  if (r.oom_score_adj) o["oom_score_adj"] = *r.oom_score_adj;
  if (r.umask) o["umask"] = *r.umask;
  json::array rlimits;
  for (const SpawnRlimit& l : r.rlimits) rlimits.push_back(json::array{l.resource, l.soft, l.hard});
  o["rlimits"] = std::move(rlimits);
  if (r.capabilities) {
    const CapabilitySets& c = *r.capabilities;
    o["capabilities"] = json::array{c.bounding, c.effective, c.permitted, c.inheritable, c.ambient};
  }
  if (r.user) {
    json::array groups;
    for (gid_t g : r.user->additional_gids) groups.emplace_back(g);
    o["user"] = json::object{{"uid", r.user->uid}, {"gid", r.user->gid}, {"groups", groups}};
  }
  if (r.search_path) o["search_path"] = *r.search_path;
}

void decode_settings(const json::object& o, SpawnRequest* r) {
  if (o.contains("oom_score_adj")) r->oom_score_adj = json::value_to<int>(o.at("oom_score_adj"));
  if (o.contains("umask")) r->umask = json::value_to<mode_t>(o.at("umask"));
  for (const json::value& l : o.at("rlimits").as_array()) {
    const json::array& a = l.as_array();
    r->rlimits.push_back({json::value_to<int>(a.at(0)), json::value_to<std::uint64_t>(a.at(1)),
                          json::value_to<std::uint64_t>(a.at(2))});
  }
  if (o.contains("capabilities")) {
    const json::array& a = o.at("capabilities").as_array();
    r->capabilities = CapabilitySets{
        json::value_to<std::uint64_t>(a.at(0)), json::value_to<std::uint64_t>(a.at(1)),
        json::value_to<std::uint64_t>(a.at(2)), json::value_to<std::uint64_t>(a.at(3)),
        json::value_to<std::uint64_t>(a.at(4))};
  }
  if (o.contains("user")) {
    const json::object& u = o.at("user").as_object();
    SpawnUser user{json::value_to<uid_t>(u.at("uid")), json::value_to<gid_t>(u.at("gid")), {}};
    for (const json::value& g : u.at("groups").as_array())
      user.additional_gids.push_back(json::value_to<gid_t>(g));
    r->user = std::move(user);
  }
  if (o.contains("search_path")) r->search_path = std::string(o.at("search_path").as_string());
}

}  // namespace

Status encode_request(const SpawnRequest& r, std::string_view payload, std::string* out,
                      std::vector<int>* fds) {
  if (r.parent_death_signal || r.run_in_child) {
    return invalid_argument(fmt::format(
        "fork server request {}: parent_death_signal and run_in_child cannot be sent", r.path));
  }
  fds->clear();
  json::object o;
  o["path"] = r.path;
  o["argv"] = strings(r.argv);
  if (r.env) o["env"] = strings(*r.env);
  o["cwd"] = r.cwd;
  json::array maps;
  for (auto [child, parent] : r.fds) maps.push_back(json::array{child, add_fd(fds, parent)});
  o["fds"] = std::move(maps);
  o["new_process_group"] = r.new_process_group;
  o["setsid"] = r.setsid;
  o["new_namespaces"] = r.new_namespaces;
  if (r.join_namespaces != 0) {
    o["join_pidfd"] = add_fd(fds, r.join_pidfd);
    o["join_namespaces"] = r.join_namespaces;
  }
  o["root"] = r.root;
  o["mount_proc"] = r.mount_proc;
  o["mount_dev"] = r.mount_dev;
  o["controlling_terminal"] = r.controlling_terminal;
  o["no_new_privileges"] = r.no_new_privileges;
  encode_settings(r, o);
  o["cgroup_procs"] = strings(r.cgroup_procs);
  json::array files;
  for (auto [type, fd] : r.join_namespace_files)
    files.push_back(json::array{type, add_fd(fds, fd)});
  o["join_namespace_files"] = std::move(files);
  o["hostname"] = r.hostname;
  json::array mounts;
  for (const SpawnMount& m : r.mounts)
    mounts.push_back(json::array{m.source, m.target, m.type, strings(m.options)});
  o["mounts"] = std::move(mounts);
  o["pivot_root"] = r.pivot_root;
  o["payload"] = payload;
  *out = json::serialize(o);
  return {};
}

Status decode_request(std::string_view text, const std::vector<int>& fds, SpawnRequest* r,
                      std::string* payload) {
  *r = SpawnRequest{};
  try {
    const json::object o = json::parse(text).as_object();
    r->path = o.at("path").as_string();
    r->argv = strings_of(o.at("argv"));
    if (o.contains("env")) r->env = strings_of(o.at("env"));
    r->cwd = o.at("cwd").as_string();
    for (const json::value& m : o.at("fds").as_array()) {
      const json::array& a = m.as_array();
      r->fds.emplace_back(json::value_to<int>(a.at(0)), fd_at(fds, a.at(1).as_int64()));
    }
    r->new_process_group = o.at("new_process_group").as_bool();
    r->setsid = o.at("setsid").as_bool();
    r->new_namespaces = json::value_to<int>(o.at("new_namespaces"));
    if ((r->new_namespaces & ~kNamespaceFlags) != 0)
      throw std::invalid_argument(
          fmt::format("new_namespaces {:#x}: not only CLONE_NEW* flags", r->new_namespaces));
    if (o.contains("join_pidfd")) {
      r->join_pidfd = fd_at(fds, o.at("join_pidfd").as_int64());
      r->join_namespaces = json::value_to<int>(o.at("join_namespaces"));
      if ((r->join_namespaces & ~kNamespaceFlags) != 0)
        throw std::invalid_argument(
            fmt::format("join_namespaces {:#x}: not only CLONE_NEW* flags", r->join_namespaces));
    }
    r->root = o.at("root").as_string();
    r->mount_proc = o.at("mount_proc").as_bool();
    r->mount_dev = o.at("mount_dev").as_bool();
    r->controlling_terminal = o.at("controlling_terminal").as_bool();
    r->no_new_privileges = o.at("no_new_privileges").as_bool();
    decode_settings(o, r);
    r->cgroup_procs = strings_of(o.at("cgroup_procs"));
    for (const json::value& f : o.at("join_namespace_files").as_array()) {
      const json::array& a = f.as_array();
      r->join_namespace_files.emplace_back(json::value_to<int>(a.at(0)),
                                           fd_at(fds, a.at(1).as_int64()));
    }
    r->hostname = o.at("hostname").as_string();
    for (const json::value& m : o.at("mounts").as_array()) {
      const json::array& a = m.as_array();
      r->mounts.push_back({std::string(a.at(0).as_string()), std::string(a.at(1).as_string()),
                           std::string(a.at(2).as_string()), strings_of(a.at(3))});
    }
    r->pivot_root = o.at("pivot_root").as_bool();
    *payload = o.at("payload").as_string();
  } catch (const std::exception& e) {
    return invalid_argument(fmt::format("fork server request: {}", e.what()));
  }
  return {};
}

std::string encode_answer(const Status& status, pid_t pid) {
  if (!status.ok()) {
    return json::serialize(
        json::object{{"code", static_cast<int>(status.code())}, {"message", status.message()}});
  }
  return json::serialize(json::object{{"pid", pid}});
}

Status decode_answer(std::string_view text, pid_t* pid) {
  try {
    const json::object o = json::parse(text).as_object();
    if (o.contains("pid")) {
      *pid = json::value_to<pid_t>(o.at("pid"));
      return {};
    }
    return Status(static_cast<Code>(json::value_to<int>(o.at("code"))),
                  std::string(o.at("message").as_string()));
  } catch (const std::exception& e) {
    return unknown(fmt::format("fork server answer: {}", e.what()));
  }
}

// Sends one message with `fds` (SCM_RIGHTS); errno on failure.
int send_message(int socket, std::string_view bytes, const std::vector<int>& fds) {
  iovec iov{const_cast<char*>(bytes.data()), bytes.size()};
  msghdr msg{};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  std::vector<char> control(CMSG_SPACE(sizeof(int) * fds.size()));
  if (!fds.empty()) {
    msg.msg_control = control.data();
    msg.msg_controllen = control.size();
    cmsghdr* cmsg = CMSG_FIRSTHDR(&msg);
    cmsg->cmsg_level = SOL_SOCKET;
    cmsg->cmsg_type = SCM_RIGHTS;
    cmsg->cmsg_len = CMSG_LEN(sizeof(int) * fds.size());
    std::memcpy(CMSG_DATA(cmsg), fds.data(), sizeof(int) * fds.size());
  }
  while (::sendmsg(socket, &msg, MSG_NOSIGNAL) < 0) {
    if (errno != EINTR) return errno;
  }
  return 0;
}

// Receives one message and its fds (each O_CLOEXEC). 0 with empty bytes at EOF; errno
// on failure (EMSGSIZE: truncated).
int receive_message(int socket, std::string* bytes, std::vector<UniqueFd>* fds) {
  // Not zeroed: only the pages the message fills are touched. A zeroed 1 MiB buffer was
  // dirty memory that every child the server forked while it lived kept a copy of.
  std::unique_ptr<char[]> buffer(new char[kMaxMessage]);
  iovec iov{buffer.get(), kMaxMessage};
  std::vector<char> control(CMSG_SPACE(sizeof(int) * kMaxFds));
  msghdr msg{};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  msg.msg_control = control.data();
  msg.msg_controllen = control.size();
  ssize_t n;
  do {
    n = ::recvmsg(socket, &msg, MSG_CMSG_CLOEXEC);
  } while (n < 0 && errno == EINTR);
  if (n < 0) return errno;
  fds->clear();
  for (cmsghdr* c = CMSG_FIRSTHDR(&msg); c != nullptr; c = CMSG_NXTHDR(&msg, c)) {
    if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS) continue;
    std::size_t count = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
    for (std::size_t i = 0; i < count; ++i) {
      int fd;
      std::memcpy(&fd, CMSG_DATA(c) + i * sizeof(int), sizeof fd);
      fds->emplace_back(fd);
    }
  }
  bytes->assign(buffer.get(), static_cast<std::size_t>(n));
  if ((msg.msg_flags & (MSG_TRUNC | MSG_CTRUNC)) != 0) return EMSGSIZE;
  return 0;
}

}  // namespace shim::fork_wire
