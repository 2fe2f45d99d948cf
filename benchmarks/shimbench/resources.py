"""What a shim costs while it serves: memory (RSS, PSS) and threads of the long-lived
daemon, and the CPU it spends copying a container's stdout."""
import errno
import os
import subprocess
import time

from . import procs

MIB = 1 << 20


def daemon_memory(side, cid, details=False):
    pid = side.daemon(cid)
    sample = procs.memory(pid)
    sample["cpu_ms"] = procs.cpu_seconds(pid) * 1e3  # since the daemon started
    if details:
        sample["thread_names"] = procs.thread_names(pid)
        sample["top_mappings"] = procs.top_mappings(pid)
    return sample


def memory_many(sides, count):
    """Starts `count` sleeping containers per side (A B A B ...), then sums the daemons'
    RSS and PSS. PSS splits each shared page among the processes mapping it, so the sum is
    what the `count` shims really cost together (shared text counted once). cpu_ms: each
    daemon's CPU time so far, i.e. start-up, Create and Start of one container."""
    cids = {s.name: [] for s in sides}
    try:
        for i in range(count):
            for side in sides:
                cids[side.name].append(side.start_sleeper(f"mem-{i}"))
        time.sleep(1.0)  # let start-up garbage settle (Go's GC, our allocator)
        result = {}
        for side in sides:
            samples = [daemon_memory(side, cid) for cid in cids[side.name]]
            result[side.name] = {
                "containers": count,
                "rss_total_kib": sum(s["rss_kib"] for s in samples),
                "pss_total_kib": sum(s["pss_kib"] for s in samples),
                "pss_anon_total_kib": sum(s["pss_anon_kib"] for s in samples),
                "pss_file_total_kib": sum(s["pss_file_kib"] for s in samples),
                "threads": [s["threads"] for s in samples],
                "cpu_ms": [s["cpu_ms"] for s in samples],
                "one_of_them": daemon_memory(side, cids[side.name][0], details=True),
            }
        return result
    finally:
        for side in sides:
            side.remove(*cids[side.name])
        for side in sides:
            deadline = time.monotonic() + 60
            while procs.shim_processes(side.address) and time.monotonic() < deadline:
                time.sleep(0.05)


def _release(fifo, timeout=30.0):
    """Opens the container's start FIFO for writing once it has a reader, says go."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            fd = os.open(fifo, os.O_WRONLY | os.O_NONBLOCK | os.O_CLOEXEC)
            break
        except OSError as e:
            if e.errno != errno.ENXIO or time.monotonic() > deadline:
                raise
            time.sleep(0.005)
    os.write(fd, b"go\n")
    os.close(fd)


def _wait_written(pid, target, timeout):
    """Polls ctr's wchar every ms until it reaches `target`; returns the perf_counter_ns
    of the first poll that saw it there."""
    deadline = time.monotonic() + timeout
    while procs.bytes_written(pid) < target:
        if time.monotonic() > deadline:
            raise RuntimeError(f"ctr {pid} wrote {procs.bytes_written(pid)} of {target} bytes")
        time.sleep(0.001)
    return time.perf_counter_ns()


def _stream_one(side, ws, cid, mib):
    """ctr's stdout is /dev/null, so the pipeline is container -> shim -> ctr -> nothing;
    the driver only watches ctr's wchar (poll every ms) to see when the data got through."""
    fifo = ws.share_path(f"go-{cid}")
    os.mkfifo(fifo)
    script = (f"read x < /x/go-{cid}; dd if=/dev/zero bs=65536 count={mib * 16} 2>/dev/null; "
              "exec sleep 1000000")
    ctr = subprocess.Popen(side.run_argv(cid, "/bin/sh", "-c", script, rm=True, share=True),
                           stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL)
    try:
        pid = side.daemon(cid)
        shim_cpu0, ctr_cpu0 = procs.cpu_seconds(pid), procs.cpu_seconds(ctr.pid)
        written0 = procs.bytes_written(ctr.pid)
        _release(fifo)
        start = _wait_written(ctr.pid, written0 + 1, timeout=30)
        end = _wait_written(ctr.pid, written0 + mib * MIB, timeout=300)
        shim_cpu = procs.cpu_seconds(pid) - shim_cpu0
        ctr_cpu = procs.cpu_seconds(ctr.pid) - ctr_cpu0
    finally:
        side.ctr("task", "kill", "-s", "KILL", cid, check=False, stderr=subprocess.DEVNULL)
        ctr.wait(timeout=30)
    gib = mib / 1024
    return {"mib_per_s": mib / ((end - start) / 1e9), "shim_cpu_s_per_gib": shim_cpu / gib,
            "ctr_cpu_s_per_gib": ctr_cpu / gib}


def throughput(sides, ws, rounds, mib):
    """Per side, lists of MiB/s and CPU s/GiB while a container writes `mib` MiB of zeros
    to stdout (dd, 64 KiB writes) and ctr copies it to /dev/null."""
    result = {s.name: {"mib_per_s": [], "shim_cpu_s_per_gib": [], "ctr_cpu_s_per_gib": []}
              for s in sides}
    for r in range(rounds):
        for side in sides:
            cid = side.cid(f"tp-{r}")
            sample = _stream_one(side, ws, cid, mib)
            procs.wait_gone(side.address, cid, timeout=30)
            for key, value in sample.items():
                result[side.name][key].append(value)
    return result
