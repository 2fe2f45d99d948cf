"""Hostile clients on one shim's socket (issue 13): what the shim's memory does, and whether
containerd is still answered, while a local user-equivalent peer misbehaves.

The load, all at once on the socket of a shim serving one sleeping container:
  - `idle` connections held open, never sending a byte;
  - `trickle` clients each sending a valid frame one byte a second;
  - `pipeline` clients sending State requests as fast as the socket takes them and never
    reading a reply;
  - one client sending `big` frames of 4 MiB in a loop (each answered with an error).
Meanwhile `ctr task exec` runs every second (each must succeed within its deadline) and the
shim's RSS is sampled. Then every client leaves and RSS is read again after a settle time.
"""
import os
import resource
import socket
import struct
import subprocess
import threading
import time

from . import procs
from .ttrpc import REQUEST, TASK_SERVICE, field_bytes

FOUR_MIB = 4 << 20


def request_frame(stream, method, payload, service=TASK_SERVICE):
    message = field_bytes(1, service) + field_bytes(2, method) + field_bytes(3, payload)
    return struct.pack(">IIBB", len(message), stream, REQUEST, 0) + message


def _connect(path):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM | socket.SOCK_CLOEXEC)
    s.connect(path)
    return s


class Load:
    """The hostile clients; start() opens them, stop() closes every one."""

    def __init__(self, path, container_id, idle, trickle, pipeline, big):
        self.path = path
        self.cid = container_id
        self.counts = {"idle": idle, "trickle": trickle, "pipeline": pipeline, "big": big}
        self.sockets = []
        self.stop_flag = threading.Event()
        self.threads = []
        self.sent = {"pipeline_requests": 0, "big_frames": 0, "big_answers": 0,
                     "trickled_bytes": 0, "refused": 0}
        self.lock = threading.Lock()

    def start(self):
        for _ in range(self.counts["idle"]):
            self.sockets.append(_connect(self.path))
        for i in range(self.counts["trickle"]):
            self._spawn(self._trickle, i)
        for i in range(self.counts["pipeline"]):
            self._spawn(self._pipeline, i)
        if self.counts["big"]:
            self._spawn(self._big, 0)

    def _spawn(self, target, index):
        t = threading.Thread(target=target, args=(index,), daemon=True)
        t.start()
        self.threads.append(t)

    def _count(self, key, n=1):
        with self.lock:
            self.sent[key] += n

    def _trickle(self, index):
        s = _connect(self.path)
        frame = request_frame(1, "State", field_bytes(1, self.cid.encode()) * 200)
        for byte in frame:
            if self.stop_flag.wait(1.0):
                break
            try:
                s.send(bytes([byte]))
            except OSError:
                self._count("refused")
                break
            self._count("trickled_bytes")
        s.close()

    def _pipeline(self, index):
        s = _connect(self.path)
        s.setblocking(False)
        stream = 1
        pending = b""
        while not self.stop_flag.is_set():
            if not pending:
                pending = b"".join(request_frame(stream + 2 * k, "State",
                                                 field_bytes(1, self.cid.encode()))
                                   for k in range(64))
                stream += 128
            try:
                n = s.send(pending)
                pending = pending[n:]
                if not pending:
                    self._count("pipeline_requests", 64)
            except BlockingIOError:
                self.stop_flag.wait(0.05)  # the shim stopped reading us: fine
            except OSError:
                self._count("refused")
                break
        s.close()

    def _big(self, index):
        # 4 MiB frames in a loop, each announced within the 4 MiB limit, so the shim must
        # buffer it whole; the payload is no valid Request, so each is answered with an
        # error. One connection, reading its answers (a peer that never read is _pipeline).
        payload = b"\xff" * (FOUR_MIB - 16)
        s = None
        stream = 1
        while not self.stop_flag.is_set() and self.sent["big_frames"] < self.counts["big"]:
            try:
                if s is None:
                    s = _connect(self.path)
                    s.settimeout(30)
                s.sendall(struct.pack(">IIBB", len(payload), stream, REQUEST, 0) + payload)
                self._count("big_frames")
                header = _read_exactly(s, 10)
                length = struct.unpack(">I", header[:4])[0]
                _read_exactly(s, length)
                self._count("big_answers")
                stream += 2
            except OSError:
                self._count("refused")
                if s:
                    s.close()
                s = None
                self.stop_flag.wait(0.1)
        if s:
            s.close()

    def stop(self):
        self.stop_flag.set()
        for t in self.threads:
            t.join(timeout=10)
        for s in self.sockets:
            s.close()
        self.sockets = []


def _read_exactly(s, size):
    data = bytearray()
    while len(data) < size:
        chunk = s.recv(min(size - len(data), 1 << 20))
        if not chunk:
            raise ConnectionError("closed")
        data += chunk
    return bytes(data)


def _exec_once(side, cid, index, deadline_s):
    began = time.monotonic()
    try:
        r = side.ctr("task", "exec", "--exec-id", f"probe{index}", cid, "/bin/true",
                     check=False, capture_output=True, text=True, timeout=deadline_s)
        ok = r.returncode == 0
        error = r.stderr.strip()[-200:]
    except subprocess.TimeoutExpired:
        ok, error = False, f"no answer within {deadline_s} s"
    return ok, time.monotonic() - began, error


def shim_socket(side, cid):
    bundle = os.path.join(side.dir, "state", "io.containerd.runtime.v2.task", side.ws.namespace, cid)
    with open(os.path.join(bundle, "address")) as f:
        address = f.read().strip()
    return address[len("unix://"):]


def measure(side, seconds=40, settle=10, idle=1000, trickle=20, pipeline=4, big=200,
            exec_deadline=10.0):
    """One side: start a sleeper, run the load for `seconds`, probe with ctr task exec."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (max(soft, min(hard, idle + 1024)), hard))
    cid = side.start_sleeper("hostile")
    try:
        pid = side.daemon(cid)
        time.sleep(1.0)
        base = procs.memory(pid)
        base_fds = len(os.listdir(f"/proc/{pid}/fd"))
        load = Load(shim_socket(side, cid), cid, idle, trickle, pipeline, big)
        load.start()
        samples, execs = [], []
        began = time.monotonic()
        index = 0
        while time.monotonic() - began < seconds:
            ok, took, error = _exec_once(side, cid, index, exec_deadline)
            execs.append({"ok": ok, "seconds": took, "error": error})
            index += 1
            m = procs.memory(pid)
            samples.append({"t": time.monotonic() - began, "rss_kib": m["rss_kib"],
                            "fds": len(os.listdir(f"/proc/{pid}/fd"))})
            time.sleep(max(0.0, 1.0 - took))
        load.stop()
        time.sleep(settle)
        after = procs.memory(pid)
        ok, took, error = _exec_once(side, cid, "after", exec_deadline)
        return {
            "base_rss_kib": base["rss_kib"],
            "peak_rss_kib": max(s["rss_kib"] for s in samples),
            "after_rss_kib": after["rss_kib"],
            "base_fds": base_fds,
            "peak_fds": max(s["fds"] for s in samples),
            "after_fds": len(os.listdir(f"/proc/{pid}/fd")),
            "threads_after": after["threads"],
            "execs": len(execs),
            "exec_failures": sum(1 for e in execs if not e["ok"]) + (0 if ok else 1),
            "exec_errors": sorted({e["error"] for e in execs if not e["ok"]})[:3],
            "exec_max_s": max(e["seconds"] for e in execs),
            "exec_after_ok": ok,
            "load": load.sent,
            "samples": samples,
        }
    finally:
        side.remove(cid)
