// containerd.runc.v1.Options: decoding every kind of Any containerd may send, and the
// options.json / runtime files exactly as the Go shim writes them.
#include <sys/stat.h>

#include <string>

#include <catch2/catch.hpp>

#include "shim/pb/runc/runtimeoptions.pb.h"
#include "gocompat/go_compat.h"
#include "shim/oci/runc_options.h"
#include "support/temp_dir.h"

namespace {

using shim::oci::DecodedOptions;
using shim::oci::RuncOptions;

shim::pb::Any make_any(std::string type_url, std::string value) {
  shim::pb::Any any;
  any.set_type_url(std::move(type_url));
  any.set_value(std::move(value));
  return any;
}

RuncOptions options_with_root(const std::string& root) {
  RuncOptions options;
  options.set_root(root);
  return options;
}

std::string file_content(const std::string& path) {
  std::string content;
  REQUIRE(shim::go_read_file(path, &content).ok());
  return content;
}

int file_mode(const std::string& path) {
  struct stat st {};
  REQUIRE(::stat(path.c_str(), &st) == 0);
  return static_cast<int>(st.st_mode & 07777);
}

}  // namespace

TEST_CASE("runtime options Any: runc Options, bare or prefixed type_url", "[runc]") {
  RuncOptions sent = options_with_root("/tmp/x");
  sent.set_binary_name("crun");
  sent.set_systemd_cgroup(true);
  for (std::string type_url : {"containerd.runc.v1.Options",
                               "type.googleapis.com/containerd.runc.v1.Options"}) {
    INFO(type_url);
    DecodedOptions decoded;
    REQUIRE(shim::oci::decode_runc_options(make_any(type_url, sent.SerializeAsString()), &decoded)
                .ok());
    CHECK(decoded.present);
    CHECK(decoded.note.empty());
    CHECK(decoded.options.root() == "/tmp/x");
    CHECK(decoded.options.binary_name() == "crun");
    CHECK(decoded.options.systemd_cgroup());
  }
  // ctr attaches an empty Options message: present, all defaults.
  DecodedOptions empty_message;
  REQUIRE(shim::oci::decode_runc_options(make_any("containerd.runc.v1.Options", ""),
                                         &empty_message)
              .ok());
  CHECK(empty_message.present);
  CHECK(shim::oci::runc_root(empty_message.options) == "/run/containerd/runc");
}

TEST_CASE("runtime options Any of other kinds mean no runc options", "[runc]") {
  DecodedOptions decoded;
  SECTION("no Any at all (empty type_url and value)") {
    REQUIRE(shim::oci::decode_runc_options(shim::pb::Any(), &decoded).ok());
    CHECK_FALSE(decoded.present);
    CHECK(decoded.note.empty());
  }
  SECTION("a value without type_url") {
    REQUIRE(shim::oci::decode_runc_options(make_any("", "\x3a\x01x"), &decoded).ok());
    CHECK_FALSE(decoded.present);
    CHECK(decoded.note == "runtime options without a type_url (3 bytes) ignored");
  }
  SECTION("runtimeoptions.v1.Options (CRI, non-runc runtime_type)") {
    runtimeoptions::v1::Options cri;
    cri.set_config_path("/etc/runtime.toml");
    REQUIRE(shim::oci::decode_runc_options(
                make_any("runtimeoptions.v1.Options", cri.SerializeAsString()), &decoded)
                .ok());
    CHECK_FALSE(decoded.present);
    CHECK(decoded.note ==
          "runtime options of type runtimeoptions.v1.Options are not containerd.runc.v1.Options: "
          "using runc defaults (config_path /etc/runtime.toml not read)");
  }
  SECTION("containerd.linux.runc.CreateOptions (1.6 ctr, other runtime names)") {
    REQUIRE(shim::oci::decode_runc_options(
                make_any("containerd.linux.runc.CreateOptions", "\x08\x01"), &decoded)
                .ok());
    CHECK_FALSE(decoded.present);
    CHECK(decoded.note.find("containerd.linux.runc.CreateOptions") != std::string::npos);
  }
  CHECK(decoded.options.SerializeAsString().empty());  // defaults whatever the case
}

TEST_CASE("runc Options bytes that do not decode are an error", "[runc]") {
  DecodedOptions decoded;
  // Field 7 (root) announcing 100 bytes that are not there.
  shim::Status status =
      shim::oci::decode_runc_options(make_any("containerd.runc.v1.Options", "\x3a\x64/x"), &decoded);
  CHECK(status.code() == shim::Code::kUnknown);
  CHECK(status.message() == "unmarshal containerd.runc.v1.Options: invalid protobuf (4 bytes)");
  CHECK_FALSE(decoded.present);
  CHECK(decoded.options.root().empty());
  CHECK(decoded.note == "runtime options containerd.runc.v1.Options: cannot decode 4 bytes");
}

TEST_CASE("options.json bytes: Go's json.Marshal of the Options struct", "[runc]") {
  CHECK(shim::oci::options_json(RuncOptions()) == "{}");
  CHECK(shim::oci::options_json(options_with_root("/tmp/x")) == R"({"root":"/tmp/x"})");

  RuncOptions all;
  all.set_no_pivot_root(true);
  all.set_no_new_keyring(true);
  all.set_shim_cgroup("/shim");
  all.set_io_uid(1000);
  all.set_io_gid(4294967295u);
  all.set_binary_name("crun");
  all.set_root("/r");
  all.set_criu_path("/criu");
  all.set_systemd_cgroup(true);
  all.set_criu_image_path("/img");
  all.set_criu_work_path("/work");
  all.set_task_api_address("ttrpc+unix:///s");
  all.set_task_api_version(3);
  CHECK(shim::oci::options_json(all) ==
        R"({"no_pivot_root":true,"no_new_keyring":true,"shim_cgroup":"/shim","io_uid":1000,)"
        R"("io_gid":4294967295,"binary_name":"crun","root":"/r","criu_path":"/criu",)"
        R"("systemd_cgroup":true,"criu_image_path":"/img","criu_work_path":"/work",)"
        R"("task_api_address":"ttrpc+unix:///s","task_api_version":3})");

  RuncOptions odd = options_with_root("/a<b>&\"c\"\n");
  odd.set_io_gid(7);
  CHECK(shim::oci::options_json(odd) ==
        R"({"io_gid":7,"root":"/a\u003cb\u003e\u0026\"c\"\n"})");
}

TEST_CASE("options.json decodes like Go's json.Unmarshal", "[runc]") {
  RuncOptions options;
  REQUIRE(shim::oci::parse_options_json(
              R"({"ROOT":"/r","binary_name":"crun","unknown":{"x":1},"io_uid":5,)"
              R"("no_pivot_root":true,"shim_cgroup":null})",
              &options)
              .ok());
  CHECK(options.root() == "/r");
  CHECK(options.binary_name() == "crun");
  CHECK(options.io_uid() == 5);
  CHECK(options.no_pivot_root());
  CHECK(options.shim_cgroup().empty());
  CHECK(shim::oci::parse_options_json("null", &options).ok());
  CHECK(options.root().empty());

  CHECK(shim::oci::parse_options_json(R"({"root":true})", &options).message() ==
        "json: cannot unmarshal bool into Go struct field Options.root of type string");
  CHECK(shim::oci::parse_options_json(R"({"io_uid":-1})", &options).message() ==
        "json: cannot unmarshal number into Go struct field Options.io_uid of type uint32");
  CHECK_FALSE(shim::oci::parse_options_json(R"({"io_uid":4294967296})", &options).ok());
  CHECK_FALSE(shim::oci::parse_options_json(R"({"io_uid":1.5})", &options).ok());
  CHECK_FALSE(shim::oci::parse_options_json(R"([])", &options).ok());
  CHECK_FALSE(shim::oci::parse_options_json(R"({"root":)", &options).ok());
}

TEST_CASE("options.json and runtime files in the bundle", "[runc]") {
  shim::test::TempDir bundle("runc-opt-");
  RuncOptions written = options_with_root("/tmp/x");
  written.set_binary_name("crun");
  REQUIRE(shim::oci::write_options(bundle.path(), written).ok());
  REQUIRE(shim::oci::write_runtime(bundle.path(), written.binary_name()).ok());
  CHECK(file_content(bundle.sub("options.json")) == R"({"binary_name":"crun","root":"/tmp/x"})");
  CHECK(file_content(bundle.sub("runtime")) == "crun");
  CHECK(file_mode(bundle.sub("options.json")) == 0600);
  CHECK(file_mode(bundle.sub("runtime")) == 0600);

  RuncOptions read;
  bool present = false;
  REQUIRE(shim::oci::read_options(bundle.path(), &read, &present).ok());
  CHECK(present);
  CHECK(read.SerializeAsString() == written.SerializeAsString());
  std::string runtime;
  REQUIRE(shim::oci::read_runtime(bundle.path(), &runtime).ok());
  CHECK(runtime == "crun");

  // runc as the default: the Go shim writes an empty runtime file.
  REQUIRE(shim::oci::write_runtime(bundle.path(), "").ok());
  CHECK(file_content(bundle.sub("runtime")).empty());

  shim::test::TempDir empty("runc-opt-");
  REQUIRE(shim::oci::read_options(empty.path(), &read, &present).ok());
  CHECK_FALSE(present);
  shim::Status missing = shim::oci::read_runtime(empty.path(), &runtime);
  CHECK(missing.code() == shim::Code::kNotFound);
  CHECK(missing.message() == "open " + empty.sub("runtime") + ": no such file or directory");
}
