// LiveUpgrade: the daemon's side of a live upgrade (docs/live-upgrade.md). Internal.
//
// Old program, on a Replace call: checks the new binary (`<binary> -info` must list our
// state format), suspends the server's input and the event forwarder, waits (up to 1 s)
// until every reply given is written, no event is in flight and every participant is
// ready, saves everything into the upgrade state (upgrade_state.h) and execs the binary
// with the daemon's own argv. Any failure before the exec resumes serving and answers
// the call with the reason.
//
// New program, at start-up (restore()): reads the state; a state it cannot read, or a
// participant that cannot restore, sends it back (execveat of the old program's exe with
// the reason in $LIBSHIM_UPGRADE_REFUSED), and the old program restores its own state
// and answers the Replace call with that reason. Otherwise it adopts the listening
// sockets and connections, requeues the events, answers the Replace call and goes on
// with the requests that were in flight (sent to itself again) and unread.
//
// Threading: all on the event loop except the -info probe (on the pool).
#pragma once

#include <chrono>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/steady_timer.hpp>

#include "events/event_forwarder.h"
#include "shim/live_upgrade.h"
#include "shim/logger.h"
#include "shim/pb/libshim/upgrade.pb.h"
#include "shim/process/reaper.h"
#include "shim/process/spawner.h"
#include "shim/process/work_pool.h"
#include "shim/ttrpc/router.h"
#include "shim/ttrpc/typed.h"
#include "ttrpc/server.h"
#include "upgrade/upgrade_state.h"

namespace shim::upgrade {

inline constexpr std::string_view kUpgradeService = "libshim.upgrade.v1.Upgrade";
inline constexpr std::string_view kReplaceMethod = "Replace";
// How long the old program waits for the shim to be quiet before it gives up.
inline constexpr std::chrono::milliseconds kQuiesceTimeout{1000};
// How long `<binary> -info` may take.
inline constexpr std::chrono::milliseconds kProbeTimeout{5000};

// What the environment said at start-up: this program was exec'd by a live upgrade.
struct Incoming {
  int state_fd = -1;
  int old_exe_fd = -1;
  std::string refused;  // set: we are the old program, back after the new one refused
};

// Reads and unsets $LIBSHIM_UPGRADE_*; nullopt on a fresh start.
std::optional<Incoming> take_incoming();

struct UpgradeSetup {
  boost::asio::any_io_executor executor;
  Logger* logger = nullptr;
  Reaper* reaper = nullptr;
  Spawner* spawner = nullptr;
  WorkPool* pool = nullptr;
  EventForwarder* forwarder = nullptr;
  // Whether every exit reaped so far reached its subscribers (SignalfdReaper::
  // fan_out_idle); unset with a plug-in's reaper, whose queue the upgrade cannot see.
  std::function<bool()> exits_delivered;
  // Services with state; a service that cannot take part is named in `refusals`
  // ("the task service does not support live upgrade") and every upgrade is refused.
  std::vector<UpgradeParticipant*> participants;
  std::vector<std::string> refusals;
  std::vector<std::string> argv;  // the daemon's argv, given to the new program as it is
  std::string version;            // Manager::version(), for the answer
};

class LiveUpgrade {
 public:
  explicit LiveUpgrade(UpgradeSetup setup);
  LiveUpgrade(const LiveUpgrade&) = delete;
  LiveUpgrade& operator=(const LiveUpgrade&) = delete;

  // Registers kUpgradeService/kReplaceMethod; attach() the server before it serves.
  void register_on(ttrpc::Router& router);
  void attach(ttrpc::TtrpcServer* server) { server_ = server; }

  // New program: restores from `incoming` and serves on; *socket_path is the listening
  // socket's path. Returns only on success or when even going back failed.
  [[nodiscard]] Status restore(const Incoming& incoming, std::string* socket_path);

 private:
  void replace(const ttrpc::CallInfo& call, pb::upgrade::ReplaceRequest request,
               ttrpc::Reply<pb::upgrade::ReplaceResponse> reply);
  Status probe(const std::string& binary) const;
  void quiesce();
  void quiesce_step();
  Status quiet() const;
  void save_and_exec();
  Status save(boost::json::object* document, KeptFds* kept);
  void resume(const Status& why);
  Status restore_state(const Incoming& incoming, const boost::json::object& document,
                       std::string* socket_path);
  // Execs the old program again with `reason`; returns only if that failed.
  Status go_back(const Incoming& incoming, const std::string& reason);

  UpgradeSetup setup_;
  ttrpc::TtrpcServer* server_ = nullptr;
  boost::asio::steady_timer timer_;
  std::chrono::steady_clock::time_point deadline_;
  bool busy_ = false;
  struct Pending {
    std::uint32_t stream_id = 0;
    std::string binary;
    std::optional<ttrpc::Reply<pb::upgrade::ReplaceResponse>> reply;
  } pending_;
};

}  // namespace shim::upgrade
