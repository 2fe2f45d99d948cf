// shim-wasm/src/trial_run.h: work tried in a forked child under bounds of memory and
// time, as the zygote tries a new module's load before it does it for real.
#include "trial_run.h"

#include <signal.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <thread>
#include <vector>

#include <catch2/catch.hpp>

#include "shim/unique_fd.h"

namespace {

using shim_wasm::run_trial;
using shim_wasm::TrialBounds;
using Result = shim_wasm::TrialOutcome::Result;

TEST_CASE("run_trial: the child's answer, and nothing of its writes", "[wasm][trial]") {
  int touched = 0;
  CHECK(run_trial([&touched] { return ++touched == 1; }, TrialBounds{}).result == Result::kDone);
  CHECK(touched == 0);  // the child's copy changed, not ours
  CHECK(run_trial([] { return false; }, TrialBounds{}).result == Result::kFailed);
  CHECK(run_trial([]() -> bool { throw std::runtime_error("x"); }, TrialBounds{}).result ==
        Result::kFailed);
}

// A crash is not a failure the real run would report: the caller must not repeat it.
TEST_CASE("run_trial: a child that dies of a signal crashed", "[wasm][trial]") {
  CHECK(run_trial(
            []() -> bool {
              std::signal(SIGABRT, SIG_DFL);  // not Catch's handler, which would report
              std::abort();
            },
            TrialBounds{})
            .result == Result::kCrashed);
  CHECK(run_trial(
            [] {
              ::raise(
                  SIGKILL);  // the OOM killer's way (no sanitizer's handler turns it into an exit)
              return true;
            },
            TrialBounds{})
            .result == Result::kCrashed);
}

// 256 MiB written in the child against a 32 MiB bound: killed on the way (sampled), or
// found by its peak at the end, never answered as done.
TEST_CASE("run_trial: a child that grows past the bound is killed", "[wasm][trial]") {
  const auto began = std::chrono::steady_clock::now();
  auto outcome = run_trial(
      [] {
        std::vector<char*> blocks;
        for (int i = 0; i < 256; ++i) {
          blocks.push_back(new char[1u << 20]);
          std::memset(blocks.back(), 1, 1u << 20);
        }
        return true;
      },
      TrialBounds{32u << 20, std::chrono::seconds(20), std::chrono::seconds(20)});
  CHECK(outcome.result == Result::kTooLarge);
  CHECK(outcome.peak_growth_bytes > (32u << 20));
  CHECK(std::chrono::steady_clock::now() - began < std::chrono::seconds(10));
}

// A spike the parent's samples miss (64 MiB written and freed at once, after the first
// sample; the next is a minute later) is found by the child's own peak at its end.
TEST_CASE("run_trial: a spike between samples counts", "[wasm][trial]") {
  // Without a pidfd the parent would sleep out its minute before it saw the end.
  if (shim::UniqueFd probe(static_cast<int>(::syscall(SYS_pidfd_open, ::getpid(), 0)));
      probe.get() < 0) {
    WARN("no pidfd_open: the spike test is skipped");
    return;
  }
  auto outcome = run_trial(
      [] {
        std::this_thread::sleep_for(std::chrono::milliseconds(300));
        for (int round = 0; round < 4; ++round) {
          // Through a volatile pointer: a compiler may drop an allocation nobody reads.
          char* volatile block = static_cast<char*>(std::malloc(64u << 20));
          if (block == nullptr) return false;
          std::memset(block, 1, 64u << 20);
          std::free(block);  // glibc unmaps a block this large at once
        }
        return true;
      },
      TrialBounds{32u << 20, std::chrono::seconds(100), std::chrono::seconds(100),
                  std::chrono::seconds(60)});
  CHECK(outcome.result == Result::kTooLarge);
  CHECK(outcome.peak_growth_bytes < (32u << 20));  // the samples saw none of it
  CHECK(outcome.ms < 30000);                       // its end woke the parent
}

// CPU time is the bound (a spinning child); waiting counts only against the wall clock's
// backstop (a sleeping child).
TEST_CASE("run_trial: a child that uses too much CPU, or waits too long, is killed",
          "[wasm][trial]") {
  auto spinning = run_trial(
      []() -> bool {
        volatile unsigned long spins = 0;
        for (;;) spins = spins + 1;
      },
      TrialBounds{64u << 20, std::chrono::milliseconds(100), std::chrono::seconds(60)});
  CHECK(spinning.result == Result::kTooSlow);
  CHECK(spinning.ms >= 100);
  CHECK(spinning.ms < 30000);
  auto sleeping = run_trial(
      [] {
        std::this_thread::sleep_for(std::chrono::seconds(5));
        return true;
      },
      TrialBounds{64u << 20, std::chrono::milliseconds(100), std::chrono::milliseconds(300)});
  CHECK(sleeping.result == Result::kTimedOut);
  CHECK(sleeping.ms >= 300);
  CHECK(sleeping.ms < 3000);
}

}  // namespace
