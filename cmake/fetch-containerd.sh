#!/usr/bin/env bash
# Fetches Debian's containerd 1.7 (trixie) and 2.1 (sid) packages into a private cache so
# the end-to-end tests can also run under those versions (tests/README.md, "multi-version").
#
#   <cache>/containerd-1.7/usr/bin/{containerd,ctr,containerd-shim-runc-v2}   1.7.24, trixie
#   <cache>/containerd-2.1/usr/bin/{containerd,ctr,containerd-shim-runc-v2}   2.1.9, sid
#   <cache>/apt/   private apt configuration, lists and downloads
#
# <cache> is $LIBSHIM_CACHE, else $HOME/.cache/libshim. The private apt configuration
# (cmake/debian-private-apt.sh, shared with fetch-criu.sh and fetch-wasmedge.sh) only reads the system's apt
# configuration and state, never changes them.
#
# Idempotent and quiet: a version already unpacked (and able to run) is left alone. A
# newly unpacked version prints one line; a version that cannot be had prints a one-line
# reason. Always exits 0, so a machine without network just skips those test runs.
set -uo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=cmake/debian-private-apt.sh
. "$here/debian-private-apt.sh"  # cache, apt_dir, keyring, write_apt_config, ...

# label  suite   version (regex on Debian's version string)
wanted=(
  "1.7 trixie ^1\.7\.24[~+]"
  "2.1 sid ^2\.1\.9[~+]"
)

say() { echo "fetch-containerd: $*"; }

# True when <cache>/containerd-<label> holds a runnable containerd and ctr.
installed() {
  local root="$cache/containerd-$1"
  [[ -s $root/.deb-version && -x $root/usr/bin/ctr && -x $root/usr/bin/containerd-shim-runc-v2 ]] &&
    "$root/usr/bin/containerd" --version >/dev/null 2>&1
}

# Downloads containerd=<version> and unpacks it to <cache>/containerd-<label>.
install_version() {
  local label="$1" version="$2"
  local dl="$apt_dir/debs/$label" root="$cache/containerd-$label"
  local stage="$root.new"
  rm -rf "$dl" "$stage"
  mkdir -p "$dl" "$stage"
  if ! (cd "$dl" && apt-get -c "$apt_dir/apt.conf" -q download "containerd=$version") \
      >"$apt_dir/log/last.log" 2>&1; then
    echo "apt-get download containerd=$version failed: $(apt_reason)"
    return 1
  fi
  local debs=("$dl"/containerd_*.deb)
  if [[ ! -f ${debs[0]} ]] || ! dpkg-deb -x "${debs[0]}" "$stage" 2>"$apt_dir/log/last.log"; then
    echo "dpkg-deb -x of containerd $version failed: $(tail -n1 "$apt_dir/log/last.log")"
    return 1
  fi
  local out
  if ! out="$("$stage/usr/bin/containerd" --version 2>&1)"; then
    echo "containerd $version does not run here: $(echo "$out" | tail -n1 | cut -c1-200)"
    return 1
  fi
  echo "$version" >"$stage/.deb-version"
  rm -rf "$root" "$dl"
  mv "$stage" "$root"
}

main() {
  local missing=() entry label suite pattern
  for entry in "${wanted[@]}"; do
    read -r label suite pattern <<<"$entry"
    installed "$label" || missing+=("$entry")
  done
  [[ ${#missing[@]} -eq 0 ]] && return 0

  prepare_private_apt

  local version why
  for entry in "${missing[@]}"; do
    read -r label suite pattern <<<"$entry"
    if [[ -n $apt_problem ]]; then
      say "containerd $label not available: $apt_problem"
      continue
    fi
    version="$(find_version containerd "$suite" "$pattern")"
    if [[ -z $version ]]; then
      say "containerd $label not available: no containerd matching '$pattern' in $suite" \
          "at $mirror${apt_update_note:+ ($apt_update_note)}"
      continue
    fi
    if why="$(install_version "$label" "$version")"; then
      say "containerd $version ($suite) -> $cache/containerd-$label"
    else
      rm -rf "$cache/containerd-$label.new"
      say "containerd $label not available: $why"
    fi
  done
}

lock_cache || { say "cannot create $cache; multi-version runs will be skipped"; exit 0; }
main
exit 0
