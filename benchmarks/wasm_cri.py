#!/usr/bin/env python3
"""The Wasm runtime class under CRI beside shim-runc (docs/wasm.md): pod start latency
(RunPodSandbox + one container created and started) and one pod with many containers in
its one shim (start time, the shim's memory, the containers' memory).

    python3 benchmarks/wasm_cri.py --build-dir build [--pods 20] [--containers 100]

Runs cri_wasm_bench (benchmarks/cri/wasm_pods.cpp, on tests/cri's environment: a private
containerd with the CRI plugin, local images, a private CNI bridge). Needs root, what
tests/cri needs, the engine (cmake/fetch-wasmedge.sh) and the test modules.
$LIBSHIM_CONTAINERD_BIN / $LIBSHIM_CTR_BIN pick another containerd (tests/README.md).
Writes benchmarks/results/<date>-wasm/cri-pods.{md,json}.
"""
import argparse
import datetime
import json
import os
import statistics
import subprocess
import sys

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TARGETS = ("cri_wasm_bench", "containerd-shim-wasm-v1", "containerd-shim-runc-v2",
           "wasi_test_modules", "cri_pause", "cri_helper")


def percentile(values, p):
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(p / 100.0 * (len(ordered) - 1))))]


def table(raw):
    start = raw["start_ms"]
    runc_p50 = statistics.median(start["runc"])
    lines = [f"# Wasm pods under CRI ({raw['date']}, containerd {raw['containerd']})", "",
             f"Pod start: RunPodSandbox + CreateContainer + StartContainer of one container "
             f"(sleep.wasm, or busybox `sleep` through runc), {raw['pods']} pods per class "
             f"started alternately:", "",
             "| handler | p50 ms | p90 ms | p50 vs runc |", "|---|---|---|---|"]
    for name in ("wasm", "runc"):
        p50 = statistics.median(start[name])
        lines.append(f"| {name} | {p50:.0f} | {percentile(start[name], 90):.0f} | "
                     f"{p50 / runc_p50:.2f}x |")
    dense = raw["dense"]
    lines += ["", f"One pod with {dense['wasm']['containers']} containers in its one shim:", "",
              "| handler | start all s | shim PSS KiB | shim RSS KiB | shim threads | "
              "other processes | their PSS KiB | PSS per container KiB |",
              "|---|---|---|---|---|---|---|---|"]
    for name in ("wasm", "runc"):
        d = dense[name]
        per = (d["shim_pss_kib"] + d["other_pss_kib"]) / d["containers"]
        lines.append(f"| {name} | {d['start_all_ms'] / 1000:.1f} | {d['shim_pss_kib']} | "
                     f"{d['shim_rss_kib']} | {d['shim_threads']} | {d['other_processes']} | "
                     f"{d['other_pss_kib']} | {per:.0f} |")
    lines += ["", "Other processes: the containers' (WasmEdge, or busybox `sleep`) and the "
              "pause container, everything under the shim but the shim."]
    return "\n".join(lines) + "\n"


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--build-dir", default=os.path.join(REPO, "build"))
    parser.add_argument("--pods", type=int, default=20)
    parser.add_argument("--containers", type=int, default=100)
    parser.add_argument("--out", help="results folder (default benchmarks/results/<date>-wasm)")
    args = parser.parse_args()
    subprocess.run(["ninja", "-C", args.build_dir, *TARGETS], check=True,
                   stdout=subprocess.DEVNULL)
    bench = os.path.join(args.build_dir, "tests", "cri", "cri_wasm_bench")
    result = subprocess.run([bench, "--pods", str(args.pods), "--containers",
                             str(args.containers)], check=True, stdout=subprocess.PIPE, text=True)
    raw = json.loads(result.stdout.strip().splitlines()[-1])
    raw["date"] = datetime.datetime.now().isoformat(timespec="seconds")
    out = args.out or os.path.join(REPO, "benchmarks", "results",
                                   datetime.date.today().isoformat() + "-wasm")
    os.makedirs(out, exist_ok=True)
    with open(os.path.join(out, "cri-pods.json"), "w") as f:
        json.dump(raw, f, indent=1)
    text = table(raw)
    with open(os.path.join(out, "cri-pods.md"), "w") as f:
        f.write(text)
    sys.stdout.write(text)


if __name__ == "__main__":
    main()
