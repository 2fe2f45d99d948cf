#!/usr/bin/env python3
"""The Wasm runtime class's figures beside shim-runc's, in one run (docs/wasm.md):

  * `ctr run --rm` latency: a Wasm hello (hello.wasm through containerd-shim-wasm-v1 and
    WasmEdge) against busybox `true` through our shim-runc + runc and through the Go shim,
    rounds alternating between them. "wasm" is the default: the namespace's shared Wasm
    shim, its engine loaded; "wasm-own" gives each container a shim of its own (the
    annotation io.containerd.runc.v2.group=<id>), whose engine loads at its Create;
  * memory of N running containers per class: the shims' PSS and the containers' own
    processes' PSS (the engine for Wasm, busybox `sleep` for runc).

    python3 benchmarks/wasm_figures.py --build-dir build [--rounds 30] [--containers 10]

Needs root, containerd 1.6 (Debian's), runc, the built shims and test modules
(tests/wasm/modules) and the engine (cmake/fetch-wasmedge.sh). Writes
benchmarks/results/<date>-wasm/{results.md,results.json}.
"""
import argparse
import datetime
import json
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
GO_SHIM = "/usr/bin/containerd-shim-runc-v2"
APPLETS = ("sh", "true", "sleep", "cat", "echo")


def log(message):
    print(f"[{time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


class Daemon:
    """A private containerd 1.6 in `work`."""

    def __init__(self, work):
        self.dir = os.path.join(work, "containerd")
        os.makedirs(self.dir)
        self.address = os.path.join(self.dir, "c.sock")
        self.ns = f"wasmbench-{os.getpid()}"
        config = os.path.join(self.dir, "config.toml")
        with open(config, "w") as f:
            f.write(f'version = 2\nroot = "{self.dir}/root"\nstate = "{self.dir}/state"\n'
                    f'disabled_plugins = ["io.containerd.grpc.v1.cri"]\n'
                    f'[grpc]\n  address = "{self.address}"\n'
                    f'[ttrpc]\n  address = "{self.address}.ttrpc"\n')
        self.log = open(os.path.join(self.dir, "containerd.log"), "wb")
        self.process = subprocess.Popen(["containerd", "--config", config], stdout=self.log,
                                        stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                        start_new_session=True)
        deadline = time.monotonic() + 30
        while self.ctr("version", check=False).returncode != 0:
            if time.monotonic() > deadline:
                raise RuntimeError("containerd did not come up")
            time.sleep(0.1)

    def ctr(self, *args, check=True):
        return subprocess.run(["ctr", "--address", self.address, "-n", self.ns, *args],
                              check=check, capture_output=True, text=True)

    def stop(self):
        listed = self.ctr("container", "list", "-q", check=False).stdout.split()
        if listed:
            self.ctr("task", "delete", "--force", *listed, check=False)
            self.ctr("container", "delete", *listed, check=False)
        self.process.send_signal(signal.SIGTERM)
        self.process.wait(timeout=20)


def pss_kib(pid):
    try:
        with open(f"/proc/{pid}/smaps_rollup") as f:
            for line in f:
                if line.startswith("Pss:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


def children(pid):
    out = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as f:
                    fields = f.read().rsplit(")", 1)[1].split()
                if int(fields[1]) == pid:
                    out.append(int(entry))
            except OSError:
                pass
    return out


def shim_pids(address, binary, shared=None):
    """Daemons of `binary` for containerd at `address`; with `shared` True (False) only
    (never) the namespace's shared Wasm shim (-id io.libshim.wasm.shared-<digest>)."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            exe = os.readlink(f"/proc/{entry}/exe")
            with open(f"/proc/{entry}/cmdline", "rb") as f:
                argv = f.read().split(b"\0")
        except OSError:
            continue
        if exe != binary or address.encode() not in argv:
            continue
        is_shared = any(a.startswith(b"io.libshim.wasm.shared-") for a in argv)
        if shared is None or shared == is_shared:
            found.append(int(entry))
    return found


def percentile(values, p):
    values = sorted(values)
    return values[min(len(values) - 1, int(round(p / 100 * (len(values) - 1))))]


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--build-dir", default=os.path.join(REPO, "build"))
    parser.add_argument("--rounds", type=int, default=30)
    parser.add_argument("--containers", type=int, default=10)
    parser.add_argument("--out", default=None)
    args = parser.parse_args()
    build = os.path.abspath(args.build_dir)
    wasm_shim = os.path.join(build, "shim-wasm/containerd-shim-wasm-v1")
    runc_shim = os.path.join(build, "shim-runc/containerd-shim-runc-v2")
    modules = os.path.join(build, "tests/wasm/modules")
    out = args.out or os.path.join(REPO, "benchmarks/results",
                                   datetime.date.today().isoformat() + "-wasm")
    work = tempfile.mkdtemp(prefix="wasmbench-", dir="/tmp")
    rootfs = os.path.join(work, "rootfs")
    for sub in ("bin", "proc", "dev", "sys", "etc"):
        os.makedirs(os.path.join(rootfs, sub))
    shutil.copy("/bin/busybox", os.path.join(rootfs, "bin/busybox"))
    for applet in APPLETS:
        os.symlink("busybox", os.path.join(rootfs, "bin", applet))
    for name in ("hello.wasm", "spin.wasm"):
        shutil.copy(os.path.join(modules, name), os.path.join(rootfs, name))
    # ctr 1.6 wants a shim binary named containerd-shim-<name>-<version> when given a path.
    own = lambda cid: ["--annotation", f"io.containerd.runc.v2.group={cid}"]
    sides = {
        "wasm": (wasm_shim, ["/hello.wasm"]),
        "wasm-own": (wasm_shim, ["/hello.wasm"]),
        "runc-ours": (runc_shim, ["/bin/true"]),
        "runc-go": (GO_SHIM, ["/bin/true"]),
    }
    daemon = Daemon(work)
    results = {"date": datetime.datetime.now().isoformat(timespec="seconds"),
               "rounds": args.rounds, "containers": args.containers}
    try:
        latencies = {name: [] for name in sides}
        for i in range(args.rounds + 2):
            for name, (shim, command) in sides.items():
                cid = f"{name}-{i}"
                flags = own(cid) if name == "wasm-own" else []
                started = time.monotonic()
                daemon.ctr("run", "--rm", *flags, "--runtime", shim, "--rootfs", rootfs, cid,
                           *command)
                if i >= 2:  # two warm-up rounds
                    latencies[name].append((time.monotonic() - started) * 1e3)
        results["ctr_run_rm_ms"] = {
            name: {"p50": statistics.median(v), "p90": percentile(v, 90), "mean": statistics.mean(v)}
            for name, v in latencies.items()}
        log(f"ctr run --rm: {json.dumps(results['ctr_run_rm_ms'])}")

        memory = {}
        for name, shim, command in (("wasm", wasm_shim, ["/spin.wasm"]),
                                    ("wasm-own", wasm_shim, ["/spin.wasm"]),
                                    ("runc-ours", runc_shim, ["/bin/sleep", "100000"]),
                                    ("runc-go", GO_SHIM, ["/bin/sleep", "100000"])):
            ids = [f"mem-{name}-{i}" for i in range(args.containers)]
            for cid in ids:
                flags = own(cid) if name == "wasm-own" else []
                daemon.ctr("run", "-d", *flags, "--runtime", shim, "--rootfs", rootfs, cid,
                           *command)
            time.sleep(2.0)
            # The shared shim lingers while wasm-own runs: count it for "wasm" alone.
            only = {"wasm": True, "wasm-own": False}.get(name)
            shims = shim_pids(daemon.address, os.path.realpath(shim), only)
            tasks = [int(l.split()[1]) for l in daemon.ctr("task", "ls").stdout.splitlines()[1:]
                     if l.split()[0] in ids]
            task_pss = sum(pss_kib(p) for p in tasks)
            # A shim's children that are no container's init (the Wasm shim's zygote) count
            # as the shim's.
            helpers = [c for p in shims for c in children(p) if c not in tasks]
            shim_pss = sum(pss_kib(p) for p in shims + helpers)
            memory[name] = {"shims": len(shims), "helpers": len(helpers), "shim_pss_kib": shim_pss,
                            "container_pss_kib": task_pss,
                            "per_container_kib": (shim_pss + task_pss) / args.containers}
            log(f"memory {name}: {memory[name]}")
            daemon.ctr("task", "kill", "-s", "KILL", *ids, check=False)
            time.sleep(1.0)
            daemon.ctr("task", "delete", "--force", *ids, check=False)
            daemon.ctr("container", "delete", *ids, check=False)
        results["memory"] = memory
    finally:
        daemon.stop()
        subprocess.run(["umount", "-R", rootfs], stderr=subprocess.DEVNULL)
        shutil.rmtree(work, ignore_errors=True)

    os.makedirs(out, exist_ok=True)
    with open(os.path.join(out, "results.json"), "w") as f:
        json.dump(results, f, indent=2)
    lat = results["ctr_run_rm_ms"]
    mem = results["memory"]
    lines = [f"# Wasm runtime class figures ({results['date']}, containerd 1.6.20)", "",
             f"`ctr run --rm`, {args.rounds} rounds alternating (after 2 warm-up rounds):", "",
             "| | p50 ms | p90 ms | p50 vs runc-ours |", "|---|---|---|---|"]
    for name in sides:
        lines.append(f"| {name} | {lat[name]['p50']:.0f} | {lat[name]['p90']:.0f} | "
                     f"{lat[name]['p50'] / lat['runc-ours']['p50']:.2f}x |")
    lines += ["", f"{args.containers} running containers (Wasm: spin.wasm; runc: busybox sleep), "
              "PSS summed over the shims (with their helper processes: the Wasm shim's zygote) "
              "and over the containers' init processes:", "",
              "| | shims' PSS KiB | containers' PSS KiB | per container KiB |",
              "|---|---|---|---|"]
    for name, m in mem.items():
        lines.append(f"| {name} | {m['shim_pss_kib']} | {m['container_pss_kib']} | "
                     f"{m['per_container_kib']:.0f} |")
    with open(os.path.join(out, "results.md"), "w") as f:
        f.write("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
