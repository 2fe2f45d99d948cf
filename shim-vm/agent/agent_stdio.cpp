// AgentService's stdio calls: the host reads each stream of a process and writes its
// stdin through the agent (the shim copies stdio itself, docs/vm.md).
#include <algorithm>

#include "agent_service.h"

namespace shim_vm_agent {

using shim::Status;

namespace {

constexpr std::size_t kDefaultReadBytes = 256 * 1024;

}  // namespace

void AgentService::read_output(pb::ReadOutputRequest request, Reply<pb::ReadOutputResponse> reply) {
  Container* container = nullptr;
  GuestProcess* process = nullptr;
  if (Status s = find(request.id(), request.exec_id(), &container, &process); !s.ok())
    return reply.fail(s);
  std::size_t max = request.max_bytes() == 0 ? kDefaultReadBytes
                                             : std::min<std::size_t>(request.max_bytes(), 1 << 20);
  process->output(static_cast<int>(request.stream()))
      .read(max, [reply](Status s, std::string data, bool eof) {
        if (!s.ok()) return reply.fail(s);
        pb::ReadOutputResponse response;
        response.set_data(std::move(data));
        response.set_eof(eof);
        reply(response);
      });
}

void AgentService::write_stdin(pb::WriteStdinRequest request, Reply<pb::Empty> reply) {
  Container* container = nullptr;
  GuestProcess* process = nullptr;
  if (Status s = find(request.id(), request.exec_id(), &container, &process); !s.ok())
    return reply.fail(s);
  process->write_stdin(std::move(*request.mutable_data()), [reply](Status s) {
    if (!s.ok()) return reply.fail(s);
    reply(pb::Empty());
  });
}

void AgentService::close_stdin(pb::ProcessRequest request, Reply<pb::Empty> reply) {
  Container* container = nullptr;
  GuestProcess* process = nullptr;
  if (Status s = find(request.id(), request.exec_id(), &container, &process); !s.ok())
    return reply.fail(s);
  process->close_stdin();
  reply(pb::Empty());
}

void AgentService::resize(pb::ResizeTerminalRequest request, Reply<pb::Empty> reply) {
  Container* container = nullptr;
  GuestProcess* process = nullptr;
  if (Status s = find(request.id(), request.exec_id(), &container, &process); !s.ok())
    return reply.fail(s);
  if (Status s = process->resize(request.width(), request.height()); !s.ok()) return reply.fail(s);
  reply(pb::Empty());
}

}  // namespace shim_vm_agent
