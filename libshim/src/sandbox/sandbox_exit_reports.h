// SandboxExitReports: the SandboxEvents a sandbox reports its own end through (its VM
// died, its holder process exited). The report is posted to the loop, where it turns the
// sandbox NOTREADY and answers every held WaitSandbox, unless an exit was recorded first
// (StopSandbox, an earlier report) or the sandbox is gone.
//
// Threading: exited() from any thread; the rest happens on the loop.
#pragma once

#include <memory>

#include <boost/asio/any_io_executor.hpp>

#include "sandbox/sandbox_record.h"
#include "shim/clock.h"
#include "shim/logger.h"
#include "shim/sandbox.h"

namespace shim {

class SandboxExitReports final : public SandboxEvents {
 public:
  // Reports reach `record` on `loop` while it lives; `clock` and `logger` outlive this.
  SandboxExitReports(boost::asio::any_io_executor loop, const Clock& clock, Logger& logger,
                     std::weak_ptr<SandboxRecord> record);

  void exited(std::uint32_t exit_status) override;

 private:
  boost::asio::any_io_executor loop_;
  const Clock& clock_;
  Logger& logger_;
  std::weak_ptr<SandboxRecord> record_;
};

}  // namespace shim
