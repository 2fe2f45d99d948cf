#include "sandbox/sandbox_record.h"

#include <utility>

#include "shim/timestamp.h"

namespace shim {

sandbox_api::WaitSandboxResponse wait_response(const SandboxExit& exit) {
  sandbox_api::WaitSandboxResponse response;
  response.set_exit_status(exit.status);
  *response.mutable_exited_at() = to_timestamp(exit.at);
  return response;
}

bool SandboxRecord::mark_exited(const SandboxExit& ended) {
  if (exit) return false;
  exit = ended;
  auto response = wait_response(ended);
  for (const auto& reply : std::exchange(waiters, {})) reply(response);
  return true;
}

void SandboxRecord::wait(ttrpc::Reply<sandbox_api::WaitSandboxResponse> reply) {
  if (exit) return reply(wait_response(*exit));
  std::erase_if(waiters, [](const auto& held) { return held.done(); });
  waiters.push_back(std::move(reply));
}

}  // namespace shim
