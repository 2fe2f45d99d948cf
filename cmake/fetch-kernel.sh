#!/usr/bin/env bash
# Fetches Debian bookworm's cloud kernel into the private cache, for shim-vm's micro-VMs
# and their tests.
#
#   <cache>/vm-kernel/vmlinuz              the kernel (bzImage) of linux-image-6.1.*-cloud-amd64
#   <cache>/vm-kernel/release              its `uname -r` (e.g. 6.1.0-57-cloud-amd64)
#   <cache>/vm-kernel/modules/*.ko         the guest's modules, uncompressed
#   <cache>/vm-kernel/modules/load-order   their file names, one a line, dependencies first
#   <cache>/vm-kernel/modules/wanted       the wanted_modules it was made for
#   <cache>/vm-kernel/.deb-version         "<version> <suite> <package>"
#
# The modules are those the guest needs (wanted_modules below) with everything they
# depend on (the `depends=` of each module's .modinfo: the package ships no modules.dep,
# depmod writes it at install time), less those the kernel has built in
# (modules.builtin). shim-vm/initramfs/mkinitramfs.sh puts them into the initramfs; the
# guest's /init loads them in load-order. The rest of the package is not kept.
#
# The version is the one the private apt configuration (cmake/debian-private-apt.sh)
# resolves `linux-image-cloud-amd64` to in bookworm or bookworm-security, whichever is
# newer. Only that one .deb is downloaded (not its Depends: nothing of it runs on the
# host) and unpacked with dpkg-deb -x into a scratch directory; the system's apt state is
# only read.
#
# <cache> is $LIBSHIM_CACHE, else $HOME/.cache/libshim. Idempotent and quiet: a complete
# kernel directory already there is left alone. A new one prints one line; one that cannot
# be had prints a one-line reason. Always exits 0, so the VM tests then skip with their
# reason.
set -uo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=cmake/debian-private-apt.sh
. "$here/debian-private-apt.sh"  # cache, apt_dir, prepare_private_apt, apt_reason, ...

meta=linux-image-cloud-amd64
version_pattern='^6\.1\.'
# What the guest needs: the virtio-mmio transport (microvm), virtio-serial (the agent's
# channel), virtio-fs (the shared directory), overlayfs (container root filesystems) and
# the balloon (free page reporting gives what the guest frees back to the host) and
# virtio-net (the pod's network) and virtio-vsock (the agent's channel where the host has
# vsock; loaded only then, as virtio-net is only for a pod with a network).
wanted_modules=(virtio_ring virtio virtio_mmio virtio_console fuse virtiofs overlay
                virtio_balloon virtio_net vmw_vsock_virtio_transport)

root="$cache/vm-kernel"
say() { echo "fetch-kernel: $*"; }

installed() {
  [[ -s $root/.deb-version && -s $root/vmlinuz && -s $root/release &&
     -s $root/modules/load-order ]] || return 1
  # A cache made for another module list is made again.
  [[ "$(cat "$root/modules/wanted" 2>/dev/null)" == "${wanted_modules[*]}" ]] || return 1
  local ko
  while read -r ko; do
    [[ -s $root/modules/$ko ]] || return 1
  done <"$root/modules/load-order"
}

# "<version> <suite>" of the newest linux-image-cloud-amd64 in bookworm or
# bookworm-security (madison lists the newest first).
find_meta() {
  apt-cache -c "$apt_dir/apt.conf" madison "$meta" 2>/dev/null |
    awk -F'|' '{ gsub(/ /, "", $2); split($3, w, " "); split(w[2], s, "/") }
               s[1] ~ /^bookworm(-security)?$/ { print $2, s[1] }' |
    awk -v p="$version_pattern" '$1 ~ p' | head -n1
}

# Reads <unpacked>/lib/modules/<release>, prints the load order of wanted_modules and
# their dependencies as paths relative to that directory, dependencies first; modules
# built in are left out. Exits non-zero with a one-line reason.
module_order() {
  python3 - "$1" "${wanted_modules[@]}" <<'EOF'
import lzma, gzip, os, struct, sys

moddir, wanted = sys.argv[1], sys.argv[2:]

def norm(name):
    return name.replace("-", "_")

def read_ko(path):
    with open(path, "rb") as f:
        data = f.read()
    if path.endswith(".xz"):
        data = lzma.decompress(data)
    elif path.endswith(".gz"):
        data = gzip.decompress(data)
    return data

def modinfo(path):
    """The key=value strings of an ELF64 little-endian module's .modinfo section."""
    d = read_ko(path)
    if d[:4] != b"\x7fELF" or d[4] != 2 or d[5] != 1:
        raise ValueError("not an ELF64 little-endian object")
    shoff, = struct.unpack_from("<Q", d, 0x28)
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", d, 0x3A)
    def sh(i):
        return struct.unpack_from("<IIQQQQIIQQ", d, shoff + i * shentsize)
    stroff = sh(shstrndx)[4]
    for i in range(shnum):
        name, _, _, _, off, size = sh(i)[:6]
        end = d.index(b"\0", stroff + name)
        if d[stroff + name:end] == b".modinfo":
            info = {}
            for item in d[off:off + size].split(b"\0"):
                k, sep, v = item.decode("utf-8", "replace").partition("=")
                if sep:
                    info.setdefault(k, v)
            return info
    return {}

files = {}  # module name -> path relative to moddir
for dirpath, _, names in os.walk(os.path.join(moddir, "kernel")):
    for n in names:
        base = n
        for ext in (".xz", ".gz", ".zst"):
            if base.endswith(ext):
                base = base[:-len(ext)]
        if base.endswith(".ko"):
            files[norm(base[:-3])] = os.path.relpath(os.path.join(dirpath, n), moddir)

builtin = set()
try:
    with open(os.path.join(moddir, "modules.builtin")) as f:
        for line in f:
            n = os.path.basename(line.strip())
            if n.endswith(".ko"):
                builtin.add(norm(n[:-3]))
except OSError:
    pass

order, state = [], {}
def visit(name, chain):
    name = norm(name)
    if name in builtin or state.get(name) == "done":
        return
    if state.get(name) == "visiting":
        raise SystemExit("dependency cycle: " + " -> ".join(chain + [name]))
    if name not in files:
        raise SystemExit("module %s is neither built in nor in the package" % name)
    state[name] = "visiting"
    path = files[name]
    if path.endswith(".zst"):
        raise SystemExit("%s is zstd-compressed; no decompressor here" % path)
    deps = modinfo(os.path.join(moddir, path)).get("depends", "")
    for dep in filter(None, deps.split(",")):
        visit(dep, chain + [name])
    state[name] = "done"
    order.append(path)

for w in wanted:
    visit(w, [])
print("\n".join(order))
EOF
}

# Downloads <package>=<version>, sets up <cache>/vm-kernel. Prints a one-line reason and
# returns 1 on failure.
install_version() {
  local package="$1" version="$2" suite="$3"
  local stage="$root.new" dl="$apt_dir/debs/vm-kernel"
  rm -rf "$stage" "$dl"
  mkdir -p "$stage/modules" "$dl"
  if ! (cd "$dl" && apt-get -c "$apt_dir/apt.conf" -q download "$package=$version") \
      >"$apt_dir/log/last.log" 2>&1; then
    echo "apt-get download $package=$version failed: $(apt_reason)"
    return 1
  fi
  local debs=("$dl/${package}_"*.deb)
  if [[ ! -f ${debs[0]} ]] || ! dpkg-deb -x "${debs[0]}" "$dl/unpacked" \
      2>"$apt_dir/log/last.log"; then
    echo "dpkg-deb -x of $package $version failed: $(tail -n1 "$apt_dir/log/last.log")"
    return 1
  fi
  local moddirs=("$dl/unpacked/lib/modules/"*/)
  local moddir="${moddirs[0]%/}" release
  release="$(basename "$moddir")"
  [[ -d $moddir/kernel && -s $dl/unpacked/boot/vmlinuz-$release ]] ||
    { echo "$package $version has no boot/vmlinuz-* and lib/modules/*/kernel"; return 1; }
  local out ko
  out="$(module_order "$moddir" 2>&1)" ||
    { echo "$package $version: $(echo "$out" | tail -n1 | cut -c1-200)"; return 1; }
  cp "$dl/unpacked/boot/vmlinuz-$release" "$stage/vmlinuz"
  echo "$release" >"$stage/release"
  : >"$stage/modules/load-order"
  while read -r ko; do
    [[ -n $ko ]] || continue
    case $ko in
      *.ko.xz) xz -dc "$moddir/$ko" >"$stage/modules/$(basename "$ko" .xz)" ;;
      *.ko.gz) gzip -dc "$moddir/$ko" >"$stage/modules/$(basename "$ko" .gz)" ;;
      *) cp "$moddir/$ko" "$stage/modules/" ;;
    esac || { echo "cannot decompress $ko"; return 1; }
    basename "${ko%.[gx]z}" >>"$stage/modules/load-order"
  done <<<"$out"
  echo "${wanted_modules[*]}" >"$stage/modules/wanted"
  echo "$version $suite $package" >"$stage/.deb-version"
  rm -rf "$root" "$dl"
  mv "$stage" "$root"
}

main() {
  installed && return 0
  command -v python3 >/dev/null ||
    { say "kernel not available: python3 is not installed (cmake/install-deps.sh)"; return; }
  prepare_private_apt
  [[ -z $apt_problem ]] || { say "kernel not available: $apt_problem"; return; }
  local version suite package why
  read -r version suite < <(find_meta)
  if [[ -z ${version:-} ]]; then
    say "kernel not available: no $meta matching '$version_pattern' in bookworm" \
        "at $mirror${apt_update_note:+ ($apt_update_note)}"
    return
  fi
  # The metapackage depends on exactly one linux-image-<abi>-cloud-amd64 (= version).
  package="$(apt-cache -c "$apt_dir/apt.conf" show "$meta=$version" 2>/dev/null |
             sed -n 's/^Depends:.*\(linux-image-[0-9][^ ,]*-cloud-amd64\).*/\1/p' | head -n1)"
  if [[ -z $package ]]; then
    say "kernel not available: $meta $version ($suite) names no linux-image-*-cloud-amd64"
    return
  fi
  if why="$(install_version "$package" "$version" "$suite")"; then
    say "$package $version ($suite) -> $root ($(wc -l <"$root/modules/load-order") modules:" \
        "$(xargs <"$root/modules/load-order"))"
    return
  fi
  rm -rf "$root.new" "$apt_dir/debs/vm-kernel"
  say "kernel not available: $why"
}

lock_cache || { say "cannot create $cache; the VM tests will skip"; exit 0; }
main
exit 0
