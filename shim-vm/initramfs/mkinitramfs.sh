#!/usr/bin/env bash
# Builds the initramfs of shim-vm's micro-VM guest:
#
#   mkinitramfs.sh <init-binary> <kernel-dir> <out> [<modules left out>]
#
#   /init                     <init-binary> (a static executable: the initramfs has no libc)
#   /lib/modules/*.ko         <kernel-dir>/modules/*.ko (cmake/fetch-kernel.sh's vm-kernel)
#   /lib/modules/load-order   <kernel-dir>/modules/load-order, the order /init loads them in
#                             (less the modules left out: "vsock.ko virtio_console.ko", the
#                             other agent channel's, which would cost the guest memory even
#                             unloaded)
#   /dev/console              char 5:1, so that the kernel opens a console for /init
#   /proc /sys /dev /run /tmp /mnt   empty directories (/tmp 1777)
#
# The archive is "newc" cpio (the format the kernel unpacks, Documentation/
# driver-api/early-userspace/buffer-format.rst), written here rather than by cpio(1) so that
# /dev/console needs no mknod and so no root. Deterministic: entries sorted, owner 0:0,
# mtime 0, inode numbers in order, no name or time in the compression header.
# Compression follows <out>'s name: .gz gzip -9 (CONFIG_RD_GZIP), .lz4 lz4 legacy format
# (CONFIG_RD_LZ4, which needs lz4 -l), anything else uncompressed. Debian's cloud kernel has
# every CONFIG_RD_* decompressor. Written to <out>.tmp, then renamed.
set -euo pipefail

if [[ $# -ne 3 && $# -ne 4 ]]; then
  echo "usage: $0 <init-binary> <kernel-dir> <out.cpio.gz> [<modules left out>]" >&2
  exit 2
fi
init="$1" kdir="$2" out="$3" left_out="${4:-}"
[[ -f $init && -x $init ]] || { echo "mkinitramfs: $init is not an executable file" >&2; exit 1; }
# No kernel fetched (no network): no initramfs either, and the VM tests skip; the build
# goes on.
if [[ ! -s $kdir/modules/load-order ]]; then
  echo "mkinitramfs: no guest kernel in $kdir (cmake/fetch-kernel.sh): no initramfs" >&2
  rm -f "$out"
  exit 0
fi

python3 - "$init" "$kdir/modules" "$out.tmp" "$left_out" <<'EOF'
import gzip, os, subprocess, sys

init, moddir, out = sys.argv[1:4]
left_out = set(sys.argv[4].split())

S_IFDIR, S_IFREG, S_IFCHR = 0o040000, 0o100000, 0o020000
entries = []  # (name, mode, data, rdev major, rdev minor)
for d, perm in (("dev", 0o755), ("lib", 0o755), ("lib/modules", 0o755), ("mnt", 0o755),
                ("proc", 0o755), ("run", 0o755), ("sys", 0o755), ("tmp", 0o1777)):
    entries.append((d, S_IFDIR | perm, b"", 0, 0))
entries.append(("dev/console", S_IFCHR | 0o600, b"", 5, 1))
with open(init, "rb") as f:
    entries.append(("init", S_IFREG | 0o755, f.read(), 0, 0))
with open(os.path.join(moddir, "load-order"), "rb") as f:
    modules = [ko for ko in f.read().decode().split() if ko not in left_out]
entries.append(("lib/modules/load-order", S_IFREG | 0o644,
                "".join(ko + "\n" for ko in modules).encode(), 0, 0))
for ko in modules:
    if "/" in ko or not ko.endswith(".ko"):
        sys.exit("mkinitramfs: bad entry in load-order: %r" % ko)
    with open(os.path.join(moddir, ko), "rb") as f:
        entries.append(("lib/modules/" + ko, S_IFREG | 0o644, f.read(), 0, 0))
entries.sort(key=lambda e: e[0])  # a directory sorts before what it holds

def pad4(n):
    return b"\0" * (-n % 4)

def header(ino, name, mode, size, rmaj, rmin, nlink):
    fields = (ino, mode, 0, 0, nlink, 0, size, 0, 0, rmaj, rmin, len(name) + 1, 0)
    h = b"070701" + b"".join(b"%08X" % v for v in fields) + name.encode() + b"\0"
    return h + pad4(len(h))

parts = []
for ino, (name, mode, data, rmaj, rmin) in enumerate(entries, start=1):
    nlink = 2 if mode & S_IFDIR else 1
    parts += [header(ino, name, mode, len(data), rmaj, rmin, nlink), data, pad4(len(data))]
parts.append(header(0, "TRAILER!!!", 0, 0, 0, 0, 1))
archive = b"".join(parts)

if out.endswith(".gz.tmp"):
    archive = gzip.compress(archive, compresslevel=9, mtime=0)
elif out.endswith(".lz4.tmp"):
    archive = subprocess.run(["lz4", "-l", "-9", "-c", "-q"], input=archive,
                             stdout=subprocess.PIPE, check=True).stdout
with open(out, "wb") as f:
    f.write(archive)
EOF
mv -f "$out.tmp" "$out"
