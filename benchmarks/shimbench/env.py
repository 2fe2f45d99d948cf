"""The benchmark's world: a temp dir with a busybox rootfs, and one private containerd per
shim under test (same config; only the PATH that resolves containerd-shim-runc-v2
differs), each with a `ctr events` subscriber that stamps events on arrival."""
import calendar
import json
import os
import re
import shutil
import signal
import subprocess
import tempfile
import threading
import time

from . import procs

SYSTEM_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
APPLETS = ("sh", "true", "sleep", "dd", "head", "cat", "yes")


def run(argv, **kwargs):
    kwargs.setdefault("check", True)
    kwargs.setdefault("stdin", subprocess.DEVNULL)
    return subprocess.run(argv, **kwargs)


class Workspace:
    """Temp dir holding the rootfs, the host-visible share (/x in containers) and state."""

    def __init__(self, repo):
        self.repo = repo
        self.dir = tempfile.mkdtemp(prefix="shimbench-", dir="/tmp")
        self.rootfs = os.path.join(self.dir, "rootfs")
        self.share = os.path.join(self.dir, "share")
        self.namespace = f"shimbench-{os.getpid()}"

    def build_rootfs(self):
        for sub in ("bin", "proc", "dev", "sys", "tmp", "x"):
            os.makedirs(os.path.join(self.rootfs, sub), exist_ok=True)
        os.makedirs(self.share)
        shutil.copy("/bin/busybox", os.path.join(self.rootfs, "bin/busybox"))
        for applet in APPLETS:
            os.symlink("busybox", os.path.join(self.rootfs, "bin", applet))
        source = os.path.join(self.repo, "benchmarks/shimbench/exit_stamp.c")
        run(["cc", "-static", "-O2", "-o", os.path.join(self.rootfs, "bin/exit_stamp"), source])

    def share_path(self, name):
        return os.path.join(self.share, name)

    def cleanup(self):
        mounts = []
        with open("/proc/mounts") as f:
            for line in f:
                point = line.split()[1]
                if point.startswith(self.dir + "/"):
                    mounts.append(point)
        for point in sorted(mounts, reverse=True):
            subprocess.run(["umount", "-l", point], stderr=subprocess.DEVNULL)
        shutil.rmtree(self.dir, ignore_errors=True)
        # runc's cgroups are /<namespace>/<id>: the per-container ones go with the
        # containers, the namespace level stays behind (v1: one per controller).
        paths = [os.path.join("/sys/fs/cgroup", self.namespace)]
        paths += [os.path.join("/sys/fs/cgroup", c, self.namespace)
                  for c in os.listdir("/sys/fs/cgroup")]
        for path in paths:
            try:
                os.rmdir(path)
            except OSError:
                pass


class Side:
    """One shim under test: a private containerd whose PATH resolves the shim to `binary`."""

    def __init__(self, name, label, binary, workspace):
        self.name = name  # "ours" / "go"
        self.label = label  # for tables
        self.binary = os.path.realpath(binary)
        self.ws = workspace
        self.dir = os.path.join(workspace.dir, name)
        self.address = os.path.join(self.dir, "c.sock")
        self.ttrpc_address = self.address + ".ttrpc"
        self.runc_root = os.path.join(self.dir, "runc")
        self.process = None
        self.events = None

    def start(self):
        os.makedirs(self.dir)
        config = os.path.join(self.dir, "config.toml")
        with open(config, "w") as f:
            f.write(f"""version = 2
root = "{self.dir}/root"
state = "{self.dir}/state"
disabled_plugins = ["io.containerd.grpc.v1.cri"]
[grpc]
  address = "{self.address}"
[ttrpc]
  address = "{self.ttrpc_address}"
""")
        env = dict(os.environ, PATH=f"{os.path.dirname(self.binary)}:{SYSTEM_PATH}")
        with open(os.path.join(self.dir, "containerd.log"), "wb") as log:
            self.process = subprocess.Popen(
                ["containerd", "--config", config], env=env, stdin=subprocess.DEVNULL,
                stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        deadline = time.monotonic() + 30
        while self.ctr("version", check=False, stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL).returncode != 0:
            if time.monotonic() > deadline or self.process.poll() is not None:
                raise RuntimeError(f"containerd for {self.name} did not come up; see {self.dir}")
            time.sleep(0.1)
        self.events = EventLog(self.ctr_argv("events"))

    def ctr_argv(self, *args):
        return ["ctr", "--address", self.address, "-n", self.ws.namespace, *args]

    def ctr(self, *args, **kwargs):
        return run(self.ctr_argv(*args), **kwargs)

    def run_argv(self, container_id, *command, rm=False, detach=False, share=False):
        """`ctr run` of the busybox rootfs (ctr wants its flags before --rootfs)."""
        flags = ["--runc-root", self.runc_root]
        flags += ["--rm"] if rm else []
        flags += ["-d"] if detach else []
        if share:
            flags += ["--mount", f"type=bind,src={self.ws.share},dst=/x,options=rbind:rw"]
        return self.ctr_argv("run", *flags, "--rootfs", self.ws.rootfs, container_id, *command)

    def cid(self, name):
        """Container ids carry the side: both containerds share cgroup paths (/<ns>/<id>)."""
        return f"{self.name}-{name}"

    def start_sleeper(self, name):
        cid = self.cid(name)
        run(self.run_argv(cid, "/bin/sleep", "1000000", detach=True), stdout=subprocess.DEVNULL)
        return cid

    def remove(self, *cids):
        if cids:
            self.ctr("task", "delete", "--force", *cids, check=False,
                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            self.ctr("container", "delete", *cids, check=False,
                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

    def daemon(self, cid):
        pid = procs.wait_for_daemon(self.address, cid)
        if procs.exe(pid) != self.binary:
            raise RuntimeError(f"{self.name}: shim {pid} runs {procs.exe(pid)}, not {self.binary}")
        return pid

    def stop(self):
        if self.process is None:
            return
        listed = self.ctr("container", "list", "-q", check=False, capture_output=True, text=True)
        self.remove(*listed.stdout.split())
        if self.events:
            self.events.stop()
        self.process.send_signal(signal.SIGTERM)
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        for pid in procs.shim_processes(self.address):  # ours only: unique address
            os.kill(pid, signal.SIGKILL)
        self.process = None


class EventLog:
    """Runs `ctr events` and records every event with its arrival time (CLOCK_REALTIME, read
    right after the pipe read returns) and its envelope timestamp (publish time: the shim's
    clock for /tasks/*, containerd's for /containers/*); for /tasks/exit also exited_at
    (the shim's reap time)."""

    def __init__(self, argv):
        self._proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                      stderr=subprocess.DEVNULL, bufsize=0)
        self._events = {}  # (container id, topic, exec/process id) -> record
        self._cond = threading.Condition()
        self._thread = threading.Thread(target=self._read, daemon=True)
        self._thread.start()

    def _read(self):
        pending = b""
        fd = self._proc.stdout.fileno()
        while True:
            chunk = os.read(fd, 65536)
            arrived = time.time_ns()
            if not chunk:
                return
            pending += chunk
            *lines, pending = pending.split(b"\n")
            for line in lines:
                self._record(line.decode(errors="replace"), arrived)

    def _record(self, line, arrived_ns):
        parts = line.split(" ", 6)
        if len(parts) < 7 or not parts[5].startswith("/"):
            return
        topic, event = parts[5], json.loads(parts[6])
        cid = event.get("container_id", event.get("id"))
        record = {"arrived_ns": arrived_ns, "published_ns": parse_go_time(" ".join(parts[0:3]))}
        if "exited_at" in event:
            record["exited_ns"] = parse_rfc3339(event["exited_at"])
        process = event.get("exec_id") or (event.get("id") if topic == "/tasks/exit" else None)
        key = (cid, topic, process or cid)
        with self._cond:
            self._events.setdefault(key, record)
            self._cond.notify_all()

    def wait_event(self, container_id, topic, process_id=None, timeout=10.0):
        key = (container_id, topic, process_id or container_id)
        with self._cond:
            if not self._cond.wait_for(lambda: key in self._events, timeout):
                raise RuntimeError(f"no {topic} for {key} within {timeout} s")
            return self._events[key]

    def wait_exit(self, container_id, exec_id=None, timeout=10.0):
        return self.wait_event(container_id, "/tasks/exit", exec_id, timeout)

    def stop(self):
        self._proc.terminate()
        self._proc.wait()


def _to_ns(seconds_text, fraction, offset_seconds):
    base = calendar.timegm(time.strptime(seconds_text, "%Y-%m-%d %H:%M:%S")) - offset_seconds
    digits = (fraction or ".")[1:].ljust(9, "0")[:9]
    return base * 1_000_000_000 + int(digits)


def parse_go_time(text):
    """Go's time.String(): '2026-11-29 13:19:14.71068 +0000' (trailing zeros trimmed)."""
    m = re.match(r"(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d)(\.\d+)? ([+-])(\d\d)(\d\d)", text)
    sign = -1 if m.group(3) == "-" else 1
    return _to_ns(m.group(1), m.group(2), sign * (int(m.group(4)) * 3600 + int(m.group(5)) * 60))


def parse_rfc3339(text):
    m = re.match(r"(\d{4}-\d\d-\d\d)T(\d\d:\d\d:\d\d)(\.\d+)?(Z|([+-])(\d\d):(\d\d))$", text)
    offset = 0
    if m.group(4) != "Z":
        offset = (-1 if m.group(5) == "-" else 1) * (int(m.group(6)) * 3600 + int(m.group(7)) * 60)
    return _to_ns(f"{m.group(1)} {m.group(2)}", m.group(3), offset)
