#!/usr/bin/env python3
"""Soak and load, ours next to the Go shim (issue 13; not a CI test: it takes a while).

    python3 benchmarks/soak.py --ours build/shim-runc/containerd-shim-runc-v2
    python3 benchmarks/soak.py --execs 100000 --runs 10000 --exec-seconds 0 --run-seconds 0

Per side (a private containerd each, benchmarks/shimbench/env.py):
  1. execs into one container (`ctr task exec /bin/true`, one after another, or N in
     flight with --exec-parallel N; with --exec-via shim, Exec/Start/Wait/Delete over the
     shim's socket instead, twice the rate: shimbench/task_exec.py), sampling the shim's
     RSS, fds, threads and zombie children every --every execs;
  2. `ctr run --rm /bin/true` through one containerd, sampling containerd's RSS, fds and
     threads, its zombie children, live shims and sockets left in /run/containerd/s;
  3. 50 concurrent execs into one container (liveness probes): p50/p99 and failures;
  4. 100 containers in one grouped shim: the shim's RSS, threads and fds.
Counts stop at --execs/--runs or after --exec-seconds/--run-seconds (0: no time bound),
whichever comes first; the counts reached are reported as they are. --phases runs some of
the four; the others (and a side left out with --only) are kept from an existing soak.json
in --out, each phase with the arguments and date of the run that measured it. Writes
benchmarks/results/<date>/soak.{json,md,png}. Needs root and gnuplot (installed on demand).
"""
import argparse
import concurrent.futures
import datetime
import json
import os
import shutil
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from shimbench import chart, env, procs, task_exec, ttrpc  # noqa: E402
from shimbench.stats import percentile  # noqa: E402

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
GO_SHIM = "/usr/bin/containerd-shim-runc-v2"
SOCKET_DIR = "/run/containerd/s"
PHASES = ("execs", "runs", "concurrent", "grouped")


def log(message):
    print(f"[{time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


def zombies(pid):
    """Zombie children of `pid`."""
    out = subprocess.run(["ps", "-o", "stat=", "--ppid", str(pid)], capture_output=True, text=True).stdout
    return sum(1 for s in out.split() if s.startswith("Z"))


def sample(pid, count, began):
    m = procs.memory(pid)
    return {"n": count, "t": round(time.monotonic() - began, 1), "rss_kib": m["rss_kib"],
            "fds": len(os.listdir(f"/proc/{pid}/fd")), "threads": m["threads"],
            "zombies": zombies(pid)}


def note_failure(result, n, errors, keep=10):
    """1 if `result` failed; the first `keep` failures are kept: which one, when, ctr's words."""
    if result.returncode == 0:
        return 0
    if len(errors) < keep:
        errors.append({"n": n, "at": time.strftime("%H:%M:%S"), "exit": result.returncode,
                       "stderr": result.stderr.strip()[-300:]})
    log(f"failure {n}: exit {result.returncode}: {result.stderr.strip()[-300:]}")
    return 1


def bounded(limit, seconds, began, done):
    return done < limit and (seconds <= 0 or time.monotonic() - began < seconds)


def ctr_exec(side, cid):
    """`ctr task exec /bin/true`, one process and one containerd round trip per exec."""
    def one(n):
        return side.ctr("task", "exec", "--exec-id", f"s{n}", cid, "/bin/true", check=False,
                        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    return one, lambda: None


def shim_exec(side, cid):
    """Exec/Start/Wait/Delete of /bin/true over the shim's socket (shimbench/task_exec.py)."""
    execer = task_exec.Execer(side, cid, ["/bin/true"])

    def one(n):
        try:
            status = execer.exec(f"s{n}")
            return subprocess.CompletedProcess([], status, "", f"exit status {status}")
        except (ttrpc.TtrpcError, OSError) as e:
            return subprocess.CompletedProcess([], 255, "", str(e))
    return one, execer.close


def exec_soak(side, limit, seconds, every, via, parallel=1):
    """`parallel` workers exec into one container, each with its own caller (connection),
    until `limit` execs or `seconds`; the shim is sampled every `every` completed execs."""
    cid = side.start_sleeper("soak")
    try:
        pid = side.daemon(cid)
        callers = [(shim_exec if via == "shim" else ctr_exec)(side, cid) for _ in range(parallel)]
        began, lock = time.monotonic(), threading.Lock()
        count = {"started": 0, "done": 0, "failures": 0}
        curve, errors = [sample(pid, 0, began)], []

        def worker(one):
            while True:
                with lock:
                    if not bounded(limit, seconds, began, count["started"]):
                        return
                    n = count["started"]
                    count["started"] += 1
                result = one(n)
                with lock:
                    count["failures"] += note_failure(result, n, errors)
                    count["done"] += 1
                    if count["done"] % every == 0:
                        curve.append(sample(pid, count["done"], began))

        with concurrent.futures.ThreadPoolExecutor(parallel) as pool:
            for future in [pool.submit(worker, one) for one, _ in callers]:
                future.result()
        curve.append(sample(pid, count["done"], began))
        for _, close in callers:
            close()
        return {"count": count["done"], "failures": count["failures"], "errors": errors,
                "via": via, "parallel": parallel,
                "seconds": round(time.monotonic() - began, 1), "curve": curve}
    finally:
        side.remove(cid)


def socket_count():
    try:
        return len(os.listdir(SOCKET_DIR))
    except OSError:
        return 0


def run_soak(side, limit, seconds, every):
    pid = side.process.pid
    began, n, failures, curve, errors = time.monotonic(), 0, 0, [], []
    sockets_before = socket_count()

    def point():
        s = sample(pid, n, began)
        s["live_shims"] = len(procs.shim_processes(side.address))
        s["sockets_added"] = socket_count() - sockets_before
        return s

    curve.append(point())
    while bounded(limit, seconds, began, n):
        r = env.run(side.run_argv(side.cid(f"r{n}"), "/bin/true", rm=True), check=False,
                    stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        failures += note_failure(r, n, errors)
        n += 1
        if n % every == 0:
            curve.append(point())
    time.sleep(1)
    curve.append(point())
    return {"count": n, "failures": failures, "errors": errors,
            "seconds": round(time.monotonic() - began, 1), "curve": curve}


def concurrent_execs(side, parallel=50, rounds=4):
    cid = side.start_sleeper("probes")
    try:
        def one(i):
            began = time.monotonic()
            r = side.ctr("task", "exec", "--exec-id", f"p{i}", cid, "/bin/true", check=False,
                         stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
            return time.monotonic() - began, r.returncode == 0, r.stderr.strip()[-200:]
        results = []
        with concurrent.futures.ThreadPoolExecutor(parallel) as pool:
            for k in range(rounds):
                results += pool.map(one, range(k * parallel, (k + 1) * parallel))
        times = [t for t, _, _ in results]
        return {"parallel": parallel, "count": len(results),
                "failures": sum(1 for _, ok, _ in results if not ok),
                "errors": sorted({e for _, ok, e in results if not ok})[:3],
                "p50_ms": round(percentile(times, 50) * 1000), "p99_ms": round(percentile(times, 99) * 1000)}
    finally:
        side.remove(cid)


def grouped(side, count=100):
    group = f"io.containerd.runc.v2.group={side.ws.namespace}-{side.name}-pod"
    cids = [side.cid(f"g{i}") for i in range(count)]
    began = time.monotonic()
    failures = 0
    for cid in cids:
        argv = side.run_argv(cid, "/bin/sleep", "1000000", detach=True)
        argv.insert(argv.index("--rootfs"), "--annotation")
        argv.insert(argv.index("--rootfs"), group)
        failures += env.run(argv, check=False, stdout=subprocess.DEVNULL).returncode != 0
    took = time.monotonic() - began
    try:
        time.sleep(1)
        shims = {pid for pid, argv in procs.shim_processes(side.address).items()
                 if argv[-1] not in ("start", "delete")}
        pid = next(iter(shims)) if len(shims) == 1 else None
        m = procs.memory(pid) if pid else {}
        return {"containers": count, "failures": failures, "shim_daemons": len(shims),
                "start_all_s": round(took, 1), "rss_kib": m.get("rss_kib"),
                "pss_kib": m.get("pss_kib"), "threads": m.get("threads"),
                "fds": len(os.listdir(f"/proc/{pid}/fd")) if pid else None}
    finally:
        side.remove(*cids)


def private_copy(binary, ws, name):
    """The shim copied into the workspace: a rebuild during a long soak must not swap the
    binary under it (a relink mid-run made `ctr run` fail while the file was half written)."""
    folder = os.path.join(ws.dir, f"bin-{name}")
    os.makedirs(folder, exist_ok=True)
    copy = os.path.join(folder, os.path.basename(binary))
    shutil.copy2(binary, copy)
    return copy


def run_phase(side, phase, args):
    if phase == "execs":
        return exec_soak(side, args.execs, args.exec_seconds, args.every, args.exec_via,
                         args.exec_parallel)
    if phase == "runs":
        return run_soak(side, args.runs, args.run_seconds, max(1, args.every // 4))
    if phase == "concurrent":
        return concurrent_execs(side)
    return grouped(side)


def merge_previous(path, results):
    """The phases and sides this run did not measure, from an earlier soak.json."""
    if not os.path.exists(path):
        return results
    with open(path) as f:
        old = json.load(f)
    merged = {}
    for side in sorted(set(old["results"]) | set(results), key=lambda s: s != "ours"):
        phases = dict(old["results"].get(side, {}))
        for phase in phases.values():
            phase.setdefault("measured", {"args": old.get("args")})
        phases.update(results.get(side, {}))
        merged[side] = phases
    return merged


def draw(results, png):
    chart.ensure_gnuplot()
    data = {}
    for side, r in results.items():
        for phase, key in (("execs", "exec"), ("runs", "run")):
            if phase not in r:
                continue
            path = f"{png}.{side}.{key}.dat"
            with open(path, "w") as f:
                for s in r[phase]["curve"]:
                    f.write(f"{s['n']} {s['rss_kib'] / 1024:.2f} {s['fds']} {s['threads']} {s['zombies']}\n")
            data[(side, key)] = path
    plots = []
    for key, title, who in (("exec", "execs into one container", "shim"),
                            ("run", "ctr run --rm through one containerd", "containerd")):
        lines = []
        for side in results:
            path = data.get((side, key))
            if path is None:
                continue
            lines.append(f"'{path}' using 1:2 with lines lw 2 title '{side} {who} RSS (MiB)'")
            lines.append(f"'{path}' using 1:3 with lines dt 2 title '{side} {who} fds'")
            lines.append(f"'{path}' using 1:4 with lines dt 3 title '{side} {who} threads'")
            lines.append(f"'{path}' using 1:5 with points pt 7 title '{side} zombies'")
        if lines:
            plots.append(f"set title '{title}'; set xlabel 'count'; plot " + ", ".join(lines))
    script = (f"set terminal pngcairo size 1500,600 font 'DejaVu Sans,10'; set output '{png}';"
              f"set multiplot layout 1,{len(plots)}; set key left top; set grid; set yrange [0:*]; set offsets 0,0,4,0;"
              + "; ".join(plots) + "; unset multiplot")
    subprocess.run(["gnuplot", "-e", script], check=True)
    for path in data.values():
        os.unlink(path)


def provenance(results):
    """Which run measured each phase: `python3 benchmarks/soak.py` with these arguments."""
    lines = []
    for side, phases in results.items():
        for phase, r in phases.items():
            m = r.get("measured", {})
            args = {k: v for k, v in (m.get("args") or {}).items() if k not in ("ours", "out")}
            lines.append(f"- {side} {phase}: {m.get('date', 'an earlier run')}, {args}")
    return "Measured by `python3 benchmarks/soak.py` with:\n\n" + "\n".join(lines)


def summary(results):
    rows = ["| | " + " | ".join(results) + " |", "|---" * (len(results) + 1) + "|"]

    def cell(fn, r):
        try:
            return fn(r)
        except KeyError:  # a phase this side has not measured yet
            return "-"

    def row(label, fn):
        rows.append(f"| {label} | " + " | ".join(cell(fn, r) for r in results.values()) + " |")

    def flat(r, phase, field, unit=1, fmt="{:.1f}"):
        c = r[phase]["curve"]
        return f"{fmt.format(c[0][field] / unit)} -> {fmt.format(max(s[field] for s in c) / unit)} " \
               f"(max) -> {fmt.format(c[-1][field] / unit)}"
    row("execs (count, failures, seconds, via x in flight)", lambda r: f"{r['execs']['count']}, {r['execs']['failures']}, "
        f"{r['execs']['seconds']} s, {r['execs'].get('via', 'ctr')} x{r['execs'].get('parallel', 1)}")
    row("shim RSS MiB first -> max -> last", lambda r: flat(r, "execs", "rss_kib", 1024))
    row("shim fds", lambda r: flat(r, "execs", "fds", fmt="{:.0f}"))
    row("shim threads", lambda r: flat(r, "execs", "threads", fmt="{:.0f}"))
    row("shim zombie children (max)", lambda r: str(max(s["zombies"] for s in r["execs"]["curve"])))
    row("`ctr run --rm` (count, failures, seconds)", lambda r: f"{r['runs']['count']}, {r['runs']['failures']}, {r['runs']['seconds']} s")
    row("containerd RSS MiB first -> max -> last", lambda r: flat(r, "runs", "rss_kib", 1024))
    row("containerd fds", lambda r: flat(r, "runs", "fds", fmt="{:.0f}"))
    row("containerd zombie children (max)", lambda r: str(max(s["zombies"] for s in r["runs"]["curve"])))
    row("live shims / sockets added at the end", lambda r: f"{r['runs']['curve'][-1]['live_shims']} / {r['runs']['curve'][-1]['sockets_added']}")
    row("50 concurrent execs x4: p50 / p99, failures", lambda r: f"{r['concurrent']['p50_ms']} / {r['concurrent']['p99_ms']} ms, {r['concurrent']['failures']}")
    row("100 containers, one grouped shim: daemons, RSS, threads, fds",
        lambda r: f"{r['grouped']['shim_daemons']}, {(r['grouped']['rss_kib'] or 0) / 1024:.1f} MiB, "
                  f"{r['grouped']['threads']}, {r['grouped']['fds']}")
    row("100 containers: start all (s), failures", lambda r: f"{r['grouped']['start_all_s']}, {r['grouped']['failures']}")
    return "\n".join(rows)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ours", default=os.path.join(REPO, "build/shim-runc/containerd-shim-runc-v2"))
    parser.add_argument("--no-go", action="store_true")
    parser.add_argument("--only", choices=("ours", "go"), help="one side only (results of "
                        "two runs merge: an existing soak.json in --out keeps the other side)")
    parser.add_argument("--execs", type=int, default=100000)
    parser.add_argument("--exec-seconds", type=float, default=600)
    parser.add_argument("--exec-via", choices=("ctr", "shim"), default="ctr",
                        help="execs by `ctr task exec` or over the shim's socket (Exec, Start, "
                        "Wait, Delete as containerd sends them; no ctr per exec)")
    parser.add_argument("--exec-parallel", type=int, default=1,
                        help="execs in flight at once into the soak's container (default 1)")
    parser.add_argument("--runs", type=int, default=10000)
    parser.add_argument("--run-seconds", type=float, default=300)
    parser.add_argument("--every", type=int, default=100, help="sample every N execs/runs")
    parser.add_argument("--phases", default=",".join(PHASES),
                        help=f"comma-separated subset of {','.join(PHASES)}")
    parser.add_argument("--out", help="results folder (default benchmarks/results/<date>)")
    args = parser.parse_args()
    if os.geteuid() != 0:
        sys.exit("soak: needs root")
    phases = [p for p in args.phases.split(",") if p]
    if not phases or any(p not in PHASES for p in phases):
        sys.exit(f"soak: --phases takes a subset of {','.join(PHASES)}")
    binaries = [("ours", args.ours)] + ([] if args.no_go else [("go", GO_SHIM)])
    if args.only:
        binaries = [b for b in binaries if b[0] == args.only]
    ws = env.Workspace(REPO)
    results = {}
    try:
        ws.build_rootfs()
        for name, binary in binaries:
            side = env.Side(name, name, private_copy(binary, ws, name), ws)
            side.start()
            try:
                r = results[name] = {}
                measured = {"date": datetime.datetime.now().isoformat(timespec="minutes"),
                            "args": vars(args)}
                for phase in phases:
                    log(f"{name}: {phase} ...")
                    r[phase] = run_phase(side, phase, args)
                    r[phase]["measured"] = measured
            finally:
                side.stop()
    finally:
        ws.cleanup()
    out = args.out or os.path.join(REPO, "benchmarks", "results", datetime.date.today().isoformat())
    os.makedirs(out, exist_ok=True)
    results = merge_previous(os.path.join(out, "soak.json"), results)
    with open(os.path.join(out, "soak.json"), "w") as f:
        json.dump({"args": vars(args), "results": results}, f, indent=1)
    draw(results, os.path.join(out, "soak.png"))
    text = summary(results)
    with open(os.path.join(out, "soak.md"), "w") as f:
        f.write(f"# Soak and load\n\n{text}\n\n{provenance(results)}\n\n![curves](soak.png)\n")
    print(text)


if __name__ == "__main__":
    main()
