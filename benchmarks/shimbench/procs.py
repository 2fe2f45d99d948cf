"""Readers of /proc: finding shim processes, their memory, threads and CPU time."""
import collections
import os
import time

SHIM_BINARY = "containerd-shim-runc-v2"
CLOCK_TICKS = os.sysconf("SC_CLK_TCK")


def cmdline(pid):
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return [a.decode(errors="replace") for a in f.read().split(b"\0") if a]
    except OSError:
        return []


def _flag(argv, name):
    """Value of a Go-style flag (-name value / -name=value / --name ...), or None."""
    for i, arg in enumerate(argv):
        bare = arg.lstrip("-")
        if bare == name and i + 1 < len(argv):
            return argv[i + 1]
        if bare.startswith(name + "="):
            return bare.split("=", 1)[1]
    return None


def shim_processes(address, container_id=None):
    """{pid: argv} of every shim process (daemon, start or delete) of one containerd."""
    found = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        argv = cmdline(entry)
        if not argv or os.path.basename(argv[0]) != SHIM_BINARY:
            continue
        if _flag(argv, "address") != address:
            continue
        if container_id is not None and _flag(argv, "id") != container_id:
            continue
        if state(int(entry)) in ("Z", "X", None):
            continue
        found[int(entry)] = argv
    return found


def shim_daemon(address, container_id):
    """Pid of the long-lived shim serving `container_id`, or None."""
    for pid, argv in shim_processes(address, container_id).items():
        if argv[-1] not in ("start", "delete"):
            return pid
    return None


def wait_for_daemon(address, container_id, timeout=10.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        pid = shim_daemon(address, container_id)
        if pid is not None:
            return pid
        time.sleep(0.01)
    raise RuntimeError(f"no shim daemon for {container_id} on {address}")


def wait_gone(address, container_id, timeout=10.0):
    """Waits until no shim process of `container_id` is left; returns the seconds waited."""
    start = time.monotonic()
    while shim_processes(address, container_id):
        if time.monotonic() - start > timeout:
            raise RuntimeError(f"shim of {container_id} still running after {timeout} s")
        time.sleep(0.005)
    return time.monotonic() - start


def state(pid):
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return None


def cpu_seconds(pid):
    """CPU time of the whole process (all threads, exited ones included), in seconds with
    nanosecond resolution: the process CPU-time clock that clock_getcpuclockid(3) would
    return (CPUCLOCK_SCHED, sum_exec_runtime), where /proc/<pid>/stat only has 10 ms ticks."""
    return time.clock_gettime_ns(((~pid) << 3) | 2) / 1e9


def bytes_written(pid):
    """wchar of /proc/<pid>/io: bytes the process passed to write(2) and friends."""
    with open(f"/proc/{pid}/io") as f:
        for line in f:
            if line.startswith("wchar:"):
                return int(line.split()[1])
    raise RuntimeError(f"no wchar for {pid}")


def exe(pid):
    return os.readlink(f"/proc/{pid}/exe")


def threads(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("Threads:"):
                return int(line.split()[1])
    raise RuntimeError(f"no Threads line for {pid}")


def thread_names(pid):
    """{comm: count} over the process's threads."""
    names = collections.Counter()
    for tid in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{tid}/comm") as f:
                names[f.read().strip()] += 1
        except OSError:
            pass
    return dict(names)


def memory(pid):
    """Rss/Pss (and their anon/file parts) in KiB from smaps_rollup, plus the thread count."""
    values = {}
    with open(f"/proc/{pid}/smaps_rollup") as f:
        for line in f:
            parts = line.split()
            if len(parts) == 3 and parts[2] == "kB":
                values[parts[0].rstrip(":")] = int(parts[1])
    return {
        "rss_kib": values["Rss"],
        "pss_kib": values["Pss"],
        "pss_anon_kib": values.get("Pss_Anon", 0),
        "pss_file_kib": values.get("Pss_File", 0),
        "threads": threads(pid),
    }


def top_mappings(pid, count=8):
    """The mappings with the most PSS, grouped by backing file ([heap], [stack]...).
    anonymous_kib: private copies (a library's relocated data, the heap): never shared."""
    totals = collections.defaultdict(
        lambda: {"size_kib": 0, "rss_kib": 0, "pss_kib": 0, "anonymous_kib": 0})
    current = None
    with open(f"/proc/{pid}/smaps") as f:
        for line in f:
            parts = line.split()
            if "-" in parts[0] and ":" not in parts[0]:
                name = parts[5] if len(parts) > 5 else "[anon]"
                current = totals[os.path.basename(name) if name.startswith("/") else name]
            elif parts[0] in ("Size:", "Rss:", "Pss:", "Anonymous:") and current is not None:
                current[parts[0].rstrip(":").lower() + "_kib"] += int(parts[1])
    ranked = sorted(totals.items(), key=lambda kv: kv[1]["pss_kib"], reverse=True)
    return [{"mapping": name, **v} for name, v in ranked[:count]]
