// SignalWatcher: delivers chosen signals to callbacks on the event loop, through one
// signalfd (SFD_CLOEXEC | SFD_NONBLOCK) read by an Asio descriptor. The reaper uses it for
// SIGCHLD; the shim's main uses the same watcher for SIGTERM, SIGINT and SIGUSR1, so
// all signals share one fd.
//
// A signal only reaches a signalfd if no thread takes it first, i.e. it must be blocked
// in EVERY thread. Call block_in_this_thread() with all watched signals at the top of
// main(), before any thread is created: threads inherit the mask. (WorkPool threads block
// everything anyway.) Standard signals coalesce: one callback may stand for many
// deliveries, so handlers must treat a call as "at least one arrived" (the reaper
// reaps until nothing is left).
//
// One watcher per process; not thread-safe: use it (and destroy it) on the loop thread,
// or while the loop is not running.
#pragma once

#include <sys/types.h>

#include <functional>
#include <initializer_list>
#include <memory>

#include <boost/asio/any_io_executor.hpp>

#include "shim/status.h"

namespace shim {

struct SignalInfo {
  int signo = 0;
  int code = 0;          // si_code: SI_USER, SI_KERNEL, CLD_EXITED...
  pid_t sender_pid = 0;  // for kill(2)-sent signals
  uid_t sender_uid = 0;
};

class SignalWatcher {
 public:
  using Handler = std::function<void(const SignalInfo&)>;

  explicit SignalWatcher(boost::asio::any_io_executor executor);
  ~SignalWatcher();  // close()
  SignalWatcher(const SignalWatcher&) = delete;
  SignalWatcher& operator=(const SignalWatcher&) = delete;

  // Adds `signals` to the calling thread's blocked mask (see above).
  static Status block_in_this_thread(std::initializer_list<int> signals);

  // Routes `signo` to `handler` (replacing an earlier one) and blocks it in the calling
  // thread. Creates the signalfd on first use.
  Status watch(int signo, Handler handler);
  // Stops routing `signo`. The signal stays blocked: unblocking it could deliver a
  // pending signal with its default action.
  void unwatch(int signo);
  // Closes the signalfd; pending handler calls are dropped.
  void close();

  class Impl;

 private:
  std::shared_ptr<Impl> impl_;
};

}  // namespace shim
