// Targets whose output becomes protobuf messages install this at LLVMFuzzerInitialize:
// libprotobuf logs (instead of failing) when it serializes a string field that is not
// UTF-8, which containerd's Go decoder would then reject. A log line fails the input.
#pragma once

#include <cstdio>
#include <cstdlib>
#include <string>

#include <google/protobuf/stubs/logging.h>

namespace fuzz {

inline void abort_on_protobuf_log(google::protobuf::LogLevel, const char* file, int line,
                                  const std::string& message) {
  std::fprintf(stderr, "libprotobuf logged (%s:%d): %s\n", file, line, message.c_str());
  std::abort();
}

}  // namespace fuzz
