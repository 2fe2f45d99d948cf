// Live upgrade (docs/live-upgrade.md): a running shim replaces its program with a new
// binary in place (execve: same pid, so its containers stay its children, and its
// listening socket and containerd's connections stay open), asked by
// `<new binary> -namespace NS -id ID -address ADDR upgrade`.
//
// Each service that holds state takes part through an UpgradeParticipant: it says when it
// is quiet enough to be saved, saves its state into a JSON object (and names the fds that
// must stay open), and the new program restores it before it reads any request. A
// TaskService without a participant cannot be upgraded live: the upgrade is refused and
// the old program serves on.
//
// Threading: every method runs on the shim's event loop, with the server's input
// suspended (no request is being read); none may block.
#pragma once

#include <string_view>
#include <vector>

#include <boost/json/object.hpp>

#include "shim/status.h"

namespace shim {

// One service's state across a live upgrade: readiness, save, restore (see above).
class UpgradeParticipant {
 public:
  virtual ~UpgradeParticipant() = default;

  // The key of this participant's state in the upgrade document ("tasks", ...).
  virtual std::string_view upgrade_key() const = 0;
  // Whether the state can be saved now. OK: save it. Unavailable: busy (a runtime call
  // under way); asked again until the upgrade's quiesce deadline (1 s). Any other code
  // refuses the upgrade with this status.
  virtual Status ready_for_upgrade() = 0;
  // Saves the state into *state; every fd the next program needs goes into *fds as well
  // (it stays open across the exec with the same number; close-on-exec is set again in
  // the new program).
  virtual Status save_for_upgrade(boost::json::object* state, std::vector<int>* fds) = 0;
  // In the new program, before any request is read: restores what save_for_upgrade()
  // wrote (a program of another version may have written it, in the same state format).
  // An error ends the upgrade: the old program is exec'd again and restores itself.
  virtual Status restore_after_upgrade(const boost::json::object& state) = 0;
  // The exec failed after save_for_upgrade(): go on as before.
  virtual void upgrade_aborted() {}
};

}  // namespace shim
