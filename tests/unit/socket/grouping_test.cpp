#include <fstream>
#include <string>

#include <catch2/catch.hpp>

#include "socket/grouping.h"
#include "support/temp_dir.h"

namespace {

std::string group_of(const std::string& config, const std::string& id = "t1") {
  std::string group = "unset";
  shim::Status status = shim::group_id(config, id, &group);
  INFO(status.to_string());
  REQUIRE(status.ok());
  return group;
}

shim::Status group_error(const std::string& config) {
  std::string group = "unset";
  shim::Status status = shim::group_id(config, "t1", &group);
  CHECK(status.code() == shim::Code::kInvalidArgument);
  CHECK_THAT(status.message(), Catch::Contains("config.json"));
  CHECK(group == "unset");
  return status;
}

}  // namespace

TEST_CASE("grouping: the task id when no group annotation is present", "[grouping]") {
  CHECK(group_of(R"({"ociVersion":"1.0.2","process":{"args":["sh"]}})") == "t1");
  CHECK(group_of(R"({"annotations":{"other":"x"}})") == "t1");
  CHECK(group_of(R"({"annotations":null})") == "t1");
  CHECK(group_of("null") == "t1");
}

TEST_CASE("grouping: the first present annotation wins", "[grouping]") {
  CHECK(group_of(R"({"annotations":{"io.containerd.runc.v2.group":"g1"}})") == "g1");
  CHECK(group_of(R"({"annotations":{"io.kubernetes.cri.sandbox-id":"pod1"}})") == "pod1");
  // The runc group annotation comes first in the list, whatever the JSON order.
  CHECK(group_of(R"({"annotations":{"io.kubernetes.cri.sandbox-id":"pod1",
                                    "io.containerd.runc.v2.group":"g1"}})") == "g1");
  // Present but empty still counts (Go tests presence, not emptiness).
  CHECK(group_of(R"({"annotations":{"io.containerd.runc.v2.group":"",
                                    "io.kubernetes.cri.sandbox-id":"pod1"}})")
            .empty());
}

TEST_CASE("grouping: the annotation list is a parameter", "[grouping]") {
  const std::string config =
      R"({"annotations":{"io.example.vm-id":"vm7","io.kubernetes.cri.sandbox-id":"pod1"}})";
  std::string group;
  REQUIRE(shim::group_id(config, "t1", &group, {"io.example.vm-id"}).ok());
  CHECK(group == "vm7");
  REQUIRE(shim::group_id(config, "t1", &group, {}).ok());
  CHECK(group == "t1");
  CHECK(shim::default_group_annotations() ==
        std::vector<std::string>{"io.containerd.runc.v2.group", "io.kubernetes.cri.sandbox-id"});
}

TEST_CASE("grouping: an unreadable spec is an error, as it fails the Go shim's start",
          "[grouping]") {
  CHECK_THAT(group_error("").message(), Catch::StartsWith("read OCI spec (config.json): "));
  CHECK_FALSE(group_error("{\"annotations\":").ok());
  CHECK_FALSE(group_error("{annotations:{}}").ok());
  CHECK_FALSE(group_error("[1,2]").ok());
  CHECK_FALSE(group_error(R"({"annotations":["a"]})").ok());
  CHECK_THAT(group_error(R"({"annotations":{"io.containerd.runc.v2.group":7}})").message(),
             Catch::Contains("io.containerd.runc.v2.group"));
}

TEST_CASE("grouping: Go decoder details", "[grouping]") {
  // json.Decoder reads the first value only.
  CHECK(group_of(R"({"annotations":{"io.containerd.runc.v2.group":"g"}} trailing)") == "g");
  // Invalid UTF-8 becomes U+FFFD, so the socket hash matches the Go shim's.
  CHECK(group_of("{\"annotations\":{\"io.containerd.runc.v2.group\":\"a\xff\"}}") ==
        "a\xEF\xBF\xBD");
  // Deeper than Boost's default depth limit of 32; Go allows 10000.
  std::string deep = R"({"annotations":{"io.containerd.runc.v2.group":"deep"},"x":)";
  deep += std::string(100, '[') + std::string(100, ']') + "}";
  CHECK(group_of(deep) == "deep");
}

TEST_CASE("grouping: a bundle without config.json is grouped by the task id", "[grouping]") {
  // containerd 2.x's shim-mode sandbox controller starts the shim in such a bundle (CRI's
  // pods have no spec then).
  shim::test::TempDir dir("grouping-");
  std::string group = "unset";
  REQUIRE(shim::bundle_group_id(dir.path(), "sb1", &group).ok());
  CHECK(group == "sb1");

  std::ofstream(dir.sub("config.json"))
      << R"({"annotations":{"io.kubernetes.cri.sandbox-id":"p"}})";
  REQUIRE(shim::bundle_group_id(dir.path(), "c1", &group).ok());
  CHECK(group == "p");

  // A config.json that is there but unreadable or malformed still fails start.
  std::ofstream(dir.sub("config.json"), std::ios::trunc) << "{";
  shim::Status malformed = shim::bundle_group_id(dir.path(), "c1", &group);
  CHECK(malformed.code() == shim::Code::kInvalidArgument);
  shim::Status not_a_bundle = shim::bundle_group_id(dir.sub("config.json"), "c1", &group);
  CHECK_FALSE(not_a_bundle.ok());
  CHECK(not_a_bundle.code() != shim::Code::kNotFound);
}

TEST_CASE("grouping: a shared group takes the containers no annotation groups", "[grouping]") {
  const auto& annotations = shim::default_group_annotations();
  auto shared_of = [&](const std::string& config) {
    std::string group = "unset";
    REQUIRE(shim::group_id(config, "t1", &group, annotations, "shared").ok());
    return group;
  };
  CHECK(shared_of(R"({"process":{"args":["/hello.wasm"]}})") == "shared");
  CHECK(shared_of(R"({"annotations":{"other":"x"}})") == "shared");
  CHECK(shared_of(R"({"annotations":null})") == "shared");
  CHECK(shared_of("null") == "shared");
  // A pod's containers stay in the pod's shim, and a container may ask for its own.
  CHECK(shared_of(R"({"annotations":{"io.kubernetes.cri.sandbox-id":"pod1"}})") == "pod1");
  CHECK(shared_of(R"({"annotations":{"io.containerd.runc.v2.group":"t1"}})") == "t1");

  // A sandbox's bundle (no config.json) is never shared.
  shim::test::TempDir dir("grouping-");
  std::string group = "unset";
  REQUIRE(shim::bundle_group_id(dir.path(), "sb1", &group, annotations, "shared").ok());
  CHECK(group == "sb1");
  std::ofstream(dir.sub("config.json")) << R"({"annotations":{}})";
  REQUIRE(shim::bundle_group_id(dir.path(), "c1", &group, annotations, "shared").ok());
  CHECK(group == "shared");
}
