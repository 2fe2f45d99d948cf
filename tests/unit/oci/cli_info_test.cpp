// -info: our RuntimeInfo fields compared with bytes the Go runc shim 2.1.9 printed on this
// machine (tests/data/info/README.md).
#include <fstream>
#include <map>
#include <sstream>
#include <string>

#include <catch2/catch.hpp>

#include "shim/oci/cli_info.h"
#include "shim/pb/runc/runc_options.pb.h"
#include "shim/pb/containerd/types.pb.h"
#include "support/action_context.h"

namespace {

std::string slurp(const std::string& name) {
  std::ifstream in(std::string(LIBSHIM_SOURCE_DIR) + "/tests/data/info/" + name, std::ios::binary);
  std::stringstream buffer;
  buffer << in.rdbuf();
  return buffer.str();
}

std::string unhex(const std::string& hex) {
  std::string bytes;
  for (std::size_t i = 0; i + 1 < hex.size(); i += 2) {
    bytes.push_back(static_cast<char>(std::stoi(hex.substr(i, 2), nullptr, 16)));
  }
  return bytes;
}

containerd::types::RuntimeInfo go_info(const std::string& name) {
  containerd::types::RuntimeInfo info;
  REQUIRE(info.ParseFromString(unhex(slurp(name))));
  return info;
}

}  // namespace

TEST_CASE("the features Any equals the Go shim's for the same runc features output", "[runc-info]") {
  containerd::types::RuntimeInfo go = go_info("go_shim_2.1.9_info_no_options.hex");
  REQUIRE(go.has_features());
  shim::pb::Any ours;
  REQUIRE(shim::oci::features_any(slurp("runc_1.1.5_features.json"), &ours).ok());
  CHECK(ours.type_url() == go.features().type_url());
  CHECK(ours.value() == go.features().value());
  CHECK(ours.SerializeAsString() == go.features().SerializeAsString());
  CHECK(go.name() == "io.containerd.runc.v2");
  CHECK_FALSE(go.has_options());
}

TEST_CASE("features_any refuses what is not a JSON object", "[runc-info]") {
  shim::pb::Any any;
  CHECK(shim::oci::features_any("[1,2]", &any).code() == shim::Code::kInvalidArgument);
  CHECK(shim::oci::features_any("{\"truncated\":", &any).code() == shim::Code::kInvalidArgument);
  REQUIRE(shim::oci::features_any("{\"a\":\"<&>\",\"b\":[true,null,3]}", &any).ok());
  CHECK(any.value() == "{\"a\":\"\\u003c\\u0026\\u003e\",\"b\":[true,null,3]}");  // Go's escaping
}

TEST_CASE("runc options are echoed as the Go shim echoes them", "[runc-info]") {
  containerd::types::RuntimeInfo go = go_info("go_shim_2.1.9_info_runc_options.hex");
  REQUIRE(go.has_options());
  containerd::runc::v1::Options options;
  options.set_binary_name("runc");
  options.set_root("/tmp/rroot");
  shim::pb::Any request;
  request.set_type_url("containerd.runc.v1.Options");
  request.set_value(options.SerializeAsString());
  containerd::types::RuntimeInfo ours;
  shim::test::TestActionContext action({}, "info");
  shim::Status status = shim::oci::cli_runtime_info(action.get(), request, &ours);
  INFO(status.to_string());
  REQUIRE(status.ok());
  CHECK(ours.options().SerializeAsString() == go.options().SerializeAsString());
  CHECK(ours.features().SerializeAsString() == go.features().SerializeAsString());  // this machine's runc
}

TEST_CASE("a runtime binary that is not on PATH fails -info with Go's text", "[runc-info]") {
  containerd::runc::v1::Options options;
  options.set_binary_name("no-such-runtime-xyz");
  shim::pb::Any request;
  request.set_type_url("containerd.runc.v1.Options");
  request.set_value(options.SerializeAsString());
  containerd::types::RuntimeInfo info;
  shim::test::TestActionContext action({}, "info");
  CHECK(shim::oci::cli_runtime_info(action.get(), request, &info).message() ==
        "failed to look up the path of \"no-such-runtime-xyz\": exec: \"no-such-runtime-xyz\": "
        "executable file not found in $PATH");
}
