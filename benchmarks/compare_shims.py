#!/usr/bin/env python3
"""Measures shim-runc against containerd's Go runc shim, side by side, in one run.

    python3 benchmarks/compare_shims.py            # full run, ~2-3 minutes + the build
    python3 benchmarks/compare_shims.py --quick    # smoke run, ~30 s

Needs root, containerd 1.6 / ctr / runc / a C compiler (Debian packages; gnuplot-nox is
installed on first use). Builds the shim and the micro-benchmarks into --build-dir,
starts two private containerds in a temp dir (same config; one resolves
containerd-shim-runc-v2 to ours, the other to /usr/bin's Go shim), alternates the sides
run by run, and writes benchmarks/results/<date>/{results.md,results.json,chart.png}
and the results section of docs/performance.md. docs/performance.md explains the method.
"""
import argparse
import datetime
import os
import shutil
import signal
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from shimbench import env, latency, report, resources, startup  # noqa: E402

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
GO_SHIM = "/usr/bin/containerd-shim-runc-v2"
TARGETS = ("containerd-shim-runc-v2", "ttrpc_roundtrip", "frame_codec", "reaper_fanout")

PROFILES = {
    "full": {"run_rounds": 40, "exec_rounds": 60, "exit_rounds": 30, "start_rounds": 40,
             "throughput_rounds": 5, "throughput_mib": 512, "many_containers": 20},
    "quick": {"run_rounds": 3, "exec_rounds": 5, "exit_rounds": 3, "start_rounds": 3,
              "throughput_rounds": 1, "throughput_mib": 64, "many_containers": 3},
}


def log(message):
    print(f"[{time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


def build(build_dir):
    if not os.path.exists(os.path.join(build_dir, "build.ninja")):
        env.run(["cmake", "-S", REPO, "-B", build_dir, "-G", "Ninja",
                 "-DCMAKE_BUILD_TYPE=RelWithDebInfo"], stdout=subprocess.DEVNULL)
    env.run(["ninja", "-C", build_dir, "-j2", *TARGETS], stdout=subprocess.DEVNULL)


def check_prerequisites():
    if os.geteuid() != 0:
        sys.exit("compare_shims: needs root (containerd, runc)")
    missing = [t for t in ("containerd", "ctr", "runc", "cc", "strip", "cmake", "ninja")
               if shutil.which(t) is None]
    if missing or not os.path.exists(GO_SHIM):
        sys.exit(f"compare_shims: missing {missing or GO_SHIM}; run cmake/install-deps.sh")


def measure(sides, ws, profile):
    """Runs every side-by-side measurement in turn; returns the raw samples."""
    results = {}

    def run_rm():
        results["run"] = latency.ctr_run_rm(sides, latency.RuncFloor(ws), profile["run_rounds"])

    def many():
        results["memory_many"] = resources.memory_many(sides, profile["many_containers"])

    def stream():
        results["throughput"] = resources.throughput(
            sides, ws, profile["throughput_rounds"], profile["throughput_mib"])

    def exits():
        results["exit"] = latency.exit_latency(sides, ws, profile["exit_rounds"])

    def start():
        results["start"] = startup.shim_start(sides, ws, profile["start_rounds"])
        results["binary"] = startup.binary_sizes(sides)

    phases = [
        ("ctr run --rm /bin/true, and the runc floors", run_rm),
        ("1 container: memory, threads, exec latency",
         lambda: results.update(one_container(sides, profile["exec_rounds"]))),
        (f"{profile['many_containers']} containers per shim: memory", many),
        (f"stdout throughput, {profile['throughput_mib']} MiB", stream),
        ("exit notification latency", exits),
        ("shim start (start -> first reply), binary size", start),
    ]
    for title, step in phases:
        began = time.monotonic()
        log(f"{title} ...")
        step()
        log(f"  done in {time.monotonic() - began:.1f} s")
    return results


def one_container(sides, exec_rounds):
    targets = {s.name: s.start_sleeper("idle") for s in sides}
    try:
        time.sleep(1.0)  # let start-up garbage settle before reading memory
        return {
            "memory_one": {s.name: resources.daemon_memory(s, targets[s.name], details=True)
                           for s in sides},
            "exec": latency.exec_latency(sides, targets, exec_rounds),
            "memory_one_after_exec": {s.name: resources.daemon_memory(s, targets[s.name])
                                      for s in sides},
        }
    finally:
        for side in sides:
            side.remove(targets[side.name])


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="few rounds: a smoke test")
    parser.add_argument("--build-dir", default=os.path.join(REPO, "build-bench"))
    parser.add_argument("--no-build", action="store_true", help="use --build-dir as it is")
    parser.add_argument("--out", help="results folder (default benchmarks/results/<date>)")
    parser.add_argument("--no-docs", action="store_true", help="leave docs/performance.md alone")
    parser.add_argument("--keep", action="store_true", help="keep the temp dir (debugging)")
    args = parser.parse_args()
    check_prerequisites()
    profile = PROFILES["quick" if args.quick else "full"]
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(1))  # run the clean-up below

    started = time.monotonic()
    if not args.no_build:
        log(f"building {', '.join(TARGETS)} in {args.build_dir}")
        build(args.build_dir)
    report.ensure_gnuplot()
    machine = report.machine_info(REPO, GO_SHIM)
    ws = env.Workspace(REPO)
    ours = os.path.join(args.build_dir, "shim-runc", "containerd-shim-runc-v2")
    sides = [env.Side("ours", "shim-runc", ours, ws), env.Side("go", "Go shim", GO_SHIM, ws)]
    log(f"workspace {ws.dir}; load average {machine['load_start']}")
    try:
        ws.build_rootfs()
        for side in sides:
            side.start()
        results = measure(sides, ws, profile)
    finally:
        for side in sides:
            side.stop()
        if not args.keep:
            ws.cleanup()
    log("micro-benchmarks (ttrpc round trip, frame codec, reaper fan-out) ...")
    results["micro"] = startup.micro_benchmarks(args.build_dir)
    machine["load_end"] = report.load_average()
    machine["shim_versions"] = {s.name: report.shim_version(s.binary) for s in sides}
    machine["shim_linkage"] = report.linkage(ours)
    results.update(machine=machine, profile=profile, seconds=time.monotonic() - started)

    out = args.out or os.path.join(REPO, "benchmarks", "results",
                                   datetime.date.today().isoformat())
    summary, has_chart = report.write(results, out)
    if not args.no_docs:
        report.update_docs(os.path.join(REPO, "docs", "performance.md"), summary, out,
                           has_chart)
    print(summary)
    log(f"results in {out} ({results['seconds']:.0f} s in all)")


if __name__ == "__main__":
    main()
