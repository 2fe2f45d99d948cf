#!/usr/bin/env python3
"""The VM runtime class's figures beside the Go runc shim's, in one run (shim-vm):

  * `ctr run --rm` latency of busybox `true` through containerd-shim-kvm-v1 (a fresh qemu
    micro-VM booted per run) and through the Go shim io.containerd.runc.v2 + runc, same
    rootfs, rounds alternating between the two;
  * pod start: from issuing `ctr run -d` to the task RUNNING in `ctr task ls`, and the
    shim's own boot_ms ("pod VM booted" in containerd's log);
  * host memory per pod: K running `sleep` containers per class, each in its own shim (for
    the VM shim its own VM); PSS of the shim + qemu + virtiofsd (both processes) per VM
    pod, of the shim + the container's process per runc pod;
  * the accelerator that ran (kvm or tcg, and why) and the guest and host kernel releases.

    nice -n 10 python3 benchmarks/vm_figures.py --build-dir build [--runs 10] [--pods 3]

Needs root, containerd 1.6 (Debian's), runc, the built shim-vm (its initramfs and the
guest kernel of cmake/fetch-kernel.sh), qemu-system-x86_64 and /usr/lib/qemu/virtiofsd.
Writes benchmarks/results/<date>-vm/{results.md,results.json}.
"""
import argparse
import datetime
import json
import os
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
GO_SHIM = "/usr/bin/containerd-shim-runc-v2"
APPLETS = ("sh", "true", "sleep", "cat", "echo", "uname")
VM_STATE = "/run/libshim-vm"
CTR_TIMEOUT = 300  # s; a TCG boot takes seconds, not minutes


def log(message):
    print(f"[{time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


class Daemon:
    """A private containerd 1.6 in `work`."""

    def __init__(self, work, env=None):
        self.dir = os.path.join(work, "containerd")
        os.makedirs(self.dir)
        self.address = os.path.join(self.dir, "c.sock")
        self.ns = f"vmbench-{os.getpid()}"
        config = os.path.join(self.dir, "config.toml")
        with open(config, "w") as f:
            f.write(f'version = 2\nroot = "{self.dir}/root"\nstate = "{self.dir}/state"\n'
                    f'disabled_plugins = ["io.containerd.grpc.v1.cri"]\n'
                    f'[grpc]\n  address = "{self.address}"\n'
                    f'[ttrpc]\n  address = "{self.address}.ttrpc"\n')
        self.log_path = os.path.join(self.dir, "containerd.log")
        self.log = open(self.log_path, "wb")
        self.process = subprocess.Popen(["containerd", "--config", config], stdout=self.log,
                                        stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                        start_new_session=True, env=env)
        deadline = time.monotonic() + 30
        while self.ctr("version", check=False).returncode != 0:
            if time.monotonic() > deadline:
                raise RuntimeError("containerd did not come up")
            time.sleep(0.1)

    def ctr(self, *args, check=True):
        result = subprocess.run(["ctr", "--address", self.address, "-n", self.ns, *args],
                                capture_output=True, text=True, timeout=CTR_TIMEOUT)
        if check and result.returncode != 0:
            raise RuntimeError(f"ctr {' '.join(args)}: exit {result.returncode}: "
                               f"{result.stderr.strip()}")
        return result

    def tasks(self):
        """{id: (pid, status)} from `ctr task ls`."""
        out = {}
        for line in self.ctr("task", "ls", check=False).stdout.splitlines()[1:]:
            words = line.split()
            if len(words) >= 3:
                out[words[0]] = (int(words[1]), words[2])
        return out

    def log_text(self):
        self.log.flush()
        with open(self.log_path, errors="replace") as f:
            return f.read()

    def stop(self):
        listed = self.ctr("container", "list", "-q", check=False).stdout.split()
        if listed:
            for cid in listed:  # `ctr task kill` takes one container
                self.ctr("task", "kill", "-s", "KILL", cid, check=False)
            time.sleep(1.0)
            self.ctr("task", "delete", "--force", *listed, check=False)
            self.ctr("container", "delete", *listed, check=False)
        self.process.send_signal(signal.SIGTERM)
        self.process.wait(timeout=20)


def pod_state_dir(ns, pod):
    """shim-vm's /run/libshim-vm/<FNV-1a of "ns/pod"> (shim-vm/src/state_dir.cpp)."""
    value = 1469598103934665603
    for byte in f"{ns}/{pod}".encode():
        value ^= byte
        value = (value * 1099511628211) & 0xFFFFFFFFFFFFFFFF
    return f"{VM_STATE}/{value:016x}"


def pss_kib(pid):
    try:
        with open(f"/proc/{pid}/smaps_rollup") as f:
            for line in f:
                if line.startswith("Pss:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


def memfd_pss_kib(pid):
    """PSS of `pid`'s memfd mappings (qemu's guest RAM, memory-backend-memfd)."""
    total, inside = 0, False
    try:
        with open(f"/proc/{pid}/smaps") as f:
            for line in f:
                first = line.split(maxsplit=1)[0]
                if "-" in first and not first.endswith(":"):
                    inside = "/memfd:" in line
                elif inside and first == "Pss:":
                    total += int(line.split()[1])
    except OSError:
        pass
    return total


def proc_table():
    """{pid: (ppid, exe basename, argv)} of every process."""
    table = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                ppid = int(f.read().rsplit(")", 1)[1].split()[1])
            with open(f"/proc/{entry}/cmdline", "rb") as f:
                argv = [a.decode(errors="replace") for a in f.read().split(b"\0") if a]
            try:
                exe = os.path.basename(os.readlink(f"/proc/{entry}/exe"))
            except OSError:
                exe = os.path.basename(argv[0]) if argv else ""
        except OSError:
            continue
        table[int(entry)] = (ppid, exe, argv)
    return table


def descendants(table, pid):
    out, todo = [], [pid]
    while todo:
        parent = todo.pop()
        for p, (ppid, _, _) in table.items():
            if ppid == parent:
                out.append(p)
                todo.append(p)
    return out


def shim_of(table, address, binary, cid):
    """The shim daemon serving `cid` under this containerd (not the `start` action)."""
    for pid, (_, exe, argv) in table.items():
        if (exe == os.path.basename(binary) and address in argv and "start" not in argv
                and "-id" in argv and argv[argv.index("-id") + 1:][:1] == [cid]):
            return pid
    return None


def vm_processes(table, pattern):
    """qemu / virtiofsd processes whose command line names `pattern`."""
    return sorted(pid for pid, (_, exe, argv) in table.items()
                  if (exe.startswith("qemu") or "virtiofsd" in exe)
                  and any(pattern in a for a in argv))


def percentile(values, p):
    values = sorted(values)
    return values[min(len(values) - 1, int(round(p / 100 * (len(values) - 1))))]


def summary(values):
    return {"p50": statistics.median(values), "p90": percentile(values, 90),
            "mean": statistics.mean(values), "min": min(values), "max": max(values),
            "n": len(values)}


LOGFMT = re.compile(r'(\w+)=("(?:[^"\\]|\\.)*"|\S+)')


def boot_lines(text):
    """The "pod VM booted" lines of containerd's log as dicts of their fields."""
    out = []
    for line in text.splitlines():
        if 'msg="pod VM booted"' not in line:
            continue
        fields = {}
        for key, value in LOGFMT.findall(line):
            fields[key] = json.loads(value) if value.startswith('"') else value
        out.append(fields)
    return out


def boot_ms_of(daemon, cid, seen):
    """boot_ms of pod `cid` (its state_dir in the line), once the line is there."""
    want = pod_state_dir(daemon.ns, cid)
    for _ in range(50):
        for fields in boot_lines(daemon.log_text()):
            if fields.get("state_dir") == want:
                seen.append(fields)
                return int(fields["boot_ms"])
        time.sleep(0.1)
    return None


def wait_running(daemon, ids, timeout=CTR_TIMEOUT):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        tasks = daemon.tasks()
        if all(tasks.get(cid, (0, ""))[1] == "RUNNING" for cid in ids):
            return tasks
        time.sleep(0.02)
    raise RuntimeError(f"not RUNNING after {timeout} s: {daemon.tasks()}")


def remove(daemon, ids):
    for cid in ids:  # `ctr task kill` takes one container
        daemon.ctr("task", "kill", "-s", "KILL", cid, check=False)
    for _ in range(100):
        tasks = daemon.tasks()
        if all(tasks.get(cid, (0, "STOPPED"))[1] == "STOPPED" for cid in ids):
            break
        time.sleep(0.1)
    daemon.ctr("task", "delete", "--force", *ids, check=False)
    daemon.ctr("container", "delete", *ids, check=False)


def cleanup_vms(ns, ids):
    """Kills what is left of this run's VMs (qemu, virtiofsd whose command line names one of
    their state dirs) and removes those dirs without deleting a file under shared/. Returns
    the leftovers found, and those of other runs (reported, left alone)."""
    dirs = {pod_state_dir(ns, cid) for cid in ids}
    table = proc_table()
    ours, others = [], []
    for pid in vm_processes(table, VM_STATE):
        argv = " ".join(table[pid][2])
        (ours if any(d + "/" in argv or argv.endswith(d) for d in dirs) else others).append(pid)
    for pid in ours:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    for d in sorted(dirs):
        if not os.path.isdir(d):
            continue
        subprocess.run(["umount", "-R", "-l", os.path.join(d, "shared")],
                       stderr=subprocess.DEVNULL)
        for root, subdirs, files in os.walk(d, topdown=False):
            if root == d:
                for name in files:
                    os.unlink(os.path.join(root, name))
            try:
                os.rmdir(root)
            except OSError:
                pass
    return ours, others


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--build-dir", default=os.path.join(REPO, "build"))
    parser.add_argument("--runs", "-n", type=int, default=10, help="rounds / pod starts (N)")
    parser.add_argument("--pods", "-k", type=int, default=3, help="running pods per class (K)")
    parser.add_argument("--warmup", type=int, default=1, help="uncounted rounds first")
    parser.add_argument("--idle", type=float, default=5.0, help="s idle before reading PSS")
    parser.add_argument("--accel", default=None, help="LIBSHIM_VM_ACCEL for the shim "
                        "(kvm, tcg, auto); unset: the shim's default (auto)")
    parser.add_argument("--out", default=None)
    args = parser.parse_args()
    build = os.path.abspath(args.build_dir)
    vm_shim = os.path.realpath(os.path.join(build, "shim-vm/containerd-shim-kvm-v1"))
    out = args.out or os.path.join(REPO, "benchmarks/results",
                                   datetime.date.today().isoformat() + "-vm")
    work = tempfile.mkdtemp(prefix="vmbench-", dir="/tmp")
    rootfs = os.path.join(work, "rootfs")
    for sub in ("bin", "proc", "dev", "sys", "etc", "tmp", "run", "root"):
        os.makedirs(os.path.join(rootfs, sub))
    os.chmod(os.path.join(rootfs, "tmp"), 0o1777)
    shutil.copy("/bin/busybox", os.path.join(rootfs, "bin/busybox"))
    for applet in APPLETS:
        os.symlink("busybox", os.path.join(rootfs, "bin", applet))
    with open(os.path.join(rootfs, "etc/passwd"), "w") as f:
        f.write("root:x:0:0:root:/root:/bin/sh\n")
    with open(os.path.join(rootfs, "etc/group"), "w") as f:
        f.write("root:x:0:\n")
    # ctr 1.6 wants a shim binary named containerd-shim-<name>-<version> when given a path.
    sides = {"vm": vm_shim, "runc-go": GO_SHIM}
    env = dict(os.environ)
    if args.accel:
        env["LIBSHIM_VM_ACCEL"] = args.accel
    daemon = Daemon(work, env)
    used = []  # every container id, for the VM clean-up
    boots = []  # the "pod VM booted" lines of this run
    results = {"date": datetime.datetime.now().isoformat(timespec="seconds"),
               "runs": args.runs, "pods": args.pods, "warmup": args.warmup,
               "host_kernel": os.uname().release,
               "qemu": subprocess.run(["qemu-system-x86_64", "--version"], capture_output=True,
                                      text=True).stdout.splitlines()[0],
               "containerd": subprocess.run(["containerd", "--version"], capture_output=True,
                                            text=True).stdout.strip()}
    failure = None
    try:
        # 1. ctr run --rm /bin/true, alternating.
        latencies = {name: [] for name in sides}
        rm_boot_ms = []
        for i in range(args.runs + args.warmup):
            for name, shim in sides.items():
                cid = f"rm-{name}-{i}"
                used.append(cid)
                started = time.monotonic()
                daemon.ctr("run", "--rm", "--runtime", shim, "--rootfs", rootfs, cid, "/bin/true")
                took = (time.monotonic() - started) * 1e3
                if name == "vm":
                    boot = boot_ms_of(daemon, cid, boots)
                if i >= args.warmup:
                    latencies[name].append(took)
                    if name == "vm" and boot is not None:
                        rm_boot_ms.append(boot)
            if i >= args.warmup:
                log(f"round {i}: " + ", ".join(f"{n} {v[-1]:.0f} ms"
                                               for n, v in latencies.items()))
        results["ctr_run_rm_ms"] = {name: summary(v) for name, v in latencies.items()}
        results["ctr_run_rm_ms"]["vm_over_runc_go_p50"] = (
            results["ctr_run_rm_ms"]["vm"]["p50"] / results["ctr_run_rm_ms"]["runc-go"]["p50"])
        results["ctr_run_rm_boot_ms"] = summary(rm_boot_ms) if rm_boot_ms else None
        log(f"ctr run --rm: {json.dumps(results['ctr_run_rm_ms'])}")

        # 2. Pod start: ctr run -d issued -> RUNNING in task ls; the shim's boot_ms.
        starts, boot_ms = [], []
        for i in range(args.runs):
            cid = f"start-{i}"
            used.append(cid)
            started = time.monotonic()
            daemon.ctr("run", "-d", "--runtime", vm_shim, "--rootfs", rootfs, cid,
                       "/bin/sleep", "600")
            wait_running(daemon, [cid])
            starts.append((time.monotonic() - started) * 1e3)
            boot = boot_ms_of(daemon, cid, boots)
            if boot is not None:
                boot_ms.append(boot)
            log(f"pod start {i}: {starts[-1]:.0f} ms (boot_ms {boot})")
            remove(daemon, [cid])
        results["pod_start_ms"] = summary(starts)
        results["boot_ms"] = summary(boot_ms) if boot_ms else None

        # 3. Host memory per pod.
        memory = {}
        for name, shim in sides.items():
            ids = [f"mem-{name}-{i}" for i in range(args.pods)]
            used.extend(ids)
            for cid in ids:
                daemon.ctr("run", "-d", "--runtime", shim, "--rootfs", rootfs, cid,
                           "/bin/sleep", "600")
            tasks = wait_running(daemon, ids)
            time.sleep(args.idle)
            table = proc_table()
            pods = []
            for cid in ids:
                shim_pid = shim_of(table, daemon.address, shim, cid)
                if shim_pid is None:
                    raise RuntimeError(f"no shim process found for {cid}")
                parts = {"shim": pss_kib(shim_pid)}
                if name == "vm":
                    # qemu and virtiofsd (its parent and its sandboxed child): the shim's
                    # descendants, and whatever names this pod's state dir.
                    procs = set(descendants(table, shim_pid))
                    procs |= set(vm_processes(table, pod_state_dir(daemon.ns, cid)))
                    parts.update({"qemu": 0, "qemu_guest_ram": 0, "virtiofsd": 0, "other": 0})
                    counts = {"qemu": 0, "virtiofsd": 0, "other": 0}
                    for pid in procs:
                        exe = table[pid][1]
                        key = ("qemu" if exe.startswith("qemu") else
                               "virtiofsd" if "virtiofsd" in exe else "other")
                        parts[key] += pss_kib(pid)
                        if key == "qemu":
                            parts["qemu_guest_ram"] += memfd_pss_kib(pid)
                        counts[key] += 1
                    if counts["qemu"] != 1 or counts["virtiofsd"] != 2:
                        log(f"warning: {cid}: {counts} (want 1 qemu, 2 virtiofsd)")
                    parts["processes"] = counts
                else:
                    parts["container"] = pss_kib(tasks[cid][0])
                parts["total"] = sum(v for k, v in parts.items()
                                     if k not in ("processes", "qemu_guest_ram"))
                pods.append(parts)
            keys = [k for k in pods[0] if k != "processes"]
            memory[name] = {"pods": len(pods),
                            "mean_kib": {k: statistics.mean(p[k] for p in pods) for k in keys},
                            "per_pod": pods}
            log(f"memory {name}: {memory[name]['mean_kib']}")
            started = time.monotonic()
            remove(daemon, ids)
            log(f"removed the {name} pods in {time.monotonic() - started:.1f} s")
        results["memory"] = memory

        # 4. The accelerator and kernel.
        accels = sorted({b.get("accel", "?") for b in boots})
        results["accel"] = accels[0] if len(accels) == 1 else accels
        results["accel_reason"] = sorted({b.get("accel_reason", "") for b in boots})
        results["guest_kernel"] = sorted({b.get("kernel", "") for b in boots})
        results["boot_lines"] = len(boots)
    except Exception as e:  # noqa: BLE001 (clean up first, then report)
        failure = e
    finally:
        try:
            daemon.stop()
        finally:
            time.sleep(1.0)
            ours, others = cleanup_vms(daemon.ns, used)
            left = vm_processes(proc_table(), VM_STATE)
            if ours:
                log(f"killed leftover VM processes of this run: {ours}")
            if left:
                log(f"qemu/virtiofsd naming {VM_STATE} still running (not this run's: "
                    f"{others}): {left}")
            subprocess.run(["umount", "-R", rootfs], stderr=subprocess.DEVNULL)
            shutil.rmtree(work, ignore_errors=True)
    if failure is not None:
        raise failure

    os.makedirs(out, exist_ok=True)
    with open(os.path.join(out, "results.json"), "w") as f:
        json.dump(results, f, indent=2)
    lat = results["ctr_run_rm_ms"]
    mem = results["memory"]
    vm_mem = mem["vm"]["mean_kib"]
    rc_mem = mem["runc-go"]["mean_kib"]
    guest = ", ".join(results["guest_kernel"])
    lines = [f"# VM runtime class figures ({results['date']}, {results['containerd'].split()[-2]}, "
             f"{results['qemu']})", "",
             f"Accelerator: **{results['accel']}** ({'; '.join(results['accel_reason'])}); "
             f"guest kernel {guest}, host kernel {results['host_kernel']}.", "",
             f"`ctr run --rm` of busybox `/bin/true`, {args.runs} rounds alternating (after "
             f"{args.warmup} warm-up); the VM side boots a fresh VM each run:", "",
             "| | p50 ms | p90 ms | p50 vs runc-go |", "|---|---|---|---|"]
    for name in sides:
        lines.append(f"| {name} | {lat[name]['p50']:.0f} | {lat[name]['p90']:.0f} | "
                     f"{lat[name]['p50'] / lat['runc-go']['p50']:.1f}x |")
    lines += ["", f"VM pod start over {args.runs} pods: `ctr run -d` issued to RUNNING in "
              f"`ctr task ls` p50 {results['pod_start_ms']['p50']:.0f} ms "
              f"(p90 {results['pod_start_ms']['p90']:.0f}); the shim's boot_ms p50 "
              f"{results['boot_ms']['p50']:.0f} (p90 {results['boot_ms']['p90']:.0f}).", "",
              f"Host memory, {args.pods} running pods per class (busybox `sleep`, each its own "
              f"shim; {args.idle:.0f} s idle), mean PSS per pod in KiB:", "",
              "| | shim | qemu (guest RAM of it) | virtiofsd (2 procs) | container | total per pod |",
              "|---|---|---|---|---|---|",
              f"| vm | {vm_mem['shim']:.0f} | {vm_mem['qemu']:.0f} ({vm_mem['qemu_guest_ram']:.0f}) "
              f"| {vm_mem['virtiofsd']:.0f} "
              f"| (in the guest) | {vm_mem['total']:.0f} |",
              f"| runc-go | {rc_mem['shim']:.0f} | - | - | {rc_mem['container']:.0f} "
              f"| {rc_mem['total']:.0f} |", "",
              f"VM / runc-go per pod: {vm_mem['total'] / rc_mem['total']:.0f}x. qemu's guest "
              "RAM is a shared memfd that virtiofsd maps too; PSS splits it between them."]
    with open(os.path.join(out, "results.md"), "w") as f:
        f.write("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
