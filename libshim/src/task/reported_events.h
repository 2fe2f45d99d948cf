// ReportedEvents: the InstanceEvents an Instance of ExitSource::kInstance reports through
// (shim/instance_events.h). Each Create gets its own, with a pid domain of its own, so a
// late report of a deleted container (or of its namesake's predecessor) matches nothing.
//
// Threading: the reports come from any thread and are posted to the loop, where `sink`
// runs; a sink that is gone (the task service ended) drops them.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include <boost/asio/any_io_executor.hpp>

#include "shim/instance_events.h"
#include "shim/process/exit.h"

namespace shim {

// What the task service does with the reports, on the loop.
struct ReportedEventsSink {
  std::function<void(std::uint32_t domain, const ProcessExit& exit)> exited;
  std::function<void(std::uint32_t domain, const std::string& container_id)> out_of_memory;
};

class ReportedEvents final : public InstanceEvents {
 public:
  ReportedEvents(boost::asio::any_io_executor executor, std::weak_ptr<ReportedEventsSink> sink,
                 std::uint32_t domain, std::string container_id);

  void process_exited(std::uint32_t pid, int status,
                      std::chrono::system_clock::time_point exited_at) override;
  void out_of_memory() override;

 private:
  boost::asio::any_io_executor executor_;
  std::weak_ptr<ReportedEventsSink> sink_;
  std::uint32_t domain_;
  std::string container_id_;
};

}  // namespace shim
