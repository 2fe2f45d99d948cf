// SignalfdReaper: the real Reaper. A child subreaper that reaps on SIGCHLD read from a
// signalfd on the event loop (via SignalWatcher), looping waitpid(-1, WNOHANG) until
// nothing is left on every wakeup, so coalesced SIGCHLDs lose nothing (as containerd's sys/reaper
// loops to ECHILD).
//
// Setup, in main(), before any thread exists:
//   SignalWatcher::block_in_this_thread({SIGCHLD, SIGTERM, SIGINT, SIGUSR1});
//   boost::asio::io_context loop;
//   SignalWatcher signals(loop.get_executor());
//   SignalfdReaper reaper(loop.get_executor(), signals);
//   reaper.start();
//
// How claims work without holding a lock across fork/exec: spawn_claimed() takes a
// ticket before spawning and registers the pid after. While any ticket is outstanding,
// exits of unclaimed pids are parked instead of fanned out; when the spawn registers, it
// takes its own exit from the parked ones (only an exit reaped after its ticket was
// issued can be its child's), and parked exits no outstanding spawn can own are released
// to subscribers in reap order. So a fast-exiting runc is never fanned out and never lost,
// and unrelated exits are delayed at most by the spawns in flight when they were reaped.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>

#include <boost/asio/any_io_executor.hpp>

#include "process/signal_watcher.h"
#include "shim/process/reaper.h"

namespace shim {

struct ReaperOptions {
  // prctl(PR_SET_CHILD_SUBREAPER): orphaned descendants (a container's init after runc
  // exits) become our children, so we reap them and see their exits.
  bool child_subreaper = true;
  // Timestamps for exited_at; tests inject a fake clock.
  std::function<std::chrono::system_clock::time_point()> now;
};

struct ReaperStats {
  std::uint64_t wakeups = 0;              // reap passes (SIGCHLD reads, start(), reap_now())
  std::uint64_t reaped = 0;               // exits collected
  std::uint64_t claimed = 0;              // handed to spawn_claimed() callers
  std::uint64_t fanned_out = 0;           // handed to subscribers
  std::uint64_t parked = 0;               // held back because a spawn was in flight when reaped
  std::uint64_t claimed_from_parked = 0;  // a spawn's child that exited before it registered
};

class SignalfdReaper final : public Reaper {
 public:
  // Deliveries for subscribe(callback) go to `executor`; SIGCHLD comes from `signals`.
  SignalfdReaper(boost::asio::any_io_executor executor, SignalWatcher& signals,
                 ReaperOptions options = {});
  // As above with a private SignalWatcher (for programs that watch no other signal).
  explicit SignalfdReaper(boost::asio::any_io_executor executor, ReaperOptions options = {});
  ~SignalfdReaper() override;  // stop()
  SignalfdReaper(const SignalfdReaper&) = delete;
  SignalfdReaper& operator=(const SignalfdReaper&) = delete;

  // Becomes a child subreaper (if configured), routes SIGCHLD here (blocking it in the
  // calling thread; see the setup above for the other threads) and reaps whatever already
  // exited. Call on the loop thread or before the loop runs.
  Status start();
  // Stops reaping: SIGCHLD unrouted, subscribers dropped, outstanding claims abandoned
  // (their waiters get std::nullopt). Idempotent; same thread rules as start().
  void stop();
  // One reap pass now. Thread-safe (passes are serialized).
  void reap_now();

  Subscription subscribe(ExitCallback callback) override;
  Subscription subscribe(boost::asio::any_io_executor executor, ExitCallback callback) override;
  Status spawn_claimed(Spawner& spawner, const SpawnRequest& request,
                       ClaimedProcess* process) override;
  Status claim_running(pid_t pid, ExitFuture* exit) override;

  ReaperStats stats() const;
  // Whether every exit reaped so far reached its subscribers (none queued, parked or
  // being delivered) and no spawn is in flight. Thread-safe. A live upgrade execs only
  // then: an exit still queued would be lost with the old program.
  bool fan_out_idle() const;

  class Impl;

 private:
  std::unique_ptr<SignalWatcher> own_signals_;
  SignalWatcher& signals_;
  std::shared_ptr<Impl> impl_;
  bool watching_ = false;
};

}  // namespace shim
