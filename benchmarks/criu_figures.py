#!/usr/bin/env python3
"""Checkpoint and restore figures of shim-runc next to containerd's Go runc shim.

    python3 benchmarks/criu_figures.py [--rounds 5] [--out benchmarks/results/<date>-criu]

Needs root, containerd 1.6 / ctr / runc (Debian), the shim built in --build-dir (default
build/) and the CRIU of cmake/fetch-criu.sh ($LIBSHIM_CACHE/criu/bin, put first on each
containerd's PATH: runc runs `criu` from there). Two private containerds (shimbench.env),
one per shim; the sides alternate round by round. Per round and side, a busybox counter
container (from an imported one-layer image) is:
  - dumped with `ctr task checkpoint --image-path D --work-path W` (leave running): the
    shim -> runc -> CRIU dump alone; the image size is D's size;
  - checkpointed with `ctr container checkpoint --task --image` (also the content store);
  - killed, removed, and restored with `ctr container restore --live` into a new
    container, which must go on counting from where it was (else the round fails).
Prints a table (medians, min-max) and writes results.md next to it in --out.
"""
import argparse
import datetime
import hashlib
import json
import os
import signal
import statistics
import subprocess
import sys
import tarfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from shimbench import env, report  # noqa: E402

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
GO_SHIM = "/usr/bin/containerd-shim-runc-v2"
COUNTER = "i=0; while :; do echo $i > /tmp/count; i=$((i+1)); sleep 0.1; done"
IMAGE = "libshim.bench/busybox:latest"


def criu_dir():
    cache = os.environ.get("LIBSHIM_CACHE") or os.path.join(os.environ.get("HOME", "/root"),
                                                             ".cache/libshim")
    return os.path.join(cache, "criu/bin")


def blob(layout, data):
    digest = hashlib.sha256(data).hexdigest()
    with open(os.path.join(layout, "blobs/sha256", digest), "wb") as f:
        f.write(data)
    return {"digest": f"sha256:{digest}", "size": len(data)}


def image_tar(ws):
    """A one-layer OCI image of the workspace's busybox rootfs, as a tar for `ctr image
    import` (`ctr container checkpoint` refuses containers without an image)."""
    layout = os.path.join(ws.dir, "layout")
    os.makedirs(os.path.join(layout, "blobs/sha256"))
    layer_path = os.path.join(ws.dir, "layer.tar")
    with tarfile.open(layer_path, "w") as tar:
        tar.add(ws.rootfs, arcname=".")
    with open(layer_path, "rb") as f:
        layer_bytes = f.read()
    layer = blob(layout, layer_bytes)
    diff_id = layer["digest"]
    config = blob(layout, json.dumps({
        "architecture": "amd64", "os": "linux",
        "config": {"Env": ["PATH=/bin"]},
        "rootfs": {"type": "layers", "diff_ids": [diff_id]}}).encode())
    manifest = blob(layout, json.dumps({
        "schemaVersion": 2, "mediaType": "application/vnd.oci.image.manifest.v1+json",
        "config": {"mediaType": "application/vnd.oci.image.config.v1+json", **config},
        "layers": [{"mediaType": "application/vnd.oci.image.layer.v1.tar", **layer}]}).encode())
    with open(os.path.join(layout, "oci-layout"), "w") as f:
        json.dump({"imageLayoutVersion": "1.0.0"}, f)
    with open(os.path.join(layout, "index.json"), "w") as f:
        json.dump({"schemaVersion": 2, "manifests": [{
            "mediaType": "application/vnd.oci.image.manifest.v1+json", **manifest,
            "annotations": {"org.opencontainers.image.ref.name": IMAGE,
                            "io.containerd.image.name": IMAGE}}]}, f)
    out = os.path.join(ws.dir, "image.tar")
    with tarfile.open(out, "w") as tar:
        for name in ("index.json", "oci-layout", "blobs"):
            tar.add(os.path.join(layout, name), arcname=name)
    return out


def timed(side, *args):
    began = time.monotonic()
    side.ctr(*args, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    return (time.monotonic() - began) * 1000


def count(side, cid, reads=[0]):  # noqa: B006 (a counter of exec ids across calls)
    reads[0] += 1
    got = side.ctr("task", "exec", "--exec-id", f"read{reads[0]}", cid, "/bin/cat", "/tmp/count",
                   check=False, capture_output=True, text=True)
    return int(got.stdout) if got.returncode == 0 and got.stdout.strip() else -1


def wait_count_above(side, cid, floor, timeout=20):
    deadline = time.monotonic() + timeout
    value = -1
    while time.monotonic() < deadline:
        value = count(side, cid)
        if value > floor:
            return value
        time.sleep(0.1)
    return value


def dir_size(path):
    return sum(os.path.getsize(os.path.join(d, f)) for d, _, files in os.walk(path) for f in files)


def one_round(side, ws, n):
    cid = side.cid(f"ck{n}")
    side.ctr("run", "-d", "--runc-root", side.runc_root, IMAGE, cid, "/bin/sh", "-c", COUNTER,
             stdout=subprocess.DEVNULL)
    if wait_count_above(side, cid, 10) <= 10:
        raise RuntimeError(f"{cid}: the counter did not start")
    image_dir = os.path.join(side.dir, f"image{n}")
    sample = {"dump_ms": timed(side, "task", "checkpoint", "--image-path", image_dir,
                               "--work-path", os.path.join(side.dir, f"work{n}"), cid)}
    sample["image_bytes"] = dir_size(image_dir)
    ref = f"libshim.bench/checkpoint/{cid}:1"
    before = count(side, cid)  # > 10: a restore that started afresh would count from 0
    sample["container_checkpoint_ms"] = timed(side, "container", "checkpoint", "--task", "--image",
                                              cid, ref)
    side.remove(cid)
    sample["restore_ms"] = timed(side, "container", "restore", "--live", cid, ref)
    after = wait_count_above(side, cid, -1)
    if after < before:
        raise RuntimeError(f"{cid}: restored count {after}, {before} before the checkpoint")
    side.remove(cid)
    side.ctr("image", "rm", ref, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
    return sample


def summary(samples, key):
    values = [s[key] for s in samples]
    return statistics.median(values), min(values), max(values)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--build-dir", default=os.path.join(REPO, "build"))
    parser.add_argument("--out", default=os.path.join(
        REPO, "benchmarks/results", datetime.date.today().isoformat() + "-criu"))
    args = parser.parse_args()
    ours = os.path.join(args.build_dir, "shim-runc", "containerd-shim-runc-v2")
    for needed in (ours, GO_SHIM, os.path.join(criu_dir(), "criu")):
        if not os.access(needed, os.X_OK):
            sys.exit(f"criu_figures: {needed} is missing (build the shim; cmake/fetch-criu.sh)")
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(1))
    # runc finds CRIU on the PATH it inherits from containerd, which shimbench builds from
    # SYSTEM_PATH: the cached CRIU goes first there.
    env.SYSTEM_PATH = f"{criu_dir()}:{env.SYSTEM_PATH}"
    criu_version = subprocess.run([os.path.join(criu_dir(), "criu"), "--version"],
                                  capture_output=True, text=True).stdout.split("\n")[0]
    machine = report.machine_info(REPO, GO_SHIM)
    ws = env.Workspace(REPO)
    sides = [env.Side("ours", "shim-runc", ours, ws), env.Side("go", "Go shim", GO_SHIM, ws)]
    samples = {s.name: [] for s in sides}
    try:
        ws.build_rootfs()
        tar = image_tar(ws)
        for side in sides:
            side.start()
            side.ctr("image", "import", tar, stdout=subprocess.DEVNULL)
        for n in range(args.rounds):
            for side in (sides if n % 2 == 0 else reversed(sides)):
                samples[side.name].append(one_round(side, ws, n))
    finally:
        for side in sides:
            side.stop()
        ws.cleanup()

    rows = [("`ctr task checkpoint --image-path` (dump, leave running)", "dump_ms", "ms"),
            ("`ctr container checkpoint --task --image`", "container_checkpoint_ms", "ms"),
            ("`ctr container restore --live` (create + restore + start)", "restore_ms", "ms"),
            ("CRIU image size (the dump's image dir)", "image_bytes", "KiB")]
    lines = [f"# Checkpoint/restore figures ({machine['date']})", "",
             f"{machine['kernel']}, {machine['cores']} cores, {machine['containerd']}, "
             f"{machine['runc']}, {criu_version} (trixie, cmake/fetch-criu.sh), "
             f"commit {machine['commit']}; {args.rounds} rounds per side, busybox shell "
             "counter; median (min-max).", "",
             "| step | shim-runc | Go shim |", "|---|---|---|"]
    for title, key, unit in rows:
        cells = []
        for side in sides:
            med, low, high = summary(samples[side.name], key)
            scale = 1024 if unit == "KiB" else 1
            cells.append(f"{med / scale:.0f} {unit} ({low / scale:.0f}-{high / scale:.0f})")
        lines.append(f"| {title} | {cells[0]} | {cells[1]} |")
    text = "\n".join(lines) + "\n"
    print(text)
    os.makedirs(args.out, exist_ok=True)
    with open(os.path.join(args.out, "results.md"), "w") as f:
        f.write(text)
        f.write("\nCommand: `python3 benchmarks/criu_figures.py --rounds "
                f"{args.rounds}`\n")
    with open(os.path.join(args.out, "results.json"), "w") as f:
        json.dump({"machine": machine, "criu": criu_version, "samples": samples}, f, indent=1)


if __name__ == "__main__":
    main()
