#!/usr/bin/env bash
# Fetches Debian's WasmEdge engine into the private cache, for the Wasm shim and its tests.
#
#   <cache>/wasmedge/root/          wasmedge and libwasmedge0 with their Depends closure,
#                                   unpacked (sid's glibc, libstdc++6, libllvm21, libfmt,
#                                   libspdlog, libzstd1, zlib1g, ...)
#   <cache>/wasmedge/bin/wasmedge   sh wrapper: the engine run through root/'s own loader
#   <cache>/wasmedge/.deb-version   "<version> <suite>"
#
# sid's libwasmedge0 needs glibc 2.43 (bookworm has 2.36), so the engine runs on root/'s
# own loader and libraries, nothing patched:
#
#   root/usr/lib/<multiarch>/ld-linux-*.so.* --inhibit-cache
#       --library-path root/usr/lib/<multiarch> [--argv0 NAME] root/usr/bin/wasmedge ...
#
# (x86_64: root/usr/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2; sid is merged-/usr, nothing
# lands in root/lib. --inhibit-cache: the system's /etc/ld.so.cache must not supply a
# library root/ lacks; the install checks with `ld.so --list` that root/ has them all.)
# The shim runs that command itself; bin/wasmedge is the same for people and tests.
#
# <cache> is $LIBSHIM_CACHE, else $HOME/.cache/libshim; the private apt configuration is
# cmake/debian-private-apt.sh's (the system's apt state is only read). Idempotent and
# quiet: a runnable wasmedge already there is left alone. A new one prints one line with
# what `wasmedge --version` says; one that cannot be had prints a one-line reason. Always
# exits 0, so the Wasm tests then skip with their reason.
set -uo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=cmake/debian-private-apt.sh
. "$here/debian-private-apt.sh"  # cache, apt_dir, prepare_private_apt, fetch_closure, ...

# suite  version (regex on Debian's version string), in order of preference: sid's 0.17;
# trixie's 0.14 if sid has none.
wanted=(
  "sid ^0\.17\."
  "trixie ^0\.14\."
)

root="$cache/wasmedge"
say() { echo "fetch-wasmedge: $*"; }

installed() {
  [[ -s $root/.deb-version && -x $root/bin/wasmedge ]] &&
    "$root/bin/wasmedge" --version >/dev/null 2>&1
}

# Single-quoted for sh.
quote() { printf "'%s'" "${1//\'/\'\\\'\'}"; }

# Downloads wasmedge=<version> and libwasmedge0=<version> with their Depends from <suite>
# and sets up <cache>/wasmedge. Prints a one-line reason and returns 1 on failure.
install_version() {
  local suite="$1" version="$2"
  local stage="$root.new"
  rm -rf "$stage"
  mkdir -p "$stage/root" "$stage/bin"
  fetch_closure wasmedge "$suite" "$stage/root" \
      "wasmedge=$version" "libwasmedge0=$version" || return 1
  # Nothing the engine reads at run time.
  rm -rf "$stage/root/usr/share/"{doc,man,locale,info,lintian,bug} "$stage/root/usr/include"
  [[ -x $stage/root/usr/bin/wasmedge ]] ||
    { echo "wasmedge $version has no usr/bin/wasmedge"; return 1; }
  # The loader (a file in merged /usr; /lib64's name for it is a symlink) and its
  # directory, the multiarch library directory, which holds the whole closure.
  local loader libdir
  loader="$(find "$stage/root/usr/lib" -maxdepth 2 -type f -name 'ld-linux*.so.[0-9]' | head -n1)"
  [[ -n $loader ]] || { echo "no ld-linux*.so among wasmedge's dependencies"; return 1; }
  loader="${loader#"$stage/root/"}"
  libdir="$(dirname "$loader")"
  # Every library the engine links resolves inside root/, none from the system.
  local out status missing
  out="$("$stage/root/$loader" --inhibit-cache --library-path "$stage/root/$libdir" \
      --list "$stage/root/usr/bin/wasmedge" 2>&1)"
  status=$?
  missing="$(echo "$out" | awk -v r="$stage/root/" '/=>/ && index($3, r) != 1 { print $1 }' |
             head -n3 | xargs)"
  if [[ -n $missing ]]; then
    echo "wasmedge $version needs libraries its root lacks: $missing"
    return 1
  elif [[ $status -ne 0 ]]; then
    echo "wasmedge $version's loader cannot list it: $(echo "$out" | tail -n1 | cut -c1-200)"
    return 1
  fi
  # Paths of the final location: the stage is renamed to <cache>/wasmedge below.
  cat >"$stage/bin/wasmedge" <<EOF
#!/bin/sh
# Written by cmake/fetch-wasmedge.sh: Debian's wasmedge $version ($suite) run through its
# own root's loader and libraries.
root=$(quote "$root/root")
exec "\$root/$loader" \\
  --inhibit-cache --library-path "\$root/$libdir" --argv0 "\$0" \\
  "\$root/usr/bin/wasmedge" "\$@"
EOF
  chmod 755 "$stage/bin/wasmedge"
  echo "$version $suite" >"$stage/.deb-version"
  rm -rf "$root"
  mv "$stage" "$root"
  if ! out="$("$root/bin/wasmedge" --version 2>&1)"; then
    rm -rf "$root"
    echo "wasmedge $version does not run here: $(echo "$out" | tail -n1 | cut -c1-200)"
    return 1
  fi
}

main() {
  installed && return 0
  prepare_private_apt
  [[ -z $apt_problem ]] || { say "wasmedge not available: $apt_problem"; return; }
  local entry suite pattern version why tried=()
  for entry in "${wanted[@]}"; do
    read -r suite pattern <<<"$entry"
    version="$(find_version wasmedge "$suite" "$pattern")"
    if [[ -z $version ]]; then
      tried+=("no wasmedge matching '$pattern' in $suite")
      continue
    fi
    if why="$(install_version "$suite" "$version")"; then
      say "wasmedge $version ($suite) -> $root/bin/wasmedge" \
          "($("$root/bin/wasmedge" --version 2>&1 | head -n1 | sed 's|^[^ ]*/||'))"
      return
    fi
    rm -rf "$root.new"
    tried+=("$why")
  done
  local IFS=';'
  say "wasmedge not available: ${tried[*]} at $mirror${apt_update_note:+ ($apt_update_note)}"
}

lock_cache || { say "cannot create $cache; the Wasm tests will skip"; exit 0; }
main
exit 0
