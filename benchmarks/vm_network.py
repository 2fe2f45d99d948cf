#!/usr/bin/env python3
"""The VM pod's network beside a runc pod's, in one run (shim-vm, docs/vm.md):

A network namespace made as CNI's bridge plugin makes one (a veth pair: the host's end
10.123.0.1/24, the pod's `eth0` 10.123.0.2/24, a default route), one container per class
in it (`ctr run --with-ns network:<netns>`): containerd-shim-kvm-v1 (its VM reaches the
netns through a tap and tc, shim/linux/pod_network.h) and the Go shim + runc. In each, busybox
httpd serves a 32 MiB file and a small one; the host measures

  * throughput: GET of the 32 MiB file (guest to host), best and median of N;
  * request latency: GET of the small file (TCP connect, httpd's fork, answer), p50/p90.

    nice -n 10 python3 benchmarks/vm_network.py --build-dir build [--runs 20]

Needs root, containerd 1.6 (Debian's), runc, iproute2, the built shim-vm. Writes
benchmarks/results/<date>-vm-network/{results.md,results.json}.
"""
import argparse
import datetime
import json
import os
import shutil
import socket
import statistics
import subprocess
import tempfile
import time

import vm_figures as V

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
GO_SHIM = "/usr/bin/containerd-shim-runc-v2"
HOST_IP, POD_IP = "10.123.0.1", "10.123.0.2"
SERVER = ("mkdir -p /srv && dd if=/dev/zero of=/srv/big bs=1M count=32 2>/dev/null && "
          "echo hi >/srv/small && exec busybox httpd -f -p 8080 -h /srv")


def http_get(path, timeout=30.0):
    """Seconds and bytes of body for GET `path` from the pod."""
    started = time.monotonic()
    with socket.create_connection((POD_IP, 8080), timeout=timeout) as s:
        s.sendall(f"GET {path} HTTP/1.0\r\n\r\n".encode())
        data = bytearray()
        while chunk := s.recv(1 << 20):
            data += chunk
    elapsed = time.monotonic() - started
    return elapsed, len(data) - data.find(b"\r\n\r\n") - 4


def make_netns(name):
    subprocess.run(["ip", "netns", "add", name], check=True)
    for command in (f"ip link add vmn-host type veth peer name eth0 netns {name}",
                    f"ip addr add {HOST_IP}/24 dev vmn-host", "ip link set vmn-host up",
                    f"ip -n {name} addr add {POD_IP}/24 dev eth0",
                    f"ip -n {name} link set eth0 up", f"ip -n {name} link set lo up",
                    f"ip -n {name} route add default via {HOST_IP}"):
        subprocess.run(command.split(), check=True)


def wait_serving(timeout=120):
    deadline = time.monotonic() + timeout
    while True:
        try:
            if http_get("/small", timeout=5)[1] == 3:
                return
        except OSError:
            pass
        if time.monotonic() > deadline:
            raise RuntimeError("the pod's httpd did not answer")
        time.sleep(0.2)


def measure(runs):
    http_get("/big")  # warm-up
    big = [http_get("/big")[0] for _ in range(runs)]
    small = [http_get("/small")[0] * 1e3 for _ in range(runs * 5)]
    mib_s = [32 / t for t in big]
    return {"throughput_mib_s": {"best": max(mib_s), "p50": statistics.median(mib_s)},
            "request_ms": {"p50": statistics.median(small), "p90": V.percentile(small, 90)}}


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--build-dir", default=os.path.join(REPO, "build"))
    parser.add_argument("--runs", "-n", type=int, default=20)
    parser.add_argument("--out", default=None)
    args = parser.parse_args()
    vm_shim = os.path.realpath(os.path.join(os.path.abspath(args.build_dir),
                                            "shim-vm/containerd-shim-kvm-v1"))
    out = args.out or os.path.join(REPO, "benchmarks/results",
                                   datetime.date.today().isoformat() + "-vm-network")
    work = tempfile.mkdtemp(prefix="vmnet-", dir="/tmp")
    rootfs = os.path.join(work, "rootfs")
    for sub in ("bin", "proc", "dev", "sys", "etc", "tmp", "run", "root"):
        os.makedirs(os.path.join(rootfs, sub))
    shutil.copy("/bin/busybox", os.path.join(rootfs, "bin/busybox"))
    for applet in ("sh", "mkdir", "dd", "echo"):
        os.symlink("busybox", os.path.join(rootfs, "bin", applet))
    netns = f"vmnet-{os.getpid()}"
    daemon = V.Daemon(work)
    results = {"date": datetime.datetime.now().isoformat(timespec="seconds"), "runs": args.runs,
               "host_kernel": os.uname().release}
    try:
        make_netns(netns)
        for name, shim in (("vm", vm_shim), ("runc-go", GO_SHIM)):
            cid = f"net-{name}"
            daemon.ctr("run", "-d", "--runtime", shim, "--with-ns",
                       f"network:/var/run/netns/{netns}", "--rootfs", rootfs, cid, "/bin/sh",
                       "-c", SERVER)
            wait_serving()
            results[name] = measure(args.runs)
            V.log(f"{name}: {json.dumps(results[name])}")
            V.remove(daemon, [cid])
            if name == "vm":
                V.cleanup_vms(daemon.ns, [cid])
    finally:
        daemon.stop()
        subprocess.run(["ip", "link", "del", "vmn-host"], stderr=subprocess.DEVNULL)
        subprocess.run(["ip", "netns", "del", netns], stderr=subprocess.DEVNULL)
        subprocess.run(["umount", "-R", rootfs], stderr=subprocess.DEVNULL)
        shutil.rmtree(work, ignore_errors=True)

    os.makedirs(out, exist_ok=True)
    with open(os.path.join(out, "results.json"), "w") as f:
        json.dump(results, f, indent=2)
    vm, runc = results["vm"], results["runc-go"]
    lines = [f"# VM pod network beside a runc pod ({results['date']}, containerd 1.6, "
             f"host {results['host_kernel']})", "",
             "busybox httpd in the pod's netns (a veth pair as CNI's bridge plugin makes), "
             f"GETs from the host, {args.runs} rounds (5x for the small file):", "",
             "| | 32 MiB GET MiB/s best | p50 | small GET p50 ms | p90 ms |",
             "|---|---|---|---|---|"]
    for name, r in (("VM (tap + tc, TCG)", vm), ("runc (Go shim)", runc)):
        lines.append(f"| {name} | {r['throughput_mib_s']['best']:.0f} | "
                     f"{r['throughput_mib_s']['p50']:.0f} | {r['request_ms']['p50']:.1f} | "
                     f"{r['request_ms']['p90']:.1f} |")
    lines += ["", f"VM/runc: throughput {vm['throughput_mib_s']['p50'] / runc['throughput_mib_s']['p50']:.2f}x, "
              f"request latency {vm['request_ms']['p50'] / runc['request_ms']['p50']:.1f}x."]
    with open(os.path.join(out, "results.md"), "w") as f:
        f.write("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
