#!/usr/bin/env python3
"""Writes the committed seed corpora, tests/fuzz/corpus/<target>/seed-*.

Sources: the ttrpc frames captured from containerd 1.6.20 and the Go shim
(tests/data/wire/*.hex), runc's features output (tests/data/info), `runc spec`'s
config.json, and the inputs the unit tests use. Re-run after changing it:
    python3 tests/fuzz/make_seeds.py
Files named regression-* (inputs that once failed a target) are kept as they are.
"""
import json
import pathlib
import struct

HERE = pathlib.Path(__file__).resolve().parent
REPO = HERE.parent.parent
CORPUS = HERE / "corpus"


# ---- protobuf and ttrpc encoding -----------------------------------------------------

def varint(value):
    value &= (1 << 64) - 1
    out = bytearray()
    while value >= 0x80:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def field_bytes(number, payload):
    if isinstance(payload, str):
        payload = payload.encode()
    return varint(number << 3 | 2) + varint(len(payload)) + payload


def field_varint(number, value):
    return varint(number << 3) + varint(value)


def any_message(type_url, value):
    return field_bytes(1, type_url) + field_bytes(2, value)


def frame(stream_id, kind, payload, flags=0):
    return struct.pack(">IIBB", len(payload), stream_id, kind, flags) + payload


def request(stream_id, service, method, payload=b"", timeout=0, metadata=()):
    body = field_bytes(1, service) + field_bytes(2, method)
    if payload:
        body += field_bytes(3, payload)
    if timeout:
        body += field_varint(4, timeout)
    for key, value in metadata:
        body += field_bytes(5, field_bytes(1, key) + field_bytes(2, value))
    return frame(stream_id, 1, body)


def wire_capture(name):
    text = (REPO / "tests/data/wire" / name).read_text()
    return bytes.fromhex("".join(line for line in text.splitlines() if not line.startswith("#")))


def wire_frames(prefix):
    return {path.name[:-4]: wire_capture(path.name)
            for path in sorted((REPO / "tests/data/wire").glob(prefix + "*.hex"))}


# ---- per-target seeds ----------------------------------------------------------------

def ttrpc_frame_seeds():
    seeds = dict(wire_frames("task_"))
    seeds.update(wire_frames("events_"))
    requests = [v for k, v in wire_frames("task_").items() if k.endswith("request")]
    seeds["all_requests"] = b"".join(requests)
    seeds["oversized_then_request"] = struct.pack(">IIBB", 5 << 20, 3, 1, 0) + b"x" * 100 + requests[0]
    return seeds


def feed_ops(stream, piece=128):
    """The server target's ops that feed `stream` in pieces of at most `piece` bytes."""
    out = bytearray()
    for at in range(0, len(stream), piece):
        chunk = stream[at:at + piece]
        out.append(len(chunk) - 1)
        out += chunk
    return bytes(out)


def ttrpc_server_seeds():
    task_requests = {k: v for k, v in wire_frames("task_").items() if k.endswith("request")}
    seeds = {name: feed_ops(data) for name, data in task_requests.items()}
    seeds["all_task_requests"] = feed_ops(b"".join(task_requests.values()), 100)
    meta = [("containerd-namespace", "default"), ("k", "v1"), ("k", "v2")]
    mixed = b"".join([
        request(1, "fuzz.S", "Echo", b"hello"),
        request(3, "fuzz.S", "Hold", b"", timeout=1),        # answered by its deadline
        request(5, "fuzz.S", "Hold", b"", timeout=10**18),   # answered by an op below
        request(7, "fuzz.S", "Meta", b"", timeout=5 * 10**9, metadata=meta),
        request(9, "fuzz.S", "Throw"),
        request(11, "fuzz.S", "Status"),
        request(13, "fuzz.S", "Drop"),
        request(15, "fuzz.S", "Twice"),
        request(17, "fuzz.S", "Missing"),
        request(19, "no.Such", "Method"),
        request(4, "fuzz.S", "Echo", b"even stream id"),
        frame(21, 3, b"data frame: ignored"),
        frame(23, 2, b"response frame: ignored"),
        request(25, "fuzz.S", "Echo", b"e" * 2100),          # reply beyond the limit
        struct.pack(">IIBB", 3000, 27, 1, 0) + b"o" * 3000,   # request beyond the limit
        request(29, "containerd.task.v2.Task", "Wait", field_bytes(1, "t1")),
        request(31, "containerd.task.v3.Task", "State", field_bytes(1, "t1") + field_bytes(2, "e1")),
        request(33, "containerd.task.v2.Task", "Kill", b"\xff\xff"),  # bad payload
    ])
    seeds["mixed"] = feed_ops(mixed, 64) + bytes([0x80, 0xA1, 0xC0, 0x81])
    seeds["mixed_close_when_idle"] = feed_ops(mixed, 37) + bytes([0xFE])
    seeds["mixed_close"] = feed_ops(mixed, 128) + bytes([0xFF])
    return seeds


def runc_options(binary="runc", root="/run/containerd/runc", **extra):
    body = field_bytes(6, binary) + field_bytes(7, root)
    if extra.get("shim_cgroup"):
        body = field_bytes(3, extra["shim_cgroup"]) + body
    if extra.get("systemd"):
        body += field_varint(9, 1)
    if extra.get("criu_work_path"):
        body += field_bytes(11, extra["criu_work_path"])
    return body


def bootstrap_params(options):
    body = (field_bytes(1, "t1") + field_bytes(2, "default") + field_varint(3, (1 << 64) - 4)
            + field_bytes(4, "2.3.0") + field_bytes(5, "/run/containerd/containerd.sock.ttrpc")
            + field_bytes(6, "/run/containerd/containerd.sock") + field_bytes(7, "/usr/bin/containerd")
            + field_bytes(8, field_bytes(1, options)) + field_bytes(9, "/run/containerd/s"))
    return body


def start_stdin_seeds():
    runc = any_message("containerd.runc.v1.Options", runc_options(shim_cgroup="/shim"))
    return {
        "empty": b"",
        "legacy_any_runc": runc,
        "legacy_any_prefixed": any_message("type.googleapis.com/containerd.runc.v1.Options", runc_options()),
        "legacy_any_cri": any_message("runtimeoptions.v1.Options", field_bytes(2, "/etc/x.toml")),
        "bootstrap_params": bootstrap_params(runc),
        "bootstrap_params_no_options": field_bytes(4, "2.3.0") + field_bytes(5, "/c.sock.ttrpc"),
        "garbage": b"\x08\x96\x01this is not protobuf\xff",
    }


def flags_seeds():
    def argv(*words, env=None):
        data = b"\0".join(w.encode() for w in words)
        if env is not None:
            data += b"\n--env--\n" + "\n".join(env).encode()
        return data
    env_16 = ["TTRPC_ADDRESS=/run/containerd/containerd.sock.ttrpc"]
    env_17 = env_16 + ["GRPC_ADDRESS=/run/containerd/containerd.sock", "NAMESPACE=default",
                       "MAX_SHIM_VERSION=2", "SCHED_CORE="]
    return {
        "start_1_6": argv("-namespace", "default", "-address", "/run/containerd/containerd.sock",
                          "-publish-binary", "/usr/bin/containerd", "-id", "t1", "start", env=env_16),
        "start_2_x_debug": argv("-namespace", "k8s.io", "-id", "t1", "-address", "/c.sock",
                                "-debug", "start", env=env_17),
        "delete": argv("-namespace", "default", "-address", "/c.sock", "-publish-binary",
                       "/usr/bin/containerd", "-id", "t1", "-bundle", "/run/b/t1", "delete"),
        "info": argv("-info"),
        "version": argv("-v"),
        "forms": argv("--id=x", "-debug=false", "--", "start", "extra"),
        "errors": argv("-debug=yes"),
        "help": argv("-h", "-bogus"),
    }


def runc_options_seeds():
    checkpoint = field_varint(1, 1) + field_varint(2, 1) + field_bytes(6, "network") + field_bytes(9, "/work")
    return {
        "any_runc": any_message("containerd.runc.v1.Options", runc_options(systemd=True, criu_work_path="/w")),
        "any_prefixed": any_message("type.googleapis.com/containerd.runc.v1.Options", runc_options("crun")),
        "any_checkpoint": any_message("containerd.runc.v1.CheckpointOptions", checkpoint),
        "any_runtimeoptions": any_message("runtimeoptions.v1.Options", field_bytes(2, "/etc/c.toml")),
        "options_json": b'{"binary_name":"crun","root":"/run/x","systemd_cgroup":true,"io_uid":1000}',
        "options_json_case": b'{"Root":"/r","NO_PIVOT_ROOT":true,"unknown":[1,2],"io_gid":null}',
        "options_json_wrong_type": b'{"io_uid":-1,"root":5}',
        "options_json_escapes": b'{"shim_cgroup":"a\\u003cb\\u2028\\"","criu_path":"/\\u00e9"}',
    }


def stdio_uri_seeds():
    return {
        "fifo_path": b"/run/containerd/fifo/123/t1-stdout",
        "file": b"file:///var/log/ctr/t1.log",
        "binary": b"binary:///usr/bin/logger?id=t1&ns=default&x",
        "binary_v2_escapes": b"binary-v2:///usr/local/bin/my%20logger?a=b+c&a=second&k%3D=%2F&bad;=1",
        "bad_escape": b"file:///var/log/%zz",
        "fragment": b"FILE://host/a/b?q=1#frag",
        "query_lines": b"key\nvalue\nkey\nother\n\n",
    }


def oci_spec_seeds():
    spec = json.loads(run_spec())
    seeds = {"runc_spec": json.dumps(spec, indent="\t").encode()}
    spec["annotations"] = {"io.kubernetes.cri.sandbox-id": "pod1", "x": "y"}
    spec["linux"]["namespaces"] = [{"type": "pid", "path": "/proc/1/ns/pid"}, {"type": "mount"}]
    seeds["shared_pid_grouped"] = json.dumps(spec, separators=(",", ":")).encode()
    seeds["group_annotation_null"] = b'{"annotations":{"io.containerd.runc.v2.group":null}} trailing'
    seeds["bad_annotation"] = b'{"annotations":{"io.containerd.runc.v2.group":1}}'
    seeds["exec_process"] = json.dumps(spec["process"]).encode()
    seeds["not_object"] = b'[{"linux":{"namespaces":[{"type":"pid"}]}}]'
    # Every process field shim::oci reads, as an exec's process JSON.
    seeds["full_process"] = json.dumps({
        "terminal": False, "consoleSize": {"height": 24, "width": 80},
        "user": {"uid": 1000, "gid": 1000, "umask": 18, "additionalGids": [5, 20]},
        "args": ["sh", "-c", "id"], "env": ["PATH=/bin", "A=1", "A=2", "HOME="], "cwd": "/tmp",
        "capabilities": {"bounding": ["CAP_KILL", "CAP_NET_RAW"], "effective": ["CAP_KILL"],
                         "permitted": ["CAP_KILL", "CAP_NET_RAW"], "inheritable": ["CAP_NET_RAW"],
                         "ambient": ["CAP_NET_RAW"]},
        "rlimits": [{"type": "RLIMIT_CORE", "hard": 18446744073709551615, "soft": 0}],
        "oomScoreAdj": -500, "noNewPrivileges": True, "apparmorProfile": ""}).encode()
    return seeds


def run_spec():
    # `runc spec` output as of runc 1.1.5, trimmed to what the readers look at.
    return json.dumps({
        "ociVersion": "1.0.2-dev",
        "process": {"terminal": True, "user": {"uid": 0, "gid": 0}, "args": ["sh"],
                    "env": ["PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
                            "TERM=xterm"],
                    "cwd": "/", "rlimits": [{"type": "RLIMIT_NOFILE", "hard": 1024, "soft": 1024}],
                    "noNewPrivileges": True},
        "root": {"path": "rootfs", "readonly": True},
        "hostname": "runc",
        "mounts": [{"destination": "/proc", "type": "proc", "source": "proc"}],
        "linux": {"resources": {"devices": [{"allow": False, "access": "rwm"}]},
                  "namespaces": [{"type": "pid"}, {"type": "network"}, {"type": "ipc"},
                                 {"type": "uts"}, {"type": "mount"}, {"type": "cgroup"}],
                  "maskedPaths": ["/proc/acpi"], "readonlyPaths": ["/proc/bus"]},
    })


def go_json_seeds():
    features = (REPO / "tests/data/info/runc_1.1.5_features.json").read_bytes()
    return {
        "runc_features": features,
        "resources": b'{"memory":{"limit":268435456,"swap":-1},"cpu":{"shares":512,"cpus":"0-1"},'
                     b'"pids":{"limit":100}}',
        "numbers": b'[0,-0,1.5e10,-2E-3,18446744073709551615,-9223372036854775808,1e400]',
        "strings": b'["\\u003c\\u2028\\ud83d\\ude00\\"\\\\\\/\\b\\f\\n\\r\\t", "\xc3\xa9"]',
        "literals": b' {"a":true,"b":false,"c":null,"d":{},"e":[]} ',
        "error_literal": b'{"a":nul}',
        "error_truncated": b'{"a":[1,2',
        "deep": b"[" * 200 + b"]" * 200,
    }


def cgroup_file(name, content):
    return f"@@ {name}\n{content}"


def cgroup_v1_seeds():
    files = [
        ("proc/partitions", "major minor  #blocks  name\n\n 254        0  268435456 vda\n   7        0     1024 loop0\n"),
        ("hugepages/hugepages-2048kB", ""),
        ("hugepages/hugepages-1048576kB", ""),
        ("memory/ctr/memory.stat", "cache 4096\nrss 8192\nrss_huge 0\nmapped_file 12\ndirty 13\n"
         "pgpgin 70\npgfault 90\nhierarchical_memory_limit 8388608\ntotal_cache 180\nswap 0\n"),
        ("memory/ctr/memory.oom_control", "oom_kill_disable 0\nunder_oom 1\noom_kill 3\n"),
        ("memory/ctr/memory.usage_in_bytes", "1000\n"),
        ("memory/ctr/memory.max_usage_in_bytes", "2000\n"),
        ("memory/ctr/memory.failcnt", "3\n"),
        ("memory/ctr/memory.limit_in_bytes", "9223372036854771712\n"),
        ("memory/ctr/memory.memsw.usage_in_bytes", "1100\n"),
        ("memory/ctr/memory.memsw.max_usage_in_bytes", "2100\n"),
        ("memory/ctr/memory.memsw.failcnt", "4\n"),
        ("memory/ctr/memory.memsw.limit_in_bytes", "-1\n"),
        ("memory/ctr/memory.kmem.usage_in_bytes", "500\n"),
        ("memory/ctr/memory.kmem.max_usage_in_bytes", "600\n"),
        ("memory/ctr/memory.kmem.failcnt", "0\n"),
        ("memory/ctr/memory.kmem.limit_in_bytes", "700\n"),
        ("memory/ctr/memory.kmem.tcp.usage_in_bytes", "50\n"),
        ("memory/ctr/memory.kmem.tcp.max_usage_in_bytes", "60\n"),
        ("memory/ctr/memory.kmem.tcp.failcnt", "1\n"),
        ("memory/ctr/memory.kmem.tcp.limit_in_bytes", "70\n"),
        ("cpuacct/ctr/cpuacct.stat", "user 150\nsystem 25\n"),
        ("cpuacct/ctr/cpuacct.usage", "123456789\n"),
        ("cpuacct/ctr/cpuacct.usage_percpu", "100 200 300 \n"),
        ("cpu/ctr/cpu.stat", "nr_periods 10\nnr_throttled 2\nthrottled_time 3000\n"),
        ("pids/ctr/pids.current", "7\n"),
        ("pids/ctr/pids.max", "max\n"),
        ("blkio/ctr/blkio.throttle.io_serviced", "254:0 Read 10\n254:0 Write 20\n254:0 Total 30\n7:0 Read 1\nTotal 31\n"),
        ("blkio/ctr/blkio.throttle.io_service_bytes", "254:0 Read 4096\nTotal 4096\n"),
        ("hugetlb/ctr/hugetlb.2MB.usage_in_bytes", "2097152\n"),
        ("hugetlb/ctr/hugetlb.2MB.max_usage_in_bytes", "4194304\n"),
        ("hugetlb/ctr/hugetlb.2MB.failcnt", "5\n"),
        ("hugetlb/ctr/hugetlb.1GB.usage_in_bytes", "0\n"),
        ("hugetlb/ctr/hugetlb.1GB.max_usage_in_bytes", "0\n"),
        ("hugetlb/ctr/hugetlb.1GB.failcnt", "0\n"),
        ("rdma/ctr/rdma.current", "mlx4_0 hca_handle=2 hca_object=2000\n"),
        ("rdma/ctr/rdma.max", "mlx4_0 hca_handle=max hca_object=4000\n"),
        ("proc/1/cgroup", "9:name=systemd:/ctr\n8:pids:/ctr\n7:blkio:/ctr\n4:memory:/outer/ctr\n"
         "2:cpu,cpuacct:/ctr\n0::/k8s/ctr\n"),
        ("proc/self/mountinfo", "31 23 0:28 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755\n"
         "35 31 0:32 /outer /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory\n"),
        ("pids/ctr/cgroup.procs", "1\n42\n"),
    ]
    scheduler = [
        ("blkio/ctr/blkio.io_serviced_recursive", "8:0 Read 1\n8:0 Write 2\nTotal 3\n"),
        ("blkio/ctr/blkio.sectors_recursive", "8:0 8\n"),
        ("blkio/ctr/blkio.time_recursive", "8:0 100\n"),
        ("proc/partitions", "major minor  #blocks  name\n\n   8        0  1000 sda\n"),
    ]
    return {
        "all": "\n".join(cgroup_file(n, c) for n, c in files).encode(),
        "blkio_scheduler": "\n".join(cgroup_file(n, c) for n, c in scheduler).encode(),
        "bad_memory_stat": cgroup_file("memory/ctr/memory.stat", "cache 1\nbroken line here\n").encode(),
        "bad_cpuacct": cgroup_file("cpuacct/ctr/cpuacct.stat", "user 1\n").encode(),
    }


def cgroup_v2_seeds():
    files = [
        ("hugepages/hugepages-2048kB", ""),
        ("root/cgroup.controllers", "cpuset cpu io memory hugetlb pids rdma misc\n"),
        ("root/cgroup.subtree_control", ""),
        ("root/pod/cgroup.subtree_control", ""),
        ("root/pod/ctr/pids.current", "3\n"),
        ("root/pod/ctr/pids.max", "max\n"),
        ("root/pod/ctr/cpu.stat", "usage_usec 1000\nuser_usec 600\nsystem_usec 400\nnr_periods 5\n"
         "nr_throttled 1\nthrottled_usec 20\nnr_bursts 2\nburst_usec 30\n"),
        ("root/pod/ctr/cpu.pressure", "some avg10=1.50 avg60=0.25 avg300=0.00 total=12345\n"
         "full avg10=0.00 avg60=0.00 avg300=0.00 total=7\n"),
        ("root/pod/ctr/memory.stat", "anon 4096\nfile 8192\nkernel_stack 16\nslab 32\nsock 0\n"
         "file_mapped 64\ninactive_file 128\npgfault 1000\nworkingset_refault_anon 3\nthp_fault_alloc 7\n"),
        ("root/pod/ctr/memory.current", "12288\n"),
        ("root/pod/ctr/memory.max", "max\n"),
        ("root/pod/ctr/memory.peak", "20000\n"),
        ("root/pod/ctr/memory.swap.current", "0\n"),
        ("root/pod/ctr/memory.swap.max", "1048576\n"),
        ("root/pod/ctr/memory.events", "low 0\nhigh 1\nmax 2\noom 3\noom_kill 4\noom_group_kill 0\n"),
        ("root/pod/ctr/memory.pressure", "some avg10=0.00 avg60=0.00 avg300=0.00 total=0\n"),
        ("root/pod/ctr/io.stat", "254:0 rbytes=4096 wbytes=8192 rios=1 wios=2 dbytes=0 dios=0\n"
         "7:0 rbytes=1 wbytes=0 rios=1 wios=0 dbytes=0 dios=0\n"),
        ("root/pod/ctr/io.pressure", "some avg10=0.10 avg60=0.20 avg300=0.30 total=40\n"),
        ("root/pod/ctr/hugetlb.2MB.current", "2097152\n"),
        ("root/pod/ctr/hugetlb.2MB.max", "max\n"),
        ("root/pod/ctr/hugetlb.2MB.events", "max 9\n"),
        ("root/pod/ctr/rdma.current", "mlx4_0 hca_handle=1 hca_object=10\n"),
        ("root/pod/ctr/rdma.max", "mlx4_0 hca_handle=max hca_object=max\n"),
        ("root/pod/ctr/cgroup.procs", "100\n101\n"),
        ("proc/1/cgroup", "0::/pod/ctr\n"),
    ]
    return {
        "all": "\n".join(cgroup_file(n, c) for n, c in files).encode(),
        "bad_cpu_stat": cgroup_file("root/pod/ctr/cpu.stat", "usage_usec x\n").encode(),
        "bad_memory_events": cgroup_file("root/pod/ctr/memory.events", "low\n").encode(),
    }


# ---- WebAssembly modules -----------------------------------------------------------

def wasm_section(section_id, payload):
    return bytes([section_id]) + varint(len(payload)) + payload


def wasm_name(text):
    return varint(len(text)) + text


def wasm_vector(items):
    return varint(len(items)) + b"".join(items)


def wasm_module(*sections):
    return b"\0asm\x01\0\0\0" + b"".join(sections)


def wasm_module_seeds():
    """Modules in the shapes check_module and the zygote's bounds (fork_ready.h) read."""
    types = wasm_section(1, wasm_vector([b"\x60\x00\x00", b"\x60\x01\x7f\x00"]))
    wasi = wasm_section(2, wasm_vector([
        wasm_name(b"wasi_snapshot_preview1") + wasm_name(b"proc_exit") + b"\x00\x01",
        wasm_name(b"wasi_unstable") + wasm_name(b"fd_write") + b"\x00\x00"]))
    host = wasm_section(2, wasm_vector([wasm_name(b"env") + wasm_name(b"host\xff") + b"\x00\x00"]))
    functions = wasm_section(3, wasm_vector([b"\x00"]))
    table = wasm_section(4, wasm_vector([b"\x70\x00\x01"]))
    memory = wasm_section(5, wasm_vector([b"\x01\x02\x10"]))
    exports = wasm_section(7, wasm_vector([wasm_name(b"_start") + b"\x00\x02"]))
    start = wasm_section(8, b"\x02")
    code = wasm_section(10, wasm_vector([wasm_name(b"\x01\x03\x7f\x0b")]))
    data = wasm_section(11, wasm_vector([b"\x00\x41\x00\x0b" + wasm_name(b"hello")]))
    custom = wasm_section(0, wasm_name(b"name") + b"\x00")
    return {
        "empty_module": wasm_module(),
        "wasi_module": wasm_module(types, wasi, functions, table, memory, exports, code, data),
        "host_import": wasm_module(types, host, functions, code),
        "start_section": wasm_module(types, wasi, functions, start, code),
        "custom_first": wasm_module(custom, types, wasi, functions, memory, exports, code),
        "shared_memory": wasm_module(wasm_section(5, wasm_vector([b"\x03\x01\x02"]))),
        "many_locals": wasm_module(types, functions,
                                   wasm_section(10, wasm_vector([wasm_name(
                                       b"\x01" + varint(60000) + b"\x7f\x0b")]))),
        "component": b"\0asm\x0d\0\x01\0",
        "truncated": wasm_module(types, wasi)[:-5],
    }


TARGETS = {
    "fuzz_ttrpc_frame": ttrpc_frame_seeds,
    "fuzz_ttrpc_server": ttrpc_server_seeds,
    "fuzz_start_stdin": start_stdin_seeds,
    "fuzz_flags": flags_seeds,
    "fuzz_runc_options": runc_options_seeds,
    "fuzz_stdio_uri": stdio_uri_seeds,
    "fuzz_oci_spec": oci_spec_seeds,
    "fuzz_go_json": go_json_seeds,
    "fuzz_cgroup_v1": cgroup_v1_seeds,
    "fuzz_cgroup_v2": cgroup_v2_seeds,
    "fuzz_wasm_module": wasm_module_seeds,
}


def main():
    for target, make in TARGETS.items():
        directory = CORPUS / target
        directory.mkdir(parents=True, exist_ok=True)
        for old in directory.glob("seed-*"):
            old.unlink()
        for name, data in make().items():
            (directory / f"seed-{name}").write_bytes(data)


if __name__ == "__main__":
    main()
