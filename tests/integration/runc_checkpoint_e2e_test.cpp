// Checkpoint and restore through shim-runc under a real containerd, compared with the Go
// shim (Debian's /usr/bin/containerd-shim-runc-v2) doing the same steps.
//
// The OCI runtime is named through a recording wrapper (`ctr run --runc-binary`) that
// appends each command line to a file, so the runc command lines both shims build are
// compared directly (modulo temp paths). CRIU is the one cmake/fetch-criu.sh caches
// (support/criu.h; Debian 12's criu 3.17 fails `criu check` on newer kernels), first on
// containerd's PATH: where `criu check` passes, a container is checkpointed and restored
// for real under both shims and must go on counting where it was. Where it does not (or
// the runtime is crun, which has no checkpoint), the checkpoint failure itself is compared
// (the error and the dump log path must reach ctr as from the Go shim, and the task keeps
// running) and the real restore is skipped with the reason. The restore path of the shim
// also runs with a stand-in runtime whose `checkpoint` writes a dummy image and whose
// `restore` is `create` + `start` (failures, events, the created-checkpoint state).
// More real CRIU cases (execs, terminals, CRIU's own errors): runc_criu_e2e_test.cpp.
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <thread>
#include <tuple>

#include <fmt/format.h>
#include <catch2/catch.hpp>

#include "support/busybox_image.h"
#include "support/busybox_rootfs.h"
#include "support/containerd_fixture.h"
#include "support/criu.h"

namespace shim::test {
namespace {

using namespace std::chrono_literals;

const std::string kOurShimDir = shim::test::shim_build_dir() + "/shim-runc";
// Writes the count to a file (not stdout: `ctr run -d` keeps nobody reading it).
const std::string kCounter =
    "i=0; while :; do echo $i > /tmp/count; i=$((i+1)); /bin/sleep 0.1; done";

enum class Shim { kOurs, kGo };

// Our shim first on containerd's PATH (or the Go shim that came with it), then the cached
// CRIU, which runc runs as `criu` from the PATH it inherits.
ContainerdOptions options_for(Shim shim) {
  ContainerdOptions options;
  if (shim == Shim::kOurs) options.path_prepend = {kOurShimDir};
  options.path_prepend.push_back(criu_path_dir());
  return options;
}

std::string read_text(const std::string& path) {
  std::ifstream in(path);
  return std::string((std::istreambuf_iterator<char>(in)), {});
}

// The runtime under test: runc, or $LIBSHIM_TEST_RUNC_BINARY (the crun registration).
std::string runtime_under_test() { return runc_binary_under_test().value_or("runc"); }

// Appends its argv (one line, space separated) to `log`, then runs the real runtime.
void write_recorder(const std::string& path, const std::string& log) {
  std::ofstream(path) << fmt::format("#!/bin/sh\nprintf '%s\\n' \"$*\" >> '{}'\nexec '{}' \"$@\"\n",
                                     log, runtime_under_test());
  REQUIRE(::chmod(path.c_str(), 0755) == 0);
}

// Records like write_recorder, and stands in for CRIU: `checkpoint` writes a dummy image
// (and kills the container unless --leave-running), `restore` is `create` + `start` with
// the same bundle, pid file and stdio, or fails with a log.json error while `fail_marker`
// exists. Everything else goes to the real runtime.
void write_fake_criu_runtime(const std::string& path, const std::string& log,
                             const std::string& fail_marker) {
  std::ofstream(path) << fmt::format(R"SH(#!/bin/sh
printf '%s\n' "$*" >> '{0}'
rt='{1}'
globals=
while [ $# -gt 0 ]; do
  case "$1" in
    --log) log="$2"; globals="$globals $1 $2"; shift 2 ;;
    --root|--log-format|--criu) globals="$globals $1 $2"; shift 2 ;;
    --systemd-cgroup) globals="$globals $1"; shift ;;
    *) break ;;
  esac
done
cmd="$1"; shift
case "$cmd" in checkpoint|restore) ;; *) exec "$rt" $globals "$cmd" "$@" ;; esac
image=; bundle=; pidfile=; leave=; id=
while [ $# -gt 0 ]; do
  case "$1" in
    --image-path) image="$2"; shift ;;
    --bundle) bundle="$2"; shift ;;
    --pid-file) pidfile="$2"; shift ;;
    --work-path|--parent-path|--console-socket|--empty-ns|--manage-cgroups-mode) shift ;;
    --leave-running) leave=1 ;;
    -*) ;;
    *) id="$1" ;;
  esac
  shift
done
if [ "$cmd" = checkpoint ]; then
  mkdir -p "$image" && echo stand-in > "$image/stand-in.img" || exit 1
  [ -n "$leave" ] || "$rt" $globals kill "$id" 9
  exit 0
fi
if [ -e '{2}' ]; then
  echo '{{"level":"error","msg":"stand-in restore failed","time":"2024-01-01T00:00:00Z"}}' >> "$log"
  exit 1
fi
"$rt" $globals create --bundle "$bundle" --pid-file "$pidfile" "$id" || exit 1
exec "$rt" $globals start "$id"
)SH",
                                     log, runtime_under_test(), fail_marker);
  REQUIRE(::chmod(path.c_str(), 0755) == 0);
}

// Why a real checkpoint cannot work in this run (nullopt when it can): CRIU's, or crun's
// (Debian's crun is built without CRIU).
std::optional<std::string> checkpoint_problem() {
  if (runtime_under_test() != "runc")
    return "the runtime under test is " + runtime_under_test() + ", not runc";
  return criu_unavailable();
}

struct Setup {
  explicit Setup(Shim shim)
      : fx(options_for(shim)), rootfs(fx.dir() + "/rootfs"), argv_log(fx.dir() + "/argv.log") {
    make_busybox_rootfs(rootfs);
  }
  // containerd 1.6 never removes the dir it unpacks a checkpoint into for a restore
  // (os.MkdirTemp(..., "ctrd-checkpoint") in its tasks service): remove the ones used here.
  ~Setup() {
    const std::regex image_dir("--image-path (\\S*/ctrd-checkpoint[0-9]+)");
    const std::string log = read_text(argv_log);
    for (std::sregex_iterator it(log.begin(), log.end(), image_dir), end; it != end; ++it) {
      std::error_code ignored;
      std::filesystem::remove_all((*it)[1].str(), ignored);
    }
  }

  // ctr flags keeping FIFOs and runc state in the fixture, with `binary` as BinaryName.
  std::vector<std::string> run_flags(const std::string& binary) const {
    return {"--fifo-dir", fx.fifo_dir(), "--runc-root", fx.runc_root(), "--runc-binary", binary};
  }

  std::string task_status(const std::string& id) const {
    std::istringstream lines(fx.ctr({"task", "ls"}).out);
    for (std::string line; std::getline(lines, line);) {
      std::istringstream words(line);
      std::string name, pid, status;
      words >> name >> pid >> status;
      if (name == id) return status;
    }
    return "";
  }

  bool wait_status(const std::string& id, const std::string& status,
                   std::chrono::milliseconds timeout) const {
    for (auto deadline = std::chrono::steady_clock::now() + timeout;
         std::chrono::steady_clock::now() < deadline;) {
      if (task_status(id) == status) return true;
      std::this_thread::sleep_for(50ms);
    }
    return false;
  }

  // The command lines recorded so far whose runtime command is `command`, with the
  // per-run paths replaced: fixture dir, namespace, containerd's checkpoint temp dirs (and
  // timestamps).
  std::vector<std::string> recorded(const std::string& command) const {
    std::vector<std::string> out;
    std::istringstream lines(read_text(argv_log));
    for (std::string line; std::getline(lines, line);) {
      if (line.find(" json " + command + " ") != std::string::npos) out.push_back(normalized(line));
    }
    return out;
  }

  std::string normalized(std::string text) const {
    for (auto [from, to] :
         {std::pair{fx.dir(), std::string("<dir>")}, std::pair{fx.ns(), std::string("<ns>")}}) {
      for (auto at = text.find(from); at != std::string::npos;
           at = text.find(from, at + to.size())) {
        text.replace(at, from.size(), to);
      }
    }
    text =
        std::regex_replace(text, std::regex("time=\"[^\"]*\""), "time=<t>");  // ctr's own log lines
    return std::regex_replace(text, std::regex("/ctr?d-checkpoint[0-9]+"), "/<checkpoint-tmp>");
  }

  PrivateContainerd fx;
  std::string rootfs;
  std::string argv_log;
};

// The counter's last value in a --rootfs container (-1 while there is none yet).
long rootfs_count(const Setup& s) {
  std::string text = read_text(s.rootfs + "/tmp/count");
  return text.empty() ? -1 : std::strtol(text.c_str(), nullptr, 10);
}

// The counter's value inside a container, read with `ctr task exec` (-1 if unreadable).
long exec_count(const Setup& s, const std::string& id) {
  static int reads = 0;
  CommandResult cat = s.fx.ctr(
      {"task", "exec", "--exec-id", fmt::format("read{}", ++reads), id, "/bin/cat", "/tmp/count"});
  return cat.ok() && !cat.out.empty() ? std::strtol(cat.out.c_str(), nullptr, 10) : -1;
}

template <class Read>
long wait_count_above(Read read, long floor, std::chrono::milliseconds timeout) {
  long count = -1;
  for (auto deadline = std::chrono::steady_clock::now() + timeout;
       std::chrono::steady_clock::now() < deadline;) {
    count = read();
    if (count > floor) return count;
    std::this_thread::sleep_for(100ms);
  }
  return count;
}

struct CheckpointRun {
  std::vector<std::string> checkpoint_lines;
  CommandResult plain;      // ctr task checkpoint <id>
  CommandResult with_exit;  // ctr task checkpoint --exit --image-path ... --work-path ... <id>
  std::string plain_error;  // normalized stderr
  std::string exit_error;
};

// Runs the counter, checkpoints it twice (leave running; then --exit with explicit image
// and work dirs) and checks what must hold for either shim. `problem` is
// checkpoint_problem().
CheckpointRun checkpoint_counter(Setup& s, const std::optional<std::string>& problem) {
  const bool criu_works = !problem;
  // runc 1.1 words a CRIU failure "criu failed: type DUMP ..." and leaves CRIU's dump.log
  // in the work dir (a cached CRIU that fails `criu check`); crun, or runc without a
  // CRIU, fail in their own words before that.
  const bool criu_dump_fails = problem && runtime_under_test() == "runc" &&
                               problem->find(" check` fails") != std::string::npos;
  const std::string recorder = s.fx.dir() + "/runtime-recorder";
  write_recorder(recorder, s.argv_log);
  std::vector<std::string> run = {"run", "-d"};
  for (const auto& flag : s.run_flags(recorder)) run.push_back(flag);
  for (const auto& arg : {std::string("--rootfs"), s.rootfs, std::string("cnt"),
                          std::string("/bin/sh"), std::string("-c"), kCounter}) {
    run.push_back(arg);
  }
  REQUIRE(s.fx.ctr_ok(run).ok());
  REQUIRE(wait_count_above([&] { return rootfs_count(s); }, 5, 20s) > 5);

  CheckpointRun result;
  const std::string bundle = s.fx.bundle_dir("cnt");
  result.plain = s.fx.ctr({"task", "checkpoint", "cnt"}, 120s);
  result.plain_error = s.normalized(result.plain.err);
  CHECK(::access((bundle + "/work/criu-work").c_str(), F_OK) !=
        0);  // the default work dir is removed
  if (criu_works) {
    CHECK(result.plain.ok());
  } else {
    INFO(result.plain.describe());
    CHECK_FALSE(result.plain.ok());
    CHECK(result.plain.err.find(fmt::format(" path= {}/criu-dump.log", bundle)) !=
          std::string::npos);
    if (criu_dump_fails) {
      CHECK(result.plain.err.find("criu failed: type DUMP") != std::string::npos);
      CHECK(::access((bundle + "/criu-dump.log").c_str(), F_OK) == 0);  // CRIU's dump.log, copied
    }
  }
  // Still running and counting (ctr paused it for the checkpoint and resumed it).
  CHECK(s.task_status("cnt") == "RUNNING");
  long before = rootfs_count(s);
  CHECK(wait_count_above([&] { return rootfs_count(s); }, before + 3, 10s) > before + 3);

  result.with_exit =
      s.fx.ctr({"task", "checkpoint", "--exit", "--image-path", s.fx.dir() + "/image",
                "--work-path", s.fx.dir() + "/criu-work", "cnt"},
               120s);
  result.exit_error = s.normalized(result.with_exit.err);
  if (criu_works || criu_dump_fails) {
    CHECK(::access((s.fx.dir() + "/criu-work").c_str(), F_OK) == 0);  // a given work dir is kept
  }
  if (criu_works) {
    CHECK(result.with_exit.ok());
    CHECK(s.wait_status("cnt", "STOPPED", 20s));  // runc stopped it: the exit came as usual
  } else {
    CHECK_FALSE(result.with_exit.ok());
    CHECK(s.task_status("cnt") == "RUNNING");
  }
  result.checkpoint_lines = s.recorded("checkpoint");
  return result;
}

// Runs the counter in container `id` from the imported image with `binary` as runtime,
// checkpoints it with its task (`ctr container checkpoint --task --image`) and removes
// it. Returns the count seen just before the checkpoint and the checkpoint's name.
std::pair<long, std::string> checkpoint_for_restore(Setup& s, const std::string& id,
                                                    const std::string& binary) {
  std::string image = import_busybox_image(s.fx, s.rootfs);
  std::vector<std::string> run = {"run", "-d"};
  for (const auto& flag : s.run_flags(binary)) run.push_back(flag);
  for (const auto& arg : {image, id, std::string("/bin/sh"), std::string("-c"), kCounter})
    run.push_back(arg);
  REQUIRE(s.fx.ctr_ok(run).ok());
  long before = wait_count_above([&] { return exec_count(s, id); }, 30, 30s);
  REQUIRE(before > 30);
  const std::string ref = "libshim.test/checkpoint/" + id + ":1";
  REQUIRE(s.fx.ctr_ok({"container", "checkpoint", "--task", "--image", id, ref}, 120s).ok());
  REQUIRE(s.fx.ctr_ok({"task", "kill", "-s", "KILL", id}).ok());
  REQUIRE(s.wait_status(id, "STOPPED", 20s));
  REQUIRE(s.fx.ctr_ok({"task", "rm", id}).ok());
  REQUIRE(s.fx.ctr_ok({"container", "rm", id}).ok());
  return {before, ref};
}

// Creates container `id` from checkpoint `ref` (its spec and runtime options, BinaryName
// included), then a task with `checkpoint` set, and starts it: our Create + Start.
CommandResult restore(const Setup& s, const std::string& id, const std::string& ref) {
  return s.fx.ctr({"container", "restore", "--live", id, ref}, 120s);
}

}  // namespace

TEST_CASE(
    "ctr task checkpoint through shim-runc as through the Go shim then restore continues counting",
    "[runc][checkpoint][runtime-binary][multi-version]") {
  LIBSHIM_SKIP_WITHOUT_CONTAINERD();
  const std::optional<std::string> problem = checkpoint_problem();
  if (problem && criu_dump_hangs()) LIBSHIM_SKIP(*problem);
  CheckpointRun ours;
  CheckpointRun go;
  {
    Setup s(Shim::kOurs);
    ours = checkpoint_counter(s, problem);
  }
  {
    Setup s(Shim::kGo);
    go = checkpoint_counter(s, problem);
  }
  // Two checkpoints each: the same runc command lines, e.g. `... checkpoint --image-path
  // <tmp> --work-path <bundle>/work/criu-work --leave-running cnt` and, with --exit,
  // `... --image-path <dir>/image --work-path <dir>/criu-work cnt`.
  REQUIRE(ours.checkpoint_lines.size() == 2);
  CHECK(ours.checkpoint_lines == go.checkpoint_lines);
  CHECK(ours.checkpoint_lines[0].find("--leave-running cnt") != std::string::npos);
  CHECK(ours.checkpoint_lines[1].ends_with("--work-path <dir>/criu-work cnt"));
  // The errors ctr prints are the Go shim's, e.g. "ctr: <runtime> did not terminate
  // successfully: exit status 1: criu failed: type DUMP errno 0 path=
  // <bundle>/criu-dump.log: unknown" (none where CRIU works).
  CHECK(ours.plain.exit_code == go.plain.exit_code);
  CHECK(ours.plain_error == go.plain_error);
  CHECK(ours.exit_error == go.exit_error);

  if (problem) {
    LIBSHIM_SKIP(fmt::format(
        "restore not tested: {}; the checkpoint failure was compared with the Go shim instead",
        *problem));
  }
  // A container checkpoint (task included) of a counter that then goes away, restored
  // into a new container of the same id with `ctr container restore --live`.
  struct Restored {
    long before = 0;
    long after = 0;
    long later = 0;
    std::vector<std::string> restore_lines;
  };
  auto scenario = [](Shim shim) {
    Setup s(shim);
    const std::string recorder = s.fx.dir() + "/runtime-recorder";
    write_recorder(recorder, s.argv_log);
    Restored seen;
    std::string ref;
    std::tie(seen.before, ref) = checkpoint_for_restore(s, "rst", recorder);
    CommandResult restored = restore(s, "rst", ref);
    INFO("ctr container restore: " << restored.describe());  // CRIU's reason, if it failed
    REQUIRE(restored.ok());
    REQUIRE(s.wait_status("rst", "RUNNING", 20s));
    // The restored shell goes on from its own count; a fresh start would begin at 0.
    seen.after = wait_count_above([&] { return exec_count(s, "rst"); }, -1, 20s);
    seen.later = wait_count_above([&] { return exec_count(s, "rst"); }, seen.after + 3, 20s);
    seen.restore_lines = s.recorded("restore");
    return seen;
  };
  Restored our_run = scenario(Shim::kOurs);
  Restored go_run = scenario(Shim::kGo);
  for (const Restored* seen : {&our_run, &go_run}) {
    CHECK(seen->after >= seen->before);
    CHECK(seen->later > seen->after + 3);  // and keeps counting
  }
  REQUIRE(our_run.restore_lines.size() == 1);
  CHECK(our_run.restore_lines == go_run.restore_lines);
  CHECK(our_run.restore_lines[0].find(" -no-subreaper --bundle ") != std::string::npos);
}

TEST_CASE("ctr container restore through shim-runc as through the Go shim with a stand-in for CRIU",
          "[runc][checkpoint][runtime-binary][sanitized]") {
  LIBSHIM_SKIP_WITHOUT_CONTAINERD();
  struct Seen {
    std::string failed_restore;  // normalized ctr errors while restore fails
    std::string status_after_failure;
    std::string exec_after_failure;
    std::string kill_after_failure;
    std::string delete_after_failure;  // crun cannot delete what it never created: no runc-like
                                       // "does not exist"
    std::vector<std::string> failed_topics;  // of container rstf
    std::vector<std::string> restore_lines;
    std::vector<std::string> topics;  // of container rst, without exec_count()'s execs
    std::string create_event;         // of the restored task
  };
  auto scenario = [](Shim shim) {
    Setup s(shim);
    const std::string runtime = s.fx.dir() + "/stand-in-runtime";
    write_fake_criu_runtime(runtime, s.argv_log, s.fx.dir() + "/fail-restore");
    auto events = s.fx.subscribe_events();
    auto [before, ref] = checkpoint_for_restore(s, "rst", runtime);
    Seen seen;

    // A failing restore (as container rstf): Start fails with runc's log.json error, the
    // task stays created (Go's "created checkpoint" state: no exec; kill and delete go to
    // the runtime, which has no such container).
    std::ofstream(s.fx.dir() + "/fail-restore") << "1";
    CommandResult failed = restore(s, "rstf", ref);
    CHECK_FALSE(failed.ok());
    seen.failed_restore = s.normalized(failed.err);
    seen.status_after_failure = s.task_status("rstf");
    seen.exec_after_failure =
        s.normalized(s.fx.ctr({"task", "exec", "--exec-id", "x", "rstf", "/bin/true"}).err);
    seen.kill_after_failure = s.normalized(s.fx.ctr({"task", "kill", "rstf"}).err);
    seen.delete_after_failure = s.normalized(s.fx.ctr({"task", "rm", "rstf"}).err);
    REQUIRE(::unlink((s.fx.dir() + "/fail-restore").c_str()) == 0);

    REQUIRE(restore(s, "rst", ref).ok());
    REQUIRE(s.wait_status("rst", "RUNNING", 20s));
    // A stand-in restore starts the process afresh: it counts again from 0.
    CHECK(wait_count_above([&] { return exec_count(s, "rst"); }, -1, 20s) < before);
    CHECK(s.fx.ctr({"task", "exec", "--exec-id", "hello", "rst", "/bin/echo", "restored"}).out ==
          "restored\n");
    REQUIRE(s.fx.ctr_ok({"task", "kill", "-s", "KILL", "rst"}).ok());
    REQUIRE(s.wait_status("rst", "STOPPED", 20s));
    REQUIRE(s.fx.ctr_ok({"task", "rm", "rst"}).ok());
    seen.restore_lines = s.recorded("restore");
    // Two deletes: the original task and the restored one.
    for (auto deadline = std::chrono::steady_clock::now() + 10s;
         std::chrono::steady_clock::now() < deadline;) {
      std::size_t deletes = 0;
      for (const auto& line : events->lines()) {
        deletes += line.find("/tasks/delete") != std::string::npos &&
                   line.find("\"rst\"") != std::string::npos;
      }
      if (deletes == 2) break;
      std::this_thread::sleep_for(50ms);
    }
    for (const auto& line : events->lines()) {
      auto at = line.find(" /tasks/");
      if (at == std::string::npos || line.find("\"read") != std::string::npos)
        continue;  // exec_count()'s execs
      std::string topic = line.substr(at + 1, line.find(' ', at + 1) - at - 1);
      if (line.find("\"rstf\"") != std::string::npos) seen.failed_topics.push_back(topic);
      if (line.find("\"rst\"") == std::string::npos) continue;
      if (topic == "/tasks/create") seen.create_event = s.normalized(line);
      seen.topics.push_back(topic);
    }
    return seen;
  };
  Seen ours = scenario(Shim::kOurs);
  Seen go = scenario(Shim::kGo);
  // `... restore --image-path <tmp> --work-path <bundle>/work --detach --pid-file
  // <bundle>/init.pid -no-subreaper --bundle <bundle> rst`
  REQUIRE(ours.restore_lines.size() == 2);  // rstf's failed one, then rst's
  CHECK(ours.restore_lines == go.restore_lines);
  CHECK(ours.restore_lines[0].find(" --detach --pid-file ") != std::string::npos);
  CHECK(ours.restore_lines[0].find(" -no-subreaper --bundle ") != std::string::npos);
  // Create with `checkpoint` set and no pid yet (runc create is skipped), then the start
  // with the restored pid, exec, exits and delete, as from the Go shim.
  CHECK(ours.create_event.find("\"checkpoint\":\"") != std::string::npos);
  CHECK(ours.create_event.find("\"pid\"") == std::string::npos);
  CHECK(go.create_event.find("\"pid\"") == std::string::npos);
  CHECK(ours.topics == go.topics);
  const std::vector<std::string> restored_tail = {
      "/tasks/create", "/tasks/start", "/tasks/exec-added", "/tasks/exec-started",
      "/tasks/exit",   "/tasks/exit",  "/tasks/delete"};
  REQUIRE(ours.topics.size() > restored_tail.size());
  CHECK(std::equal(restored_tail.rbegin(), restored_tail.rend(), ours.topics.rbegin()));
  // The failed restore: the Go shim's texts, and the task stays created.
  CHECK(ours.failed_restore == go.failed_restore);
  CHECK(ours.failed_restore ==
        "ctr: OCI runtime restore failed: stand-in restore failed: unknown\n");
  CHECK(ours.status_after_failure == "CREATED");
  CHECK(ours.status_after_failure == go.status_after_failure);
  CHECK(ours.exec_after_failure == go.exec_after_failure);
  CHECK(ours.exec_after_failure.find("cannot exec in a created state") != std::string::npos);
  CHECK(ours.kill_after_failure == go.kill_after_failure);
  CHECK(ours.delete_after_failure == go.delete_after_failure);
  if (runtime_under_test() == "runc")
    CHECK(ours.delete_after_failure.empty());  // "does not exist" is ignored
  CHECK(ours.failed_topics == go.failed_topics);
  CHECK(ours.failed_topics.front() == "/tasks/create");
}

}  // namespace shim::test
