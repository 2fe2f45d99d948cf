#!/usr/bin/env python3
"""Pods at scale through CRI: shim-runc against containerd's Go runc shim, in one run.

On containerd 2.x a third side runs shim-runc as the pods' sandboxer (a handler with
sandboxer = "shim": no pause container).

    python3 benchmarks/cri_pods.py              # 30 pods x 2 containers per shim, ~2 min
    python3 benchmarks/cri_pods.py --pods 5     # smoke run

Builds cri_pods_bench (benchmarks/cri/pods_at_scale.cpp, on the CRI test environment of
tests/cri: private containerd with the CRI plugin, local pause/busybox images, a private
CNI bridge, a runtime handler per shim) into --build-dir and runs it: pods are started
alternately (ours, Go, Go, ours, ...). Writes benchmarks/results/<date>/cri-pods.{md,json,png}
and the "Pods at scale through CRI" section of docs/performance.md. Needs root, the
packages of cmake/install-deps.sh (grpc++, containernetworking-plugins), gnuplot-nox
(installed on first use). $LIBSHIM_CONTAINERD_BIN / $LIBSHIM_CTR_BIN pick another
containerd (tests/README.md).
"""
import argparse
import datetime
import json
import os
import re
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from shimbench import chart, report  # noqa: E402
from shimbench.stats import percentile  # noqa: E402

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TARGETS = ("containerd-shim-runc-v2", "cri_pods_bench", "cri_pause", "cri_helper")
DOCS_BEGIN = "<!-- cri-pods:begin (written by benchmarks/cri_pods.py) -->"
DOCS_END = "<!-- cri-pods:end -->"
SIDES = (("ours", "shim-runc"), ("ours_shim_mode", "shim-runc, shim mode"), ("go", "Go shim"))


def log(message):
    print(f"[{time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


def build(build_dir):
    if not os.path.exists(os.path.join(build_dir, "build.ninja")):
        subprocess.run(["cmake", "-S", REPO, "-B", build_dir, "-G", "Ninja",
                        "-DCMAKE_BUILD_TYPE=RelWithDebInfo"], check=True,
                       stdout=subprocess.DEVNULL)
    subprocess.run(["ninja", "-C", build_dir, "-j2", *TARGETS], check=True,
                   stdout=subprocess.DEVNULL)


def commit_of(repo):
    """HEAD's commit, also in a git worktree (.git is a file naming the real git dir)."""
    dot_git = os.path.join(repo, ".git")
    try:
        if os.path.isfile(dot_git):
            with open(dot_git) as f:
                git_dir = f.read().split("gitdir:", 1)[1].strip()
            with open(os.path.join(git_dir, "HEAD")) as f:
                head = f.read().strip()
            common = git_dir
            if os.path.exists(os.path.join(git_dir, "commondir")):
                with open(os.path.join(git_dir, "commondir")) as f:
                    common = os.path.normpath(os.path.join(git_dir, f.read().strip()))
            if not head.startswith("ref: "):
                return head[:12]
            ref = os.path.join(common, head[5:])
            if os.path.exists(ref):
                with open(ref) as f:
                    return f.read().strip()[:12]
    except (OSError, IndexError):
        pass
    return report._commit(repo)


def present_sides(raw):
    return [(side, name) for side, name in SIDES if side in raw]


def summarize(raw):
    """Per side: the figures of the table (per pod where it says so)."""
    pods = raw["pods"]
    out = {}
    for side, _ in present_sides(raw):
        r = raw[side]
        procs = r["shims"]["processes"]
        overhead = r["pod_overhead"]
        out[side] = {
            "shim_processes": r["shims"]["count"],
            "host_processes_per_pod": overhead["processes_per_pod"],
            "pod_pss_per_pod_kib": overhead["pss_kib_per_pod"],
            "pss_per_pod_kib": sum(p["pss_kib"] for p in procs) / pods,
            "rss_per_pod_kib": sum(p["rss_kib"] for p in procs) / pods,
            "threads_per_shim": percentile([p["threads"] for p in procs], 50),
            "start_p50_ms": percentile(r["start_ms"], 50),
            "start_p90_ms": percentile(r["start_ms"], 90),
            "start_p99_ms": percentile(r["start_ms"], 99),
            "stop_p50_ms": percentile(r["stop_ms"], 50),
            "stop_p90_ms": percentile(r["stop_ms"], 90),
            "stop_p99_ms": percentile(r["stop_ms"], 99),
            "cpu_per_pod_ms": r["cpu_ms"] / pods,
            "idle_cpu_per_pod_ms": r["idle_cpu_ms"] / pods,
            "killall_errors": r["killall_errors"],
        }
    return out


ROWS = (
    ("shim processes (pods)", "shim_processes", "{:.0f}"),
    ("host processes per pod besides its containers (shim, pause)", "host_processes_per_pod", "{:.2f}"),
    ("PSS per pod besides its containers (shim + pause), MiB", "pod_pss_per_pod_kib", "{:.2f}", 1 / 1024),
    ("shim PSS per pod, MiB", "pss_per_pod_kib", "{:.2f}", 1 / 1024),
    ("shim RSS per pod, MiB", "rss_per_pod_kib", "{:.2f}", 1 / 1024),
    ("threads per shim (median)", "threads_per_shim", "{:.0f}"),
    ("pod start p50, ms (RunPodSandbox + 2 x Create + Start)", "start_p50_ms", "{:.0f}"),
    ("pod start p90, ms", "start_p90_ms", "{:.0f}"),
    ("pod start p99, ms", "start_p99_ms", "{:.0f}"),
    ("pod stop + remove p50, ms", "stop_p50_ms", "{:.0f}"),
    ("pod stop + remove p90, ms", "stop_p90_ms", "{:.0f}"),
    ("pod stop + remove p99, ms", "stop_p99_ms", "{:.0f}"),
    ("shim CPU per pod until running, ms", "cpu_per_pod_ms", "{:.1f}"),
    ("shim CPU per pod while idle, ms per {idle} s (10 ms ticks)", "idle_cpu_per_pod_ms", "{:.2f}"),
    ("\"failed to kill init's children\" at teardown", "killall_errors", "{:.0f}"),
)


def table(summary, raw):
    sides = present_sides(raw)
    ours = [(side, name) for side, name in sides if side != "go"]
    lines = ["| per pod (2 containers) | " + " | ".join(name for _, name in sides) + " | "
             + " | ".join(f"{name} / Go" for _, name in ours) + " |",
             "|---|" + "---:|" * (len(sides) + len(ours))]
    for row in ROWS:
        label, key, fmt = row[0], row[1], row[2]
        scale = row[3] if len(row) > 3 else 1
        values = {side: summary[side][key] * scale for side, _ in sides}
        go = values["go"]
        ratios = [f"{values[side] / go:.2f}" if go else "-" for side, _ in ours]
        lines.append(f"| {label.format(idle=raw['idle_seconds'])} | "
                     + " | ".join(fmt.format(values[side]) for side, _ in sides) + " | "
                     + " | ".join(ratios) + " |")
    return "\n".join(lines)


CHART = """
set terminal {terminal}
set output '{png}'
set termoption noenhanced
set multiplot layout 1,2 title "{title}"
set style data histogram
set style histogram clustered gap 1
set style fill solid 0.8 border -1
set grid ytics
set key top left
set yrange [0:*]
set title "memory per pod besides its containers (shim + pause), MiB"
plot {memory_plot}
set title "pod start (RunPodSandbox + 2 x Create + Start) and stop + remove, ms"
plot {latency_plot}
unset multiplot
"""
COLOURS = {"ours": "#1f77b4", "ours_shim_mode": "#2ca02c", "go": "#ff7f0e"}


def plot_clause(path, sides):
    parts = []
    for i, (side, name) in enumerate(sides):
        source = f"'{path}'" if i == 0 else "''"
        xtic = ":xtic(1)" if i == 0 else ""
        parts.append(f'{source} using {i + 2}{xtic} title "{name}" lc rgb "{COLOURS[side]}"')
    return ", ".join(parts)


def draw(summary, raw, png):
    if os.path.exists(png):
        os.unlink(png)
    sides = present_sides(raw)
    with tempfile.TemporaryDirectory() as tmp:
        memory, latency = os.path.join(tmp, "memory.dat"), os.path.join(tmp, "latency.dat")
        with open(memory, "w") as f:
            for key, name in (("pod_pss_per_pod_kib", "PSS"),):
                f.write(f'"{name}" ' + " ".join(f"{summary[s][key] / 1024:.3f}" for s, _ in sides) + "\n")
        with open(latency, "w") as f:
            for key, name in (("start_p50_ms", "start p50"), ("start_p90_ms", "start p90"),
                              ("stop_p50_ms", "stop p50"), ("stop_p90_ms", "stop p90")):
                f.write(f'"{name}" ' + " ".join(f"{summary[s][key]:.2f}" for s, _ in sides) + "\n")
        title = (f"{raw['pods']} pods x 2 containers per side through CRI, "
                 f"containerd {raw['containerd']}")
        script = CHART.format(terminal=chart._terminal().replace("1500,600", "1200,500"),
                              png=png, title=title, memory_plot=plot_clause(memory, sides),
                              latency_plot=plot_clause(latency, sides))
        done = subprocess.run(["gnuplot"], input=script, capture_output=True, text=True)
        if done.returncode != 0:
            log(f"chart: gnuplot failed: {done.stderr.strip()}")
            return False
    return True


def update_docs(path, block):
    with open(path) as f:
        text = f.read()
    full = f"{DOCS_BEGIN}\n\n{block}\n\n{DOCS_END}"
    if DOCS_BEGIN in text and DOCS_END in text:
        pattern = re.escape(DOCS_BEGIN) + ".*?" + re.escape(DOCS_END)
        text = re.sub(pattern, lambda _: full, text, flags=re.S)
    else:
        text = text.rstrip("\n") + "\n\n## Pods at scale through CRI\n\n" + full + "\n"
    with open(path, "w") as f:
        f.write(text)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pods", type=int, default=30)
    parser.add_argument("--idle-seconds", type=int, default=10)
    parser.add_argument("--build-dir", default=os.path.join(REPO, "build-bench"))
    parser.add_argument("--no-build", action="store_true", help="use --build-dir as it is")
    parser.add_argument("--out", help="results folder (default benchmarks/results/<date>)")
    parser.add_argument("--no-docs", action="store_true", help="leave docs/performance.md alone")
    args = parser.parse_args()
    if os.geteuid() != 0:
        sys.exit("cri_pods: needs root (containerd, runc, CNI)")
    started = time.monotonic()
    if not args.no_build:
        log(f"building {', '.join(TARGETS)} in {args.build_dir}")
        build(args.build_dir)
    report.ensure_gnuplot()
    machine = report.machine_info(REPO, "containerd-shim-runc-v2 next to containerd")
    machine["commit"] = commit_of(REPO)
    log(f"{args.pods} pods x 2 containers per shim ...")
    bench = os.path.join(args.build_dir, "tests", "cri", "cri_pods_bench")
    done = subprocess.run([bench, "--pods", str(args.pods), "--idle-seconds",
                           str(args.idle_seconds)], capture_output=True, text=True)
    if done.returncode != 0:
        sys.exit(f"cri_pods: {bench} failed ({done.returncode}): {done.stderr[-2000:]}")
    raw = json.loads(done.stdout)
    machine["load_end"] = report.load_average()
    summary = summarize(raw)
    seconds = time.monotonic() - started
    out = args.out or os.path.join(REPO, "benchmarks", "results",
                                   datetime.date.today().isoformat())
    os.makedirs(out, exist_ok=True)
    with open(os.path.join(out, "cri-pods.json"), "w") as f:
        json.dump({"raw": raw, "summary": summary, "machine": machine, "seconds": seconds},
                  f, indent=1, sort_keys=True)
    png = os.path.join(out, "cri-pods.png")
    has_chart = draw(summary, raw, png)
    header = (f"{machine['date']}: {machine['cores']} cores ({machine['cpu']}), kernel "
              f"{machine['kernel']}, cgroup {machine['cgroup']}; containerd {raw['containerd']} "
              f"({raw['daemons']} daemon{'s' if raw['daemons'] > 1 else ''}); "
              f"{machine['runc']}; shim-runc at commit {machine['commit']}. Load average "
              f"{machine['load_start']} at the start, {machine['load_end']} at the end (the "
              f"machine is shared); {seconds:.0f} s in all.")
    md = f"{header}\n\n{table(summary, raw)}"
    with open(os.path.join(out, "cri-pods.md"), "w") as f:
        f.write(f"# Pods at scale through CRI: shim-runc vs Go runc shim\n\n{md}\n\n")
        if has_chart:
            f.write("![chart](cri-pods.png)\n\n")
        f.write("Method: docs/performance.md, \"Pods at scale through CRI\". "
                "Raw samples: cri-pods.json.\n")
    if not args.no_docs:
        rel = os.path.relpath(out, os.path.join(REPO, "docs"))
        chart_md = f"![pods at scale]({rel}/cri-pods.png)\n\n" if has_chart else ""
        update_docs(os.path.join(REPO, "docs", "performance.md"),
                    f"Latest run ([results]({rel}/cri-pods.md), [raw samples]({rel}/cri-pods.json)):"
                    f"\n\n{chart_md}{md}")
    print(md)
    log(f"results in {out}")


if __name__ == "__main__":
    main()
