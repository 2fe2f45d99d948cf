// plan_init and plan_exec on specs shaped like the ones `ctr run` and CRI write: what the
// zygote applies (namespaces, hostname, mounts, the module as the process) and what sends
// a container to runc instead (Unimplemented, naming it).
#include <sched.h>

#include <filesystem>
#include <string>

#include <boost/json.hpp>
#include <catch2/catch.hpp>

#include "fork_plan.h"
#include "shim/fs.h"
#include "support/temp_dir.h"

namespace {

namespace json = boost::json;

// `ctr run`'s default spec (containerd's oci.populateDefaultUnixSpec), trimmed.
json::object ctr_spec() {
  json::value spec = json::parse(R"({
    "process": {"args": ["/hello.wasm", "3"], "env": ["PATH=/bin", "A=b"], "cwd": "/",
                "user": {"uid": 0, "gid": 0},
                "capabilities": {"bounding": ["CAP_KILL"], "effective": ["CAP_KILL"],
                                 "permitted": ["CAP_KILL"]},
                "rlimits": [{"type": "RLIMIT_NOFILE", "hard": 1024, "soft": 1024}],
                "noNewPrivileges": true},
    "root": {"path": "rootfs"},
    "hostname": "box",
    "mounts": [
      {"destination": "/proc", "type": "proc", "source": "proc", "options": ["nosuid"]},
      {"destination": "/dev", "type": "tmpfs", "source": "tmpfs", "options": ["nosuid"]},
      {"destination": "/dev/pts", "type": "devpts", "source": "devpts", "options": []},
      {"destination": "/sys", "type": "sysfs", "source": "sysfs", "options": ["ro"]},
      {"destination": "/run", "type": "tmpfs", "source": "tmpfs", "options": ["size=65536k"]},
      {"destination": "/etc/hosts", "type": "bind", "source": "/etc/hosts",
       "options": ["rbind", "ro"]}],
    "linux": {"cgroupsPath": "/default/box",
              "resources": {"memory": {"limit": 100663296}},
              "namespaces": [{"type": "pid"}, {"type": "ipc"}, {"type": "uts"},
                             {"type": "mount"}, {"type": "network"}]}
  })");
  return spec.as_object();
}

struct Fixture {
  shim::test::TempDir dir{"plan-"};
  std::string rootfs = dir.path() + "/rootfs";
  shim_wasm::Entrypoint entry{true, "/hello.wasm"};
  Fixture() { std::filesystem::create_directories(rootfs + "/etc"); }
};

TEST_CASE("fork plan: the init of ctr's spec runs the module in new namespaces", "[shim-wasm]") {
  Fixture f;
  shim_wasm::ForkPlan plan;
  REQUIRE(shim_wasm::plan_init(ctr_spec(), f.rootfs, f.entry, {}, &plan).ok());
  const shim::SpawnRequest& r = plan.spawn.request;
  CHECK(r.path == "/hello.wasm");
  CHECK(r.argv == std::vector<std::string>{"/hello.wasm", "3"});
  CHECK_FALSE(r.search_path.has_value());
  CHECK(r.new_namespaces ==
        (CLONE_NEWPID | CLONE_NEWIPC | CLONE_NEWUTS | CLONE_NEWNS | CLONE_NEWNET));
  CHECK(r.hostname == "box");
  CHECK(r.root == f.rootfs);
  CHECK(r.pivot_root);
  CHECK_FALSE(r.mount_proc);  // a fresh /proc would need the masked paths over it
  CHECK(r.no_new_privileges);
  REQUIRE(r.mounts.size() == 2);  // /dev, /dev/pts and /sys are not the module's
  CHECK(r.mounts[0].target == "/run");
  CHECK(r.mounts[0].type == "tmpfs");
  CHECK(r.mounts[1].target == "/etc/hosts");
  CHECK(r.mounts[1].type == "bind");
  CHECK(plan.cgroup_path == "/default/box");
  CHECK(plan.resources.at("memory").at("limit").as_int64() == 100663296);
}

TEST_CASE("fork plan: a joined namespace is opened, and what the zygote cannot apply goes to runc",
          "[shim-wasm]") {
  Fixture f;
  json::object joined = ctr_spec();
  joined["linux"].as_object()["namespaces"] = json::parse(
      R"([{"type": "pid"}, {"type": "mount"}, {"type": "network", "path": "/proc/self/ns/net"}])");
  shim_wasm::ForkPlan plan;
  REQUIRE(shim_wasm::plan_init(joined, f.rootfs, f.entry, {}, &plan).ok());
  REQUIRE(plan.spawn.request.join_namespace_files.size() == 1);
  CHECK(plan.spawn.request.join_namespace_files[0].first == CLONE_NEWNET);
  CHECK(plan.namespace_files.size() == 1);
  CHECK(plan.spawn.request.hostname.empty());  // no UTS namespace of its own

  struct Case {
    std::string name, patch, reason;
  };
  for (const Case& c : {
           Case{"seccomp", R"({"linux": {"seccomp": {"defaultAction": "SCMP_ACT_ERRNO"}}})",
                "the zygote does not apply linux.seccomp"},
           Case{"user namespace", R"({"linux": {"namespaces": [{"type": "user"}]}})",
                "the zygote does not apply a user namespace"},
           Case{"systemd cgroup", R"({"linux": {"cgroupsPath": "system.slice:cri:x"}})",
                "the zygote does not apply the cgroup path \"system.slice:cri:x\""},
           Case{"read-only root", R"({"root": {"path": "rootfs", "readonly": true}})",
                "the zygote does not apply a read-only root"},
           Case{"overlay mount",
                R"({"mounts": [{"destination": "/data", "type": "overlay", "source": "o"}]})",
                "the zygote does not apply the overlay mount at /data"},
           Case{"apparmor", R"({"process": {"apparmorProfile": "x"}})",
                "the zygote does not apply process.apparmorProfile"},
           Case{"hooks", R"({"hooks": {"prestart": [{"path": "/bin/true"}]}})",
                "the zygote does not apply hooks"},
           Case{"nested mount",
                R"({"mounts": [{"destination": "/data", "type": "bind", "source": "/tmp"},
                               {"destination": "/data/cfg", "type": "bind", "source": "/etc"}]})",
                "the zygote does not apply the mount at /data/cfg inside the one at /data"},
       }) {
    INFO(c.name);
    json::object spec = ctr_spec();
    json::value patch = json::parse(c.patch);
    for (auto& [key, value] : patch.as_object()) {
      if (value.is_object() && spec.contains(key)) {
        for (auto& [k, v] : value.as_object()) spec[key].as_object()[k] = v;
      } else {
        spec[key] = value;
      }
    }
    shim::Status s = shim_wasm::plan_init(spec, f.rootfs, f.entry, {}, &plan);
    CHECK(s.code() == shim::Code::kUnimplemented);
    CHECK(s.message() == c.reason);
  }
}

TEST_CASE("fork plan: an exec joins the init's namespaces and cgroup", "[shim-wasm]") {
  Fixture f;
  json::value parsed =
      json::parse(R"({"args": ["sh", "-c", "true"], "env": ["PATH=/bin"], "cwd": "/"})");
  json::object& process = parsed.as_object();
  shim::oci::ProcessSpawn spawn;
  REQUIRE(shim_wasm::plan_exec(process, f.rootfs, {false, ""}, {}, 42, {"/cg/cgroup.procs"}, &spawn)
              .ok());
  CHECK(spawn.request.root.empty());  // the init's mount namespace is the container's root
  CHECK(spawn.request.join_pidfd == 42);
  CHECK(spawn.request.join_namespaces ==
        (CLONE_NEWPID | CLONE_NEWNS | CLONE_NEWIPC | CLONE_NEWUTS | CLONE_NEWNET));
  CHECK(spawn.request.cgroup_procs == std::vector<std::string>{"/cg/cgroup.procs"});
  CHECK(spawn.request.search_path == "/bin");  // a native exec is searched in the container

  process["args"] = json::array{"/hello.wasm", "7"};
  REQUIRE(shim_wasm::plan_exec(process, f.rootfs, f.entry, {}, 42, {}, &spawn).ok());
  CHECK(spawn.request.path == "/hello.wasm");
  CHECK_FALSE(spawn.request.search_path.has_value());
}

}  // namespace
