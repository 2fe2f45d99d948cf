#include "sandbox/sandbox_exit_reports.h"

#include <boost/asio/post.hpp>

namespace shim {

SandboxExitReports::SandboxExitReports(boost::asio::any_io_executor loop, const Clock& clock,
                                       Logger& logger, std::weak_ptr<SandboxRecord> record)
    : loop_(std::move(loop)), clock_(clock), logger_(logger), record_(std::move(record)) {}

// The time is taken here, when the sandbox said it ended, not when the loop gets to it.
void SandboxExitReports::exited(std::uint32_t exit_status) {
  SandboxExit ended{exit_status, clock_.now()};
  if (auto live = record_.lock()) ++live->reports_pending;
  boost::asio::post(loop_, [record = record_, ended, &logger = logger_] {
    auto live = record.lock();
    if (live == nullptr) return;
    --live->reports_pending;
    if (live->removed) return;
    if (live->mark_exited(ended)) {
      logger.info("sandbox exited", {{"id", live->id}, {"exit_status", ended.status}});
    }
  });
}

}  // namespace shim
