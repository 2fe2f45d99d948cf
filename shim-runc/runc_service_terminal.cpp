// RuncService members for terminals (the create/exec wiring lives with Create and Start).
#include "shim-runc/runc_service.h"

namespace runc_shim {

// Go: an unknown container or exec is the usual NotFound; a stopped exec refuses
// ("cannot resize a stopped container"); a process without a console, or an init whose
// console is gone, succeeds without effect.
void RuncService::resize_pty(const CallInfo&, task::ResizePtyRequest request, Reply<Empty> reply) {
  Container* container = nullptr;
  Process* process = nullptr;
  if (auto s = find(request.id(), request.exec_id(), &container, &process); !s.ok()) return reply.fail(s);
  if (!process->is_init() && process->state == ProcessState::kStopped) {
    return reply.fail(shim::unknown("cannot resize a stopped container"));
  }
  if (!process->io) return reply(Empty());
  if (auto s = process->io->resize(request.width(), request.height()); !s.ok()) return reply.fail(s);
  reply(Empty());
}

}  // namespace runc_shim
