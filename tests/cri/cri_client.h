// CriClient: a Kubernetes CRI (runtime.v1) client over containerd's gRPC socket, for the
// CRI end-to-end tests and the pods-at-scale benchmark. Each call has a deadline and
// throws CriError (the gRPC code plus the call's name and message) unless it is OK.
#pragma once

#include <chrono>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include <grpcpp/grpcpp.h>

#include "cri_runtime_v1.grpc.pb.h"

namespace shim::test::cri {

namespace v1 = ::runtime::v1;

class CriError : public std::runtime_error {
 public:
  CriError(const std::string& call, const grpc::Status& status);
  grpc::StatusCode code() const { return code_; }
  const std::string& status_message() const { return message_; }

 private:
  grpc::StatusCode code_;
  std::string message_;
};

class CriClient {
 public:
  // `socket_path`: containerd's grpc socket (a file path, no unix:// prefix).
  explicit CriClient(const std::string& socket_path,
                     std::chrono::milliseconds default_timeout = std::chrono::seconds(120));

  v1::VersionResponse version();
  v1::StatusResponse status(bool verbose = false);
  // Polls Status until RuntimeReady and NetworkReady are true; throws with the
  // conditions seen last when `timeout` passes.
  void wait_ready(std::chrono::milliseconds timeout);

  std::string run_pod(const v1::PodSandboxConfig& config, const std::string& handler);
  void stop_pod(const std::string& pod_id);
  void remove_pod(const std::string& pod_id);
  v1::PodSandboxStatusResponse pod_status(const std::string& pod_id, bool verbose = false);
  std::vector<v1::PodSandbox> list_pods();

  std::string create_container(const std::string& pod_id, const v1::ContainerConfig& config,
                               const v1::PodSandboxConfig& pod_config);
  void start_container(const std::string& id);
  // `timeout_s`: the grace period before SIGKILL. The call's deadline allows for it.
  void stop_container(const std::string& id, long timeout_s);
  void remove_container(const std::string& id);
  v1::ContainerStatusResponse container_status(const std::string& id, bool verbose = false);
  std::vector<v1::Container> list_containers(const std::string& pod_id = {});
  void update_resources(const std::string& id, const v1::LinuxContainerResources& linux);
  v1::ContainerStats container_stats(const std::string& id);
  // ListPodSandboxStats filtered to one pod: its stats, or none.
  std::vector<v1::PodSandboxStats> pod_stats(const std::string& pod_id);

  // ExecSync with `timeout_s` (0: none); the raw status, for comparing errors.
  grpc::Status exec_sync_status(const std::string& id, const std::vector<std::string>& cmd,
                                long timeout_s, v1::ExecSyncResponse* out);
  v1::ExecSyncResponse exec_sync(const std::string& id, const std::vector<std::string>& cmd,
                                 long timeout_s = 0);

  // CheckpointContainer: the status as it came (the tests compare failures too).
  grpc::Status checkpoint_container_status(const std::string& id, const std::string& location,
                                           long timeout_s);
  v1::ImageStatusResponse image_status(const std::string& image);

 private:
  template <typename Response, typename Request, typename Method>
  Response invoke(const char* name, Method method, const Request& request,
                  std::chrono::milliseconds timeout);

  std::shared_ptr<grpc::Channel> channel_;
  std::unique_ptr<v1::RuntimeService::Stub> runtime_;
  std::unique_ptr<v1::ImageService::Stub> images_;
  std::chrono::milliseconds default_timeout_;
};

}  // namespace shim::test::cri
