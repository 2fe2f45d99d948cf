// Skipping a test case in a way both Catch2 v2 (which has no SKIP) and ctest can see:
// the case WARNs and returns early (it passes when run by hand), and a marker line on
// stdout makes ctest report it as "Skipped" (SKIP_REGULAR_EXPRESSION in
// tests/CMakeLists.txt). See tests/README.md.
#pragma once

#include <iostream>
#include <string>
#include <string_view>

namespace shim::test {

// Matched by the SKIP_REGULAR_EXPRESSION of the integration tests.
inline constexpr std::string_view kSkipMarker = "LIBSHIM-TEST-SKIPPED";

// Prints "<marker>: <reason>" on its own line.
inline void announce_skip(std::string_view reason) {
  std::cout << kSkipMarker << ": " << reason << std::endl;
}

}  // namespace shim::test

// In a TEST_CASE body (catch.hpp included): skip the rest of the case with `reason`.
#define LIBSHIM_SKIP(reason)                       \
  do {                                             \
    const std::string libshim_skip_why{reason};    \
    ::shim::test::announce_skip(libshim_skip_why); \
    WARN(libshim_skip_why);                        \
    return;                                        \
  } while (false)
