// check_same_observations() apart from cri_pod.cpp: it needs Catch's runner, which the
// benchmark (benchmarks/cri/pods_at_scale.cpp) does not link.
#include <catch2/catch.hpp>

#include "cri_pod.h"

namespace shim::test::cri {

void check_same_observations(const Observed& ours, const Observed& go) {
  for (const auto& [key, value] : ours) {
    INFO("observation \"" << key << "\": ours \"" << value << "\"");
    auto it = go.find(key);
    REQUIRE(it != go.end());
    // A duration, or what depends on timing: bounded by the test, per side.
    if (key.ends_with(" (s)") || key.ends_with(" (timing)")) continue;
    CHECK(it->second == value);
  }
  for (const auto& [key, value] : go) {
    INFO("observation \"" << key << "\" only the Go shim's side has (\"" << value << "\")");
    CHECK(ours.count(key) == 1);
  }
}

void check_same_as_go(std::map<Side, Observed>& seen) {
  for (auto& [side, observed] : seen) {
    if (side == Side::go) continue;
    INFO("side " << side_name(side) << " against the Go shim's");
    check_same_observations(observed, seen[Side::go]);
  }
}

}  // namespace shim::test::cri
