#!/usr/bin/env python3
"""Live upgrades of a shim serving a busy pod (docs/live-upgrade.md): a private containerd
1.6 with shim-runc; one grouped shim (io.kubernetes.cri.sandbox-id=pod) runs a container
streaming numbered stdout lines to an attached `ctr run` (whose Wait stays in flight), a
host container whose execs run back to back (`ctr task exec`, output checked), a container
streaming numbered lines to a `binary://` logger (a script copying its fd 3 to a file),
and short containers created, run to their exit and deleted one after another (`ctr run --rm`);
`ctr events` counts every task event. Meanwhile the shim is upgraded N times in a row,
alternating between our build and containerd-shim-upgrade-next-v1 (another version).

    python3 benchmarks/upgrade_under_load.py --build-dir build [--swaps 100]

Reports the swap time (the old program's exec to the new program's answer) and the
`upgrade` command's wall time, p50/p99/max; upgrades refused (with why); execs and short
containers run and failed; the stream's lines, gaps, duplicates and longest stall; task
events missing or duplicated. Writes benchmarks/results/<date>-upgrade/under-load.{md,json}.
Needs root, containerd 1.6 and runc on PATH.
"""
import argparse
import collections
import datetime
import json
import os
import subprocess
import sys
import threading
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from shimbench import env, procs  # noqa: E402
from shimbench.stats import percentile  # noqa: E402

GROUP = "pod"
ANNOTATION = f"io.kubernetes.cri.sandbox-id={GROUP}"
STREAMER = "i=0; while :; do i=$((i+1)); echo $i; if [ $((i % 100)) -eq 0 ]; then sleep 0.01; fi; done"


class EventCounter:
    """`ctr events`: how many times each (topic, container, process) was seen."""

    def __init__(self, side):
        self.counts = collections.Counter()
        self._proc = subprocess.Popen(side.ctr_argv("events"), stdin=subprocess.DEVNULL,
                                      stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        self._thread = threading.Thread(target=self._read, daemon=True)
        self._thread.start()

    def _read(self):
        for line in self._proc.stdout:
            parts = line.rstrip("\n").split(" ", 6)
            if len(parts) < 7 or not parts[5].startswith("/tasks/"):
                continue
            event = json.loads(parts[6])
            cid = event.get("container_id", event.get("id"))
            process = event.get("exec_id") or (event.get("id") if parts[5] == "/tasks/exit"
                                               else cid)
            self.counts[(parts[5], cid, process)] += 1

    def stop(self):
        self._proc.terminate()
        self._proc.wait()


class Stream:
    """The streaming container's lines as the attached `ctr run` prints them."""

    def __init__(self, side):
        argv = side.run_argv("stream", "/bin/sh", "-c", STREAMER)
        argv[argv.index("--rootfs"):argv.index("--rootfs")] = ["--annotation", ANNOTATION]
        self.proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                     stderr=subprocess.DEVNULL)
        self.lines = 0
        self.gaps = 0  # a number other than the next one
        self.longest_stall_ms = 0.0
        self.stall_during_swaps_ms = 0.0
        self.swapping = False
        self._thread = threading.Thread(target=self._read, daemon=True)
        self._thread.start()

    def _read(self):
        last = time.monotonic()
        for raw in self.proc.stdout:
            now = time.monotonic()
            stall = (now - last) * 1000
            self.longest_stall_ms = max(self.longest_stall_ms, stall)
            if self.swapping:
                self.stall_during_swaps_ms = max(self.stall_during_swaps_ms, stall)
            last = now
            try:
                number = int(raw)
            except ValueError:
                self.gaps += 1
                continue
            if number != self.lines + 1:
                self.gaps += 1
            self.lines = number


def start_logged(side, ws):
    """A detached container of the pod logging numbered lines through a binary:// logger
    that copies them into a file; the file's path."""
    logger = os.path.join(ws.dir, "logger.sh")
    logged = os.path.join(ws.dir, "logged")
    with open(logger, "w") as f:
        f.write(f"#!/bin/sh\nexec 5>&-\nexec /bin/cat <&3 >{logged} 4<&-\n")
    os.chmod(logger, 0o700)
    argv = side.run_argv("logged", "/bin/sh", "-c", STREAMER, detach=True)
    argv[argv.index("--rootfs"):argv.index("--rootfs")] = ["--annotation", ANNOTATION,
                                                           "--log-uri", f"binary://{logger}"]
    env.run(argv, stdout=subprocess.DEVNULL)
    return logged


def logged_lines(path):
    """(lines, gaps) of the logger's file: numbers 1, 2, ... each on its own line."""
    lines = gaps = 0
    with open(path, "rb") as f:
        for raw in f:
            try:
                number = int(raw)
            except ValueError:
                gaps += 1
                continue
            if number != lines + 1:
                gaps += 1
            lines = number
    return lines, gaps


def grouped_daemon(address, timeout=10.0):
    """The one long-lived shim of `address` (the pod's: its -id is the first container's or
    the group's, as the shim chose)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        daemons = [pid for pid, argv in procs.shim_processes(address).items()
                   if argv[-1] not in ("start", "delete")]
        if len(daemons) == 1:
            return daemons[0]
        time.sleep(0.01)
    raise RuntimeError(f"not exactly one shim daemon on {address}")


def loop(stop, work, tally):
    index = 0
    while not stop.is_set():
        index += 1
        ok, why = work(index)
        tally["run"] += 1
        if not ok:
            tally["failed"] += 1
            if len(tally["errors"]) < 10:
                tally["errors"].append(why)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--build-dir", default=os.path.join(REPO, "build"))
    parser.add_argument("--swaps", type=int, default=100)
    parser.add_argument("--pause-ms", type=int, default=100, help="between two upgrades")
    parser.add_argument("--out", help="results folder (default benchmarks/results/<date>-upgrade)")
    args = parser.parse_args()
    ours = os.path.realpath(os.path.join(args.build_dir, "shim-runc", "containerd-shim-runc-v2"))
    nxt = os.path.realpath(os.path.join(args.build_dir, "tests", "containerd-shim-upgrade-next-v1"))
    for binary in (ours, nxt):
        if not os.access(binary, os.X_OK):
            sys.exit(f"{binary} is not built")

    ws = env.Workspace(REPO)
    ws.build_rootfs()
    side = env.Side("ours", "libshim", ours, ws)
    side.start()
    events = EventCounter(side)
    stop = threading.Event()
    execs = {"run": 0, "failed": 0, "errors": []}
    shorts = {"run": 0, "failed": 0, "errors": []}
    swaps, walls, refused, problems = [], [], [], []
    threads = []
    try:
        host_argv = side.run_argv("host", "/bin/sleep", "1000000", detach=True)
        host_argv[host_argv.index("--rootfs"):host_argv.index("--rootfs")] = ["--annotation",
                                                                              ANNOTATION]
        env.run(host_argv, stdout=subprocess.DEVNULL)
        stream = Stream(side)
        logged = start_logged(side, ws)
        logger_result = {"lines": 0, "gaps": 0, "task_rm_ms": None, "task_rm_exit": None}
        daemon = grouped_daemon(side.address)

        def one_exec(i):
            run = subprocess.run(side.ctr_argv("task", "exec", "--exec-id", f"e{i}", "host",
                                               "/bin/sh", "-c", f"echo {i}"),
                                 stdin=subprocess.DEVNULL, capture_output=True, text=True,
                                 timeout=60)
            return run.returncode == 0 and run.stdout == f"{i}\n", \
                f"exec e{i}: exit {run.returncode}, out {run.stdout!r}, err {run.stderr.strip()}"

        def one_short(i):
            argv = side.run_argv(f"short{i}", "/bin/true", rm=True)
            argv[argv.index("--rootfs"):argv.index("--rootfs")] = ["--annotation", ANNOTATION]
            run = subprocess.run(argv, stdin=subprocess.DEVNULL, capture_output=True, text=True,
                                 timeout=60)
            return run.returncode == 0, f"short{i}: exit {run.returncode}: {run.stderr.strip()}"

        for work, tally in ((one_exec, execs), (one_short, shorts)):
            threads.append(threading.Thread(target=loop, args=(stop, work, tally)))
            threads[-1].start()
        time.sleep(1)
        stream.swapping = True
        for i in range(args.swaps):
            binary = (nxt, ours)[i % 2]
            start = time.monotonic()
            run = subprocess.run([binary, "-namespace", ws.namespace, "-id", GROUP, "-address",
                                  side.address, "upgrade"], capture_output=True, text=True,
                                 timeout=60)
            walls.append((time.monotonic() - start) * 1000)
            if run.returncode != 0:
                refused.append(f"swap {i}: {run.stderr.strip()}")
                continue
            swaps.append(float(run.stdout.rsplit("swap ", 1)[1].split(" ms")[0]))
            if f"shim pid {daemon} " not in run.stdout or procs.exe(daemon) != binary:
                problems.append(f"swap {i}: {run.stdout.strip()} (exe {procs.exe(daemon)})")
            time.sleep(args.pause_ms / 1000)
        stream.swapping = False
        # The delete waits for the logger's exit, which the last program claimed.
        side.ctr("task", "kill", "-s", "SIGKILL", "logged", check=False,
                 stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        time.sleep(0.5)
        start = time.monotonic()
        removed = side.ctr("task", "rm", "logged", check=False, stdout=subprocess.DEVNULL,
                           stderr=subprocess.DEVNULL, timeout=60)
        logger_result["task_rm_ms"] = (time.monotonic() - start) * 1000
        logger_result["task_rm_exit"] = removed.returncode
        logger_result["lines"], logger_result["gaps"] = logged_lines(logged)
    finally:
        stop.set()
        for thread in threads:
            thread.join()
        side.ctr("task", "kill", "-s", "SIGKILL", "stream", check=False,
                 stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            stream_exit = stream.proc.wait(timeout=30)
        except Exception:  # noqa: BLE001
            stream_exit = None
        time.sleep(1)
        events.stop()
        side.stop()
        ws.cleanup()

    wrong_events = []
    for i in range(1, shorts["run"] + 1):
        cid = f"short{i}"
        for topic in ("/tasks/create", "/tasks/start", "/tasks/exit", "/tasks/delete"):
            n = events.counts[(topic, cid, cid)]
            if n != 1:
                wrong_events.append(f"{topic} {cid}: {n}")
    for i in range(1, execs["run"] + 1):
        for topic in ("/tasks/exec-added", "/tasks/exec-started", "/tasks/exit"):
            n = events.counts[(topic, "host", f"e{i}")]
            if n != 1:
                wrong_events.append(f"{topic} host e{i}: {n}")
    result = {"date": datetime.datetime.now().isoformat(timespec="seconds"),
              "swaps": args.swaps, "succeeded": len(swaps), "refused": refused,
              "problems": problems, "swap_ms": swaps, "upgrade_command_ms": walls,
              "execs": execs, "short_containers": shorts,
              "stream": {"lines": stream.lines, "gaps": stream.gaps,
                         "longest_stall_ms": stream.longest_stall_ms,
                         "longest_stall_during_swaps_ms": stream.stall_during_swaps_ms,
                         "ctr_run_exit": stream_exit},
              "binary_logger": logger_result,
              "events_wrong": wrong_events}
    out = args.out or os.path.join(REPO, "benchmarks", "results",
                                   datetime.date.today().isoformat() + "-upgrade")
    os.makedirs(out, exist_ok=True)
    with open(os.path.join(out, "under-load.json"), "w") as f:
        json.dump(result, f, indent=1)
    text = report(args, result)
    with open(os.path.join(out, "under-load.md"), "w") as f:
        f.write(text)
    sys.stdout.write(text)
    failed = (problems or refused or execs["failed"] or shorts["failed"] or stream.gaps
              or wrong_events or stream_exit != 137 or logger_result["gaps"]
              or logger_result["task_rm_exit"] != 0)
    return 1 if failed else 0


def report(args, r):
    swaps, walls = r["swap_ms"], r["upgrade_command_ms"]
    lines = [f"# Live upgrade under load: {args.swaps} swaps in a row ({r['date']})", "",
             "containerd 1.6, shim-runc; one grouped shim (pod) serves a container streaming "
             "numbered lines to an attached `ctr run`, a host container with execs back to "
             "back, a container logging through a binary:// logger, and short containers "
             "run and deleted one after another; the shim is "
             f"upgraded alternately to containerd-shim-upgrade-next-v1 and back, "
             f"{args.pause_ms} ms apart.", "",
             "| | p50 ms | p99 ms | max ms |", "|---|---|---|---|"]
    if swaps:
        lines.append(f"| swap (exec to the new program's answer) | {percentile(swaps, 50):.1f} | "
                     f"{percentile(swaps, 99):.1f} | {max(swaps):.1f} |")
    lines.append(f"| `upgrade` command, wall | {percentile(walls, 50):.1f} | "
                 f"{percentile(walls, 99):.1f} | {max(walls):.1f} |")
    s = r["stream"]
    lines += ["",
              f"- Upgrades: {r['succeeded']} of {r['swaps']} served by the new program; "
              f"refused: {len(r['refused'])}; pid or exe wrong: {len(r['problems'])}.",
              f"- Execs: {r['execs']['run']} run, {r['execs']['failed']} failed (exit code "
              f"or output wrong).",
              f"- Short containers: {r['short_containers']['run']} run and deleted, "
              f"{r['short_containers']['failed']} failed.",
              f"- Stream: {s['lines']} lines, {s['gaps']} out of order or missing; longest "
              f"stall between two lines {s['longest_stall_ms']:.0f} ms "
              f"({s['longest_stall_during_swaps_ms']:.0f} ms while upgrading); `ctr run` "
              f"exit {s['ctr_run_exit']} after SIGKILL.",
              f"- binary:// logger: {r['binary_logger']['lines']} lines in its file, "
              f"{r['binary_logger']['gaps']} out of order or missing; `ctr task rm` after "
              f"the upgrades (it waits for the logger's exit) exit "
              f"{r['binary_logger']['task_rm_exit']} in "
              f"{r['binary_logger']['task_rm_ms'] or 0:.0f} ms.",
              f"- Task events not seen exactly once: {len(r['events_wrong'])}."]
    lines += [f"  - {e}" for e in (r["refused"] + r["problems"] + r["events_wrong"])[:10]]
    lines += [f"  - {e}" for e in (r["execs"]["errors"] + r["short_containers"]["errors"])[:10]]
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    sys.exit(main())
