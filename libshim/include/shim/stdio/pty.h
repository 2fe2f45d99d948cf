// Pty: a new pseudo-terminal pair, for a process that gets a terminal of its own (an OCI
// process with `terminal: true`). The process gets the slave as its stdio and
// controlling terminal (SpawnRequest::controlling_terminal); the master goes to the
// console socket (shim/stdio/console_sender.h), where libshim copies the terminal's IO.
//
// Threading: open() from any thread (a pool thread: it does file IO); one Pty is not
// for concurrent use.
#pragma once

#include <string>

#include "shim/status.h"
#include "shim/unique_fd.h"

namespace shim {

class Pty {
 public:
  // An empty Pty (no fds).
  Pty() = default;

  // Opens /dev/ptmx, unlocks it and opens its slave (TIOCGPTPEER, or its /dev/pts path
  // on kernels before 4.13). Both fds are O_CLOEXEC and O_NOCTTY: the shim never gets a
  // controlling terminal from them. Errors name the step ("open /dev/ptmx: ...").
  static Status open(Pty* pty);

  // Whether it holds a master.
  bool valid() const { return master_.valid(); }
  // The master: what the console socket receives.
  int master() const { return master_.get(); }
  // The slave: the process's fds 0-2.
  int slave() const { return slave_.get(); }
  // The slave's path, e.g. "/dev/pts/3" (runc sends it with the master).
  const std::string& name() const { return name_; }

  // TIOCSWINSZ: `rows` x `columns` characters (an OCI process's consoleSize).
  Status resize(unsigned rows, unsigned columns) const;

 private:
  UniqueFd master_;
  UniqueFd slave_;
  std::string name_;
};

}  // namespace shim
