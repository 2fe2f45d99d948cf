// Sharing one shim between the ungrouped containers of a namespace
// (DaemonOptions::shared_group, shim/manager.h), from both ends.
//
// A shared shim lingers once nothing keeps it, so the next container finds its runtime
// loaded. The `start` action of a container that reuses it first asks it to reserve
// itself (Reserve, proto/shim/pb/libshim/sharing.proto): the shim then cannot end
// between `start`'s answer and containerd's Create. A shim that is ending answers
// Unavailable, and it has already removed its socket, so the next try binds a new one.
//
// Threading: reserve_shared_shim() runs its own loop on the calling thread (the `start`
// action). ShimReservations lives on the daemon's event loop: construct it, call
// register_on() and reserve() there, before the server runs.
#pragma once

#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/steady_timer.hpp>

#include "shim/logger.h"
#include "shim/manager.h"
#include "shim/pb/libshim/sharing.pb.h"
#include "shim/shutdown_control.h"
#include "shim/status.h"
#include "shim/ttrpc/router.h"
#include "shim/ttrpc/typed.h"

namespace shim::detail {

inline constexpr std::string_view kSharingService = "libshim.sharing.v1.Sharing";
inline constexpr std::string_view kReserveMethod = "Reserve";
// Set by `start` for a shared shim's daemon: how long it lingers, in milliseconds, and
// the task it was launched for (reserved as if that task's start had asked).
inline constexpr const char* kSharedLingerEnv = "LIBSHIM_SHARED_LINGER_MS";
inline constexpr const char* kSharedFirstTaskEnv = "LIBSHIM_SHARED_FIRST_TASK";
// Set by `start` for a daemon of a task that could not use the shared shim: why.
inline constexpr const char* kSharedFallbackEnv = "LIBSHIM_SHARED_FALLBACK";
// How long a reservation holds the shim at most: containerd sends Create milliseconds
// after `start` answers, and that Create ends the reservation (the task service's keeper
// holds the shim from then on).
inline constexpr std::chrono::milliseconds kReserveWindow{10'000};

// Asks the shim at `address` to reserve itself for task `id` (bundle `bundle`). Fails
// Unavailable if the shim is ending or gone, DeadlineExceeded if it does not answer in
// `timeout`, Unimplemented if it is not a shared libshim shim.
Status reserve_shared_shim(const std::string& address, const std::string& id,
                           const std::string& bundle, std::chrono::milliseconds timeout);

// The group the shared shim of `options.shared_group` serves: that name and a digest of
// what a reused shim could not change, so that a start that differs gets a shim of its
// own. The binary (this executable's device, inode and mtime: a replaced binary is a new
// shim, the old one lingers out) and the shim cgroup (DaemonOptions::cgroup).
std::string shared_group_key(const DaemonOptions& options);

// kSharedLingerEnv of this process, or nullopt: not a shared shim (or a malformed value).
std::optional<std::chrono::milliseconds> shared_linger_from_env();

// The daemon's half: serves Reserve and keeps the shim while a reservation lasts (the
// keeper "reservations"). A reservation ends with its task's Create or after its window;
// when the last one's window ends it asks ShutdownControl whether the shim is still used
// (so a shim whose reserved Create never came lingers, then ends).
class ShimReservations {
 public:
  // `ending`: whether the shim has decided to end (Reserve then fails). With
  // `follow_log_fifo`, each Create points the daemon's stderr at its bundle's `log` FIFO,
  // which containerd reads for as long as that task exists, and so does a Reserve when
  // nobody reads the present one (its task is gone).
  ShimReservations(boost::asio::any_io_executor executor, ShutdownControl& shutdown, Logger& logger,
                   std::function<bool()> ending, bool follow_log_fifo,
                   std::chrono::milliseconds window = kReserveWindow);
  ~ShimReservations();  // removes the keeper
  ShimReservations(const ShimReservations&) = delete;
  ShimReservations& operator=(const ShimReservations&) = delete;

  // Registers kSharingService/kReserveMethod, and wraps the task service's Create (v2 and
  // v3), which must be registered already, so that it ends its task's reservation: the
  // task service must count a Create as keeping the shim from the moment it is called
  // (RuntimeTaskService does), or another task's Shutdown could end the shim under it.
  void register_on(ttrpc::Router& router);
  // Reserves the shim for task `id` for one window; false if the shim is ending.
  bool reserve(const std::string& id);
  // Task `id`'s Create came: its reservation ends.
  void release(const std::string& id);

 private:
  void on_reserve(pb::sharing::ReserveRequest request,
                  ttrpc::Reply<pb::sharing::ReserveResponse> reply);
  void wrap_create(ttrpc::Router& router, std::string_view service);
  void follow_log(const std::string& bundle, bool only_if_unread);
  void expired();
  void arm();
  std::string why_kept() const;

  ShutdownControl& shutdown_;
  Logger& logger_;
  std::function<bool()> ending_;
  bool follow_log_fifo_;
  std::chrono::milliseconds window_;
  boost::asio::steady_timer timer_;
  std::map<std::string, std::chrono::steady_clock::time_point> reserved_;  // task -> until
};

}  // namespace shim::detail
