// Publisher: where a shim's task events go. The shim's EventForwarder sends them to
// containerd; tests and other hosts (CRI-O style, logs only) can inject their own.
#pragma once

#include <string_view>

#include <google/protobuf/message_lite.h>

namespace shim {

class Publisher {
 public:
  virtual ~Publisher() = default;

  // Queues `event` (a containerd.events.* message) for `topic` ("/tasks/exit"). Events
  // leave in the order publish() was called. Thread-safe; never blocks on the network.
  // The event's type URL is its bare full name, e.g. "containerd.events.TaskExit".
  virtual void publish(std::string_view topic, const google::protobuf::MessageLite& event) = 0;
};

}  // namespace shim
