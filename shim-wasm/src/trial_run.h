// A piece of work tried first in a forked child of the caller, under bounds of memory and
// time, before the caller does it for real.
//
// The zygote instantiates modules from containers' images outside every cgroup, for
// every container of the shim. What a module costs the engine to load, validate and
// instantiate depends on more than a static check of its bytes can follow (a block
// type's arity times the blocks of that type, the labels of a br_table...): fork_ready.h
// keeps out what it can see, and a trial in a child measures the rest. What counts is
// the child's growth in anonymous memory (sampled every `sample_every`; and its own
// peak, checked when the attempt returns, less the file pages it holds then) and the
// CPU time it uses; past either it is killed (or, for its peak, fails). A wall-clock
// backstop ends a child that waits (for the CPU, under load) too long. The child writes
// no core.
//
// Threading: the calling process's only thread (a fork copies only the caller's; the
// zygote is single-threaded). The attempt runs in the child, which then _exits.
#pragma once

#include <chrono>
#include <cstddef>
#include <functional>

namespace shim_wasm {

struct TrialBounds {
  std::size_t max_growth_bytes = 64u << 20;
  std::chrono::milliseconds max_cpu{500};
  std::chrono::milliseconds max_wall{2000};
  // How often the parent samples the child.
  std::chrono::milliseconds sample_every{2};
};

struct TrialOutcome {
  enum class Result {
    kDone,      // attempt() returned true
    kFailed,    // it returned false
    kTooLarge,  // killed: it grew past max_growth_bytes (or its peak did)
    kTooSlow,   // killed: it used more than max_cpu of CPU
    kTimedOut,  // killed: it ran past max_wall (a busy machine can do that)
    kCrashed,   // it died of a signal of its own, exited with no answer of the attempt's,
                // or could not be waited for
    kNoChild,   // fork failed (errno in `error`)
  };
  Result result = Result::kFailed;
  std::size_t peak_growth_bytes = 0;  // the most the samples saw it grow
  double ms = 0;                      // wall-clock time
  int error = 0;
};

// Runs `attempt` in a forked child (killed as well if the caller dies) and waits for it
// within `bounds`.
TrialOutcome run_trial(const std::function<bool()>& attempt, const TrialBounds& bounds);

}  // namespace shim_wasm
