#include "shim/process/process_services.h"

#include <csignal>

#include "process/posix_spawner.h"
#include "process/signal_watcher.h"
#include "process/signalfd_reaper.h"

namespace shim {

Status start_signalfd_reaper(boost::asio::any_io_executor loop, std::unique_ptr<Reaper>* reaper) {
  if (Status s = SignalWatcher::block_in_this_thread({SIGCHLD}); !s.ok()) return s;
  auto made = std::make_unique<SignalfdReaper>(std::move(loop));
  if (Status s = made->start(); !s.ok()) return s;
  *reaper = std::move(made);
  return {};
}

std::unique_ptr<Spawner> make_posix_spawner() { return std::make_unique<PosixSpawner>(); }

}  // namespace shim
