// EventForwarder against a real TtrpcServer playing containerd's events service
// (containerd.services.events.ttrpc.v1.Events/Forward) on a temp socket: peer down then
// up, peer restarted mid-stream, an event rejected with an error status, flush bounds.
#include "events/event_forwarder.h"

#include <catch2/catch.hpp>

#include <cctype>
#include <future>
#include <mutex>
#include <optional>
#include <thread>

#include <fmt/format.h>

#include "shim/logger.h"
#include "shim/pb/containerd/events.pb.h"
#include "shim/pb/containerd/events_service.pb.h"
#include "shim/ttrpc/router.h"
#include "support/io_thread.h"
#include "support/temp_dir.h"
#include "support/ttrpc_harness.h"
#include "ttrpc/server.h"

namespace shim {
namespace {

using namespace std::chrono_literals;
using test::eventually;
using test::IoThread;
using test::TempDir;

constexpr const char* kNamespace = "fwd-ns";
constexpr const char* kEventsService = "containerd.services.events.ttrpc.v1.Events";

// A fixed time, so the envelope timestamp can be checked exactly.
class FixedClock final : public Clock {
 public:
  std::chrono::system_clock::time_point now() const override {
    return std::chrono::system_clock::time_point(1'700'000'000s + 123'456'789ns);
  }
};

// containerd's topic rule (exchange.go validateTopic): "/" then identifiers.
bool valid_topic(const std::string& topic) {
  if (topic.size() < 2 || topic[0] != '/') return false;
  bool at_start = true;  // start of a component or right after a separator
  for (std::size_t i = 1; i < topic.size(); ++i) {
    char c = topic[i];
    bool alnum = std::isalnum(static_cast<unsigned char>(c)) != 0;
    if (alnum) {
      at_start = false;
    } else if (c == '/' || c == '.' || c == '_' || c == '-') {
      if (at_start) return false;
      at_start = true;
    } else {
      return false;
    }
  }
  return !at_start;
}

// One Forward call as the fake containerd saw it.
struct Received {
  int generation = 0;  // which server instance took it
  std::string ns_metadata;
  bool has_deadline = false;
  std::string envelope_namespace;
  std::string topic;
  std::string type_url;
  std::int64_t seconds = 0;
  std::int32_t nanos = 0;
  containerd::events::TaskExit exit;
  bool accepted = false;
};

// The containerd side: a TtrpcServer on its own io thread that can be started, stopped
// gracefully (as when containerd goes away) and started again on the same path.
class FakeEvents {
 public:
  explicit FakeEvents(std::string path) : path_(std::move(path)) {}
  ~FakeEvents() {
    server_.reset();  // posts close()
    io_.drain();
  }

  void start() {
    ++generation_;
    ttrpc::Router router;
    router.add(kEventsService, "Forward",
               [this, generation = generation_](const ttrpc::CallInfo& call,
                                                std::string_view payload, ttrpc::Responder r) {
                 on_forward(generation, call, payload, r);
               });
    // containerd's own server closes at once when it goes away: no linger for our client.
    ttrpc::ServerOptions options;
    options.shutdown_linger = std::chrono::milliseconds(0);
    server_ = std::make_unique<ttrpc::TtrpcServer>(io_.executor(), std::move(router), options);
    Status status = server_->serve_path(path_);
    REQUIRE(status.ok());
  }

  // Graceful stop: in-flight replies go out, then every connection closes.
  void stop() {
    std::promise<void> done;
    io_.run([&] { server_->shutdown([&done] { done.set_value(); }); });
    REQUIRE(done.get_future().wait_for(5s) == std::future_status::ready);
    io_.run([&] { server_.reset(); });
  }

  // Called on the io thread after the reply to the n-th (0-based) call was queued.
  void after_reply(std::function<void(std::size_t n, ttrpc::TtrpcServer&)> hook) {
    std::lock_guard lock(mutex_);
    after_reply_ = std::move(hook);
  }

  std::vector<Received> received() const {
    std::lock_guard lock(mutex_);
    return received_;
  }
  std::size_t count() const { return received().size(); }
  bool wait_for_count(std::size_t n, std::chrono::milliseconds timeout = 5s) {
    return eventually([&] { return count() >= n; }, timeout);
  }

 private:
  void on_forward(int generation, const ttrpc::CallInfo& call, std::string_view payload,
                  const ttrpc::Responder& responder) {
    containerd::services::events::ttrpc::v1::ForwardRequest request;
    Received r;
    // No Catch2 assertions on this thread: a bad request shows up as a bad record.
    if (!request.ParseFromArray(payload.data(), static_cast<int>(payload.size()))) {
      request.mutable_envelope()->set_topic("<unparsable ForwardRequest>");
    }
    r.generation = generation;
    r.ns_metadata = std::string(call.metadata_value("containerd-namespace-ttrpc"));
    r.has_deadline = call.deadline.has_value();
    r.envelope_namespace = request.envelope().namespace_();
    r.topic = request.envelope().topic();
    r.type_url = request.envelope().event().type_url();
    r.seconds = request.envelope().timestamp().seconds();
    r.nanos = request.envelope().timestamp().nanos();
    r.exit.ParseFromString(request.envelope().event().value());
    r.accepted = valid_topic(r.topic);
    std::function<void(std::size_t, ttrpc::TtrpcServer&)> hook;
    std::size_t index = 0;
    {
      std::lock_guard lock(mutex_);
      index = received_.size();
      received_.push_back(r);
      hook = after_reply_;
    }
    if (!r.accepted) {
      responder.fail(invalid_argument(fmt::format("envelope topic \"{}\"", r.topic)));
    } else {
      responder.reply("");  // google.protobuf.Empty
    }
    if (hook) hook(index, *server_);
  }

  std::string path_;
  IoThread io_;
  std::unique_ptr<ttrpc::TtrpcServer> server_;
  int generation_ = 0;
  mutable std::mutex mutex_;
  std::vector<Received> received_;
  std::function<void(std::size_t, ttrpc::TtrpcServer&)> after_reply_;
};

// Collects the forwarder's log lines.
class LogLines {
 public:
  std::shared_ptr<LogSink> sink() {
    return std::make_shared<CallbackLogSink>([this](std::string_view line) {
      std::lock_guard lock(mutex_);
      lines_.emplace_back(line);
    });
  }
  std::vector<std::string> matching(std::string_view part) const {
    std::lock_guard lock(mutex_);
    std::vector<std::string> out;
    for (const auto& line : lines_) {
      if (line.find(part) != std::string::npos) out.push_back(line);
    }
    return out;
  }

 private:
  mutable std::mutex mutex_;
  std::vector<std::string> lines_;
};

containerd::events::TaskExit exit_event(std::uint32_t n) {
  containerd::events::TaskExit event;
  event.set_container_id("c1");
  event.set_id(fmt::format("p{}", n));
  event.set_pid(n);
  event.set_exit_status(n % 256);
  return event;
}

// Declared in this order so the forwarder dies first, then its executor, then what the
// forwarder refers to (clock, logger).
struct Fixture {
  TempDir dir{"fwd-"};
  std::string socket = dir.sub("ev.sock");
  FixedClock clock;
  LogLines logs;
  Logger logger{logs.sink(), clock, LogLevel::kDebug};
  FakeEvents containerd{socket};
  IoThread io;
  std::unique_ptr<EventForwarder> forwarder;

  // `with_scheme`: TTRPC_ADDRESS given as unix://<path>, which containerd also accepts.
  explicit Fixture(bool with_scheme = false, std::size_t max_queued = 65536) {
    EventForwarderOptions options;
    options.max_queued = max_queued;
    options.ttrpc_address = with_scheme ? "unix://" + socket : socket;
    options.ns = kNamespace;
    options.call_timeout = 2s;
    options.min_backoff = 5ms;
    options.max_backoff = 40ms;
    forwarder = std::make_unique<EventForwarder>(io.executor(), options, clock, logger);
  }
  ~Fixture() { forwarder.reset(); }

  void publish_exits(std::uint32_t first, std::uint32_t count) {
    for (std::uint32_t n = first; n < first + count; ++n) {
      forwarder->publish("/tasks/exit", exit_event(n));
    }
  }

  // Blocks until flush() reports; returns its result and how long it took.
  std::pair<bool, std::chrono::milliseconds> flush(std::chrono::milliseconds timeout) {
    auto result = std::make_shared<std::promise<bool>>();
    auto started = std::chrono::steady_clock::now();
    forwarder->flush(timeout, [result](bool delivered) { result->set_value(delivered); });
    auto future = result->get_future();
    REQUIRE(future.wait_for(timeout + 5s) == std::future_status::ready);
    bool delivered = future.get();
    return {delivered, std::chrono::duration_cast<std::chrono::milliseconds>(
                           std::chrono::steady_clock::now() - started)};
  }
};

// Every received event is an accepted TaskExit with pid first..first+count-1, in order,
// each exactly once, with the wire details containerd needs.
void check_exits_in_order(const std::vector<Received>& received, std::uint32_t count) {
  REQUIRE(received.size() == count);
  for (std::uint32_t n = 0; n < count; ++n) {
    INFO("event " << n);
    const Received& r = received[n];
    CHECK(r.exit.pid() == n);
    CHECK(r.exit.id() == fmt::format("p{}", n));
    CHECK(r.exit.container_id() == "c1");
    CHECK(r.topic == "/tasks/exit");
    CHECK(r.type_url == "containerd.events.TaskExit");
    CHECK(r.ns_metadata == kNamespace);
    CHECK(r.envelope_namespace == kNamespace);
    CHECK(r.has_deadline);
    CHECK(r.seconds == 1'700'000'000);
    CHECK(r.nanos == 123'456'789);
  }
}

TEST_CASE("forwarder: events published while containerd is down go out once, in order",
          "[forwarder]") {
  Fixture fx(/*with_scheme=*/true);
  fx.publish_exits(0, 10);
  // No peer: the forwarder keeps trying and keeps everything.
  REQUIRE(eventually([&] { return fx.forwarder->stats().reconnects >= 3; }, 2s));
  CHECK(fx.forwarder->stats().queued == 10);
  CHECK(fx.forwarder->stats().sent == 0);

  fx.containerd.start();
  REQUIRE(fx.containerd.wait_for_count(10));
  fx.publish_exits(10, 5);
  REQUIRE(fx.containerd.wait_for_count(15));
  std::this_thread::sleep_for(100ms);  // room for a duplicate to show up
  check_exits_in_order(fx.containerd.received(), 15);
  auto stats = fx.forwarder->stats();
  CHECK(stats.sent == 15);
  CHECK(stats.queued == 0);
  CHECK(stats.rejected == 0);
}

TEST_CASE("forwarder: containerd restarted mid-stream still gets every event once, in order",
          "[forwarder]") {
  Fixture fx;
  fx.containerd.start();
  std::promise<void> went_down;
  // containerd goes away right after accepting the 7th event (its reply still goes out).
  fx.containerd.after_reply([&went_down](std::size_t n, ttrpc::TtrpcServer& server) {
    if (n == 6) server.shutdown([&went_down] { went_down.set_value(); });
  });
  fx.publish_exits(0, 20);
  REQUIRE(went_down.get_future().wait_for(5s) == std::future_status::ready);
  fx.containerd.after_reply(nullptr);
  const std::size_t before_restart = fx.containerd.count();
  CHECK(before_restart >= 7);
  CHECK(before_restart < 20);
  fx.containerd.stop();
  // While containerd is away, the forwarder retries and loses nothing.
  auto reconnects = fx.forwarder->stats().reconnects;
  REQUIRE(eventually([&] { return fx.forwarder->stats().reconnects >= reconnects + 2; }, 2s));
  CHECK(fx.containerd.count() == before_restart);

  fx.containerd.start();
  REQUIRE(fx.containerd.wait_for_count(20));
  fx.publish_exits(20, 3);
  REQUIRE(fx.containerd.wait_for_count(23));
  std::this_thread::sleep_for(100ms);
  auto received = fx.containerd.received();
  check_exits_in_order(received, 23);
  CHECK(received[before_restart - 1].generation == 1);
  CHECK(received[before_restart].generation == 2);
  CHECK(fx.forwarder->stats().sent == 23);
}

TEST_CASE("forwarder: an event containerd rejects is dropped and logged, later ones still go",
          "[forwarder]") {
  Fixture fx;
  fx.containerd.start();
  fx.forwarder->publish("/tasks/exit", exit_event(0));
  fx.forwarder->publish("/tasks/bad topic", exit_event(1));  // invalid for containerd
  fx.forwarder->publish("/tasks/exit", exit_event(2));
  REQUIRE(fx.containerd.wait_for_count(3));
  auto flushed = fx.flush(2s);
  CHECK(flushed.first);
  std::this_thread::sleep_for(100ms);  // a retry of the rejected event would show now

  auto received = fx.containerd.received();
  REQUIRE(received.size() == 3);  // the rejected one was sent exactly once, not retried
  CHECK(received[0].exit.pid() == 0);
  CHECK(received[1].topic == "/tasks/bad topic");
  CHECK_FALSE(received[1].accepted);
  CHECK(received[2].exit.pid() == 2);
  CHECK(received[2].accepted);
  auto stats = fx.forwarder->stats();
  CHECK(stats.sent == 2);
  CHECK(stats.rejected == 1);
  CHECK(stats.queued == 0);
  auto logged = fx.logs.matching("containerd rejected event");
  REQUIRE(logged.size() == 1);
  CHECK(logged[0].find("level=error") != std::string::npos);
  CHECK(logged[0].find("/tasks/bad topic") != std::string::npos);
  CHECK(logged[0].find("InvalidArgument") != std::string::npos);
}

TEST_CASE("forwarder: flush reports delivery, and gives up within its bound", "[forwarder]") {
  SECTION("nothing queued: at once, even with no containerd") {
    Fixture fx;
    auto [delivered, took] = fx.flush(2s);
    CHECK(delivered);
    CHECK(took < 500ms);
  }
  SECTION("containerd up: true only once all events are accepted") {
    Fixture fx;
    fx.containerd.start();
    fx.publish_exits(0, 50);
    auto [delivered, took] = fx.flush(3s);
    CHECK(delivered);
    CHECK(took < 3s);
    check_exits_in_order(fx.containerd.received(), 50);
  }
  SECTION("containerd down: false after the timeout, not much later") {
    Fixture fx;
    fx.publish_exits(0, 3);
    auto [delivered, took] = fx.flush(300ms);
    CHECK_FALSE(delivered);
    CHECK(took >= 290ms);
    CHECK(took < 1s);
    CHECK(fx.forwarder->stats().queued == 3);
    fx.forwarder->close();
    REQUIRE(eventually([&] { return !fx.logs.matching("undelivered events").empty(); }));
    CHECK(fx.logs.matching("undelivered events")[0].find("lost=3") != std::string::npos);
    // After close nothing can be delivered: a flush says so at once.
    auto after_close = fx.flush(5s);
    CHECK_FALSE(after_close.first);
    CHECK(after_close.second < 1s);
  }
  SECTION("each flush keeps its own timeout") {
    Fixture fx;
    fx.publish_exits(0, 2);
    auto long_result = std::make_shared<std::promise<bool>>();
    auto started = std::chrono::steady_clock::now();
    fx.forwarder->flush(10s, [long_result](bool delivered) { long_result->set_value(delivered); });
    auto [short_delivered, took] = fx.flush(150ms);
    CHECK_FALSE(short_delivered);
    auto long_future = long_result->get_future();
    // The short timeout must not end the long flush: it is still waiting ...
    CHECK(long_future.wait_for(200ms) == std::future_status::timeout);
    // ... and reports success once containerd comes up and takes the events.
    fx.containerd.start();
    REQUIRE(long_future.wait_for(5s) == std::future_status::ready);
    CHECK(long_future.get());
    CHECK(std::chrono::steady_clock::now() - started < 5s);
    check_exits_in_order(fx.containerd.received(), 2);
  }
}

TEST_CASE("forwarder: a destroyed forwarder stops retrying", "[forwarder]") {
  Fixture fx;
  fx.publish_exits(0, 1);
  REQUIRE(eventually([&] { return fx.forwarder->stats().reconnects >= 2; }, 2s));
  fx.forwarder.reset();
  // The events were lost (and said so); nothing keeps dialing containerd afterwards.
  REQUIRE(eventually([&] { return !fx.logs.matching("undelivered events").empty(); }));
  fx.containerd.start();
  std::this_thread::sleep_for(200ms);
  CHECK(fx.containerd.count() == 0);
}

TEST_CASE("forwarder: a full queue drops new events and logs them", "[forwarder]") {
  TempDir dir("fwd-");
  FixedClock clock;
  LogLines logs;
  Logger logger(logs.sink(), clock);
  IoThread io;
  EventForwarderOptions options;
  options.ttrpc_address = dir.sub("none.sock");
  options.ns = kNamespace;
  options.max_queued = 4;
  EventForwarder forwarder(io.executor(), options, clock, logger);
  for (std::uint32_t n = 0; n < 6; ++n) forwarder.publish("/tasks/exit", exit_event(n));
  auto stats = forwarder.stats();
  CHECK(stats.queued == 4);
  CHECK(stats.overflowed == 2);
  CHECK(logs.matching("event queue full").size() == 2);
  forwarder.close();
}

TEST_CASE("forwarder: at the bound an exit displaces the oldest non-exit event, in order",
          "[forwarder]") {
  Fixture fx(/*with_scheme=*/false, /*max_queued=*/4);
  containerd::events::TaskStart start;
  start.set_container_id("c1");
  fx.forwarder->publish("/tasks/start", start);  // the front: may be in flight, kept
  fx.forwarder->publish("/tasks/exit", exit_event(0));
  fx.forwarder->publish("/tasks/start", start);  // displaced by exit 2
  fx.forwarder->publish("/tasks/exit", exit_event(1));
  fx.forwarder->publish("/tasks/exit", exit_event(2));
  fx.forwarder->publish("/tasks/exit", exit_event(3));  // only exits after the front: dropped
  fx.forwarder->publish("/tasks/start", start);         // full: dropped
  auto stats = fx.forwarder->stats();
  CHECK(stats.queued == 4);
  CHECK(stats.overflowed == 3);
  CHECK(fx.logs.matching("dropping an older event for an exit").size() == 1);
  CHECK(fx.logs.matching("event queue full, dropping event").size() == 2);
  CHECK(fx.logs.matching("topic=/tasks/exit").size() == 1);

  fx.containerd.start();
  REQUIRE(fx.containerd.wait_for_count(4));
  std::this_thread::sleep_for(100ms);
  auto got = fx.containerd.received();
  REQUIRE(got.size() == 4);
  CHECK(got[0].topic == "/tasks/start");
  for (std::uint32_t n = 0; n < 3; ++n) {
    CHECK(got[n + 1].topic == "/tasks/exit");
    CHECK(got[n + 1].exit.id() == fmt::format("p{}", n));
  }
  CHECK(fx.forwarder->stats().queued_bytes == 0);
}

TEST_CASE("forwarder: the byte bound holds too", "[forwarder]") {
  TempDir dir("fwd-");
  FixedClock clock;
  LogLines logs;
  Logger logger(logs.sink(), clock);
  IoThread io;
  EventForwarderOptions options;
  options.ttrpc_address = dir.sub("none.sock");
  options.ns = kNamespace;
  options.max_queued_bytes = 1000;
  EventForwarder forwarder(io.executor(), options, clock, logger);
  for (std::uint32_t n = 0; n < 100; ++n) forwarder.publish("/tasks/exit", exit_event(n));
  auto stats = forwarder.stats();
  CHECK(stats.queued_bytes <= 1000);
  CHECK(stats.queued_bytes > 800);
  CHECK(stats.queued + stats.overflowed == 100);
  CHECK(logs.matching("event queue full").size() == stats.overflowed);
  forwarder.close();
}

}  // namespace
}  // namespace shim
