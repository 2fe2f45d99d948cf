// Raw AF_UNIX helpers: every fd is created O_CLOEXEC (Asio's own accept/open are not).
#pragma once

#include <string>

#include "shim/status.h"

namespace shim::ttrpc {

// A non-blocking, close-on-exec AF_UNIX stream socket, or -1 with `*status` set.
int open_unix_socket(Status* status);

// Binds `path` (replacing a stale socket file), chmod 0600, listens.
int listen_unix_path(const std::string& path, Status* status);

// accept4 with SOCK_CLOEXEC | SOCK_NONBLOCK; -1 with errno on failure.
int accept_unix(int listen_fd);

// SO_PEERCRED of `fd` equals our effective uid and gid.
bool peer_is_same_user(int fd);

// Makes an inherited listening fd close-on-exec and non-blocking.
Status prepare_listen_fd(int fd);

}  // namespace shim::ttrpc
