// The shim's listening socket: bound by `start` (so readiness is race-free) and handed
// to the long-lived server as fd 3.
#pragma once

#include <string>

#include "shim/status.h"

namespace shim {

enum class ListenOutcome {
  kBound,  // a new listening socket; `fd` is valid
  kInUse,  // a live server already answers at this path (shim reuse): `fd` is -1
};

struct ListenResult {
  ListenOutcome outcome = ListenOutcome::kBound;
  int fd = -1;
};

// Binds and listens on `path` (parent dir created 0700, socket chmod 0600). A socket file
// whose server is gone is replaced; one whose server answers a connect is reported as
// kInUse. The fd is O_CLOEXEC (clear it explicitly for the child that inherits it).
Status listen_unix(const std::string& path, ListenResult* result);

// Removes the socket file at `path` if no server accepts connections there (its shim
// died; a live shim, e.g. one still serving other containers of its group, keeps it).
// Only a socket file is removed, and only the one that was probed. *removed tells.
// Nothing at `path` is not an error.
Status remove_dead_socket(const std::string& path, bool* removed);

// Connects to the socket at `path` without blocking: a server that accepts nothing (a
// wedged shim) has a full backlog, where a blocking connect would wait for good. *fd: the
// connected socket (O_CLOEXEC|O_NONBLOCK), or -1 with connect's errno in *error (EAGAIN:
// someone listens, its backlog is full; ECONNREFUSED: nobody does; ENOENT: no socket).
// Only a path that cannot be a socket address is an error.
Status dial_unix(const std::string& path, int* fd, int* error);

// Path of a listening AF_UNIX socket fd (getsockname), e.g. for removal at shutdown.
Status socket_path_of(int fd, std::string* path);

}  // namespace shim
