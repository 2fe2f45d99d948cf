// The reaper and spawner of the shim daemon, for programs on libshim that are not a shim
// daemon: a guest VM's agent (PID 1 of the guest), a fork server, a test harness.
//
// Threading: call start_signalfd_reaper() in main() before any other thread exists (it
// blocks SIGCHLD in the calling thread, which threads started later inherit) and before
// or on the loop's thread; the reaper then delivers exits on `loop`. The spawner is
// thread-safe.
#pragma once

#include <memory>

#include <boost/asio/any_io_executor.hpp>

#include "shim/process/reaper.h"
#include "shim/process/spawner.h"
#include "shim/status.h"

namespace shim {

// libshim's signalfd reaper (waitpid on SIGCHLD from the loop, a child subreaper),
// started: every child's exit from now on goes to it.
[[nodiscard]] Status start_signalfd_reaper(boost::asio::any_io_executor loop,
                                           std::unique_ptr<Reaper>* reaper);

// libshim's fork/clone+exec spawner (shim/process/spawner.h).
std::unique_ptr<Spawner> make_posix_spawner();

}  // namespace shim
