// What the consumer shim asks its "agent" before it creates a container: environment
// entries for the container's init. no_agent.cpp has none; grpc_agent.cpp asks a gRPC
// service (full protobuf + grpc++ in the same process as libshim: the ODR check).
#pragma once

#include <string>
#include <vector>

namespace consumer {

std::vector<std::string> agent_env(const std::string& container_id);

}  // namespace consumer
