// The wire form of a fork server's request and answer (shim/process/fork_server.h): a
// SpawnRequest as JSON, its fds (request.fds' parent fds, join_pidfd, the namespace
// files) replaced by indexes into the fds sent with the message (SCM_RIGHTS).
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "shim/process/spawner.h"
#include "shim/status.h"
#include "shim/unique_fd.h"

namespace shim::fork_wire {

// Fds sent with one request, after the answer socket (index 0).
inline constexpr int kFirstRequestFd = 1;

// `request` and `payload` as JSON; `*fds` gets the fds to send from index kFirstRequestFd
// on (the caller puts the answer socket first). InvalidArgument for what a fork server
// cannot carry (parent_death_signal, run_in_child: the server sets it).
Status encode_request(const SpawnRequest& request, std::string_view payload, std::string* json,
                      std::vector<int>* fds);
// The reverse: `fds` are the received ones (index 0 the answer socket).
Status decode_request(std::string_view json, const std::vector<int>& fds, SpawnRequest* request,
                      std::string* payload);

// One request or answer at most; requests carry an environment and mounts, so generous.
inline constexpr std::size_t kMaxMessage = 1 << 20;
inline constexpr std::size_t kMaxFds = 64;

// Sends one message with `fds` (SCM_RIGHTS) on a SOCK_SEQPACKET socket; errno on failure.
int send_message(int socket, std::string_view bytes, const std::vector<int>& fds);
// Receives one message and its fds (each O_CLOEXEC). 0 with empty bytes at EOF; errno
// on failure (EMSGSIZE: truncated).
int receive_message(int socket, std::string* bytes, std::vector<UniqueFd>* fds);

// The answer: a pid (its pidfd and the gate's two fds travel with it) or an error.
std::string encode_answer(const Status& status, pid_t pid);
Status decode_answer(std::string_view json, pid_t* pid);

}  // namespace shim::fork_wire
