// The exec's OCI Process JSON as the process tier hands it to the runtime (exec_spec):
// "terminal" forced to the request's value, anything else kept, and what the runtime
// could not read refused with the place it is at.
#include <string>

#include <boost/json.hpp>
#include <catch2/catch.hpp>

#include "shim/pb/containerd/task_v2.pb.h"
#include "task/task_records.h"

namespace {

shim::Status exec_spec_of(const std::string& json, bool terminal, std::string* out) {
  containerd::task::v2::ExecProcessRequest request;
  request.mutable_spec()->set_type_url("types.containerd.io/opencontainers/runtime-spec/1/Process");
  request.mutable_spec()->set_value(json);
  request.set_terminal(terminal);
  return shim::exec_spec(request, out);
}

}  // namespace

TEST_CASE("exec spec: terminal is forced to the request's, the rest kept", "[exec-spec]") {
  std::string out;
  REQUIRE(exec_spec_of(R"({"args":["sh"],"terminal":false,"user":{"uid":0,"gid":0},"x":1.5})", true, &out).ok());
  CHECK(boost::json::parse(out) ==
        boost::json::parse(R"({"args":["sh"],"terminal":true,"user":{"uid":0,"gid":0},"x":1.5})"));
}

TEST_CASE("exec spec: not a JSON object is InvalidArgument", "[exec-spec]") {
  std::string out;
  for (const char* json : {"", "[]", "\"sh\"", "{\"args\":", "1e999"}) {
    INFO(json);
    shim::Status status = exec_spec_of(json, false, &out);
    CHECK(status.code() == shim::Code::kInvalidArgument);
    CHECK(status.message() == "exec spec is not an OCI process JSON object: invalid argument");
  }
}

TEST_CASE("exec spec: a number beyond a double's range is refused with its place", "[exec-spec]") {
  // Found by fuzz_oci_spec (corpus/fuzz_oci_spec/regression-exec-spec-infinity): such a
  // number parsed as an infinity and went to the runtime as "Infinity", which is not JSON.
  std::string out = "untouched";
  shim::Status status = exec_spec_of(R"({"user":{"uid":1e999}})", false, &out);
  CHECK(status.code() == shim::Code::kInvalidArgument);
  CHECK(status.message() == "exec spec: the number at /user/uid is out of range: invalid argument");
  CHECK(out == "untouched");

  status = exec_spec_of(R"({"a/b~":[0,-1e400]})", false, &out);
  CHECK(status.message() == "exec spec: the number at /a~1b~0/1 is out of range: invalid argument");
  status = exec_spec_of(R"({"":{"p":1e999}})", false, &out);
  CHECK(status.message() == "exec spec: the number at //p is out of range: invalid argument");
  // Small ones round to zero, as in Go: kept.
  REQUIRE(exec_spec_of(R"({"x":1e-999})", false, &out).ok());
}
