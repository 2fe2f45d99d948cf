#include "task/reported_events.h"

#include <boost/asio/post.hpp>

namespace shim {

ReportedEvents::ReportedEvents(boost::asio::any_io_executor executor,
                               std::weak_ptr<ReportedEventsSink> sink, std::uint32_t domain,
                               std::string container_id)
    : executor_(std::move(executor)),
      sink_(std::move(sink)),
      domain_(domain),
      container_id_(std::move(container_id)) {}

void ReportedEvents::process_exited(std::uint32_t pid, int status,
                                    std::chrono::system_clock::time_point exited_at) {
  ProcessExit exit{.pid = static_cast<pid_t>(pid), .status = status, .exited_at = exited_at};
  // A reported status has no waitpid() form; keep WIFEXITED/WIFSIGNALED readers right.
  exit.wait_status = status > 128 ? (status - 128) & 0x7f : (status & 0xff) << 8;
  boost::asio::post(executor_, [sink = sink_, domain = domain_, exit] {
    if (auto s = sink.lock(); s && s->exited) s->exited(domain, exit);
  });
}

void ReportedEvents::out_of_memory() {
  boost::asio::post(executor_, [sink = sink_, domain = domain_, id = container_id_] {
    if (auto s = sink.lock(); s && s->out_of_memory) s->out_of_memory(domain, id);
  });
}

}  // namespace shim
