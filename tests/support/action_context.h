// An ActionContext for tests of a plug-in's `delete` and `-info` methods: a real reaper
// and spawner (shim/process/action_environment.h), the system clock, and a logger whose
// lines the test reads.
#pragma once

#include <mutex>
#include <string>
#include <vector>

#include "shim/action_context.h"
#include "shim/clock.h"
#include "shim/logger.h"
#include "shim/process/action_environment.h"

namespace shim::test {

class TestActionContext {
 public:
  explicit TestActionContext(ShimIdentity identity = {}, std::string_view action = "delete");
  TestActionContext(const TestActionContext&) = delete;
  TestActionContext& operator=(const TestActionContext&) = delete;

  ActionContext& get() { return context_; }
  // The log lines written so far.
  std::vector<std::string> lines() const;

 private:
  mutable std::mutex mu_;
  std::vector<std::string> lines_;
  SystemClock clock_;
  Logger logger_;
  ActionEnvironment environment_;
  ActionContext context_;
};

}  // namespace shim::test
