#include "cri_client.h"

#include <thread>

#include <fmt/format.h>

namespace shim::test::cri {
namespace {

using namespace std::chrono_literals;

const char* code_name(grpc::StatusCode code) {
  switch (code) {
    case grpc::StatusCode::OK:
      return "OK";
    case grpc::StatusCode::CANCELLED:
      return "Canceled";
    case grpc::StatusCode::UNKNOWN:
      return "Unknown";
    case grpc::StatusCode::INVALID_ARGUMENT:
      return "InvalidArgument";
    case grpc::StatusCode::DEADLINE_EXCEEDED:
      return "DeadlineExceeded";
    case grpc::StatusCode::NOT_FOUND:
      return "NotFound";
    case grpc::StatusCode::ALREADY_EXISTS:
      return "AlreadyExists";
    case grpc::StatusCode::FAILED_PRECONDITION:
      return "FailedPrecondition";
    case grpc::StatusCode::UNAVAILABLE:
      return "Unavailable";
    case grpc::StatusCode::UNIMPLEMENTED:
      return "Unimplemented";
    case grpc::StatusCode::INTERNAL:
      return "Internal";
    default:
      return "other";
  }
}

void set_deadline(grpc::ClientContext& context, std::chrono::milliseconds timeout) {
  context.set_deadline(std::chrono::system_clock::now() + timeout);
}

}  // namespace

CriError::CriError(const std::string& call, const grpc::Status& status)
    : std::runtime_error(fmt::format("CRI {}: {} ({}): {}", call, code_name(status.error_code()),
                                     static_cast<int>(status.error_code()),
                                     status.error_message())),
      code_(status.error_code()),
      message_(status.error_message()) {}

CriClient::CriClient(const std::string& socket_path, std::chrono::milliseconds default_timeout)
    : default_timeout_(default_timeout) {
  grpc::ChannelArguments args;
  // ExecSync output and 16 MiB logs are read elsewhere, but stats and status replies
  // with verbose info can pass gRPC's 4 MiB default.
  args.SetMaxReceiveMessageSize(64 << 20);
  channel_ =
      grpc::CreateCustomChannel("unix://" + socket_path, grpc::InsecureChannelCredentials(), args);
  runtime_ = v1::RuntimeService::NewStub(channel_);
  images_ = v1::ImageService::NewStub(channel_);
}

template <typename Response, typename Request, typename Method>
Response CriClient::invoke(const char* name, Method method, const Request& request,
                           std::chrono::milliseconds timeout) {
  grpc::ClientContext context;
  set_deadline(context, timeout);
  Response response;
  grpc::Status status = method(&context, request, &response);
  if (!status.ok()) throw CriError(name, status);
  return response;
}

#define LIBSHIM_CRI_METHOD(stub, rpc) \
  [this](grpc::ClientContext* c, const auto& rq, auto* rs) { return stub->rpc(c, rq, rs); }

v1::VersionResponse CriClient::version() {
  v1::VersionRequest request;
  request.set_version("v1");
  return invoke<v1::VersionResponse>("Version", LIBSHIM_CRI_METHOD(runtime_, Version), request,
                                     default_timeout_);
}

v1::StatusResponse CriClient::status(bool verbose) {
  v1::StatusRequest request;
  request.set_verbose(verbose);
  return invoke<v1::StatusResponse>("Status", LIBSHIM_CRI_METHOD(runtime_, Status), request,
                                    default_timeout_);
}

void CriClient::wait_ready(std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  std::string last = "no answer";
  for (;;) {
    try {
      v1::StatusResponse reply = status();
      int ready = 0;
      last.clear();
      for (const auto& condition : reply.status().conditions()) {
        if (condition.status()) ++ready;
        last += fmt::format("{}={} ({} {}); ", condition.type(), condition.status(),
                            condition.reason(), condition.message());
      }
      if (ready >= 2) return;
    } catch (const CriError& e) {
      last = e.what();
    }
    if (std::chrono::steady_clock::now() >= deadline) {
      throw std::runtime_error(
          fmt::format("CRI not ready within {} ms: {}", timeout.count(), last));
    }
    std::this_thread::sleep_for(100ms);
  }
}

std::string CriClient::run_pod(const v1::PodSandboxConfig& config, const std::string& handler) {
  v1::RunPodSandboxRequest request;
  *request.mutable_config() = config;
  request.set_runtime_handler(handler);
  return invoke<v1::RunPodSandboxResponse>("RunPodSandbox",
                                           LIBSHIM_CRI_METHOD(runtime_, RunPodSandbox), request,
                                           default_timeout_)
      .pod_sandbox_id();
}

void CriClient::stop_pod(const std::string& pod_id) {
  v1::StopPodSandboxRequest request;
  request.set_pod_sandbox_id(pod_id);
  invoke<v1::StopPodSandboxResponse>("StopPodSandbox", LIBSHIM_CRI_METHOD(runtime_, StopPodSandbox),
                                     request, default_timeout_);
}

void CriClient::remove_pod(const std::string& pod_id) {
  v1::RemovePodSandboxRequest request;
  request.set_pod_sandbox_id(pod_id);
  invoke<v1::RemovePodSandboxResponse>("RemovePodSandbox",
                                       LIBSHIM_CRI_METHOD(runtime_, RemovePodSandbox), request,
                                       default_timeout_);
}

v1::PodSandboxStatusResponse CriClient::pod_status(const std::string& pod_id, bool verbose) {
  v1::PodSandboxStatusRequest request;
  request.set_pod_sandbox_id(pod_id);
  request.set_verbose(verbose);
  return invoke<v1::PodSandboxStatusResponse>("PodSandboxStatus",
                                              LIBSHIM_CRI_METHOD(runtime_, PodSandboxStatus),
                                              request, default_timeout_);
}

std::vector<v1::PodSandbox> CriClient::list_pods() {
  v1::ListPodSandboxRequest request;
  auto reply = invoke<v1::ListPodSandboxResponse>(
      "ListPodSandbox", LIBSHIM_CRI_METHOD(runtime_, ListPodSandbox), request, default_timeout_);
  return {reply.items().begin(), reply.items().end()};
}

std::string CriClient::create_container(const std::string& pod_id,
                                        const v1::ContainerConfig& config,
                                        const v1::PodSandboxConfig& pod_config) {
  v1::CreateContainerRequest request;
  request.set_pod_sandbox_id(pod_id);
  *request.mutable_config() = config;
  *request.mutable_sandbox_config() = pod_config;
  return invoke<v1::CreateContainerResponse>("CreateContainer",
                                             LIBSHIM_CRI_METHOD(runtime_, CreateContainer), request,
                                             default_timeout_)
      .container_id();
}

void CriClient::start_container(const std::string& id) {
  v1::StartContainerRequest request;
  request.set_container_id(id);
  invoke<v1::StartContainerResponse>("StartContainer", LIBSHIM_CRI_METHOD(runtime_, StartContainer),
                                     request, default_timeout_);
}

void CriClient::stop_container(const std::string& id, long timeout_s) {
  v1::StopContainerRequest request;
  request.set_container_id(id);
  request.set_timeout(timeout_s);
  invoke<v1::StopContainerResponse>("StopContainer", LIBSHIM_CRI_METHOD(runtime_, StopContainer),
                                    request, default_timeout_ + std::chrono::seconds(timeout_s));
}

void CriClient::remove_container(const std::string& id) {
  v1::RemoveContainerRequest request;
  request.set_container_id(id);
  invoke<v1::RemoveContainerResponse>(
      "RemoveContainer", LIBSHIM_CRI_METHOD(runtime_, RemoveContainer), request, default_timeout_);
}

v1::ContainerStatusResponse CriClient::container_status(const std::string& id, bool verbose) {
  v1::ContainerStatusRequest request;
  request.set_container_id(id);
  request.set_verbose(verbose);
  return invoke<v1::ContainerStatusResponse>(
      "ContainerStatus", LIBSHIM_CRI_METHOD(runtime_, ContainerStatus), request, default_timeout_);
}

std::vector<v1::Container> CriClient::list_containers(const std::string& pod_id) {
  v1::ListContainersRequest request;
  if (!pod_id.empty()) request.mutable_filter()->set_pod_sandbox_id(pod_id);
  auto reply = invoke<v1::ListContainersResponse>(
      "ListContainers", LIBSHIM_CRI_METHOD(runtime_, ListContainers), request, default_timeout_);
  return {reply.containers().begin(), reply.containers().end()};
}

void CriClient::update_resources(const std::string& id, const v1::LinuxContainerResources& linux) {
  v1::UpdateContainerResourcesRequest request;
  request.set_container_id(id);
  *request.mutable_linux() = linux;
  invoke<v1::UpdateContainerResourcesResponse>(
      "UpdateContainerResources", LIBSHIM_CRI_METHOD(runtime_, UpdateContainerResources), request,
      default_timeout_);
}

v1::ContainerStats CriClient::container_stats(const std::string& id) {
  v1::ContainerStatsRequest request;
  request.set_container_id(id);
  return invoke<v1::ContainerStatsResponse>("ContainerStats",
                                            LIBSHIM_CRI_METHOD(runtime_, ContainerStats), request,
                                            default_timeout_)
      .stats();
}

std::vector<v1::PodSandboxStats> CriClient::pod_stats(const std::string& pod_id) {
  v1::ListPodSandboxStatsRequest request;
  request.mutable_filter()->set_id(pod_id);
  auto response = invoke<v1::ListPodSandboxStatsResponse>(
      "ListPodSandboxStats", LIBSHIM_CRI_METHOD(runtime_, ListPodSandboxStats), request,
      default_timeout_);
  return {response.stats().begin(), response.stats().end()};
}

grpc::Status CriClient::exec_sync_status(const std::string& id, const std::vector<std::string>& cmd,
                                         long timeout_s, v1::ExecSyncResponse* out) {
  v1::ExecSyncRequest request;
  request.set_container_id(id);
  for (const auto& arg : cmd) request.add_cmd(arg);
  request.set_timeout(timeout_s);
  grpc::ClientContext context;
  set_deadline(context, default_timeout_ + std::chrono::seconds(timeout_s));
  return runtime_->ExecSync(&context, request, out);
}

v1::ExecSyncResponse CriClient::exec_sync(const std::string& id,
                                          const std::vector<std::string>& cmd, long timeout_s) {
  v1::ExecSyncResponse reply;
  grpc::Status status = exec_sync_status(id, cmd, timeout_s, &reply);
  if (!status.ok()) throw CriError("ExecSync", status);
  return reply;
}

grpc::Status CriClient::checkpoint_container_status(const std::string& id,
                                                    const std::string& location, long timeout_s) {
  v1::CheckpointContainerRequest request;
  request.set_container_id(id);
  request.set_location(location);
  request.set_timeout(timeout_s);
  v1::CheckpointContainerResponse reply;
  grpc::ClientContext context;
  set_deadline(context, default_timeout_ + std::chrono::seconds(timeout_s));
  return runtime_->CheckpointContainer(&context, request, &reply);
}

v1::ImageStatusResponse CriClient::image_status(const std::string& image) {
  v1::ImageStatusRequest request;
  request.mutable_image()->set_image(image);
  return invoke<v1::ImageStatusResponse>("ImageStatus", LIBSHIM_CRI_METHOD(images_, ImageStatus),
                                         request, default_timeout_);
}

#undef LIBSHIM_CRI_METHOD

}  // namespace shim::test::cri
