#include "shim/process/call_deadline.h"
#include "shim/task_service.h"

namespace shim {
namespace {

template <class Response>
void unimplemented(const Reply<Response>& reply) {
  reply.fail(not_implemented(""));
}

}  // namespace

void TaskService::state(const CallInfo&, task::StateRequest, Reply<task::StateResponse> r) {
  unimplemented(r);
}
void TaskService::create(const CallInfo&, task::CreateTaskRequest,
                         Reply<task::CreateTaskResponse> r) {
  unimplemented(r);
}
void TaskService::start(const CallInfo&, task::StartRequest, Reply<task::StartResponse> r) {
  unimplemented(r);
}
void TaskService::remove(const CallInfo&, task::DeleteRequest, Reply<task::DeleteResponse> r) {
  unimplemented(r);
}
void TaskService::pids(const CallInfo&, task::PidsRequest, Reply<task::PidsResponse> r) {
  unimplemented(r);
}
void TaskService::pause(const CallInfo&, task::PauseRequest, Reply<Empty> r) { unimplemented(r); }
void TaskService::resume(const CallInfo&, task::ResumeRequest, Reply<Empty> r) {
  unimplemented(r);
}
void TaskService::checkpoint(const CallInfo&, task::CheckpointTaskRequest, Reply<Empty> r) {
  unimplemented(r);
}
void TaskService::kill(const CallInfo&, task::KillRequest, Reply<Empty> r) { unimplemented(r); }
void TaskService::exec(const CallInfo&, task::ExecProcessRequest, Reply<Empty> r) {
  unimplemented(r);
}
void TaskService::resize_pty(const CallInfo&, task::ResizePtyRequest, Reply<Empty> r) {
  unimplemented(r);
}
void TaskService::close_io(const CallInfo&, task::CloseIORequest, Reply<Empty> r) {
  unimplemented(r);
}
void TaskService::update(const CallInfo&, task::UpdateTaskRequest, Reply<Empty> r) {
  unimplemented(r);
}
void TaskService::wait(const CallInfo&, task::WaitRequest, Reply<task::WaitResponse> r) {
  unimplemented(r);
}
void TaskService::stats(const CallInfo&, task::StatsRequest, Reply<task::StatsResponse> r) {
  unimplemented(r);
}
void TaskService::connect(const CallInfo&, task::ConnectRequest,
                          Reply<task::ConnectResponse> r) {
  unimplemented(r);
}
void TaskService::shutdown(const CallInfo&, task::ShutdownRequest, Reply<Empty> r) {
  unimplemented(r);
}

namespace {

// Binds one RPC: decode Request, call the member, answer with Response.
template <class Request, class Response>
void bind(ttrpc::Router& router, std::string_view method, TaskService& service,
          void (TaskService::*member)(const CallInfo&, Request, Reply<Response>)) {
  auto handler = ttrpc::typed_handler<Request, Response>(
      [&service, member](const CallInfo& call, Request request, Reply<Response> reply) {
        CallDeadlineScope deadline(call.deadline);  // reaches the pool work it posts
        (service.*member)(call, std::move(request), std::move(reply));
      });
  router.add(kTaskServiceV2, method, handler);
  router.add(kTaskServiceV3, method, std::move(handler));
}

}  // namespace

void register_task_service(ttrpc::Router& router, TaskService& service) {
  bind(router, "State", service, &TaskService::state);
  bind(router, "Create", service, &TaskService::create);
  bind(router, "Start", service, &TaskService::start);
  bind(router, "Delete", service, &TaskService::remove);
  bind(router, "Pids", service, &TaskService::pids);
  bind(router, "Pause", service, &TaskService::pause);
  bind(router, "Resume", service, &TaskService::resume);
  bind(router, "Checkpoint", service, &TaskService::checkpoint);
  bind(router, "Kill", service, &TaskService::kill);
  bind(router, "Exec", service, &TaskService::exec);
  bind(router, "ResizePty", service, &TaskService::resize_pty);
  bind(router, "CloseIO", service, &TaskService::close_io);
  bind(router, "Update", service, &TaskService::update);
  bind(router, "Wait", service, &TaskService::wait);
  bind(router, "Stats", service, &TaskService::stats);
  bind(router, "Connect", service, &TaskService::connect);
  bind(router, "Shutdown", service, &TaskService::shutdown);
}

}  // namespace shim
