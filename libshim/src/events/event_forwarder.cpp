#include "events/event_forwarder.h"

#include <algorithm>
#include <cstdint>
#include <deque>
#include <mutex>

#include <fmt/format.h>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>

#include "shim/pb/containerd/events_service.pb.h"
#include "shim/timestamp.h"
#include "shim/ttrpc/client.h"

namespace shim {
namespace {

constexpr std::string_view kEventsService = "containerd.services.events.ttrpc.v1.Events";
constexpr std::string_view kNamespaceKey = "containerd-namespace-ttrpc";
constexpr std::string_view kExitTopic = "/tasks/exit";

// Connection-level failures are retried; an error status from containerd is final.
bool retryable(const Status& status) {
  return status.code() == Code::kUnavailable || status.code() == Code::kDeadlineExceeded ||
         status.code() == Code::kCanceled;
}

struct FlushWaiter {
  std::uint64_t id;
  std::function<void(bool)> done;
  std::shared_ptr<boost::asio::steady_timer> timer;
};

struct QueuedEvent {
  std::string topic;
  std::string request;  // serialized ForwardRequest
};

}  // namespace

class EventForwarder::Impl : public std::enable_shared_from_this<Impl> {
 public:
  Impl(boost::asio::any_io_executor executor, EventForwarderOptions options, const Clock& clock,
       Logger& logger)
      : executor_(std::move(executor)),
        options_(std::move(options)),
        clock_(clock),
        logger_(logger),
        backoff_timer_(executor_),
        backoff_(options_.min_backoff) {}

  void enqueue(std::string_view topic, const google::protobuf::MessageLite& event) {
    containerd::services::events::ttrpc::v1::ForwardRequest request;
    auto* envelope = request.mutable_envelope();
    *envelope->mutable_timestamp() = to_timestamp(clock_.now());
    envelope->set_namespace_(options_.ns);
    envelope->set_topic(std::string(topic));
    envelope->mutable_event()->set_type_url(event.GetTypeName());
    envelope->mutable_event()->set_value(event.SerializeAsString());
    std::string bytes = request.SerializeAsString();
    {
      std::lock_guard lock(mutex_);
      if (closed_) return;
      if (!make_room(topic, bytes.size())) {
        drop_logged(topic, "event queue full, dropping event");
        return;
      }
      queued_bytes_ += bytes.size();
      queue_.push_back({std::string(topic), std::move(bytes)});
      ++stats_.queued;
    }
    boost::asio::post(executor_, [self = shared_from_this()] { self->pump(); });
  }

  void flush(std::chrono::milliseconds timeout, std::function<void(bool)> done) {
    boost::asio::post(executor_, [self = shared_from_this(), timeout, done = std::move(done)] {
      if (self->is_closed()) return done(false);  // nothing will be sent any more
      // Each waiter has its own deadline: a short flush timing out must not end a longer
      // one that is still waiting for containerd.
      auto timer = std::make_shared<boost::asio::steady_timer>(self->executor_, timeout);
      std::uint64_t id = self->next_flush_id_++;
      self->flush_waiters_.push_back({id, done, timer});
      timer->async_wait([self, id](boost::system::error_code ec) {
        if (!ec) self->expire_flush(id);
      });
      self->pump();
    });
  }

  void close() {
    std::size_t lost = 0;
    {
      std::lock_guard lock(mutex_);
      closed_ = true;
      lost = queue_.size();
      queue_.clear();
      queued_bytes_ = 0;
    }
    if (lost != 0) {
      logger_.log(LogLevel::kError, "event forwarder closed with undelivered events",
                  {{"lost", std::to_string(lost)}});
    }
    boost::asio::post(executor_, [self = shared_from_this()] {
      self->backoff_timer_.cancel();
      if (self->client_) self->client_->close();
      self->client_.reset();
      self->finish_flush(false);
    });
  }

  EventForwarderStats stats() const {
    std::lock_guard lock(mutex_);
    auto s = stats_;
    s.queued = queue_.size();
    s.queued_bytes = queued_bytes_;
    return s;
  }

 private:
  bool full(std::size_t incoming) const {
    return queue_.size() >= options_.max_queued ||
           queued_bytes_ + incoming > options_.max_queued_bytes;
  }

  // Under mutex_. True when `topic` (of `size` bytes) may be queued; an exit evicts the
  // oldest non-exit events after the front (the front may be in flight: it stays).
  bool make_room(std::string_view topic, std::size_t size) {
    if (!full(size)) return true;
    if (topic != kExitTopic) return false;
    auto it = queue_.begin();
    if (it != queue_.end()) ++it;
    while (full(size)) {
      it = std::find_if(it, queue_.end(),
                        [](const QueuedEvent& e) { return e.topic != kExitTopic; });
      if (it == queue_.end()) return false;
      drop_logged(it->topic, "event queue full, dropping an older event for an exit");
      queued_bytes_ -= it->request.size();
      it = queue_.erase(it);
    }
    return true;
  }

  // Under mutex_.
  void drop_logged(std::string_view topic, std::string_view message) {
    ++stats_.overflowed;
    logger_.log(LogLevel::kError, message,
                {{"topic", std::string(topic)},
                 {"queued", std::to_string(queue_.size())},
                 {"queued_bytes", std::to_string(queued_bytes_)},
                 {"dropped", std::to_string(stats_.overflowed)}});
  }

  // Runs on the executor: keeps exactly one Forward in flight while events are queued.
  void pump() {
    if (in_flight_ || waiting_backoff_ || connecting_ || held_ || is_closed()) return;
    std::optional<QueuedEvent> next = front();
    if (!next) {
      finish_flush(true);
      return;
    }
    if (!client_ || !client_->connected()) {
      connect();
      return;
    }
    in_flight_ = true;
    ttrpc::CallOptions call_options;
    call_options.timeout = options_.call_timeout;
    call_options.metadata.emplace_back(std::string(kNamespaceKey), options_.ns);
    client_->call(std::string(kEventsService), "Forward", next->request, std::move(call_options),
                  [self = shared_from_this(), topic = next->topic](Status status, std::string) {
                    self->on_forwarded(topic, status);
                  });
  }

  bool is_closed() const {
    std::lock_guard lock(mutex_);
    return closed_;
  }

 public:
  void hold() { held_ = true; }
  void release() {
    held_ = false;
    pump();
  }
  bool idle() const { return !in_flight_; }
  std::vector<std::pair<std::string, std::string>> queued() const {
    std::lock_guard lock(mutex_);
    std::vector<std::pair<std::string, std::string>> out;
    for (const auto& event : queue_) out.emplace_back(event.topic, event.request);
    return out;
  }
  void requeue(std::vector<std::pair<std::string, std::string>> events) {
    {
      std::lock_guard lock(mutex_);
      for (auto it = events.rbegin(); it != events.rend(); ++it) {
        queued_bytes_ += it->second.size();
        queue_.push_front({std::move(it->first), std::move(it->second)});
      }
    }
    boost::asio::post(executor_, [self = shared_from_this()] { self->pump(); });
  }

 private:
  std::optional<QueuedEvent> front() const {
    std::lock_guard lock(mutex_);
    if (closed_ || queue_.empty()) return std::nullopt;
    return queue_.front();
  }

  void pop_front() {
    std::lock_guard lock(mutex_);
    if (queue_.empty()) return;
    queued_bytes_ -= queue_.front().request.size();
    queue_.pop_front();
  }

  void on_forwarded(const std::string& topic, const Status& status) {
    in_flight_ = false;
    if (is_closed()) return;  // the owner (and the logger) may be gone
    if (status.ok()) {
      pop_front();
      {
        std::lock_guard lock(mutex_);
        ++stats_.sent;
      }
      backoff_ = options_.min_backoff;
      pump();
      return;
    }
    if (!retryable(status)) {
      pop_front();
      {
        std::lock_guard lock(mutex_);
        ++stats_.rejected;
      }
      logger_.log(LogLevel::kError, "containerd rejected event",
                  {{"topic", topic}, {"error", status.to_string()}});
      pump();
      return;
    }
    logger_.log(LogLevel::kWarn, "forward event failed, will retry",
                {{"topic", topic}, {"error", status.to_string()}});
    if (client_) client_->close();
    client_.reset();
    retry_later();
  }

  void connect() {
    connecting_ = true;
    client_ = ttrpc::TtrpcClient::create(executor_);
    client_->connect(options_.ttrpc_address, [self = shared_from_this()](Status status) {
      self->connecting_ = false;
      if (self->is_closed()) return;
      if (status.ok()) {
        self->pump();
        return;
      }
      self->logger_.log(LogLevel::kDebug, "connect to containerd failed",
                        {{"address", self->options_.ttrpc_address}, {"error", status.to_string()}});
      self->client_.reset();
      self->retry_later();
    });
    {
      std::lock_guard lock(mutex_);
      ++stats_.reconnects;
    }
  }

  void retry_later() {
    waiting_backoff_ = true;
    backoff_timer_.expires_after(backoff_);
    backoff_ = std::min(backoff_ * 2, options_.max_backoff);
    backoff_timer_.async_wait([self = shared_from_this()](boost::system::error_code ec) {
      self->waiting_backoff_ = false;
      if (!ec) self->pump();
    });
  }

  void finish_flush(bool delivered) {
    auto waiters = std::move(flush_waiters_);
    flush_waiters_.clear();
    for (auto& waiter : waiters) {
      waiter.timer->cancel();
      waiter.done(delivered);
    }
  }

  void expire_flush(std::uint64_t id) {
    auto it = std::find_if(flush_waiters_.begin(), flush_waiters_.end(),
                           [id](const FlushWaiter& w) { return w.id == id; });
    if (it == flush_waiters_.end()) return;
    auto done = std::move(it->done);
    flush_waiters_.erase(it);
    done(false);
  }

  boost::asio::any_io_executor executor_;
  EventForwarderOptions options_;
  const Clock& clock_;
  Logger& logger_;

  mutable std::mutex mutex_;  // guards queue_, closed_, stats_ (publish() is any-thread)
  std::deque<QueuedEvent> queue_;
  std::size_t queued_bytes_ = 0;
  bool closed_ = false;
  EventForwarderStats stats_;

  // Executor-only state.
  std::shared_ptr<ttrpc::TtrpcClient> client_;
  boost::asio::steady_timer backoff_timer_;
  std::chrono::milliseconds backoff_;
  bool in_flight_ = false;
  bool connecting_ = false;
  bool waiting_backoff_ = false;
  bool held_ = false;  // a live upgrade is saving the queue: no new call
  std::vector<FlushWaiter> flush_waiters_;
  std::uint64_t next_flush_id_ = 0;
};

EventForwarder::EventForwarder(boost::asio::any_io_executor executor, EventForwarderOptions options,
                               const Clock& clock, Logger& logger)
    : impl_(std::make_shared<Impl>(std::move(executor), std::move(options), clock, logger)) {}

// The Impl may outlive us in pending handlers; it refers to a clock and logger it does
// not own, so it must stop retrying now rather than keep dialing containerd forever.
EventForwarder::~EventForwarder() { impl_->close(); }

void EventForwarder::publish(std::string_view topic, const google::protobuf::MessageLite& event) {
  impl_->enqueue(topic, event);
}

void EventForwarder::flush(std::chrono::milliseconds timeout, std::function<void(bool)> done) {
  impl_->flush(timeout, std::move(done));
}

void EventForwarder::close() { impl_->close(); }

EventForwarderStats EventForwarder::stats() const { return impl_->stats(); }

void EventForwarder::hold() { impl_->hold(); }
void EventForwarder::release() { impl_->release(); }
bool EventForwarder::idle() const { return impl_->idle(); }
std::vector<std::pair<std::string, std::string>> EventForwarder::queued() const {
  return impl_->queued();
}
void EventForwarder::requeue(std::vector<std::pair<std::string, std::string>> events) {
  impl_->requeue(std::move(events));
}

}  // namespace shim
