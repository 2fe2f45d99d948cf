// ConsoleSocket: the shim's end of an OCI runtime's `--console-socket` (runc, crun and
// youki alike): a listening unix socket in a private temp dir, on which the runtime
// connects once and sends the container's pty master with SCM_RIGHTS.
//
// The runtime connects and sends before its `create`/`exec` returns; the connection then
// waits in the listen backlog, so receiving after the runtime returned is the natural
// order and cannot deadlock. Closing the socket with a connection still queued closes the
// fd in flight too, so a failed create leaks nothing.
//
// Not thread-safe: one receive at a time, and never concurrently with destruction.
#pragma once

#include <chrono>
#include <memory>
#include <string>

#include "shim/status.h"

namespace shim {

class ConsoleSocket {
 public:
  // Creates a dir "pty<random>" (0700) under `base_dir` with a listening socket
  // "pty.sock" in it. An empty `base_dir` means $XDG_RUNTIME_DIR, else $TMPDIR, else /tmp
  // (where the Go shim puts it). Every fd is O_CLOEXEC. Errors name the path.
  static Status create(std::unique_ptr<ConsoleSocket>* socket, const std::string& base_dir = "");

  // Closes the listener (and any queued connection) and removes the socket and its dir.
  ~ConsoleSocket();
  ConsoleSocket(const ConsoleSocket&) = delete;
  ConsoleSocket& operator=(const ConsoleSocket&) = delete;

  // Absolute path of the socket, for `--console-socket`.
  const std::string& path() const { return path_; }
  const std::string& dir() const { return dir_; }

  // Blocks (a pool thread, never the event loop) until one connection arrives and sends
  // one message carrying exactly one fd, or until `timeout` has passed. On success `*fd`
  // is that fd (O_CLOEXEC, owned by the caller) and `*name`, if given, the message's
  // payload (runc sends the pty's name). The connection is closed either way.
  // Errors: DeadlineExceeded when nothing came in time; Unknown for a message without an
  // fd, with more than one fd, or a connection closed before sending (any fds received
  // are closed).
  Status receive_fd(std::chrono::milliseconds timeout, int* fd, std::string* name = nullptr);

 private:
  ConsoleSocket(std::string dir, std::string path, int listener)
      : dir_(std::move(dir)), path_(std::move(path)), listener_(listener) {}

  std::string dir_;
  std::string path_;
  int listener_ = -1;
};

}  // namespace shim
