#!/usr/bin/env python3
"""Hostile clients on a shim's socket, ours next to the Go shim (issue 13, docs/reliability.md).

    python3 benchmarks/hostile_clients.py --ours build/shim-runc/containerd-shim-runc-v2
    python3 benchmarks/hostile_clients.py --ours A --also before=/path/to/older/shim

Per side: a private containerd (benchmarks/shimbench/env.py), one sleeping container, then
1,000 idle connections + 20 one-byte-a-second tricklers + 4 pipelining never-readers + 200
frames of 4 MiB on the shim's socket for --seconds, `ctr task exec` every second. Prints a
table and writes benchmarks/results/<date>/hostile.{json,md}. Needs root.
"""
import argparse
import datetime
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from shimbench import env, hostile  # noqa: E402

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
GO_SHIM = "/usr/bin/containerd-shim-runc-v2"


def mib(kib):
    return f"{kib / 1024:.1f}"


def table(results):
    lines = ["| shim | RSS before | peak | after clients left | fds peak/after | execs ok | "
             "slowest exec | 4 MiB frames answered | pipelined requests sent |",
             "|---|---|---|---|---|---|---|---|---|"]
    for name, r in results.items():
        lines.append(
            f"| {name} | {mib(r['base_rss_kib'])} MiB | {mib(r['peak_rss_kib'])} MiB | "
            f"{mib(r['after_rss_kib'])} MiB | {r['peak_fds']}/{r['after_fds']} | "
            f"{r['execs'] + 1 - r['exec_failures']}/{r['execs'] + 1} | {r['exec_max_s']:.2f} s | "
            f"{r['load']['big_answers']}/{r['load']['big_frames']} | "
            f"{r['load']['pipeline_requests']} |")
    return "\n".join(lines)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ours", default=os.path.join(REPO, "build/shim-runc/containerd-shim-runc-v2"))
    parser.add_argument("--also", action="append", default=[], metavar="NAME=BINARY",
                        help="another shim binary to measure (e.g. an older build)")
    parser.add_argument("--no-go", action="store_true")
    parser.add_argument("--seconds", type=int, default=40)
    parser.add_argument("--idle", type=int, default=1000)
    parser.add_argument("--out", help="results folder (default benchmarks/results/<date>)")
    args = parser.parse_args()
    if os.geteuid() != 0:
        sys.exit("hostile_clients: needs root")
    binaries = [("ours", args.ours)]
    binaries += [tuple(a.split("=", 1)) for a in args.also]
    if not args.no_go:
        binaries.append(("go", GO_SHIM))
    ws = env.Workspace(REPO)
    results = {}
    try:
        ws.build_rootfs()
        for name, binary in binaries:
            side = env.Side(name, name, binary, ws)
            side.start()
            try:
                print(f"measuring {name} ({binary}) ...", file=sys.stderr, flush=True)
                results[name] = hostile.measure(side, seconds=args.seconds, idle=args.idle)
            finally:
                side.stop()
    finally:
        ws.cleanup()
    out = args.out or os.path.join(REPO, "benchmarks", "results", datetime.date.today().isoformat())
    os.makedirs(out, exist_ok=True)
    with open(os.path.join(out, "hostile.json"), "w") as f:
        json.dump(results, f, indent=1)
    text = table(results)
    with open(os.path.join(out, "hostile.md"), "w") as f:
        f.write(f"# Hostile clients on one shim's socket\n\n{args.idle} idle connections, 20 "
                f"tricklers, 4 never-reading pipeliners, 200 x 4 MiB frames, {args.seconds} s; "
                f"`python3 benchmarks/hostile_clients.py`\n\n{text}\n")
    print(text)


if __name__ == "__main__":
    main()
