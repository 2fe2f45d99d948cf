"""Shim start-up, binary size, and the C++ micro-benchmarks."""
import json
import os
import shutil
import subprocess
import tempfile
import time

from . import procs, ttrpc
from .env import run


def _start_once(side, ws, cid):
    """Plays containerd 1.6's part of a task start, byte for byte as runtime/v2 does it:
    argv `-namespace NS -address GRPC -publish-binary CTRD -id ID start`, cwd = the bundle
    (config.json + the `log` FIFO, held open for reading), env + GOMAXPROCS=2 +
    TTRPC_ADDRESS, stdin /dev/null (no runtime options), combined stdout/stderr read to
    EOF, own process group. Then it dials the printed address and sends the first call
    (Connect). Returns ms from invoking `start` to (a) the address being read and (b) the
    reply to that first call."""
    bundle = os.path.join(ws.dir, "start", cid)
    os.makedirs(bundle)
    with open(os.path.join(bundle, "config.json"), "w") as f:
        json.dump({"ociVersion": "1.0.2", "annotations": {}}, f)
    log_path = os.path.join(bundle, "log")
    os.mkfifo(log_path)
    log_fd = os.open(log_path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    env = dict(os.environ, GOMAXPROCS="2", TTRPC_ADDRESS=side.ttrpc_address)
    argv = [side.binary, "-namespace", ws.namespace, "-address", side.address,
            "-publish-binary", shutil.which("containerd"), "-id", cid, "start"]
    try:
        begin = time.perf_counter_ns()
        start = subprocess.Popen(argv, cwd=bundle, env=env, stdin=subprocess.DEVNULL,
                                 stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                 process_group=0)
        answer = start.stdout.read()
        answered = time.perf_counter_ns()
        if start.wait() != 0:
            raise RuntimeError(f"{side.name} start failed: {answer!r}")
        address = answer.decode().strip()
        client = ttrpc.Client(address)
        reply = client.call("Connect", ttrpc.field_bytes(1, cid))
        ready = time.perf_counter_ns()
        shim_pid = ttrpc.parse_fields(reply)[1][0]
        if procs.exe(shim_pid) != side.binary:
            raise RuntimeError(f"{side.name}: Connect answered by {procs.exe(shim_pid)}")
        _shut_down(client, cid, shim_pid)
        socket_path = address[len("unix://"):]
        if os.path.exists(socket_path):
            os.unlink(socket_path)
    finally:
        os.close(log_fd)
    return (answered - begin) / 1e6, (ready - begin) / 1e6


def _shut_down(client, cid, shim_pid):
    try:
        client.call("Shutdown", ttrpc.field_bytes(1, cid))
    except (ttrpc.TtrpcError, OSError):
        pass  # a shim may exit before its reply leaves
    client.close()
    deadline = time.monotonic() + 10
    while procs.state(shim_pid) not in (None, "Z", "X"):
        if time.monotonic() > deadline:
            raise RuntimeError(f"shim {shim_pid} did not exit after Shutdown")
        time.sleep(0.005)


def shim_start(sides, ws, rounds):
    result = {s.name: {"address_ms": [], "first_reply_ms": []} for s in sides}
    for r in range(-1, rounds):
        for side in sides:
            address_ms, reply_ms = _start_once(side, ws, side.cid(f"start-{r + 1}"))
            if r >= 0:
                result[side.name]["address_ms"].append(address_ms)
                result[side.name]["first_reply_ms"].append(reply_ms)
    return result


def binary_sizes(sides):
    sizes = {}
    with tempfile.TemporaryDirectory() as tmp:
        for side in sides:
            stripped = os.path.join(tmp, side.name)
            run(["strip", "-o", stripped, side.binary])
            sizes[side.name] = {"built_bytes": os.path.getsize(side.binary),
                                "stripped_bytes": os.path.getsize(stripped)}
    return sizes


MICRO_BENCHMARKS = (
    ("ttrpc_roundtrip", ["1"]),
    ("frame_codec", ["0.2"]),
    ("reaper_fanout", ["100", "5"]),
)


def micro_benchmarks(build_dir):
    """{name: markdown printed by the benchmark}."""
    outputs = {}
    for name, args in MICRO_BENCHMARKS:
        binary = os.path.join(build_dir, "benchmarks", name)
        done = run([binary, *args], capture_output=True, text=True, timeout=300)
        outputs[name] = done.stdout.strip()
    return outputs
