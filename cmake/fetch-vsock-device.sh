#!/usr/bin/env bash
# Fetches rust-vmm's vhost-device-vsock (Debian sid's package) into the private cache: a
# vhost-user virtio-vsock device, one per VM, with "hybrid vsock" on the host (a unix
# socket and CONNECT <port>). shim-vm uses it for the agent channel where asked to
# (LIBSHIM_VM_CHANNEL=hybrid-vsock, docs/vm.md), which makes the guest's vsock side
# testable on a host without /dev/vhost-vsock.
#
#   <cache>/vhost-device-vsock/vhost-device-vsock   the program
#   <cache>/vhost-device-vsock/.deb-version         "<version> <suite>"
#
# The package depends on libc6 (>= 2.34) and libgcc-s1 only, which bookworm has: only its
# .deb is downloaded (dpkg-deb -x into a scratch directory, the program kept), nothing is
# installed. <cache> is $LIBSHIM_CACHE, else $HOME/.cache/libshim; the private apt
# configuration is cmake/debian-private-apt.sh's. Idempotent and quiet: a runnable
# program already there is left alone; a new one prints one line; one that cannot be had
# prints a one-line reason. Always exits 0, so the test that needs it skips with the
# reason.
set -uo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=cmake/debian-private-apt.sh
. "$here/debian-private-apt.sh"  # cache, apt_dir, prepare_private_apt, find_version, ...

# suite  version (regex on Debian's version string), in order of preference.
wanted=(
  "sid ^0\.[3-9]\."
  "trixie ^0\.[3-9]\."
)

root="$cache/vhost-device-vsock"
program="$root/vhost-device-vsock"
say() { echo "fetch-vsock-device: $*"; }

installed() {
  [[ -s $root/.deb-version && -x $program ]] && "$program" --version >/dev/null 2>&1
}

# Downloads vhost-device-vsock=<version> from <suite> into <cache>/vhost-device-vsock.
# Prints a one-line reason and returns 1 on failure.
install_version() {
  local suite="$1" version="$2"
  local dl="$apt_dir/debs/vhost-device-vsock" stage="$root.new" deb out
  rm -rf "$dl" "$stage"
  mkdir -p "$dl" "$stage/unpacked"
  if ! (cd "$dl" && apt-get -c "$apt_dir/apt.conf" -q download \
        "vhost-device-vsock=$version" >"$apt_dir/log/last.log" 2>&1); then
    echo "apt-get download vhost-device-vsock=$version failed: $(apt_reason)"
    return 1
  fi
  deb="$(find "$dl" -name '*.deb' | head -n1)"
  [[ -n $deb ]] || { echo "apt-get downloaded no .deb for vhost-device-vsock=$version"; return 1; }
  dpkg-deb -x "$deb" "$stage/unpacked" ||
    { echo "dpkg-deb -x $(basename "$deb") failed"; return 1; }
  mv "$stage/unpacked/usr/bin/vhost-device-vsock" "$stage/vhost-device-vsock" ||
    { echo "vhost-device-vsock $version has no usr/bin/vhost-device-vsock"; return 1; }
  rm -rf "$stage/unpacked" "$dl"
  if ! out="$("$stage/vhost-device-vsock" --version 2>&1)"; then
    echo "vhost-device-vsock $version ($suite) does not run here: $(echo "$out" | tail -n1 |
          cut -c1-200)"
    return 1
  fi
  echo "$version $suite" >"$stage/.deb-version"
  rm -rf "$root"
  mv "$stage" "$root"
}

main() {
  installed && return 0
  prepare_private_apt
  [[ -z $apt_problem ]] || { say "vhost-device-vsock not available: $apt_problem"; return; }
  local entry suite pattern version why tried=()
  for entry in "${wanted[@]}"; do
    read -r suite pattern <<<"$entry"
    version="$(find_version vhost-device-vsock "$suite" "$pattern")"
    if [[ -z $version ]]; then
      tried+=("no vhost-device-vsock matching '$pattern' in $suite")
      continue
    fi
    if why="$(install_version "$suite" "$version")"; then
      say "vhost-device-vsock $version ($suite) -> $program"
      return
    fi
    rm -rf "$root.new"
    tried+=("$why")
  done
  local IFS=';'
  say "vhost-device-vsock not available: ${tried[*]} at $mirror${apt_update_note:+ ($apt_update_note)}"
}

lock_cache || { say "cannot create $cache; the hybrid vsock test will skip"; exit 0; }
main
exit 0
