#include <string>

#include <catch2/catch.hpp>

#include "shim/pb/containerd/bootstrap.pb.h"
#include "socket/sha256.h"
#include "protocol/start_answer.h"
#include "support/start_answer_oracle.h"

namespace {

using shim::ContainerdRelease;
constexpr auto k1_6 = ContainerdRelease::k1_6;
constexpr auto k1_7 = ContainerdRelease::k1_7;
constexpr auto k2_0 = ContainerdRelease::k2_0;
constexpr auto k2_3 = ContainerdRelease::k2_3;
using shim::StartAnswerFormat;
using shim::StartInputKind;

const std::string kAddress =
    "unix:///run/containerd/s/" + shim::sha256_hex("/run/containerd/containerd.sock/default/t1");

shim::ShimEnv env_1_6() {
  shim::ShimEnv env;
  env.ttrpc_address = "/run/containerd/containerd.sock.ttrpc";
  return env;
}

shim::ShimEnv env_1_7_plus() {
  shim::ShimEnv env = env_1_6();
  env.grpc_address = "/run/containerd/containerd.sock";
  env.ns = "default";
  env.max_shim_version = 2;
  return env;
}

std::string answer(StartAnswerFormat format, int version = 3,
                   const std::string& protocol = "ttrpc", const std::string& address = kAddress) {
  std::string bytes;
  shim::Status status = shim::format_start_answer(format, address, version, protocol, &bytes);
  INFO(status.to_string());
  REQUIRE(status.ok());
  return bytes;
}

shim::StartAnswer read_ok(const std::string& output, ContainerdRelease reader) {
  shim::StartAnswer parsed;
  shim::Status status = shim::parse_start_answer(output, reader, &parsed);
  INFO(status.to_string());
  REQUIRE(status.ok());
  return parsed;
}

}  // namespace

TEST_CASE("start answer: the format follows what is known about the caller", "[bootstrap]") {
  const shim::ShimEnv old_env = env_1_6();
  const shim::ShimEnv new_env = env_1_7_plus();
  using F = StartAnswerFormat;

  CHECK(shim::choose_start_answer_format(StartInputKind::kBootstrapParams, new_env) ==
        F::kProtoBootstrapResult);
  CHECK(shim::choose_start_answer_format(StartInputKind::kBootstrapParams, new_env,
                                         F::kJsonV3) == F::kProtoBootstrapResult);
  CHECK(shim::choose_start_answer_format(StartInputKind::kBootstrapParams, new_env,
                                         F::kPlainAddress) == F::kPlainAddress);

  for (StartInputKind kind : {StartInputKind::kEmpty, StartInputKind::kLegacyAny,
                              StartInputKind::kUnknown}) {
    CHECK(shim::choose_start_answer_format(kind, old_env) == F::kPlainAddress);
    CHECK(shim::choose_start_answer_format(kind, new_env) == F::kPlainAddress);
    // JSON would be fatal under 1.6: refused even when asked for.
    CHECK(shim::choose_start_answer_format(kind, old_env, F::kJsonV3) == F::kPlainAddress);
    CHECK(shim::choose_start_answer_format(kind, old_env, F::kJsonV2) == F::kPlainAddress);
    CHECK(shim::choose_start_answer_format(kind, new_env, F::kJsonV3) == F::kJsonV3);
    CHECK(shim::choose_start_answer_format(kind, new_env, F::kJsonV2) == F::kJsonV2);
    // Only 2.3+ reads proto, and only 2.3+ sends BootstrapParams.
    CHECK(shim::choose_start_answer_format(kind, new_env, F::kProtoBootstrapResult) ==
          F::kPlainAddress);
  }
}

TEST_CASE("start answer: exact bytes of each format", "[bootstrap]") {
  CHECK(answer(StartAnswerFormat::kPlainAddress) == kAddress);  // no newline
  CHECK(answer(StartAnswerFormat::kJsonV3) ==
        R"({"version":3,"address":")" + kAddress + R"(","protocol":"ttrpc"})");
  CHECK(answer(StartAnswerFormat::kJsonV2, 3) ==
        R"({"version":2,"address":")" + kAddress + R"(","protocol":"ttrpc"})");
  CHECK(answer(StartAnswerFormat::kJsonV3, 3, "grpc", "unix:///a\"b") ==
        R"({"version":3,"address":"unix:///a\"b","protocol":"grpc"})");

  const std::string proto = answer(StartAnswerFormat::kProtoBootstrapResult, 3);
  shim::bootstrap_v1::BootstrapResult result;
  REQUIRE(result.ParseFromString(proto));
  CHECK(result.version() == 3);
  CHECK(result.address() == kAddress);
  CHECK(result.protocol() == "ttrpc");
  CHECK(result.capabilities_size() == 0);
  CHECK(result.metadata().empty());
  // containerd trims whitespace before decoding: the bytes must start and end with none.
  CHECK(proto.front() == '\x08');
  CHECK(proto.back() == 'c');
}

TEST_CASE("start answer: what cannot be said is refused", "[bootstrap]") {
  std::string bytes = "untouched";
  using F = StartAnswerFormat;
  CHECK(shim::format_start_answer(F::kPlainAddress, "", 2, "ttrpc", &bytes).code() ==
        shim::Code::kInvalidArgument);
  CHECK(shim::format_start_answer(F::kPlainAddress, kAddress, 3, "grpc", &bytes).code() ==
        shim::Code::kInvalidArgument);
  CHECK(shim::format_start_answer(F::kProtoBootstrapResult, "unix:///\xff", 3, "ttrpc", &bytes)
            .code() == shim::Code::kInvalidArgument);
  CHECK(shim::format_start_answer(F::kJsonV3, kAddress, 3, "", &bytes).code() ==
        shim::Code::kInvalidArgument);
  CHECK(bytes == "untouched");
}

TEST_CASE("start answer: containerd 1.6 reads only the plain address", "[bootstrap]") {
  shim::StartAnswer plain = read_ok(answer(StartAnswerFormat::kPlainAddress), k1_6);
  CHECK(plain.address == kAddress);
  CHECK(plain.protocol == "ttrpc");
  CHECK(read_ok(kAddress + "\n", k1_6).address == kAddress);

  // JSON is taken verbatim: no unix:// scheme, so 1.6 would dial an abstract socket.
  shim::StartAnswer json = read_ok(answer(StartAnswerFormat::kJsonV2), k1_6);
  CHECK(json.address.rfind("unix://", 0) != 0);
}

TEST_CASE("start answer: containerd 1.7 reads plain and JSON version 2 only", "[bootstrap]") {
  shim::StartAnswer plain = read_ok(answer(StartAnswerFormat::kPlainAddress), k1_7);
  CHECK(plain.address == kAddress);
  CHECK(plain.protocol == "ttrpc");
  CHECK(plain.version == 0);  // 1.7 leaves the version unset for a plain address

  shim::StartAnswer v2 = read_ok(answer(StartAnswerFormat::kJsonV2), k1_7);
  CHECK(v2.version == 2);
  CHECK(v2.address == kAddress);

  shim::StartAnswer ignored;
  shim::Status v3 = shim::parse_start_answer(answer(StartAnswerFormat::kJsonV3),
                                             k1_7, &ignored);
  CHECK(v3.code() == shim::Code::kUnimplemented);
  CHECK(v3.message() == "unsupported shim version (3): not implemented");

  // A mistyped address fails the JSON decode, yet the version decoded next to it stays.
  shim::Status mistyped = shim::parse_start_answer(R"({"version":3,"address":5})",
                                                   k1_7, &ignored);
  CHECK(mistyped.code() == shim::Code::kUnimplemented);
}

TEST_CASE("start answer: containerd 2.0 - 2.2 read plain and JSON up to 3", "[bootstrap]") {
  shim::StartAnswer plain = read_ok(answer(StartAnswerFormat::kPlainAddress), k2_0);
  CHECK(plain.version == 2);
  CHECK(plain.protocol == "ttrpc");
  CHECK(plain.address == kAddress);

  shim::StartAnswer v3 = read_ok(answer(StartAnswerFormat::kJsonV3) + "\n", k2_0);
  CHECK(v3.version == 3);
  CHECK(v3.address == kAddress);
  CHECK(v3.protocol == "ttrpc");

  shim::StartAnswer ignored;
  CHECK(shim::parse_start_answer(R"({"version":4,"address":"unix:///x","protocol":"ttrpc"})",
                                 k2_0, &ignored)
            .code() == shim::Code::kUnimplemented);

  // Go's decoder: keys match case-insensitively, unknown keys are ignored.
  shim::StartAnswer folded =
      read_ok(R"({"VERSION":3,"Address":"unix:///x","protocol":"grpc","x":1})", k2_0);
  CHECK(folded.version == 3);
  CHECK(folded.address == "unix:///x");
  CHECK(folded.protocol == "grpc");

  // A version below 2, or a string version, means "legacy": the whole text is the address.
  const std::string v1 = R"({"version":1,"address":"unix:///x"})";
  CHECK(read_ok(v1, k2_0).address == v1);
  const std::string quoted = R"({"version":"3","address":"unix:///x"})";
  shim::StartAnswer legacy = read_ok(quoted, k2_0);
  CHECK(legacy.address == quoted);
  CHECK(legacy.version == 2);
}

TEST_CASE("start answer: containerd 2.3 reads proto first, then the legacy forms", "[bootstrap]") {
  shim::StartAnswer proto =
      read_ok(answer(StartAnswerFormat::kProtoBootstrapResult, 3), k2_3);
  CHECK(proto.decoded_as_proto);
  CHECK(proto.version == 3);
  CHECK(proto.address == kAddress);
  CHECK(proto.protocol == "ttrpc");

  shim::StartAnswer proto_v2 =
      read_ok(answer(StartAnswerFormat::kProtoBootstrapResult, 2), k2_3);
  CHECK(proto_v2.version == 2);

  shim::StartAnswer plain = read_ok(answer(StartAnswerFormat::kPlainAddress), k2_3);
  CHECK_FALSE(plain.decoded_as_proto);
  CHECK(plain.version == 2);
  CHECK(plain.address == kAddress);

  shim::StartAnswer json = read_ok(answer(StartAnswerFormat::kJsonV3), k2_3);
  CHECK_FALSE(json.decoded_as_proto);
  CHECK(json.version == 3);
  CHECK(json.address == kAddress);
}

TEST_CASE("start answer: a plain unix:// address never decodes as BootstrapResult",
          "[bootstrap]") {
  // 'u' is field 14 fixed32 ("nix:"), then '/' is wire type 7: invalid. Checked with the
  // generated parser for many socket names, dirs and the other schemes 2.x dials.
  std::vector<std::string> addresses = {"vsock://3:1024", "hvsock:///run/vm.sock:1024",
                                        "unix:///tmp/s/x", "unix://" + std::string(200, '/')};
  for (int i = 0; i < 300; ++i) {
    std::string hex = shim::sha256_hex(std::to_string(i));
    addresses.push_back("unix:///run/containerd/s/" + hex);
    addresses.push_back("unix:///run/user/1000/containerd/s/" + hex);
  }
  for (const std::string& address : addresses) {
    INFO(address);
    shim::bootstrap_v1::BootstrapResult result;
    CHECK_FALSE(result.ParseFromString(address));
    shim::StartAnswer parsed = read_ok(address, k2_3);
    CHECK_FALSE(parsed.decoded_as_proto);
    CHECK(parsed.address == address);
  }
}

TEST_CASE("start answer: the default answer works under every release", "[bootstrap]") {
  // What each release sends `start`, what libshim answers, and how that release reads it.
  struct Caller {
    ContainerdRelease release;
    StartInputKind stdin_kind;
    shim::ShimEnv env;
    StartAnswerFormat expected_format;
    int expected_version;
  };
  const Caller callers[] = {
      {k1_6, StartInputKind::kLegacyAny, env_1_6(), StartAnswerFormat::kPlainAddress, 2},
      {k1_6, StartInputKind::kEmpty, env_1_6(), StartAnswerFormat::kPlainAddress, 2},
      {k1_7, StartInputKind::kLegacyAny, env_1_7_plus(), StartAnswerFormat::kPlainAddress, 0},
      {k2_0, StartInputKind::kLegacyAny, env_1_7_plus(), StartAnswerFormat::kPlainAddress, 2},
      {k2_0, StartInputKind::kEmpty, env_1_7_plus(), StartAnswerFormat::kPlainAddress, 2},
      {k2_3, StartInputKind::kBootstrapParams, env_1_7_plus(),
       StartAnswerFormat::kProtoBootstrapResult, 3},
  };
  for (const Caller& caller : callers) {
    INFO("release " << static_cast<int>(caller.release) << ", stdin "
                    << shim::start_input_kind_name(caller.stdin_kind));
    StartAnswerFormat format = shim::choose_start_answer_format(caller.stdin_kind, caller.env);
    CHECK(format == caller.expected_format);
    shim::StartAnswer parsed = read_ok(answer(format, 3), caller.release);
    CHECK(parsed.address == kAddress);
    CHECK(parsed.protocol == "ttrpc");
    CHECK(parsed.version == caller.expected_version);
  }
}

TEST_CASE("start answer: format names for logs", "[bootstrap]") {
  CHECK(shim::start_answer_format_name(StartAnswerFormat::kPlainAddress) == "plain address");
  CHECK(shim::start_answer_format_name(StartAnswerFormat::kProtoBootstrapResult) ==
        "proto BootstrapResult");
}
