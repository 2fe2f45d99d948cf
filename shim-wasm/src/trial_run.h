// A piece of work tried first in a forked copy of the caller, under bounds of memory and
// time, before the caller does it for real.
//
// The zygote instantiates modules from containers' images outside every cgroup, for
// every container of the shim. What a module costs the engine to load, validate and
// instantiate depends on more than a static check of its bytes can follow (a block
// type's arity times the blocks of that type, the labels of a br_table...): fork_ready.h
// keeps out what it can see, and a trial in a child measures the rest. The child's
// growth is what counts: the memory it adds to the caller's (resident, not shared with
// a file), sampled every 2 ms, and the time it runs; past either it is killed. A
// peak between samples fails it too, at its end.
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
  std::chrono::milliseconds max_time{500};
  // How often the parent samples the child (its peak between samples is counted when
  // it ends, from the child's own high-water mark).
  std::chrono::milliseconds sample_every{2};
};

struct TrialOutcome {
  enum class Result {
    kDone,      // attempt() returned true
    kFailed,    // it returned false, or the child died of a signal of its own
    kTooLarge,  // killed: it grew past max_growth_bytes
    kTooSlow,   // killed: it ran past max_time
    kNoChild,   // fork failed (errno in `error`)
  };
  Result result = Result::kFailed;
  std::size_t peak_growth_bytes = 0;  // the most it was seen to have grown
  double ms = 0;
  int error = 0;
};

// Runs `attempt` in a forked child (killed as well if the caller dies) and waits for it
// within `bounds`.
TrialOutcome run_trial(const std::function<bool()>& attempt, const TrialBounds& bounds);

}  // namespace shim_wasm
