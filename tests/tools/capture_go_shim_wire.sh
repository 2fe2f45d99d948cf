#!/usr/bin/env bash
# Captures real ttrpc frames between containerd and its Go runc shim, for the wire
# compatibility fixtures in tests/data/wire/ (see the README there).
#
# Usage: sudo tests/tools/capture_go_shim_wire.sh [OUT_DIR]
#   OUT_DIR defaults to tests/data/wire next to this script. Needs root, containerd, ctr,
#   containerd-shim-runc-v2, runc, busybox-static and python3.
#   Env: CONTAINERD_BIN (default /usr/bin/containerd), CTR_BIN (default /usr/bin/ctr),
#        GO_SHIM_BIN (default /usr/bin/containerd-shim-runc-v2), KEEP=1 keeps the temp dir.
#
# How: a private containerd (own root/state/sockets/namespace in a temp dir) finds a
# wrapper named containerd-shim-runc-v2 first on its PATH. The wrapper runs the real Go
# shim, records what `start` and `delete` print, and puts a recording proxy between the
# two peers in both directions:
#   containerd --task calls--> proxy --> Go shim daemon   (address printed by `start`)
#   Go shim    --Forward-----> proxy --> containerd ttrpc  (TTRPC_ADDRESS given to the shim)
# The proxy relays bytes unchanged and logs every complete frame. Afterwards the frames
# wanted as fixtures are picked by service/method/topic and written as hex, one frame per
# file, header included.
#
# Scenario (namespace "wire", busybox rootfs):
#   ctr run -d t1 /bin/sleep 1000         Create, Connect, Start, State + create/start events
#   ctr task ls                       State of a running init
#   ctr task ps t1                    Pids
#   ctr task exec --exec-id e1 t1 /bin/sh -c 'echo hi; exit 3'
#                                     Exec, Start{exec}, State, Wait, Delete{exec} + events
#   ctr task kill --exec-id nope t1   State of an unknown exec -> NotFound status
#   ctr task kill -s KILL t1          Kill + exit event
#   ctr task ls                       State of a stopped init
#   ctr task rm t1                    Delete, Shutdown, delete event, `delete` action
#   ctr run --rm t2 /bin/sh -c 'exit 3'  Wait of an init
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
out_dir="${1:-$here/../data/wire}"
containerd_bin="${CONTAINERD_BIN:-/usr/bin/containerd}"
ctr_bin="${CTR_BIN:-/usr/bin/ctr}"
go_shim="${GO_SHIM_BIN:-/usr/bin/containerd-shim-runc-v2}"
python="$(command -v python3)"
ns=wire

[[ $(id -u) == 0 ]] || { echo "must run as root" >&2; exit 1; }
for b in "$containerd_bin" "$ctr_bin" "$go_shim" /bin/busybox "$python"; do
  [[ -x $b ]] || { echo "missing $b" >&2; exit 1; }
done

cap="$(mktemp -d /tmp/lcap.XXXXXX)"
sock="$cap/c.sock"
ctrd_pid=""

ctr() { "$ctr_bin" --address "$sock" -n "$ns" "$@"; }

cleanup() {
  set +e
  if [[ -n $ctrd_pid ]]; then
    for t in $(ctr task ls -q 2>/dev/null); do
      ctr task kill -s KILL "$t" >/dev/null 2>&1
      sleep 0.5
      ctr task rm -f "$t" >/dev/null 2>&1
    done
    for c in $(ctr containers ls -q 2>/dev/null); do ctr containers rm "$c" >/dev/null 2>&1; done
    kill -TERM "$ctrd_pid" 2>/dev/null
    wait "$ctrd_pid" 2>/dev/null
  fi
  [[ -f $cap/proxy.pids ]] && while read -r p; do kill "$p" 2>/dev/null; done <"$cap/proxy.pids"
  for ctl in /sys/fs/cgroup/*/; do rmdir "$ctl$ns" 2>/dev/null; done
  grep -F " $cap" /proc/self/mountinfo | awk '{print $5}' | sort -r | xargs -r -n1 umount -l
  if [[ ${KEEP:-0} == 1 ]]; then echo "kept $cap" >&2; else rm -rf "$cap"; fi
}
trap cleanup EXIT

mkdir -p "$cap"/{bin,root,state,runc,fifo,px,rec}

# --- the recording proxy ------------------------------------------------------------
cat >"$cap/proxy.py" <<'EOF'
# proxy.py LISTEN_PATH UPSTREAM_PATH LOG_FILE NAME
# Relays a unix socket byte for byte and logs each complete ttrpc frame per direction as
# a JSON line {"name", "conn", "dir", "t", "hex"}. dir "c2s": from the dialing peer; t:
# CLOCK_MONOTONIC ns, shared by all proxy processes, so their logs can be merged in order.
import json, os, socket, sys, threading, itertools, time
listen_path, upstream, log_path, name = sys.argv[1:5]
lock = threading.Lock()
log = open(log_path, "a")

def relay(src, dst, conn_id, direction):
    buf = b""
    while True:
        try:
            data = src.recv(65536)
        except OSError:
            data = b""
        if not data:
            try: dst.shutdown(socket.SHUT_WR)
            except OSError: pass
            return
        buf += data
        while len(buf) >= 10:
            length = int.from_bytes(buf[0:4], "big")
            if len(buf) < 10 + length:
                break
            frame, buf = buf[:10 + length], buf[10 + length:]
            with lock:
                log.write(json.dumps({"name": name, "conn": conn_id, "dir": direction,
                                      "t": time.monotonic_ns(), "hex": frame.hex()}) + "\n")
                log.flush()
        # Forward only after logging so the log order follows causality.
        dst.sendall(data)

srv = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
srv.bind(listen_path)
srv.listen(16)
for conn_id in itertools.count():
    client, _ = srv.accept()
    up = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    up.connect(upstream)
    threading.Thread(target=relay, args=(client, up, conn_id, "c2s"), daemon=True).start()
    threading.Thread(target=relay, args=(up, client, conn_id, "s2c"), daemon=True).start()
EOF

start_proxy() {  # start_proxy LISTEN UPSTREAM NAME
  setsid "$python" "$cap/proxy.py" "$1" "$2" "$cap/rec/frames.jsonl" "$3" \
    </dev/null >>"$cap/rec/proxy.log" 2>&1 &
  echo $! >>"$cap/proxy.pids"
  for _ in $(seq 100); do [[ -S $1 ]] && return 0; sleep 0.05; done
  echo "proxy $3 did not come up" >&2; return 1
}

# --- the shim wrapper containerd finds on its PATH -------------------------------------
cat >"$cap/bin/containerd-shim-runc-v2" <<EOF
#!/bin/bash
# Recording wrapper around the Go runc shim (see capture_go_shim_wire.sh).
set -u
action="\${@: -1}"
id=""; prev=""
for a in "\$@"; do [[ \$prev == -id ]] && id="\$a"; prev="\$a"; done
printf '%s\n' "\$*" >>"$cap/rec/shim-argv.txt"
case "\$action" in
start)
  export TTRPC_ADDRESS="$cap/px/ev.sock"
  "$go_shim" "\$@" >"$cap/rec/start-stdout-\$id.bin" || exit \$?
  real="\$(cat "$cap/rec/start-stdout-\$id.bin")"
  real="\${real#unix://}"
  proxy="$cap/px/t-\$id.sock"
  if [[ ! -S \$proxy ]]; then
    setsid "$python" "$cap/proxy.py" "\$proxy" "\$real" "$cap/rec/frames.jsonl" "task-\$id" \
      </dev/null >>"$cap/rec/proxy.log" 2>&1 &
    echo \$! >>"$cap/proxy.pids"
    for _ in \$(seq 100); do [[ -S \$proxy ]] && break; sleep 0.05; done
  fi
  printf 'unix://%s' "\$proxy"
  ;;
delete)
  "$go_shim" "\$@" >"$cap/rec/delete-stdout-\$id.bin" 2>"$cap/rec/delete-stderr-\$id.txt"
  rc=\$?
  cat "$cap/rec/delete-stdout-\$id.bin"
  cat "$cap/rec/delete-stderr-\$id.txt" >&2
  exit \$rc
  ;;
*)
  exec "$go_shim" "\$@"
  ;;
esac
EOF
chmod +x "$cap/bin/containerd-shim-runc-v2"

cat >"$cap/config.toml" <<EOF
version = 2
root = "$cap/root"
state = "$cap/state"
disabled_plugins = ["io.containerd.grpc.v1.cri", "io.containerd.snapshotter.v1.btrfs",
  "io.containerd.snapshotter.v1.aufs", "io.containerd.snapshotter.v1.zfs",
  "io.containerd.snapshotter.v1.devmapper", "io.containerd.tracing.processor.v1.otlp",
  "io.containerd.internal.v1.tracing"]
[grpc]
  address = "$sock"
[ttrpc]
  address = "$sock.ttrpc"
[debug]
  level = "debug"
[plugins."io.containerd.internal.v1.opt"]
  path = "$cap/opt"
EOF

# --- busybox rootfs ------------------------------------------------------------------
rootfs="$cap/rootfs"
mkdir -p "$rootfs"/{bin,proc,sys,dev,tmp,etc,run}
cp /bin/busybox "$rootfs/bin/busybox"
for a in sh echo cat sleep true false ls; do ln -s busybox "$rootfs/bin/$a"; done

# --- run ------------------------------------------------------------------------------
PATH="$cap/bin:$PATH" "$containerd_bin" --config "$cap/config.toml" \
  </dev/null >"$cap/containerd.log" 2>&1 &
ctrd_pid=$!
for _ in $(seq 200); do ctr version >/dev/null 2>&1 && break; sleep 0.1; done
ctr version >/dev/null
start_proxy "$cap/px/ev.sock" "$sock.ttrpc" events

run_flags=(--rootfs --runc-root "$cap/runc" --fifo-dir "$cap/fifo")
step() { echo "+ ctr $*" >&2; }

step run -d t1; ctr run -d "${run_flags[@]}" "$rootfs" t1 /bin/sleep 1000 </dev/null >/dev/null
sleep 0.5
step task ls; ctr task ls
step task ps t1; ctr task ps t1
step task exec e1
set +e
ctr task exec --fifo-dir "$cap/fifo" --exec-id e1 t1 /bin/sh -c 'echo hi; exit 3' </dev/null
echo "exec exit: $?" >&2
step task kill --exec-id nope; ctr task kill --exec-id nope -s KILL t1
set -e
step task kill -s KILL t1; ctr task kill -s KILL t1
sleep 0.5
step task ls; ctr task ls
step task rm t1; ctr task rm t1
ctr containers rm t1
step run --rm t2
set +e
ctr run --rm "${run_flags[@]}" "$rootfs" t2 /bin/sh -c 'exit 3' </dev/null
echo "run t2 exit: $?" >&2
set -e
sleep 1  # let the last Forward calls and the `delete` action finish

# --- pick the fixtures ---------------------------------------------------------------
"$python" - "$cap/rec" "$out_dir" <<'EOF'
import json, os, sys
rec, out = sys.argv[1], sys.argv[2]
os.makedirs(out, exist_ok=True)

def fields(buf):
    """Top-level protobuf fields as (number, wire_type, value) in order."""
    i, res = 0, []
    def varint():
        nonlocal i
        shift = val = 0
        while True:
            b = buf[i]; i += 1
            val |= (b & 0x7F) << shift; shift += 7
            if not b & 0x80: return val
    while i < len(buf):
        key = varint(); num, wt = key >> 3, key & 7
        if wt == 0: res.append((num, wt, varint()))
        elif wt == 2:
            n = varint(); res.append((num, wt, buf[i:i + n])); i += n
        elif wt == 1: res.append((num, wt, buf[i:i + 8])); i += 8
        elif wt == 5: res.append((num, wt, buf[i:i + 4])); i += 4
        else: raise ValueError("wire type %d" % wt)
    return res

def field(buf, num, default=b""):
    for n, _, v in fields(buf):
        if n == num: return v
    return default

frames = [json.loads(l) for l in open(os.path.join(rec, "frames.jsonl"))]
frames.sort(key=lambda f: f["t"])
requests = {}   # (proxy name, conn, stream) -> (stem, description)
picked = {}     # file stem -> (frame, description); the first frame of each kind wins

def describe_request(payload):
    service = field(payload, 1).decode(); method = field(payload, 2).decode()
    inner = field(payload, 3)
    if method == "Forward":
        topic = field(field(inner, 1), 3).decode()
        stem = "events_forward_" + topic.split("/")[-1].replace("-", "_")
        if topic == "/tasks/exit":
            event = field(field(field(inner, 1), 4), 2)
            stem += "_init" if field(event, 1) == field(event, 2) else "_exec"
        return stem, "%s/%s topic %s" % (service, method, topic)
    stem = "task_" + method.lower()
    desc = "%s/%s id %s" % (service, method, field(inner, 1).decode())
    if method in ("State", "Start", "Wait", "Delete", "Kill"):
        exec_id = field(inner, 2).decode()
        if exec_id:
            stem += "_exec_unknown" if exec_id == "nope" else "_exec"
            desc += " exec_id %s" % exec_id
        elif method != "Kill":
            stem += "_init"
    return stem, desc

for f in frames:
    raw = bytes.fromhex(f["hex"]); payload = raw[10:]
    stream = int.from_bytes(raw[4:8], "big"); typ = raw[8]
    key = (f["name"], f["conn"], stream)
    if typ == 1:
        stem, desc = describe_request(payload)
        requests[key] = (stem, desc)
        name = stem + "_request"
        if name not in picked:
            picked[name] = (f, "%s: %s (proxy %s, conn %d, stream %d)" % (
                name, desc, f["name"], f["conn"], stream))
    elif typ == 2 and key in requests:
        stem, desc = requests[key]
        suffix = "_error_response" if field(payload, 1) else "_response"
        if stem == "task_state_init" and suffix == "_response":
            status = field(field(payload, 2), 4, 0)
            suffix = {2: "_response_running", 3: "_response_stopped"}.get(status, suffix)
        if stem.startswith("events_forward_"):
            stem = "events_forward"
        name = stem + suffix
        if name not in picked:
            picked[name] = (f, "%s: reply to %s (proxy %s, conn %d, stream %d)" % (
                name, desc, f["name"], f["conn"], stream))

for name, (f, desc) in sorted(picked.items()):
    raw = bytes.fromhex(f["hex"])
    with open(os.path.join(out, name + ".hex"), "w") as fh:
        fh.write("# " + desc + "\n")
        for i in range(0, len(raw), 32):
            fh.write(raw[i:i + 32].hex() + "\n")
    print("wrote", name + ".hex", len(raw), "bytes")

for kind in ("start-stdout-t1.bin", "delete-stdout-t1.bin"):
    path = os.path.join(rec, kind)
    if not os.path.exists(path):
        print("missing", kind); continue
    raw = open(path, "rb").read()
    name = "shim_" + kind.split("-")[0] + "_stdout"
    with open(os.path.join(out, name + ".hex"), "w") as fh:
        fh.write("# %s: stdout of the Go shim's `%s` action for t1 (no frame header)\n"
                 % (name, kind.split("-")[0]))
        for i in range(0, len(raw), 32):
            fh.write(raw[i:i + 32].hex() + "\n")
    print("wrote", name + ".hex", len(raw), "bytes")
EOF

echo "frames: $(wc -l <"$cap/rec/frames.jsonl"); shim argv log:" >&2
cat "$cap/rec/shim-argv.txt" >&2
