// A Publisher that records what was published, for unit tests.
#pragma once

#include <mutex>
#include <string>
#include <vector>

#include "shim/events/publisher.h"

namespace shim::testing {

struct PublishedEvent {
  std::string topic;
  std::string type_url;
  std::string bytes;
};

class RecordingPublisher : public Publisher {
 public:
  void publish(std::string_view topic, const google::protobuf::MessageLite& event) override {
    std::lock_guard lock(mutex_);
    events_.push_back({std::string(topic), event.GetTypeName(), event.SerializeAsString()});
  }

  std::vector<PublishedEvent> events() const {
    std::lock_guard lock(mutex_);
    return events_;
  }

  std::vector<std::string> topics() const {
    std::lock_guard lock(mutex_);
    std::vector<std::string> out;
    for (const auto& e : events_) out.push_back(e.topic);
    return out;
  }

 private:
  mutable std::mutex mutex_;
  std::vector<PublishedEvent> events_;
};

}  // namespace shim::testing
