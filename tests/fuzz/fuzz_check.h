// FUZZ_CHECK: the fuzz targets' assertions. A failed check prints what failed and aborts,
// which libFuzzer reports as a crash and keeps the input as an artifact.
#pragma once

#include <cstdio>
#include <cstdlib>

namespace fuzz {

[[noreturn]] inline void check_failed(const char* condition, const char* file, int line) {
  std::fprintf(stderr, "FUZZ_CHECK failed: %s (%s:%d)\n", condition, file, line);
  std::abort();
}

}  // namespace fuzz

// A macro for the condition's text and location in the report.
#define FUZZ_CHECK(condition)                                                 \
  do {                                                                        \
    if (!(condition)) ::fuzz::check_failed(#condition, __FILE__, __LINE__);   \
  } while (false)
