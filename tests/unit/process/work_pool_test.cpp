#include <pthread.h>
#include <signal.h>

#include <atomic>
#include <chrono>
#include <future>
#include <mutex>
#include <set>
#include <string>
#include <thread>

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <catch2/catch.hpp>

#include "shim/process/work_pool.h"

using namespace std::chrono_literals;

TEST_CASE("WorkPool runs jobs on a bounded set of threads", "[pool]") {
  shim::WorkPool pool(2);
  CHECK(pool.thread_count() == 0);  // threads start on demand
  std::mutex mu;
  std::set<std::thread::id> threads;
  std::atomic<int> ran{0};
  std::atomic<int> concurrent{0};
  std::atomic<int> max_concurrent{0};
  for (int i = 0; i < 200; ++i) {
    REQUIRE(pool.post([&] {
      int now = ++concurrent;
      int seen = max_concurrent.load();
      while (now > seen && !max_concurrent.compare_exchange_weak(seen, now)) {
      }
      {
        std::lock_guard lock(mu);
        threads.insert(std::this_thread::get_id());
      }
      std::this_thread::sleep_for(100us);
      --concurrent;
      ++ran;
    }));
  }
  pool.stop();  // runs what is queued, then joins
  CHECK(ran.load() == 200);
  CHECK(threads.size() <= 2);
  CHECK(threads.count(std::this_thread::get_id()) == 0);
  CHECK(max_concurrent.load() <= 2);
  CHECK(pool.thread_count() == 0);  // stop() waited for every thread to leave
  CHECK_FALSE(pool.post([] {}));
  pool.stop();  // idempotent
}

TEST_CASE("WorkPool threads block every signal and survive throwing jobs", "[pool]") {
  shim::WorkPool pool(1);
  std::promise<bool> all_blocked;
  pool.post([] { throw std::runtime_error("job failed"); });
  pool.post([&] {
    sigset_t mask;
    pthread_sigmask(SIG_SETMASK, nullptr, &mask);
    all_blocked.set_value(sigismember(&mask, SIGCHLD) == 1 && sigismember(&mask, SIGTERM) == 1 &&
                          sigismember(&mask, SIGPIPE) == 1);
  });
  auto result = all_blocked.get_future();
  REQUIRE(result.wait_for(10s) == std::future_status::ready);
  CHECK(result.get());
  pool.stop();
  CHECK(pool.failed_jobs() == 1);
  // The creating thread's own mask is unchanged.
  sigset_t mine;
  pthread_sigmask(SIG_SETMASK, nullptr, &mine);
  CHECK(sigismember(&mine, SIGTERM) == 0);
}

TEST_CASE("post_and_reply delivers results on the loop", "[pool]") {
  boost::asio::io_context loop;
  auto guard = boost::asio::make_work_guard(loop);
  shim::WorkPool pool(2);
  std::thread::id loop_thread = std::this_thread::get_id();
  std::thread::id work_thread;
  std::string reply_value;
  bool reply_on_loop = false;
  bool void_reply = false;
  int replies = 0;
  REQUIRE(shim::post_and_reply(
      pool, loop.get_executor(),
      [&] {
        work_thread = std::this_thread::get_id();
        return std::string("done");
      },
      [&](std::string value) {
        reply_value = std::move(value);
        reply_on_loop = std::this_thread::get_id() == loop_thread;
        if (++replies == 2) guard.reset();
      }));
  REQUIRE(shim::post_and_reply(
      pool, loop.get_executor(), [] {},
      [&] {
        void_reply = true;
        if (++replies == 2) guard.reset();
      }));
  loop.run_for(10s);
  CHECK(replies == 2);
  CHECK(reply_value == "done");
  CHECK(reply_on_loop);
  CHECK(void_reply);
  CHECK(work_thread != loop_thread);
}

TEST_CASE("WorkPool threads leave after the idle timeout and come back on demand", "[pool]") {
  shim::WorkPool pool(2, 50ms);
  std::promise<void> ran;
  pool.post([&] { ran.set_value(); });
  ran.get_future().wait();
  CHECK(pool.thread_count() == 1);  // one job, one thread
  auto deadline = std::chrono::steady_clock::now() + 5s;
  while (pool.thread_count() != 0 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(10ms);
  }
  CHECK(pool.thread_count() == 0);
  std::promise<void> again;
  REQUIRE(pool.post([&] { again.set_value(); }));
  CHECK(again.get_future().wait_for(5s) == std::future_status::ready);
  pool.stop();
  CHECK(pool.thread_count() == 0);
}

TEST_CASE("WorkPool runs the thread-start hook first on threads started after it is set",
          "[work_pool]") {
  shim::WorkPool pool(1, std::chrono::milliseconds(50));
  std::atomic<int> hooks{0};
  std::promise<void> first;
  REQUIRE(pool.post([&] { first.set_value(); }));
  first.get_future().wait();
  pool.set_thread_start([&] { hooks.fetch_add(1); });
  // The running thread is older than the hook: it never runs it.
  std::promise<int> seen;
  REQUIRE(pool.post([&] { seen.set_value(hooks.load()); }));
  CHECK(seen.get_future().get() == 0);
  // Once it retired, the next thread runs the hook before its job.
  while (pool.thread_count() != 0) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  std::promise<int> later;
  REQUIRE(pool.post([&] { later.set_value(hooks.load()); }));
  CHECK(later.get_future().get() == 1);
}

TEST_CASE("WorkPool: a brief job's thread leaves at once unless it is the last one", "[pool]") {
  shim::WorkPool pool(2);
  std::promise<void> release;
  std::shared_future<void> released = release.get_future().share();
  REQUIRE(pool.post([released] { released.wait(); }));  // holds one thread
  std::atomic<bool> brief_ran{false};
  REQUIRE(pool.post_brief([&] { brief_ran = true; }));  // on a second thread
  for (int i = 0; i < 200 && !(brief_ran && pool.thread_count() == 1); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  CHECK(brief_ran);
  CHECK(pool.thread_count() == 1);  // the brief job's thread left; the other stays
  release.set_value();

  // Alone, a brief job's thread stays for the next job, as any other.
  shim::WorkPool solo(2);
  std::atomic<bool> second_ran{false};
  REQUIRE(solo.post_brief([&] { second_ran = true; }));
  for (int i = 0; i < 200 && !second_ran; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  REQUIRE(second_ran);
  bool left = false;
  for (int i = 0; i < 40 && !left; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
    left = solo.thread_count() != 1;
  }
  CHECK_FALSE(left);
}
