// The pid holder's life as the pod sees it (pod_pid_holder.h starts it): its handle, its
// reaped exit, and whether the pod killed it. Shared between the pool threads that run
// the Sandbox methods and the loop, where the reaper reports the exit.
#pragma once

#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <optional>

#include "shim/process/process_handle.h"
#include "shim/process/reaper.h"
#include "shim/sandbox.h"
#include "shim/status.h"

namespace shim::linux_pod {

class HolderState : public std::enable_shared_from_this<HolderState> {
 public:
  // Subscribes to `reaper` for the holder's exit; an exit the pod did not cause is
  // reported to `events`. Call on the loop, before start_pid_holder(), so no exit is missed.
  void watch(shim::Reaper& reaper, shim::SandboxEvents& events);
  // Adopts the started holder. On the loop, in the same handler as watch().
  void adopt(shim::ProcessHandle handle);

  bool running() const;
  pid_t pid() const;  // 0 before adopt()

  // SIGKILLs the holder (through its pidfd: never another process) unless it already
  // exited, and waits up to `timeout` for the reaper to report the exit. Its exit status
  // (137 when killed). DeadlineExceeded if the exit was not reported in time. Pool thread.
  shim::Status kill_and_wait(std::chrono::seconds timeout, std::uint32_t* exit_status);

  // Stops watching (the subscription's callback may still run once; it holds this state).
  void unwatch();

  // Live upgrade: the holder as saved (pid, pidfd or -1, killed by the pod, exit status)
  // and, in the new program, taken over from that (after watch(), before the reaper
  // starts: the holder is still this process's child).
  struct Saved {
    pid_t pid = 0;
    int pidfd = -1;
    bool killed_by_pod = false;
    std::optional<int> exit_status;
  };
  Saved save() const;
  void restore(const Saved& saved, shim::ProcessHandle handle);

 private:
  void on_exit(const shim::ProcessExit& exit, shim::SandboxEvents& events);

  mutable std::mutex mu_;
  std::condition_variable exited_cv_;
  shim::ProcessHandle handle_;
  pid_t pid_ = 0;
  bool killed_by_pod_ = false;
  std::optional<int> exit_status_;
  shim::Subscription subscription_;
};

}  // namespace shim::linux_pod
