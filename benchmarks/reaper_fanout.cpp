// reaper_fanout: how fast SignalfdReaper collects a burst of exits and hands each one to
// every subscriber.
//
// Each round spawns K children (/bin/cat reading one shared pipe), then closes the
// pipe's write end so that all of them exit at once: their SIGCHLDs coalesce and the
// reaper has to loop waitpid() to collect them. S subscribers each receive every exit,
// either on the reaper's own loop thread or on a second io_context thread (the "slow
// consumer" placement). Reported per (S, placement), medians over the rounds:
//   * burst drain: from closing the pipe until the last subscriber got the last exit;
//   * exits/s: K / burst drain;
//   * reap -> delivery p50/p99: from the reaper's exited_at stamp to the callback (the
//     fan-out's own cost, without the kernel's process teardown);
//   * SIGCHLD wake-ups per burst (how much coalescing happened).
//
//   reaper_fanout [children-per-burst=100] [rounds=5]
#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <future>
#include <memory>
#include <thread>
#include <vector>

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>

#include "process/posix_spawner.h"
#include "process/signal_watcher.h"
#include "process/signalfd_reaper.h"

namespace {

namespace asio = boost::asio;
using SystemClock = std::chrono::system_clock;

class IoThread {
 public:
  IoThread() : work_(asio::make_work_guard(context_)), thread_([this] { context_.run(); }) {}
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

double percentile(std::vector<double> values, double p) {
  if (values.empty()) return 0;
  std::sort(values.begin(), values.end());
  return values[static_cast<std::size_t>(p * static_cast<double>(values.size() - 1))];
}

double micros(SystemClock::duration d) {
  return std::chrono::duration<double, std::micro>(d).count();
}

struct Round {
  double drain_ms = 0;
  std::uint64_t wakeups = 0;
  std::vector<double> reap_to_delivery_us;
};

struct Burst {
  std::vector<pid_t> pids;
  int write_end = -1;
};

// K children blocked reading one pipe; they all exit once `write_end` is closed.
Burst spawn_burst(shim::Spawner& spawner, int children) {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) {
    std::perror("pipe2");
    std::exit(1);
  }
  Burst burst;
  burst.write_end = fds[1];
  shim::SpawnRequest request;
  request.path = "/bin/cat";
  request.fds = {{0, fds[0]}};
  for (int i = 0; i < children; ++i) {
    shim::SpawnedProcess process;
    if (shim::Status status = spawner.spawn(request, &process); !status.ok()) {
      std::fprintf(stderr, "spawn: %s\n", status.to_string().c_str());
      std::exit(1);
    }
    burst.pids.push_back(process.pid);
  }
  ::close(fds[0]);
  return burst;
}

Round run_round(shim::SignalfdReaper& reaper, shim::Spawner& spawner,
                asio::any_io_executor consumer, bool on_loop, int subscribers, int children) {
  struct Receiver {
    std::vector<double> latencies_us;
  };
  std::vector<Receiver> receivers(static_cast<std::size_t>(subscribers));
  std::atomic<int> remaining{subscribers * children};
  std::promise<SystemClock::time_point> done;

  std::vector<shim::Subscription> subscriptions;
  for (auto& receiver : receivers) {
    auto callback = [&receiver, &remaining, &done](const shim::ProcessExit& exit) {
      auto now = SystemClock::now();
      receiver.latencies_us.push_back(micros(now - exit.exited_at));
      if (remaining.fetch_sub(1) == 1) done.set_value(now);
    };
    subscriptions.push_back(on_loop ? reaper.subscribe(callback)
                                    : reaper.subscribe(consumer, callback));
  }

  Burst burst = spawn_burst(spawner, children);
  auto wakeups_before = reaper.stats().wakeups;
  auto released = SystemClock::now();
  ::close(burst.write_end);
  auto finished = done.get_future().get();
  Round round;
  round.drain_ms = micros(finished - released) / 1000.0;
  round.wakeups = reaper.stats().wakeups - wakeups_before;
  subscriptions.clear();
  for (auto& receiver : receivers) {
    round.reap_to_delivery_us.insert(round.reap_to_delivery_us.end(),
                                     receiver.latencies_us.begin(), receiver.latencies_us.end());
  }
  return round;
}

}  // namespace

int main(int argc, char** argv) {
  int children = argc > 1 ? std::atoi(argv[1]) : 100;
  int rounds = argc > 2 ? std::atoi(argv[2]) : 5;

  // Before any thread exists, as a shim's main() does (see signalfd_reaper.h).
  if (auto status = shim::SignalWatcher::block_in_this_thread({SIGCHLD}); !status.ok()) {
    std::fprintf(stderr, "block: %s\n", status.to_string().c_str());
    return 1;
  }
  asio::io_context loop;
  shim::SignalWatcher signals(loop.get_executor());
  shim::ReaperOptions options;
  options.child_subreaper = false;
  options.now = [] { return SystemClock::now(); };
  shim::SignalfdReaper reaper(loop.get_executor(), signals, options);
  if (auto status = reaper.start(); !status.ok()) {
    std::fprintf(stderr, "reaper: %s\n", status.to_string().c_str());
    return 1;
  }
  auto loop_work = asio::make_work_guard(loop);  // idle between rounds: keep run() going
  std::thread loop_thread([&loop] { loop.run(); });
  shim::PosixSpawner spawner;

  std::printf("SignalfdReaper fan-out: bursts of %d simultaneous child exits, %d rounds per row "
              "(medians)\n\n",
              children, rounds);
  std::printf("| subscribers | delivered on | burst drain ms | exits/s | reap->delivery p50 µs | "
              "reap->delivery p99 µs | SIGCHLD wake-ups/burst |\n");
  std::printf("|---:|---|---:|---:|---:|---:|---:|\n");
  {
    IoThread consumer;
    for (bool on_loop : {true, false}) {
      for (int subscribers : {1, 4, 16}) {
        std::vector<double> drains, wakeups, latencies;
        for (int r = 0; r < rounds; ++r) {
          Round round = run_round(reaper, spawner, consumer.executor(), on_loop, subscribers,
                                  children);
          drains.push_back(round.drain_ms);
          wakeups.push_back(static_cast<double>(round.wakeups));
          latencies.insert(latencies.end(), round.reap_to_delivery_us.begin(),
                           round.reap_to_delivery_us.end());
        }
        double drain = percentile(drains, 0.5);
        std::printf("| %d | %s | %.2f | %.0f | %.1f | %.1f | %.0f |\n", subscribers,
                    on_loop ? "reaper loop" : "other thread", drain,
                    children / (drain / 1000.0), percentile(latencies, 0.5),
                    percentile(latencies, 0.99), percentile(wakeups, 0.5));
      }
    }
  }
  // The signalfd keeps a read pending, so the loop is stopped rather than left to drain.
  asio::post(loop, [&] {
    reaper.stop();
    signals.close();
    loop.stop();
  });
  loop_thread.join();
  return 0;
}
