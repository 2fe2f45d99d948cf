// ttrpc unary round trip over a unix socket: TtrpcServer on one thread + io_context,
// TtrpcClient on another. Closed loop with 1 and 16 concurrent callers; prints p50/p99
// latency, calls/s, and heap bytes/allocations per call (server and client side, counted
// by the replaced global operator new below, attributed by thread).
//
//   ttrpc_roundtrip [seconds-per-run=2] [payload-bytes=128]
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <future>
#include <new>
#include <string>
#include <thread>
#include <vector>

#include <stdlib.h>

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <fmt/format.h>

#include "shim/ttrpc/client.h"
#include "shim/ttrpc/router.h"
#include "ttrpc/server.h"

// ---- allocation counting (this binary only) ----------------------------------------

namespace {

enum Side { kOther = 0, kServer = 1, kClient = 2 };
thread_local Side current_side = kOther;

struct AllocCounters {
  std::atomic<std::uint64_t> bytes[3];
  std::atomic<std::uint64_t> count[3];
};
AllocCounters counters;

void count_allocation(std::size_t size) {
  counters.bytes[current_side].fetch_add(size, std::memory_order_relaxed);
  counters.count[current_side].fetch_add(1, std::memory_order_relaxed);
}

}  // namespace

// noinline: once inlined, GCC pairs our malloc/free with new/delete expressions and
// reports -Wmismatched-new-delete.
#define BENCH_NOINLINE __attribute__((noinline))
BENCH_NOINLINE void* operator new(std::size_t size) {
  count_allocation(size);
  if (void* p = std::malloc(size == 0 ? 1 : size)) return p;
  throw std::bad_alloc();
}
BENCH_NOINLINE void* operator new[](std::size_t size) { return operator new(size); }
BENCH_NOINLINE void* operator new(std::size_t size, const std::nothrow_t&) noexcept {
  count_allocation(size);
  return std::malloc(size == 0 ? 1 : size);
}
BENCH_NOINLINE void* operator new[](std::size_t size, const std::nothrow_t& tag) noexcept {
  return operator new(size, tag);
}
BENCH_NOINLINE void operator delete(void* p) noexcept { std::free(p); }
BENCH_NOINLINE void operator delete[](void* p) noexcept { std::free(p); }
BENCH_NOINLINE void operator delete(void* p, std::size_t) noexcept { std::free(p); }
BENCH_NOINLINE void operator delete[](void* p, std::size_t) noexcept { std::free(p); }

// ---- benchmark --------------------------------------------------------------------

namespace {

namespace asio = boost::asio;
using Clock = std::chrono::steady_clock;
using namespace shim;

struct Snapshot {
  std::uint64_t bytes[3];
  std::uint64_t count[3];
  static Snapshot take() {
    Snapshot s{};
    for (int i = 0; i < 3; ++i) {
      s.bytes[i] = counters.bytes[i].load();
      s.count[i] = counters.count[i].load();
    }
    return s;
  }
};

class IoThread {
 public:
  explicit IoThread(Side side)
      : work_(asio::make_work_guard(context_)), thread_([this, side] {
          current_side = side;
          context_.run();
        }) {}
  ~IoThread() {
    work_.reset();
    thread_.join();
  }
  asio::any_io_executor executor() { return context_.get_executor(); }

 private:
  asio::io_context context_;
  asio::executor_work_guard<asio::io_context::executor_type> work_;
  std::thread thread_;
};

struct Result {
  int callers;
  std::size_t calls;
  double seconds;
  double p50_us;
  double p99_us;
  double server_bytes, server_allocs, client_bytes, client_allocs;
};

// Runs `callers` closed-loop callers on the client executor for about `duration`.
Result run(ttrpc::TtrpcClient& client, asio::any_io_executor client_executor, int callers,
           std::chrono::duration<double> duration, const std::string& payload) {
  struct State {
    ttrpc::TtrpcClient* client;
    const std::string* payload;
    Clock::time_point stop_at;
    std::vector<double> latencies_us;
    int running = 0;
    bool failed = false;
    std::promise<void> done;
  };
  State state{&client, &payload, {}, {}, callers, false, {}};
  state.latencies_us.reserve(4'000'000);  // before counting starts

  auto done = state.done.get_future();
  Snapshot before{};
  Clock::time_point started;
  asio::post(client_executor, [&] {
    before = Snapshot::take();
    started = Clock::now();
    state.stop_at = started + std::chrono::duration_cast<Clock::duration>(duration);
    struct Caller {
      State* state;
      void issue() {
        auto t0 = Clock::now();
        state->client->call("bench.Echo", "Echo", *state->payload, {},
                            [self = *this, t0](Status status, std::string) mutable {
                              auto now = Clock::now();
                              if (!status.ok()) self.state->failed = true;
                              self.state->latencies_us.push_back(
                                  std::chrono::duration<double, std::micro>(now - t0).count());
                              if (now < self.state->stop_at && !self.state->failed &&
                                  self.state->latencies_us.size() < 3'900'000) {
                                self.issue();
                              } else if (--self.state->running == 0) {
                                self.state->done.set_value();
                              }
                            });
      }
    };
    for (int i = 0; i < callers; ++i) Caller{&state}.issue();
  });
  done.wait();
  auto elapsed = std::chrono::duration<double>(Clock::now() - started).count();
  Snapshot after = Snapshot::take();
  if (state.failed) {
    std::fprintf(stderr, "a call failed\n");
    std::exit(1);
  }

  auto& l = state.latencies_us;
  std::sort(l.begin(), l.end());
  auto percentile = [&l](double p) { return l[static_cast<std::size_t>(p * static_cast<double>(l.size() - 1))]; };
  double n = static_cast<double>(l.size());
  return Result{callers,
                l.size(),
                elapsed,
                percentile(0.50),
                percentile(0.99),
                static_cast<double>(after.bytes[kServer] - before.bytes[kServer]) / n,
                static_cast<double>(after.count[kServer] - before.count[kServer]) / n,
                static_cast<double>(after.bytes[kClient] - before.bytes[kClient]) / n,
                static_cast<double>(after.count[kClient] - before.count[kClient]) / n};
}

}  // namespace

int main(int argc, char** argv) {
  double seconds = argc > 1 ? std::atof(argv[1]) : 2.0;
  std::size_t payload_size = argc > 2 ? static_cast<std::size_t>(std::atol(argv[2])) : 128;
  std::string payload(payload_size, 'p');

  char dir_template[] = "/tmp/ttrpc-bench-XXXXXX";
  if (::mkdtemp(dir_template) == nullptr) return 1;
  std::string socket_path = std::string(dir_template) + "/s.sock";

  std::vector<Result> results;
  {
    IoThread server_io(kServer);
    IoThread client_io(kClient);

    ttrpc::Router router;
    router.add("bench.Echo", "Echo", [](const ttrpc::CallInfo&, std::string_view request,
                                        ttrpc::Responder responder) {
      responder.reply(std::string(request));
    });
    ttrpc::TtrpcServer server(server_io.executor(), std::move(router));
    if (Status status = server.serve_path(socket_path); !status.ok()) {
      std::fprintf(stderr, "serve: %s\n", status.to_string().c_str());
      return 1;
    }
    auto client = ttrpc::TtrpcClient::create(client_io.executor());
    std::promise<Status> connected;
    client->connect(socket_path, [&connected](Status status) { connected.set_value(status); });
    if (Status status = connected.get_future().get(); !status.ok()) {
      std::fprintf(stderr, "connect: %s\n", status.to_string().c_str());
      return 1;
    }

    run(*client, client_io.executor(), 16, std::chrono::duration<double>(0.3), payload);  // warm up
    for (int callers : {1, 16}) {
      results.push_back(run(*client, client_io.executor(), callers,
                            std::chrono::duration<double>(seconds), payload));
    }
    client->close();
    std::promise<void> stopped;
    server.shutdown([&stopped] { stopped.set_value(); });
    stopped.get_future().wait();
  }
  std::filesystem::remove_all(dir_template);

  std::printf("ttrpc unary round trip, %zu-byte request and reply, unix socket, server and client "
              "on separate threads\n\n",
              payload_size);
  std::printf("| callers | calls | calls/s | p50 µs | p99 µs | server B/call | server allocs/call | "
              "client B/call | client allocs/call |\n");
  std::printf("|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n");
  for (const auto& r : results) {
    std::printf("| %d | %zu | %.0f | %.1f | %.1f | %.0f | %.1f | %.0f | %.1f |\n", r.callers,
                r.calls, static_cast<double>(r.calls) / r.seconds, r.p50_us, r.p99_us,
                r.server_bytes, r.server_allocs, r.client_bytes, r.client_allocs);
  }
  return 0;
}
