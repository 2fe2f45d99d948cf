#!/usr/bin/env python3
"""Live upgrade swaps in a row (docs/live-upgrade.md): a shim-runc daemon started by hand
(-socket, no containerd) is upgraded N times, alternating between our build and
containerd-shim-upgrade-next-v1 (another version), while a client keeps calling the
task API's Connect on a connection opened before the first swap.

    python3 benchmarks/upgrade_swaps.py --build-dir build [--swaps 100]

Reports the swap time the new program measures (old program's exec to its answer), the
`upgrade` command's wall time, the Connect calls made meanwhile, how many failed and the
slowest; checks that the pid never changes and /proc/<pid>/exe names the new binary each
time. Writes benchmarks/results/<date>-upgrade/swaps.{md,json}.
"""
import argparse
import datetime
import json
import os
import subprocess
import sys
import tempfile
import threading
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from shimbench import ttrpc  # noqa: E402


def percentile(values, p):
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(p / 100.0 * (len(ordered) - 1))))]


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--build-dir", default=os.path.join(REPO, "build"))
    parser.add_argument("--swaps", type=int, default=100)
    parser.add_argument("--out", help="results folder (default benchmarks/results/<date>-upgrade)")
    args = parser.parse_args()
    ours = os.path.realpath(os.path.join(args.build_dir, "shim-runc", "containerd-shim-runc-v2"))
    nxt = os.path.realpath(os.path.join(args.build_dir, "tests", "containerd-shim-upgrade-next-v1"))
    for binary in (ours, nxt):
        if not os.access(binary, os.X_OK):
            sys.exit(f"{binary} is not built")
    work = tempfile.mkdtemp(prefix="lsupgrade-")
    sock = os.path.join(work, "s.sock")
    flags = ["-namespace", "upgrade-bench", "-id", "bench", "-address", os.path.join(work, "none"),
             "-socket", sock]
    env = dict(os.environ, TTRPC_ADDRESS=os.path.join(work, "none.ttrpc"))
    with open(os.path.join(work, "shim.log"), "wb") as log:
        daemon = subprocess.Popen([ours, *flags], cwd=work, env=env, stdin=subprocess.DEVNULL,
                                  stdout=log, stderr=log, start_new_session=True)
    deadline = time.monotonic() + 10
    while not os.path.exists(sock):
        if time.monotonic() > deadline:
            sys.exit("the daemon did not come up")
        time.sleep(0.01)

    stop = threading.Event()
    calls = {"made": 0, "failed": 0, "slowest_ms": 0.0, "errors": []}

    def connect_loop():
        client = ttrpc.Client("unix://" + sock)
        while not stop.is_set():
            start = time.monotonic()
            try:
                client.call("Connect", ttrpc.field_bytes(1, "none"))
            except Exception as error:  # counted, and the loop reconnects
                calls["failed"] += 1
                calls["errors"].append(str(error))
                time.sleep(0.01)
                client = ttrpc.Client("unix://" + sock)
                continue
            calls["made"] += 1
            calls["slowest_ms"] = max(calls["slowest_ms"], (time.monotonic() - start) * 1000)

    caller = threading.Thread(target=connect_loop)
    caller.start()
    swaps, walls, problems = [], [], []
    try:
        for i in range(args.swaps):
            binary = (nxt, ours)[i % 2]
            start = time.monotonic()
            run = subprocess.run([binary, *flags, "upgrade"], cwd=work, capture_output=True,
                                 text=True, timeout=60)
            walls.append((time.monotonic() - start) * 1000)
            if run.returncode != 0:
                problems.append(f"swap {i}: exit {run.returncode}: {run.stderr.strip()}")
                continue
            swaps.append(float(run.stdout.rsplit("swap ", 1)[1].split(" ms")[0]))
            if f"shim pid {daemon.pid} " not in run.stdout:
                problems.append(f"swap {i}: {run.stdout.strip()}")
            if os.readlink(f"/proc/{daemon.pid}/exe") != binary:
                problems.append(f"swap {i}: exe is {os.readlink(f'/proc/{daemon.pid}/exe')}")
    finally:
        stop.set()
        caller.join()
        daemon.terminate()
        daemon.wait(timeout=10)

    result = {"date": datetime.datetime.now().isoformat(timespec="seconds"),
              "swaps": args.swaps, "succeeded": len(swaps), "problems": problems,
              "swap_ms": swaps, "upgrade_command_ms": walls, "connect_calls": calls}
    out = args.out or os.path.join(REPO, "benchmarks", "results",
                                   datetime.date.today().isoformat() + "-upgrade")
    os.makedirs(out, exist_ok=True)
    with open(os.path.join(out, "swaps.json"), "w") as f:
        json.dump(result, f, indent=1)
    lines = [f"# Live upgrade: {args.swaps} swaps in a row ({result['date']})", "",
             "shim-runc started by hand (no containers), upgraded alternately to "
             "containerd-shim-upgrade-next-v1 and back; a client calls Connect back to back "
             "on one connection throughout.", "",
             "| | p50 ms | p99 ms | max ms |", "|---|---|---|---|"]
    if swaps:
        lines.append(f"| swap (exec to the new program's answer) | {percentile(swaps, 50):.1f} | "
                     f"{percentile(swaps, 99):.1f} | {max(swaps):.1f} |")
    lines.append(f"| `upgrade` command, wall | {percentile(walls, 50):.1f} | "
                 f"{percentile(walls, 99):.1f} | {max(walls):.1f} |")
    lines += ["", f"Swaps that succeeded: {len(swaps)} of {args.swaps}; pid unchanged and "
              f"/proc/<pid>/exe the new binary each time: {'yes' if not problems else 'no'}.",
              f"Connect calls during the swaps: {calls['made']}, failed: {calls['failed']}, "
              f"slowest: {calls['slowest_ms']:.1f} ms."]
    lines += [f"- {p}" for p in problems[:10]]
    text = "\n".join(lines) + "\n"
    with open(os.path.join(out, "swaps.md"), "w") as f:
        f.write(text)
    sys.stdout.write(text)
    return 0 if not problems and calls["failed"] == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
