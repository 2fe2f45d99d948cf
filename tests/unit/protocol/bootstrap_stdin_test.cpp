#include <fcntl.h>
#include <unistd.h>

#include <cstdio>
#include <random>
#include <string>

#include <catch2/catch.hpp>

#include "shim/pb/runc/runc_options.pb.h"
#include "protocol/bootstrap.h"

namespace {

using shim::StartInputKind;
namespace bootstrap_v1 = shim::bootstrap_v1;

const std::string kRuncOptionsType = "containerd.runc.v1.Options";

shim::pb::Any runc_options_any() {
  containerd::runc::v1::Options options;
  options.set_binary_name("runc");
  options.set_root("/run/containerd/runc");
  options.set_systemd_cgroup(true);
  shim::pb::Any any;
  any.set_type_url(kRuncOptionsType);
  any.set_value(options.SerializeAsString());
  return any;
}

shim::pb::Any other_any(const std::string& type_url, const std::string& value) {
  shim::pb::Any any;
  any.set_type_url(type_url);
  any.set_value(value);
  return any;
}

// BootstrapParams as containerd 2.3's client.Command fills it.
bootstrap_v1::BootstrapParams containerd_2_3_params() {
  bootstrap_v1::BootstrapParams params;
  params.set_instance_id("t1");
  params.set_namespace_("default");
  params.set_log_level(bootstrap_v1::LOG_LEVEL_DEBUG);
  params.set_containerd_version("2.3.0");
  params.set_containerd_ttrpc_address("/run/containerd/containerd.sock.ttrpc");
  params.set_containerd_grpc_address("/run/containerd/containerd.sock");
  params.set_containerd_binary("/usr/bin/containerd");
  *params.add_extensions()->mutable_value() = runc_options_any();
  params.set_socket_dir("/run/containerd/s");
  return params;
}

// Serializing invalid UTF-8 makes libprotobuf complain on stderr, so bad inputs are
// built from a valid placeholder patched afterwards.
std::string patched(std::string bytes, const std::string& placeholder,
                    const std::string& replacement) {
  REQUIRE(placeholder.size() == replacement.size());
  std::size_t at = bytes.find(placeholder);
  REQUIRE(at != std::string::npos);
  return bytes.replace(at, placeholder.size(), replacement);
}

// Runs `fn` with fd 2 sent to a temp file and returns what was written there.
template <class Fn>
std::string captured_stderr(Fn&& fn) {
  std::fflush(stderr);
  char path[] = "/tmp/libshim-stderr-XXXXXX";
  int file = ::mkostemp(path, O_CLOEXEC);
  REQUIRE(file >= 0);
  ::unlink(path);
  int saved = ::fcntl(2, F_DUPFD_CLOEXEC, 3);
  REQUIRE(saved >= 0);
  ::dup2(file, 2);
  fn();
  std::fflush(stderr);
  ::dup2(saved, 2);
  ::close(saved);
  std::string out;
  char buffer[4096];
  ::lseek(file, 0, SEEK_SET);
  for (ssize_t n; (n = ::read(file, buffer, sizeof buffer)) > 0;) out.append(buffer, n);
  ::close(file);
  return out;
}

}  // namespace

TEST_CASE("bootstrap: empty stdin means no options", "[bootstrap]") {
  shim::StartInput input = shim::classify_start_stdin("");
  CHECK(input.kind == StartInputKind::kEmpty);
  CHECK_FALSE(input.options.has_value());
  CHECK(input.all_options.empty());
  CHECK(input.reason.empty());
  CHECK_FALSE(input.debug_requested());
}

TEST_CASE("bootstrap: legacy Any from containerd 1.6 - 2.2", "[bootstrap]") {
  const std::string bytes = runc_options_any().SerializeAsString();
  shim::StartInput input = shim::classify_start_stdin(bytes);
  REQUIRE(input.kind == StartInputKind::kLegacyAny);
  REQUIRE(input.options.has_value());
  CHECK(input.options->type_url() == kRuncOptionsType);
  containerd::runc::v1::Options options;
  REQUIRE(options.ParseFromString(input.options->value()));
  CHECK(options.root() == "/run/containerd/runc");
  CHECK(input.all_options.size() == 1);
  CHECK(input.instance_id.empty());
  CHECK_FALSE(input.debug_requested());  // for a legacy caller, -debug decides
}

TEST_CASE("bootstrap: a legacy Any that also parses as BootstrapParams stays an Any",
          "[bootstrap]") {
  const std::string bytes = runc_options_any().SerializeAsString();
  // The hazard: the generated BootstrapParams parser accepts these bytes.
  bootstrap_v1::BootstrapParams confused;
  REQUIRE(confused.ParseFromString(bytes));
  CHECK(confused.instance_id() == kRuncOptionsType);

  shim::StartInput input = shim::classify_start_stdin(bytes);
  CHECK(input.kind == StartInputKind::kLegacyAny);
  CHECK(input.instance_id.empty());
  REQUIRE(input.options.has_value());
  CHECK(input.options->type_url() == kRuncOptionsType);

  // An Any with only a type_url (empty value) is still an Any.
  shim::StartInput bare =
      shim::classify_start_stdin(other_any(kRuncOptionsType, "").SerializeAsString());
  CHECK(bare.kind == StartInputKind::kLegacyAny);
}

TEST_CASE("bootstrap: BootstrapParams from containerd 2.3", "[bootstrap]") {
  const std::string bytes = containerd_2_3_params().SerializeAsString();
  shim::StartInput input = shim::classify_start_stdin(bytes, {kRuncOptionsType});
  REQUIRE(input.kind == StartInputKind::kBootstrapParams);
  CHECK(input.instance_id == "t1");
  CHECK(input.ns == "default");
  CHECK(input.log_level == bootstrap_v1::LOG_LEVEL_DEBUG);
  CHECK(input.debug_requested());
  CHECK(input.containerd_version == "2.3.0");
  CHECK(input.ttrpc_address == "/run/containerd/containerd.sock.ttrpc");
  CHECK(input.grpc_address == "/run/containerd/containerd.sock");
  CHECK(input.containerd_binary == "/usr/bin/containerd");
  CHECK(input.socket_dir == std::optional<std::string>("/run/containerd/s"));
  REQUIRE(input.options.has_value());
  CHECK(input.options->type_url() == kRuncOptionsType);
  CHECK(input.options->value() == runc_options_any().value());
  CHECK(input.reason.empty());
}

TEST_CASE("bootstrap: BootstrapParams log levels and optional fields", "[bootstrap]") {
  bootstrap_v1::BootstrapParams params = containerd_2_3_params();
  params.clear_socket_dir();
  params.clear_extensions();
  params.set_log_level(bootstrap_v1::LOG_LEVEL_INFO);
  shim::StartInput info = shim::classify_start_stdin(params.SerializeAsString());
  REQUIRE(info.kind == StartInputKind::kBootstrapParams);
  CHECK_FALSE(info.socket_dir.has_value());
  CHECK_FALSE(info.options.has_value());
  CHECK(info.all_options.empty());
  CHECK_FALSE(info.debug_requested());

  params.set_log_level(bootstrap_v1::LOG_LEVEL_TRACE);
  CHECK(shim::classify_start_stdin(params.SerializeAsString()).debug_requested());
  params.set_log_level(bootstrap_v1::LOG_LEVEL_WARN);
  CHECK_FALSE(shim::classify_start_stdin(params.SerializeAsString()).debug_requested());

  // An empty socket_dir that is present is still reported as present.
  params.set_socket_dir("");
  CHECK(shim::classify_start_stdin(params.SerializeAsString()).socket_dir ==
        std::optional<std::string>(""));
}

TEST_CASE("bootstrap: choosing among several extensions", "[bootstrap]") {
  bootstrap_v1::BootstrapParams params = containerd_2_3_params();
  params.clear_extensions();
  *params.add_extensions()->mutable_value() = other_any("example.com/vm.Config", "vm");
  *params.add_extensions()->mutable_value() =
      other_any("type.googleapis.com/" + kRuncOptionsType, "runc");
  const std::string bytes = params.SerializeAsString();

  shim::StartInput first = shim::classify_start_stdin(bytes);
  REQUIRE(first.options.has_value());
  CHECK(first.options->value() == "vm");
  CHECK(first.all_options.size() == 2);

  shim::StartInput runc = shim::classify_start_stdin(bytes, {kRuncOptionsType});
  REQUIRE(runc.options.has_value());
  CHECK(runc.options->value() == "runc");

  shim::StartInput none = shim::classify_start_stdin(bytes, {"io.example.Missing"});
  CHECK(none.kind == StartInputKind::kBootstrapParams);
  CHECK_FALSE(none.options.has_value());
  CHECK(none.all_options.size() == 2);
  CHECK_THAT(none.reason, Catch::Contains("example.com/vm.Config"));

  shim::StartInput legacy_mismatch = shim::classify_start_stdin(
      runc_options_any().SerializeAsString(), {"io.example.Missing"});
  CHECK(legacy_mismatch.kind == StartInputKind::kLegacyAny);
  CHECK_FALSE(legacy_mismatch.options.has_value());
  CHECK(legacy_mismatch.all_options.size() == 1);
}

TEST_CASE("bootstrap: same_type_url ignores the URL prefix", "[bootstrap]") {
  CHECK(shim::same_type_url("containerd.runc.v1.Options",
                            "type.googleapis.com/containerd.runc.v1.Options"));
  CHECK(shim::same_type_url("a/b/c.T", "c.T"));
  CHECK_FALSE(shim::same_type_url("containerd.runc.v1.Options", "containerd.runc.v1.Option"));
  CHECK_FALSE(shim::same_type_url("x/containerd.runc.v1.Options", "runc.v1.Options"));
}

TEST_CASE("bootstrap: garbage is unknown, never an error", "[bootstrap]") {
  for (const std::string& garbage :
       {std::string("hello world"), std::string("\xff\xff\xff\xff"),
        std::string("unix:///run/containerd/s/abc"), std::string(R"({"version":3})"),
        std::string("\x0a\x05" "abc"), std::string("\x08"), std::string(1, '\0'),
        std::string("\x0b\x0c")}) {
    INFO("input " << garbage);
    shim::StartInput input = shim::classify_start_stdin(garbage);
    CHECK(input.kind == StartInputKind::kUnknown);
    CHECK_FALSE(input.reason.empty());
    CHECK_FALSE(input.options.has_value());
  }
  // Fields 1/2 that are not length-delimited cannot be an Any.
  shim::StartInput varint = shim::classify_start_stdin(std::string("\x08\x01", 2));
  CHECK(varint.kind == StartInputKind::kUnknown);
  CHECK_THAT(varint.reason, Catch::Contains("google.protobuf.Any"));
}

TEST_CASE("bootstrap: every truncation is classified by what is left", "[bootstrap]") {
  // Field boundaries: the message with only fields 1..k set is a prefix of the full one,
  // because fields are serialized in number order.
  const bootstrap_v1::BootstrapParams full = containerd_2_3_params();
  const std::string bytes = full.SerializeAsString();
  std::vector<std::size_t> any_boundaries;
  std::vector<std::size_t> params_boundaries;
  bootstrap_v1::BootstrapParams partial;
  partial.set_instance_id(full.instance_id());
  any_boundaries.push_back(partial.ByteSizeLong());
  partial.set_namespace_(full.namespace_());
  any_boundaries.push_back(partial.ByteSizeLong());
  partial.set_log_level(full.log_level());
  params_boundaries.push_back(partial.ByteSizeLong());
  partial.set_containerd_version(full.containerd_version());
  params_boundaries.push_back(partial.ByteSizeLong());
  partial.set_containerd_ttrpc_address(full.containerd_ttrpc_address());
  params_boundaries.push_back(partial.ByteSizeLong());
  partial.set_containerd_grpc_address(full.containerd_grpc_address());
  params_boundaries.push_back(partial.ByteSizeLong());
  partial.set_containerd_binary(full.containerd_binary());
  params_boundaries.push_back(partial.ByteSizeLong());
  *partial.mutable_extensions() = full.extensions();
  params_boundaries.push_back(partial.ByteSizeLong());
  REQUIRE(bytes.substr(0, partial.ByteSizeLong()) == partial.SerializeAsString());

  auto contains = [](const std::vector<std::size_t>& list, std::size_t n) {
    return std::find(list.begin(), list.end(), n) != list.end();
  };
  std::string log = captured_stderr([&] {
    for (std::size_t n = 1; n < bytes.size(); ++n) {
      INFO("prefix of " << n << " bytes");
      shim::StartInput input = shim::classify_start_stdin(bytes.substr(0, n));
      if (contains(any_boundaries, n)) {
        CHECK(input.kind == StartInputKind::kLegacyAny);  // only fields 1 and 2 are left
      } else if (contains(params_boundaries, n)) {
        CHECK(input.kind == StartInputKind::kBootstrapParams);
      } else {
        CHECK(input.kind == StartInputKind::kUnknown);
        CHECK_THAT(input.reason, Catch::Contains("not a protobuf message"));
      }
    }
  });
  CHECK(log.empty());
}

TEST_CASE("bootstrap: invalid UTF-8 is unknown and keeps libprotobuf quiet", "[bootstrap]") {
  bootstrap_v1::BootstrapParams params = containerd_2_3_params();
  params.set_instance_id("t@");
  const std::string bad_id = patched(params.SerializeAsString(), "t@", "t\xff");
  // Without the pre-check the generated parser rejects it and logs to stderr, which
  // would corrupt the output containerd reads from `start`.
  std::string parser_log = captured_stderr([&] {
    bootstrap_v1::BootstrapParams parsed;
    CHECK_FALSE(parsed.ParseFromString(bad_id));
  });
  CHECK_FALSE(parser_log.empty());

  params = containerd_2_3_params();
  *params.mutable_extensions(0)->mutable_value() = other_any("bad@@type", "v");
  const std::string bad_nested =
      patched(params.SerializeAsString(), "bad@@type", "bad\xc0\x80type");  // overlong NUL

  const std::string bad_any =
      patched(other_any("x@@@", "v").SerializeAsString(), "x@@@", "x\xed\xa0\x80");  // surrogate
  const std::string binary_value = other_any(kRuncOptionsType, "\xff\xfe\x80").SerializeAsString();

  std::string log = captured_stderr([&] {
    shim::StartInput id = shim::classify_start_stdin(bad_id);
    CHECK(id.kind == StartInputKind::kUnknown);
    CHECK_THAT(id.reason, Catch::Contains("field 1 is not valid UTF-8"));
    CHECK(shim::classify_start_stdin(bad_nested).kind == StartInputKind::kUnknown);
    CHECK(shim::classify_start_stdin(bad_any).kind == StartInputKind::kUnknown);
    // Any.value is bytes: anything goes there.
    CHECK(shim::classify_start_stdin(binary_value).kind == StartInputKind::kLegacyAny);
  });
  CHECK(log.empty());
}

TEST_CASE("bootstrap: random bytes never crash and never log", "[bootstrap]") {
  std::mt19937 random(7);
  std::uniform_int_distribution<int> byte(0, 255);
  std::uniform_int_distribution<int> length(1, 80);
  int unknown = 0;
  std::string log = captured_stderr([&] {
    for (int i = 0; i < 2000; ++i) {
      std::string bytes;
      for (int n = length(random); n > 0; --n) bytes.push_back(static_cast<char>(byte(random)));
      shim::StartInput input = shim::classify_start_stdin(bytes);
      if (input.kind == StartInputKind::kUnknown) {
        ++unknown;
        CHECK_FALSE(input.reason.empty());
      }
      CHECK(input.kind != StartInputKind::kEmpty);
      if (input.kind == StartInputKind::kLegacyAny) CHECK(input.all_options.size() == 1);
    }
  });
  CHECK(log.empty());
  CHECK(unknown > 1500);  // random bytes are almost never a valid message
}

TEST_CASE("bootstrap: kind names for logs", "[bootstrap]") {
  CHECK(shim::start_input_kind_name(StartInputKind::kBootstrapParams) == "BootstrapParams");
  CHECK(shim::start_input_kind_name(StartInputKind::kLegacyAny) == "legacy Any");
  CHECK(shim::start_input_kind_name(StartInputKind::kUnknown) == "unknown");
  CHECK(shim::start_input_kind_name(StartInputKind::kEmpty) == "empty");
}
