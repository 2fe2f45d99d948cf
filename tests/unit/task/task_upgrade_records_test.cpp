// task/task_upgrade_records.h: a container's records survive the trip through the
// upgrade document's JSON text, and a broken document is refused naming the field.
#include <chrono>

#include <boost/json.hpp>
#include <catch2/catch.hpp>

#include "task/task_upgrade_records.h"

namespace {

namespace json = boost::json;
using shim::ContainerConfig;
using shim::ProcessExit;
using shim::ProcessState;
using shim::TaskContainer;
using shim::TaskProcess;

// Through text, as the memfd carries it.
json::value through_text(const json::object& saved) { return json::parse(json::serialize(saved)); }

TaskContainer sample_container() {
  TaskContainer container;
  container.id = "c1";
  container.bundle = "/run/b/c1";
  container.holder = std::make_shared<shim::InstanceHolder>();
  ContainerConfig& config = container.holder->config;
  config.id = "c1";
  config.bundle = "/run/b/c1";
  config.rootfs = "/run/b/c1/rootfs";
  config.spec = json::object{{"ociVersion", "1.0.2"}, {"process", json::object{{"args", {"sh"}}}}};
  shim::pb::Any options;
  options.set_type_url("containerd.runc.v1.Options");
  options.set_value(std::string("\x0a\x00\xff binary", 10));
  config.options = options;
  config.terminal = false;
  container.private_pid_namespace = false;
  shim::CgroupPaths cgroup;
  cgroup.controllers = {{"memory", "/sys/fs/cgroup/memory/ns/c1"}};
  container.cgroup = cgroup;
  container.init.id = "c1";
  container.init.state = ProcessState::kPaused;
  container.init.pid = 4242;
  auto exec = std::make_unique<TaskProcess>();
  exec->id = "e1";
  exec->exec_id = "e1";
  exec->spec_json = R"({"args":["true"]})";
  exec->state = ProcessState::kStopped;
  exec->pid = 4300;
  exec->exit = ProcessExit{
      4300, 137,
      std::chrono::system_clock::time_point(std::chrono::nanoseconds(1764900000123456789)), 9};
  exec->exit_published = true;
  container.execs["e1"] = std::move(exec);
  return container;
}

}  // namespace

TEST_CASE("Upgrade records: a container and its processes survive the JSON text",
          "[task][upgrade]") {
  TaskContainer original = sample_container();
  json::object saved = shim::save_container(original, json::object{{"vendor", 7}});

  TaskContainer loaded;
  ContainerConfig config;
  json::object instance;
  REQUIRE(shim::load_container(through_text(saved), &loaded, &config, &instance).ok());
  CHECK(loaded.id == "c1");
  CHECK(loaded.bundle == "/run/b/c1");
  CHECK_FALSE(loaded.private_pid_namespace);
  REQUIRE(loaded.cgroup);
  CHECK(loaded.cgroup->controllers.at("memory") == "/sys/fs/cgroup/memory/ns/c1");
  CHECK(config.rootfs == "/run/b/c1/rootfs");
  CHECK(config.spec == original.holder->config.spec);
  REQUIRE(config.options);
  CHECK(config.options->type_url() == "containerd.runc.v1.Options");
  CHECK(config.options->value() == original.holder->config.options->value());
  CHECK(instance == json::object{{"vendor", 7}});
  CHECK(loaded.init.state == ProcessState::kPaused);
  CHECK(loaded.init.pid == 4242);
  CHECK_FALSE(loaded.init.exit);
  REQUIRE(loaded.execs.contains("e1"));
  const TaskProcess& exec = *loaded.execs.at("e1");
  CHECK(exec.spec_json == R"({"args":["true"]})");
  CHECK(exec.state == ProcessState::kStopped);
  REQUIRE(exec.exit);
  CHECK(exec.exit->status == 137);
  CHECK(exec.exit->wait_status == 9);
  CHECK(exec.exit->exited_at == original.execs.at("e1")->exit->exited_at);
  CHECK(exec.exit_published);
}

TEST_CASE("Upgrade records: a missing or mistyped field is named", "[task][upgrade]") {
  json::object saved = shim::save_container(sample_container(), {});
  TaskContainer loaded;
  ContainerConfig config;
  json::object instance;

  json::object no_pid = saved;
  no_pid["init"].as_object().erase("pid");
  shim::Status status = shim::load_container(no_pid, &loaded, &config, &instance);
  CHECK(status.code() == shim::Code::kFailedPrecondition);
  CHECK(status.message() == "upgrade state: container c1.init.pid is not an integer");

  json::object bad_options = saved;
  bad_options["config"].as_object()["options"].as_object()["value_hex"] = "0g";
  status = shim::load_container(bad_options, &loaded, &config, &instance);
  CHECK(status.message() == "upgrade state: container c1.config.options.value_hex is not hex");

  status = shim::load_container(json::value("text"), &loaded, &config, &instance);
  CHECK(status.message() == "upgrade state: container is not an object");
}
