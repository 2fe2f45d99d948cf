// Catch2's runtime without its main(), for cri_pods_bench: the bench uses the fixture,
// whose destructor reports sanitizer findings through FAIL_CHECK (never reached there:
// the bench runs no sanitized shims).
#define CATCH_CONFIG_RUNNER
#include <catch2/catch.hpp>
