"""Wall-clock latencies: `ctr run --rm` (with `runc run` alone as the floor), `ctr task
exec`, and exit notification. Sides alternate run by run (A B A B ...), and every run
waits until the shim processes of the previous one are gone, so one side's teardown never
lands in the other side's measurement."""
import json
import os
import select
import subprocess
import time

from . import procs
from .env import run


def _ms(start_ns, end_ns):
    return (end_ns - start_ns) / 1e6


def _settle(side, cid):
    """Seconds until every shim process of `cid` (daemon, then containerd's `delete`
    call after the connection closed) has exited."""
    waited = procs.wait_gone(side.address, cid)
    time.sleep(0.02)  # containerd launches `delete` from its on-close hook
    return waited + procs.wait_gone(side.address, cid)


class RuncFloor:
    """`runc run` of the same rootfs and command, no containerd, no shim."""

    def __init__(self, ws):
        self.bundle = os.path.join(ws.dir, "floor")
        self.root = os.path.join(ws.dir, "floor-runc")
        os.makedirs(self.bundle)
        os.makedirs(self.root)
        run(["runc", "spec", "--bundle", self.bundle])
        path = os.path.join(self.bundle, "config.json")
        with open(path) as f:
            spec = json.load(f)
        spec["root"] = {"path": ws.rootfs, "readonly": False}
        spec["process"]["args"] = ["/bin/true"]
        spec["process"]["terminal"] = False
        with open(path, "w") as f:
            json.dump(spec, f)

    def run_ms(self, cid):
        start = time.perf_counter_ns()
        run(["runc", "--root", self.root, "run", "--bundle", self.bundle, cid],
            stdout=subprocess.DEVNULL)
        return _ms(start, time.perf_counter_ns())

    def split_ms(self, cid):
        """`runc create`, `runc start`, wait for the exit, `runc delete`: the runc calls any
        shim makes for `ctr run --rm`, as separate processes, with no shim around them.
        Returns {call: ms} and "total"."""
        pid_file = os.path.join(self.root, f"{cid}.pid")
        runc = ["runc", "--root", self.root]
        stamps = [time.perf_counter_ns()]
        run(runc + ["create", "--bundle", self.bundle, "--pid-file", pid_file, cid],
            stdout=subprocess.DEVNULL)
        stamps.append(time.perf_counter_ns())
        with open(pid_file) as f:
            pidfd = os.pidfd_open(int(f.read()))
        try:
            run(runc + ["start", cid])
            stamps.append(time.perf_counter_ns())
            poller = select.poll()
            poller.register(pidfd, select.POLLIN)  # readable once the process has exited
            if not poller.poll(10_000):
                raise RuntimeError(f"runc container {cid} did not exit")
            stamps.append(time.perf_counter_ns())
        finally:
            os.close(pidfd)
        run(runc + ["delete", cid])
        stamps.append(time.perf_counter_ns())
        os.unlink(pid_file)
        calls = ("create", "start", "wait", "delete")
        result = {call: _ms(stamps[i], stamps[i + 1]) for i, call in enumerate(calls)}
        result["total"] = _ms(stamps[0], stamps[-1])
        return result


# `ctr run --rm` cut at the events it causes (envelope times: containerd's clock for
# /containers/*, the shim's for /tasks/*; one host clock). (name, from, to).
RUN_PHASES = (
    ("ctr start-up, container record", "invoked", "/containers/create"),
    ("task create: shim start, Create (runc create)", "/containers/create", "/tasks/create"),
    ("task start: Start (runc start)", "/tasks/create", "/tasks/start"),
    ("/bin/true runs, is reaped, exit published", "/tasks/start", "/tasks/exit"),
    ("task delete: Wait reply, Delete (runc delete)", "/tasks/exit", "/tasks/delete"),
    ("shim shutdown, container delete", "/tasks/delete", "/containers/delete"),
    ("ctr exits", "/containers/delete", "returned"),
)


# `ctr task exec`, cut the same way.
EXEC_PHASES = (
    ("ctr start-up, Exec (process registered)", "invoked", "/tasks/exec-added"),
    ("Start (runc exec)", "/tasks/exec-added", "/tasks/exec-started"),
    ("/bin/true runs, is reaped, exit published", "/tasks/exec-started", "/tasks/exit"),
    ("Wait reply, process Delete, ctr exits", "/tasks/exit", "returned"),
)


def _phases(side, cid, process_id, invoked_ns, returned_ns, phases):
    stamps = {"invoked": invoked_ns, "returned": returned_ns}
    for _, begin, end in phases:
        for topic in (begin, end):
            if topic.startswith("/"):
                stamps[topic] = side.events.wait_event(cid, topic, process_id)["published_ns"]
    return {name: _ms(stamps[begin], stamps[end]) for name, begin, end in phases}


def ctr_run_rm(sides, floor, rounds):
    """wall_ms: {label: [ms]} for `ctr run --rm` of /bin/true per side, for `runc run` alone
    ("runc") and for the separate runc calls ("runc_split"); runc_calls_ms: {call: [ms]} of
    the latter; phases_ms: {side: {phase: [ms]}} (RUN_PHASES); teardown_ms: {side: [ms]},
    how long the shim processes lingered after ctr returned; containerd_cpu_ms: {side:
    [ms]}, containerd's own CPU time per run (children such as `start` excluded)."""
    wall = {s.name: [] for s in sides}
    wall["runc"], wall["runc_split"] = [], []
    calls = {"create": [], "start": [], "wait": [], "delete": []}
    phases = {s.name: {name: [] for name, _, _ in RUN_PHASES} for s in sides}
    teardown = {s.name: [] for s in sides}
    containerd_ms = {s.name: [] for s in sides}
    for r in range(-1, rounds):  # round -1 warms caches and is not recorded
        for side in sides:
            cid = side.cid(f"rm-{r + 1}")
            containerd_cpu = procs.cpu_seconds(side.process.pid)
            invoked, start = time.time_ns(), time.perf_counter_ns()
            run(side.run_argv(cid, "/bin/true", rm=True), stdout=subprocess.DEVNULL)
            elapsed, returned = _ms(start, time.perf_counter_ns()), time.time_ns()
            lingered = _settle(side, cid) * 1e3
            containerd_cpu = procs.cpu_seconds(side.process.pid) - containerd_cpu
            if r < 0:
                continue
            wall[side.name].append(elapsed)
            containerd_ms[side.name].append(containerd_cpu * 1e3)
            teardown[side.name].append(lingered)
            for name, ms in _phases(side, cid, cid, invoked, returned, RUN_PHASES).items():
                phases[side.name][name].append(ms)
        elapsed = floor.run_ms(f"{sides[0].ws.namespace}-floor-{r + 1}")
        split = floor.split_ms(f"{sides[0].ws.namespace}-split-{r + 1}")
        if r >= 0:
            wall["runc"].append(elapsed)
            wall["runc_split"].append(split["total"])
            for call in calls:
                calls[call].append(split[call])
    return {"wall_ms": wall, "runc_calls_ms": calls, "phases_ms": phases,
            "teardown_ms": teardown, "containerd_cpu_ms": containerd_ms}


def exec_latency(sides, targets, rounds):
    """wall_ms: {side: [ms]} for `ctr task exec` of /bin/true into the running container
    targets[side]; "runc": `runc exec` of the same into sides[0]'s container directly (the
    floor: no ctr, no containerd, no shim); "ctr_version": `ctr version` (ctr's start-up and
    one gRPC call, the client's share). phases_ms: {side: {phase: [ms]}} (EXEC_PHASES).
    cpu_ms_per_exec: {side: {"shim": ms, "containerd": ms}}, CPU time per exec (the shim
    daemon's and containerd's own, children excluded) over the recorded rounds."""
    wall = {s.name: [] for s in sides}
    wall["runc"], wall["ctr_version"] = [], []
    phases = {s.name: {name: [] for name, _, _ in EXEC_PHASES} for s in sides}
    floor = sides[0]
    floor_argv = ["runc", "--root", os.path.join(floor.runc_root, floor.ws.namespace), "exec",
                  targets[floor.name], "/bin/true"]
    shim_pids = {s.name: s.daemon(targets[s.name]) for s in sides}
    cpu_start = {}
    for r in range(-1, rounds):
        if r == 0:
            cpu_start = {s.name: (procs.cpu_seconds(shim_pids[s.name]),
                                  procs.cpu_seconds(s.process.pid)) for s in sides}
        exec_id = f"e{r + 1}"
        for side in sides:
            invoked, start = time.time_ns(), time.perf_counter_ns()
            side.ctr("task", "exec", "--exec-id", exec_id, targets[side.name], "/bin/true",
                     stdout=subprocess.DEVNULL)
            elapsed, returned = _ms(start, time.perf_counter_ns()), time.time_ns()
            if r < 0:
                continue
            wall[side.name].append(elapsed)
            cut = _phases(side, targets[side.name], exec_id, invoked, returned, EXEC_PHASES)
            for name, ms in cut.items():
                phases[side.name][name].append(ms)
        for label, argv in (("runc", floor_argv), ("ctr_version", floor.ctr_argv("version"))):
            start = time.perf_counter_ns()
            run(argv, stdout=subprocess.DEVNULL)
            if r >= 0:
                wall[label].append(_ms(start, time.perf_counter_ns()))
    cpu = {}
    for s in sides:
        shim0, containerd0 = cpu_start[s.name]
        cpu[s.name] = {"shim": (procs.cpu_seconds(shim_pids[s.name]) - shim0) * 1e3 / rounds,
                       "containerd": (procs.cpu_seconds(s.process.pid) - containerd0) * 1e3 / rounds}
    return {"wall_ms": wall, "phases_ms": phases, "cpu_ms_per_exec": cpu}


def exit_latency(sides, ws, rounds, delay_ms=200):
    """Per side, lists of ms for each leg of an exit's way to a containerd subscriber:

      stamp     the container's last act: CLOCK_REALTIME written by exit_stamp, then _exit
      exited_at the shim's reap time (TaskExit.exited_at)
      published the envelope timestamp (the shim's publish time)
      arrived   `ctr events` delivered the /tasks/exit line to the driver

    total = arrived - stamp. All four clocks are the host's CLOCK_REALTIME."""
    legs = ("total", "reap", "publish", "deliver")
    result = {s.name: {leg: [] for leg in legs} for s in sides}
    for r in range(-1, rounds):
        for side in sides:
            cid = side.cid(f"exit-{r + 1}")
            stamp_file = ws.share_path(f"stamp-{cid}")
            run(side.run_argv(cid, "/bin/exit_stamp", f"/x/stamp-{cid}", str(delay_ms),
                              rm=True, share=True), stdout=subprocess.DEVNULL)
            event = side.events.wait_exit(cid)
            with open(stamp_file) as f:
                stamp = int(f.read())
            _settle(side, cid)
            if r < 0:
                continue
            legs_ms = result[side.name]
            legs_ms["total"].append(_ms(stamp, event["arrived_ns"]))
            legs_ms["reap"].append(_ms(stamp, event["exited_ns"]))
            legs_ms["publish"].append(_ms(event["exited_ns"], event["published_ns"]))
            legs_ms["deliver"].append(_ms(event["published_ns"], event["arrived_ns"]))
    return result
