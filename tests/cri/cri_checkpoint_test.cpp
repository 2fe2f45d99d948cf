// Kubernetes' forensic container checkpointing: CRI CheckpointContainer with our shim and
// with the Go shim. containerd 2.x (internal/cri/server/container_checkpoint_linux.go)
// checkpoints the task leaving it running, with CRIU's work dir in a fresh
// <container root>/ctrd-checkpoint, and tars that dir to the request's location: CRIU's
// images under checkpoint/, dump.log and stats-dump from the work dir, config.dump,
// spec.dump, status.dump, the container state's `status`, container.log and the rw
// layer's rootfs-diff.tar. Before 2.0 containerd answers the call without a checkpoint;
// ours must then fail exactly as the Go shim's side does. CRIU is the cached one
// (support/criu.h), first on containerd's PATH.
#include <filesystem>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>

#include <fmt/format.h>
#include <boost/json.hpp>
#include <catch2/catch.hpp>

#include "cri_env.h"
#include "cri_pod.h"
#include "support/criu.h"

namespace shim::test::cri {
namespace {

using namespace std::chrono_literals;

// The archive's entries, as `tar -t` lists them ("./" prefixes dropped).
std::set<std::string> archive_entries(const std::string& archive) {
  CommandResult list = run_command({"tar", "-tf", archive});
  if (!list.ok()) throw std::runtime_error("tar -tf " + archive + ": " + list.describe());
  std::set<std::string> entries;
  std::istringstream lines(list.out);
  for (std::string line; std::getline(lines, line);) {
    if (line.starts_with("./")) line.erase(0, 2);
    if (!line.empty() && line != ".") entries.insert(line);
  }
  return entries;
}

// One file of the archive, extracted to stdout.
std::string archive_file(const std::string& archive, const std::string& name) {
  CommandResult file = run_command({"tar", "-xOf", archive, name});
  return file.ok() ? file.out : "";
}

struct Checkpointed {
  Observed seen;
  std::set<std::string> entries;
  std::string archive;
};

Checkpointed checkpoint_one(CriEnv& env, Side side) {
  CriClient& client = env.client(side);
  Pod pod = run_pod(env, side, "ckpt");
  v1::ContainerConfig config = container_config(
      "counter", {"/bin/sh", "-c",
                  "i=0; while :; do echo $i; echo $i > /tmp/count; i=$((i+1)); sleep 0.1; done"});
  const std::string id = run_container(client, pod, config);
  wait_log_contains(log_path(pod, config), "12");

  Checkpointed out;
  out.archive = fmt::format("{}/checkpoint-{}.tar", env.work_dir(), side_name(side));
  grpc::Status status = client.checkpoint_container_status(id, out.archive, 60);
  out.seen["code"] = std::to_string(status.error_code());
  // The container id differs per side; the rest of the message must not.
  std::string message = status.error_message();
  for (auto at = message.find(id); at != std::string::npos; at = message.find(id))
    message.replace(at, id.size(), "<id>");
  out.seen["message"] = message;
  if (status.ok()) {
    out.entries = archive_entries(out.archive);
    for (const std::string& name : out.entries) {
      // CRIU's image set depends on the process tree, not on the shim; its per-task
      // images are named by pid (core-6.img) and its tmpfs images by mount id
      // (tmpfs-dev-64.tar.gz.img), which differ between the runs.
      out.seen["entry " + std::regex_replace(name, std::regex("-[0-9]+((\\.tar\\.gz)?\\.img)$"),
                                             "-<n>$1")] = "present";
    }
    boost::json::value config_dump = boost::json::parse(archive_file(out.archive, "config.dump"));
    out.seen["config.dump id is the container"] =
        config_dump.at("id").as_string() == id ? "yes" : "no";
    out.seen["config.dump runtime"] = std::string(config_dump.at("runtime").as_string());
    boost::json::value spec = boost::json::parse(archive_file(out.archive, "spec.dump"));
    out.seen["spec.dump args"] = boost::json::serialize(spec.at("process").at("args"));
    out.seen["dump.log finished"] =
        archive_file(out.archive, "dump.log").find("Dumping finished successfully") !=
                std::string::npos
            ? "yes"
            : "no";
  }
  // Forensic checkpointing leaves the container running, and counting.
  v1::ContainerStatus after = client.container_status(id).status();
  out.seen["state after"] = v1::ContainerState_Name(after.state());
  remove_pod(client, pod);
  return out;
}

}  // namespace

TEST_CASE("CRI CheckpointContainer writes the archive with our shim as with the Go shim",
          "[cri][checkpoint][multi-version]") {
  LIBSHIM_SKIP_WITHOUT_CRI();
  if (auto problem = criu_unavailable()) LIBSHIM_SKIP("no real CRIU: " + *problem);
  CriEnv env;
  Checkpointed ours = checkpoint_one(env, Side::ours);
  Checkpointed go = checkpoint_one(env, Side::go);
  for (const auto& [key, value] : ours.seen) UNSCOPED_INFO("ours: " << key << " = " << value);
  check_same_observations(ours.seen, go.seen);
  CHECK(ours.seen["state after"] == "CONTAINER_RUNNING");
  if (!env.version().at_least(2, 0)) {
    // No forensic checkpointing in 1.6/1.7's CRI plugin: the same refusal on both sides.
    CHECK(ours.seen["code"] != "0");
    return;
  }
  REQUIRE(ours.seen["code"] == "0");
  // What containerd puts there (besides CRIU's images, which must include the process
  // tree and the inventory).
  for (const char* name :
       {"checkpoint/", "checkpoint/inventory.img", "checkpoint/pstree.img", "config.dump",
        "spec.dump", "status.dump", "status", "dump.log", "stats-dump", "container.log"}) {
    INFO(name);
    CHECK(ours.entries.count(name) == 1);
  }
  CHECK(ours.seen["config.dump id is the container"] == "yes");
  CHECK(ours.seen["config.dump runtime"] == "io.containerd.runc.v2");
  CHECK(ours.seen["dump.log finished"] == "yes");
}

}  // namespace shim::test::cri
