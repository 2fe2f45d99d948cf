// containerd 2.4's shim mount capabilities (containerd PR #14002): the MountCapabilities
// extension of the `start` answer, proto and JSON, against bytes protoc made from
// upstream's own .proto files (tests/data/bootstrap/README.md), read back the way each
// containerd release reads an answer (support/start_answer_oracle.h); and the -info
// annotation containerd 2.2 - 2.4.0-beta.0 read instead.
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "gocompat/go_compat.h"
#include "protocol/mount_capability_answer.h"
#include "protocol/start_answer.h"
#include "shim/pb/containerd/bootstrap.pb.h"
#include "shim/pb/containerd/types.pb.h"
#include "socket/sha256.h"
#include "support/start_answer_oracle.h"
#include "support/wire_capture.h"

namespace {

using shim::ContainerdRelease;
using shim::MountCapabilities;
using shim::StartAnswerFormat;

const std::string kAddress =
    "unix:///run/containerd/s/" + shim::sha256_hex("/run/containerd/containerd.sock/default/t1");
const MountCapabilities kVmShim{{"erofs", "ext4"}, {"format", "mkfs"}};

std::string answer(StartAnswerFormat format, const std::vector<shim::pb::Any>& extensions) {
  std::string bytes;
  shim::Status status = shim::format_start_answer(format, kAddress, 3, "ttrpc", &bytes, extensions);
  INFO(status.to_string());
  REQUIRE(status.ok());
  return bytes;
}

std::string fixture_text(const std::string& name) {
  std::string text;
  REQUIRE(
      shim::go_read_file(std::string(LIBSHIM_SOURCE_DIR) + "/tests/data/bootstrap/" + name, &text)
          .ok());
  return text;
}

shim::StartAnswer read_ok(const std::string& output, ContainerdRelease reader) {
  shim::StartAnswer parsed;
  shim::Status status = shim::parse_start_answer(output, reader, &parsed);
  INFO(status.to_string());
  REQUIRE(status.ok());
  return parsed;
}

// containerd 2.4's BootstrapResult.FindExtension: the first extension whose type's name
// (after the last '/', anypb MessageIs) is MountCapabilities, decoded.
std::optional<containerd::types::MountCapabilities> find_capabilities(
    const std::vector<shim::pb::Any>& extensions) {
  for (const shim::pb::Any& any : extensions) {
    std::string_view url = any.type_url();
    if (url.substr(url.rfind('/') + 1) != "containerd.types.MountCapabilities") continue;
    containerd::types::MountCapabilities capabilities;
    if (!capabilities.ParseFromString(any.value())) throw std::runtime_error("bad value");
    return capabilities;
  }
  return std::nullopt;
}

std::vector<std::string> list(const google::protobuf::RepeatedPtrField<std::string>& field) {
  return {field.begin(), field.end()};
}

}  // namespace

TEST_CASE("2.4 bootstrap: the proto answer equals upstream's bytes", "[bootstrap]") {
  using shim::test::hex;
  using shim::test::load_data_hex;
  const auto proto = StartAnswerFormat::kProtoBootstrapResult;
  // No capabilities declared (shim-runc, as containerd 2.4's Go runc shim): no extension.
  CHECK(hex(answer(proto, {})) == hex(load_data_hex("bootstrap/result_go_runc_shim.hex")));
  CHECK(hex(answer(proto, {shim::detail::mount_capabilities_any(kVmShim)})) ==
        hex(load_data_hex("bootstrap/result_mount_capabilities.hex")));
  CHECK(hex(answer(proto, {shim::detail::mount_capabilities_any(MountCapabilities{})})) ==
        hex(load_data_hex("bootstrap/result_mount_capabilities_empty.hex")));
}

TEST_CASE("2.4 bootstrap: each release reads the proto answer with capabilities", "[bootstrap]") {
  const std::string bytes = shim::test::load_data_hex("bootstrap/result_mount_capabilities.hex");
  // containerd 2.4: the extension is found and names what the shim performs.
  shim::StartAnswer read = read_ok(bytes, ContainerdRelease::k2_4);
  CHECK(read.decoded_as_proto);
  CHECK(read.version == 3);
  CHECK(read.address == kAddress);
  auto capabilities = find_capabilities(read.extensions);
  REQUIRE(capabilities);
  CHECK(list(capabilities->types()) == std::vector<std::string>{"erofs", "ext4"});
  CHECK(list(capabilities->transforms()) == std::vector<std::string>{"format", "mkfs"});
  // 2.3 (which trims first and knows no field 6) reads the same address and version.
  shim::StartAnswer old = read_ok(bytes, ContainerdRelease::k2_3);
  CHECK(old.decoded_as_proto);
  CHECK(old.version == 3);
  CHECK(old.address == kAddress);

  // An extension of an unknown type first is skipped, as 2.4 skips it.
  shim::StartAnswer mixed = read_ok(
      shim::test::load_data_hex("bootstrap/result_unknown_extension.hex"), ContainerdRelease::k2_4);
  REQUIRE(mixed.extensions.size() == 2);
  CHECK(mixed.extensions[0].type_url() == "example.com/vendor.Thing");
  auto found = find_capabilities(mixed.extensions);
  REQUIRE(found);
  CHECK(list(found->types()) == std::vector<std::string>{"loop"});

  // "Nothing beyond plain mounts": present, with neither list.
  auto empty = find_capabilities(
      read_ok(shim::test::load_data_hex("bootstrap/result_mount_capabilities_empty.hex"),
              ContainerdRelease::k2_4)
          .extensions);
  REQUIRE(empty);
  CHECK(empty->types_size() == 0);
  CHECK(empty->transforms_size() == 0);
}

TEST_CASE("2.4 bootstrap: the JSON answer is Go's encoding/json form", "[bootstrap]") {
  const std::vector<shim::pb::Any> extensions = {shim::detail::mount_capabilities_any(kVmShim)};
  const std::string v3 = answer(StartAnswerFormat::kJsonV3, extensions);
  CHECK(v3 == fixture_text("result_mount_capabilities.json"));
  CHECK(answer(StartAnswerFormat::kJsonV3, {}) ==
        R"({"version":3,"address":")" + kAddress + R"(","protocol":"ttrpc"})");

  // 2.4 decodes it whole: the same capabilities as from the proto answer.
  shim::StartAnswer read = read_ok(v3, ContainerdRelease::k2_4);
  CHECK_FALSE(read.decoded_as_proto);
  CHECK(read.version == 3);
  CHECK(read.address == kAddress);
  REQUIRE(read.extensions.size() == 1);
  shim::bootstrap_v1::BootstrapResult upstream;
  REQUIRE(upstream.ParseFromString(
      shim::test::load_data_hex("bootstrap/result_mount_capabilities.hex")));
  CHECK(read.extensions[0].type_url() == upstream.extensions(0).value().type_url());
  CHECK(read.extensions[0].value() == upstream.extensions(0).value().value());

  // 2.0 - 2.3 ignore the key (still version 3); 1.7 takes the version 2 form.
  for (ContainerdRelease reader : {ContainerdRelease::k2_0, ContainerdRelease::k2_3}) {
    shim::StartAnswer legacy = read_ok(v3, reader);
    CHECK(legacy.version == 3);
    CHECK(legacy.address == kAddress);
    CHECK(legacy.extensions.empty());
  }
  const std::string v2 = answer(StartAnswerFormat::kJsonV2, extensions);
  CHECK(v2.starts_with(R"({"version":2,)"));
  CHECK(read_ok(v2, ContainerdRelease::k1_7).version == 2);
  CHECK(read_ok(v2, ContainerdRelease::k1_7).address == kAddress);
  CHECK(find_capabilities(read_ok(v2, ContainerdRelease::k2_4).extensions));

  // An empty MountCapabilities has no value: Go leaves the key out.
  CHECK(
      answer(StartAnswerFormat::kJsonV3, {shim::detail::mount_capabilities_any({})})
          .ends_with(
              R"("extensions":[{"value":{"type_url":"type.googleapis.com/containerd.types.MountCapabilities"}}]})"));
}

TEST_CASE("2.4 bootstrap: a JSON answer 2.4 cannot decode becomes an address", "[bootstrap]") {
  // Why the JSON must be typed exactly: 2.4 decodes into the whole BootstrapResult and
  // takes the whole text as a (bad) address on any error.
  const std::string bad_base64 =
      R"({"version":3,"address":"unix:///x","protocol":"ttrpc","extensions":[{"value":{"value":"@@"}}]})";
  CHECK(read_ok(bad_base64, ContainerdRelease::k2_4).address == bad_base64);
  CHECK(read_ok(bad_base64, ContainerdRelease::k2_0).address == "unix:///x");  // ignored there
  const std::string bad_metadata =
      R"({"version":3,"address":"unix:///x","protocol":"ttrpc","metadata":{"a":1}})";
  CHECK(read_ok(bad_metadata, ContainerdRelease::k2_4).address == bad_metadata);
}

TEST_CASE("2.4 bootstrap: names are checked, the annotation lists them", "[bootstrap]") {
  CHECK(shim::detail::check_mount_capabilities(kVmShim).ok());
  CHECK(shim::detail::runtime_allow_mounts(kVmShim) == "erofs,ext4,format/*,mkfs/*");
  CHECK(shim::detail::runtime_allow_mounts({}).empty());
  struct Bad {
    MountCapabilities capabilities;
    std::string message;
  };
  const Bad bad[] = {
      {{{""}, {}}, "mount capabilities: empty mount type"},
      {{{}, {""}}, "mount capabilities: empty transform"},
      {{{"erofs,ext4"}, {}}, R"(mount capabilities: mount type "erofs,ext4" holds ',')"},
      {{{}, {"format/bind"}}, R"(mount capabilities: transform "format/bind" holds '/')"},
      {{{"ext4 "}, {}},
       R"(mount capabilities: mount type "ext4 " holds white space or a control character)"},
      {{{}, {"mk\tfs"}},
       R"(mount capabilities: transform "mk\tfs" holds white space or a control character)"},
      {{{"\xff"}, {}}, R"(mount capabilities: mount type "\xff" is not valid UTF-8)"},
  };
  for (const Bad& b : bad) {
    shim::Status status = shim::detail::check_mount_capabilities(b.capabilities);
    CHECK(status.code() == shim::Code::kInvalidArgument);
    CHECK(status.message() == b.message + ": invalid argument");  // errdefs' suffix
  }
}

namespace {

// A VM shim's Manager: raw block and erofs, its own formatting; none for a runtime
// option saying "host mounts".
class VmManager final : public shim::Manager {
 public:
  std::string name() const override { return "io.containerd.vm.v1"; }
  shim::Status stop(const shim::ActionContext&, containerd::task::v2::DeleteResponse*) override {
    return {};
  }
  std::unique_ptr<shim::TaskService> create_task_service(shim::ServiceContext&) override {
    return nullptr;
  }
  std::optional<MountCapabilities> mount_capabilities(
      const std::optional<shim::pb::Any>& options) const override {
    if (throws) throw std::runtime_error("no config");
    if (options && options->type_url() == "host-mounts") return std::nullopt;
    return capabilities;
  }
  MountCapabilities capabilities{{"erofs", "block"}, {"format"}};
  bool throws = false;
};

}  // namespace

TEST_CASE("2.4 bootstrap: the Manager's capabilities reach start and -info", "[bootstrap]") {
  VmManager manager;
  std::vector<shim::pb::Any> extensions;
  REQUIRE(shim::detail::start_answer_extensions(manager, std::nullopt, &extensions).ok());
  REQUIRE(extensions.size() == 1);
  auto found = find_capabilities(extensions);
  REQUIRE(found);
  CHECK(list(found->types()) == std::vector<std::string>{"erofs", "block"});

  shim::pb::Any host;
  host.set_type_url("host-mounts");
  extensions.clear();
  REQUIRE(shim::detail::start_answer_extensions(manager, host, &extensions).ok());
  CHECK(extensions.empty());

  containerd::types::RuntimeInfo info;
  REQUIRE(shim::detail::annotate_runtime_info(manager, std::nullopt, &info).ok());
  CHECK(info.annotations().at(shim::kRuntimeAllowMountsAnnotation) == "erofs,block,format/*");
  (*info.mutable_annotations())[shim::kRuntimeAllowMountsAnnotation] = "set by info()";
  REQUIRE(shim::detail::annotate_runtime_info(manager, std::nullopt, &info).ok());
  CHECK(info.annotations().at(shim::kRuntimeAllowMountsAnnotation) == "set by info()");
  containerd::types::RuntimeInfo empty_info;
  manager.capabilities = {};
  REQUIRE(shim::detail::annotate_runtime_info(manager, std::nullopt, &empty_info).ok());
  CHECK(empty_info.annotations().empty());  // nothing to list

  manager.capabilities = {{"bad/type"}, {}};
  shim::Status status = shim::detail::start_answer_extensions(manager, std::nullopt, &extensions);
  CHECK(status.code() == shim::Code::kInvalidArgument);
  manager.throws = true;
  status = shim::detail::annotate_runtime_info(manager, std::nullopt, &info);
  CHECK(status.code() == shim::Code::kInternal);
  CHECK(status.message() == "Manager::mount_capabilities threw: no config");

  // The default Manager declares nothing (containerd's runc shim declares nothing).
  struct Plain final : shim::Manager {
    std::string name() const override { return "io.containerd.runc.v2"; }
    shim::Status stop(const shim::ActionContext&, containerd::task::v2::DeleteResponse*) override {
      return {};
    }
    std::unique_ptr<shim::TaskService> create_task_service(shim::ServiceContext&) override {
      return nullptr;
    }
  } plain;
  extensions.clear();
  REQUIRE(shim::detail::start_answer_extensions(plain, std::nullopt, &extensions).ok());
  CHECK(extensions.empty());
}
