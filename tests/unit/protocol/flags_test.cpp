#include <map>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "protocol/flags.h"
#include "protocol/shim_env.h"

namespace {

shim::ShimFlags parse_ok(const std::vector<std::string>& args) {
  shim::ShimFlags flags;
  shim::Status status = shim::parse_flags(args, &flags);
  INFO(status.to_string());
  REQUIRE(status.ok());
  return flags;
}

shim::Status parse_error(const std::vector<std::string>& args) {
  shim::ShimFlags flags;
  shim::Status status = shim::parse_flags(args, &flags);
  REQUIRE_FALSE(status.ok());
  CHECK(status.code() == shim::Code::kInvalidArgument);
  return status;
}

const std::string kGrpc = "/run/containerd/containerd.sock";
const std::string kContainerd = "/usr/bin/containerd";
const std::string kBundle = "/run/containerd/io.containerd.runtime.v2.task/default/t1";

}  // namespace

TEST_CASE("flags: containerd 1.6 start and delete argv", "[flags]") {
  shim::ShimFlags start = parse_ok({"-namespace", "default", "-address", kGrpc,
                                    "-publish-binary", kContainerd, "-id", "t1", "-debug",
                                    "start"});
  CHECK(start.ns == "default");
  CHECK(start.address == kGrpc);
  CHECK(start.publish_binary == kContainerd);
  CHECK(start.id == "t1");
  CHECK(start.debug);
  CHECK(start.bundle.empty());
  CHECK(start.action == "start");
  CHECK(start.args.empty());

  shim::ShimFlags del = parse_ok({"-namespace", "default", "-address", kGrpc,
                                  "-publish-binary", kContainerd, "-id", "t1", "-bundle",
                                  kBundle, "delete"});
  CHECK(del.bundle == kBundle);
  CHECK_FALSE(del.debug);  // 1.6 never passes -debug to delete
  CHECK(del.action == "delete");
}

TEST_CASE("flags: containerd 1.7 / 2.0 delete with -debug, 2.3 with -bundle", "[flags]") {
  shim::ShimFlags del = parse_ok({"-namespace", "k8s.io", "-address", kGrpc,
                                  "-publish-binary", kContainerd, "-id", "abc", "-bundle",
                                  kBundle, "-debug", "delete"});
  CHECK(del.ns == "k8s.io");
  CHECK(del.debug);
  CHECK(del.bundle == kBundle);
  CHECK(del.action == "delete");

  shim::ShimFlags start = parse_ok({"-namespace", "default", "-address", kGrpc,
                                    "-publish-binary", kContainerd, "-id", "t1", "start"});
  CHECK_FALSE(start.debug);
  CHECK(start.action == "start");
}

TEST_CASE("flags: the daemon form, -info, -v and -version", "[flags]") {
  shim::ShimFlags daemon =
      parse_ok({"-namespace", "default", "-id", "t1", "-address", kGrpc, "-debug"});
  CHECK(daemon.action.empty());
  CHECK(daemon.debug);
  CHECK(daemon.id == "t1");

  shim::ShimFlags info = parse_ok({"-info"});
  CHECK(info.info);
  CHECK(info.action.empty());
  CHECK(info.ns.empty());

  CHECK(parse_ok({"-v"}).version);
  CHECK(parse_ok({"-version"}).version);
  CHECK(parse_ok({"--version"}).version);
  CHECK_FALSE(parse_ok({}).version);
}

TEST_CASE("flags: Go value forms", "[flags]") {
  CHECK(parse_ok({"-id=t1"}).id == "t1");
  CHECK(parse_ok({"--id", "t1"}).id == "t1");
  CHECK(parse_ok({"--id=t1"}).id == "t1");
  CHECK(parse_ok({"-id="}).id.empty());
  CHECK(parse_ok({"-id=a=b"}).id == "a=b");          // only the first '=' splits
  CHECK(parse_ok({"-id", "-debug"}).id == "-debug");  // a string flag takes any next word
  CHECK(parse_ok({"-id", "a", "-id", "b"}).id == "b");  // last one wins
  CHECK(parse_ok({"-debug-socket", "/tmp/d.sock"}).debug_socket == "/tmp/d.sock");
  CHECK(parse_ok({"-socket=/tmp/s.sock"}).socket == "/tmp/s.sock");
}

TEST_CASE("flags: bool flags never consume the next word", "[flags]") {
  CHECK(parse_ok({"-debug=true"}).debug);
  CHECK(parse_ok({"-debug=1"}).debug);
  CHECK(parse_ok({"-debug=T"}).debug);
  CHECK_FALSE(parse_ok({"-debug=false"}).debug);
  CHECK_FALSE(parse_ok({"-debug=0"}).debug);
  CHECK_FALSE(parse_ok({"--debug=False"}).debug);

  shim::ShimFlags flags = parse_ok({"-debug", "false"});
  CHECK(flags.debug);
  CHECK(flags.action == "false");
}

TEST_CASE("flags: parsing stops at the action or after --", "[flags]") {
  shim::ShimFlags flags = parse_ok({"-id", "t1", "start", "-debug", "extra"});
  CHECK(flags.action == "start");
  CHECK_FALSE(flags.debug);  // after the action, words are positional
  CHECK(flags.args == std::vector<std::string>{"-debug", "extra"});

  shim::ShimFlags dashed = parse_ok({"-id", "t1", "--", "-debug", "start"});
  CHECK(dashed.action == "-debug");
  CHECK(dashed.args == std::vector<std::string>{"start"});
  CHECK_FALSE(dashed.debug);

  shim::ShimFlags lone_dash = parse_ok({"-", "start"});
  CHECK(lone_dash.action == "-");
  CHECK(lone_dash.args == std::vector<std::string>{"start"});

  CHECK(parse_ok({"--"}).action.empty());
}

TEST_CASE("flags: errors use Go's wording", "[flags]") {
  CHECK(parse_error({"-x"}).message() == "flag provided but not defined: -x");
  CHECK(parse_error({"--nope=1", "start"}).message() == "flag provided but not defined: -nope");
  CHECK(parse_error({"-id"}).message() == "flag needs an argument: -id");
  CHECK(parse_error({"-debug=yes"}).message() ==
        "invalid boolean value \"yes\" for -debug: parse error");
  CHECK(parse_error({"---id", "x"}).message() == "bad flag syntax: ---id");
  CHECK(parse_error({"-=x"}).message() == "bad flag syntax: -=x");
}

TEST_CASE("flags: -h and -help stop parsing and ask for usage", "[flags]") {
  shim::ShimFlags flags = parse_ok({"-id", "t1", "-h", "-unknown"});
  CHECK(flags.help);
  CHECK(flags.id == "t1");
  CHECK(parse_ok({"--help"}).help);
  CHECK_FALSE(parse_ok({"start"}).help);
}

TEST_CASE("flags: argc/argv skips the program name", "[flags]") {
  const char* argv[] = {"/usr/bin/containerd-shim-runc-v2", "-namespace", "default", "-id",
                        "t1", "start"};
  shim::ShimFlags flags;
  REQUIRE(shim::parse_flags(6, argv, &flags).ok());
  CHECK(flags.ns == "default");
  CHECK(flags.action == "start");

  shim::ShimFlags again;
  const char* bogus[] = {"shim", "-bogus"};
  shim::Status status = shim::parse_flags(2, bogus, &again);
  CHECK(status.message() == "flag provided but not defined: -bogus");
}

TEST_CASE("env: containerd 1.6 versus 1.7+ environments", "[flags]") {
  auto lookup_from = [](std::map<std::string, std::string> vars) -> shim::EnvLookup {
    return [vars = std::move(vars)](std::string_view name) -> std::optional<std::string> {
      auto it = vars.find(std::string(name));
      if (it == vars.end()) return std::nullopt;
      return it->second;
    };
  };

  shim::ShimEnv old_env = shim::read_shim_env(lookup_from(
      {{"GOMAXPROCS", "2"}, {"TTRPC_ADDRESS", "/run/containerd/containerd.sock.ttrpc"}}));
  CHECK(old_env.ttrpc_address == "/run/containerd/containerd.sock.ttrpc");
  CHECK(old_env.grpc_address.empty());
  CHECK_FALSE(old_env.max_shim_version.has_value());
  CHECK_FALSE(old_env.sched_core);
  CHECK_FALSE(old_env.from_containerd_1_7_or_later());

  shim::ShimEnv new_env = shim::read_shim_env(lookup_from(
      {{"MAX_SHIM_VERSION", "2"}, {"TTRPC_ADDRESS", "/x.ttrpc"}, {"GRPC_ADDRESS", "/x"},
       {"NAMESPACE", "k8s.io"}, {"SCHED_CORE", "1"}}));
  CHECK(new_env.max_shim_version == 2);
  CHECK(new_env.grpc_address == "/x");
  CHECK(new_env.ns == "k8s.io");
  CHECK(new_env.sched_core);
  CHECK(new_env.from_containerd_1_7_or_later());

  shim::ShimEnv odd = shim::read_shim_env(
      lookup_from({{"MAX_SHIM_VERSION", "two"}, {"SCHED_CORE", ""}}));
  CHECK_FALSE(odd.max_shim_version.has_value());
  CHECK_FALSE(odd.sched_core);  // Go tests for a non-empty value
  CHECK(shim::read_shim_env(lookup_from({{"MAX_SHIM_VERSION", "2x"}}))
            .max_shim_version == std::nullopt);
}
