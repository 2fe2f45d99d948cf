#!/usr/bin/env bash
# Fetches a CRIU that works on this machine into the private cache, for the checkpoint
# tests (tests/README.md, "CRIU"). Debian 12's criu 3.17 fails `criu check` on newer
# kernels ("vdso: Unexpected rt vDSO area bounds"); trixie's 4.1.1 passes it.
#
#   <cache>/criu/bin/criu    trixie's criu, its ELF interpreter and RPATH set to root/
#   <cache>/criu/root/       criu's Debian packages and their Depends closure, unpacked
#                            (trixie's glibc, libcompel1, libnftables1, libgnutls30t64, ...)
#   <cache>/criu/.deb-version
#
# trixie's criu needs glibc 2.38 (bookworm has 2.36), so it runs on trixie's own loader
# and libraries. They are wired into the binary (patchelf: PT_INTERP and DT_RPATH, which
# also covers indirect dependencies) rather than through LD_LIBRARY_PATH or a loader
# wrapper: CRIU runs the system's ip, iptables-save and tar as children, which must not
# inherit trixie's libraries, and /proc/self/exe stays criu. runc finds it as `criu` on
# its PATH: the tests put <cache>/criu/bin in front of containerd's.
#
# <cache> is $LIBSHIM_CACHE, else $HOME/.cache/libshim; the private apt configuration is
# cmake/debian-private-apt.sh's (the system's apt state is only read). Idempotent and
# quiet: a runnable criu already there is left alone. A new one prints one line with what
# `criu check` says; one that cannot be had prints a one-line reason. Always exits 0, so
# the checkpoint tests then skip with their reason.
set -uo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=cmake/debian-private-apt.sh
. "$here/debian-private-apt.sh"  # cache, apt_dir, prepare_private_apt, fetch_closure, ...

# suite  version (regex on Debian's version string), in order of preference: trixie is a
# stable release (its version stays); sid only if trixie's is gone.
wanted=(
  "trixie ^4\.1\."
  "sid ^4\."
)

root="$cache/criu"
say() { echo "fetch-criu: $*"; }

installed() {
  [[ -s $root/.deb-version && -x $root/bin/criu ]] && "$root/bin/criu" --version >/dev/null 2>&1
}

# `criu check`'s verdict in one line: "Looks good." or its first error.
check_line() {
  local out
  if out="$("$1" check 2>&1)"; then
    echo "criu check: $(echo "$out" | grep -v '^Warn' | tail -n1)"
  else
    echo "criu check fails: $(echo "$out" | grep -m1 '^Error' | cut -c1-200)"
  fi
}

# Downloads criu=<version> with its Depends from <suite> and sets up <cache>/criu.
# Prints a one-line reason and returns 1 on failure.
install_version() {
  local suite="$1" version="$2"
  local stage="$root.new"
  rm -rf "$stage"
  mkdir -p "$stage/root" "$stage/bin"
  # criu's whole Depends closure (libc6 included) from <suite>, without Recommends
  # (iproute2, python3-pycriu).
  fetch_closure criu "$suite" "$stage/root" "criu=$version" || return 1
  local criu="$stage/root/usr/sbin/criu" interp loader libdir out
  [[ -x $criu ]] || { echo "criu $version has no usr/sbin/criu"; return 1; }
  # The loader criu was linked for (/lib64/ld-linux-x86-64.so.2), found in trixie's
  # merged /usr; its directory is the multiarch library dir.
  interp="$(patchelf --print-interpreter "$criu" 2>&1)" ||
    { echo "patchelf cannot read $criu: $interp"; return 1; }
  loader="$(find "$stage/root/usr/lib" -maxdepth 2 -name "$(basename "$interp")" | head -n1)"
  [[ -n $loader ]] || { echo "no $(basename "$interp") among criu's dependencies"; return 1; }
  libdir="$(dirname "${loader#"$stage/"}")"
  cp "$criu" "$stage/bin/criu"
  # Paths of the final location: the stage is renamed to <cache>/criu below.
  if ! out="$(patchelf --set-interpreter "$root/$libdir/$(basename "$interp")" \
      --force-rpath --set-rpath "$root/$libdir" "$stage/bin/criu" 2>&1)"; then
    echo "patchelf of criu failed: $(echo "$out" | tail -n1)"
    return 1
  fi
  echo "$version $suite" >"$stage/.deb-version"
  rm -rf "$root"
  mv "$stage" "$root"
  if ! out="$("$root/bin/criu" --version 2>&1)"; then
    rm -rf "$root"
    echo "criu $version does not run here: $(echo "$out" | tail -n1 | cut -c1-200)"
    return 1
  fi
}

main() {
  installed && return 0
  if ! command -v patchelf >/dev/null; then
    bash "$here/install-deps.sh" >/dev/null 2>&1 || true
    command -v patchelf >/dev/null ||
      { say "criu not available: patchelf is not installed (cmake/install-deps.sh)"; return; }
  fi
  prepare_private_apt
  [[ -z $apt_problem ]] || { say "criu not available: $apt_problem"; return; }
  local entry suite pattern version why tried=()
  for entry in "${wanted[@]}"; do
    read -r suite pattern <<<"$entry"
    version="$(find_version criu "$suite" "$pattern")"
    if [[ -z $version ]]; then
      tried+=("no criu matching '$pattern' in $suite")
      continue
    fi
    if why="$(install_version "$suite" "$version")"; then
      say "criu $version ($suite) -> $root/bin/criu ($(check_line "$root/bin/criu"))"
      return
    fi
    rm -rf "$root.new"
    tried+=("$why")
  done
  local IFS=';'
  say "criu not available: ${tried[*]} at $mirror${apt_update_note:+ ($apt_update_note)}"
}

lock_cache || { say "cannot create $cache; the checkpoint tests will skip"; exit 0; }
main
exit 0
