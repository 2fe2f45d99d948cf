#!/usr/bin/env bash
# Shipping libshim, as a vendor and a distribution get it (issue 11). Run by tests/run.sh
# after the main build and ctest; needs that build's integration_tests ($BUILD_DIR).
#   1. (none of its own: the main build, $BUILD_DIR, is what step 2 installs; gcc with
#      warnings as errors is that build, Debug clang with them is tests/run.sh's ASan build,
#      and step 3 builds the library and the shims once more without precompiled headers.)
#   2. cmake --install of the main build into a temp prefix, then moved elsewhere
#      (relocatable); tests/consumer built there with find_package (shared libshim, static
#      libshim, a fully static variant, a crun shim on the OCI CLI client, and a variant
#      with full libprotobuf + grpc++) and with its Makefile through pkg-config; the
#      tutorial's main.cpp built with the tutorial's own CMake lines (docs/writing-a-shim.md).
#      What CMake builds is installed with `cmake --install` and run from there: no
#      LD_LIBRARY_PATH anywhere, as containerd starts shims.
#   3. The .debs from a build with Debian's flags (dpkg-buildflags, hardening=+all,
#      prefix /usr), lintian (no errors), their contents checked.
#   4. The .debs installed (under a lock: the machine is shared), the consumer and the
#      tutorial built against /usr the same ways, then every consumer shim run under
#      containerd 1.6 and 2.1 (`integration_tests '[consumer]'`), then the packages purged
#      again; Debian's containerd package must be untouched throughout.
# Build dirs go under $PKG_WORK (default: a temp dir, removed at the end).
set -euo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
build=${BUILD_DIR:-$repo/build}
jobs=${JOBS:-$(nproc)}
cache=${LIBSHIM_CACHE:-${HOME:-/root}/.cache/libshim}
work=${PKG_WORK:-$(mktemp -d /tmp/libshim-pkg.XXXXXX)}
# PKG_STAGE: all (default); build (steps 2-3: builds, .debs, lintian; no containerd, no
# system change, so it can run beside other tests); check (step 4, in the PKG_WORK a
# build stage filled).
stage=${PKG_STAGE:-all}
[[ $stage == all || $stage == build || ($stage == check && -n ${PKG_WORK:-}) ]] ||
  { echo "packaging: PKG_STAGE=$stage (all, build, or check with PKG_WORK)" >&2; exit 2; }
mkdir -p "$work"
soversion=$(sed -n 's/^set(LIBSHIM_SOVERSION \([0-9]*\)).*/\1/p' "$repo/CMakeLists.txt")
packages=(libshim-wasm-shim libshim-example-shim libshim-runc-shim libshim-dev "libshim$soversion")
installed=0
cleanup() {
  if [[ $installed == 1 ]]; then
    dpkg --purge "${packages[@]}" >/dev/null 2>&1 || true
  fi
  [[ -n "${PKG_WORK:-}" ]] || rm -rf "$work"
}
trap cleanup EXIT
integration_tests=$build/tests/integration_tests  # needed at step 4 only

step_start=$SECONDS
step() {
  echo "== packaging: $* (after $((SECONDS - step_start)) s)"
}
fail() {
  echo "packaging: FAILED: $*" >&2
  exit 1
}
lib_build() {  # <dir> <cmake args...>: configure and build the library and the shims only
  local dir=$1
  shift
  cmake -S "$repo" -B "$dir" -G Ninja -DLIBSHIM_WERROR=ON -DLIBSHIM_TESTS=OFF \
        -DLIBSHIM_BENCHMARKS=OFF "$@" >"$dir.configure.log" 2>&1 || { cat "$dir.configure.log"; return 1; }
  cmake --build "$dir" -j "$jobs"
}

# Configures, builds and installs (into <build>/installed) the CMake project in <src>.
cmake_project() {  # <src> <build> <cmake args...>
  local src=$1 build=$2
  shift 2
  mkdir -p "$(dirname "$build")"
  cmake -S "$src" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_FLAGS=-Werror \
        "$@" >"$build.configure.log" 2>&1 || { cat "$build.configure.log"; return 1; }
  cmake --build "$build" -j "$jobs"
  cmake --install "$build" --prefix "$build/installed" >/dev/null
}
# Builds tests/consumer against the libshim that pkg-config/find_package see, in <dir>,
# and the tutorial: shim-example/main.cpp with the first CMake block of
# docs/writing-a-shim.md as its project file. Writes the lists of shims to run.
consumer_build() {  # <dir> <extra cmake args...>
  local dir=$1
  shift
  cmake_project "$repo/tests/consumer" "$dir/cmake" -DCONSUMER_WITH_GRPC=ON "$@"
  cmake_project "$repo/tests/consumer" "$dir/static" -DLIBSHIM_STATIC_SHIM=ON "$@"
  mkdir -p "$dir/make" "$dir/tutorial"
  make -s -f "$repo/tests/consumer/Makefile" -C "$dir/make" CXXFLAGS="-O2 -g -Werror"
  cp "$repo/shim-example/main.cpp" "$dir/tutorial/"
  python3 - "$repo/docs/writing-a-shim.md" >"$dir/tutorial/CMakeLists.txt" <<'PY'
import re, sys
print(re.search(r'```cmake\n(.*?)```', open(sys.argv[1]).read(), re.S)[1], end='')
PY
  cmake_project "$dir/tutorial" "$dir/tutorial/build" "$@"
  local consumer=$dir/cmake/installed/libexec/consumer static=$dir/static/installed/libexec/consumer
  local tutorial
  tutorial=$(find "$dir/tutorial/build/installed" -type f -name containerd-shim-example-v1)
  [[ -x $tutorial ]] || fail "the tutorial's CMake lines install no containerd-shim-example-v1"
  for shim in "$static/containerd-shim-consumer-v1" "$static/containerd-shim-crun-v1"; do
    [[ $(file "$shim") == *'statically linked'* ]] || fail "$shim is not static"
  done
  # Installed, they run as containerd starts them: an empty environment.
  for shim in "$consumer/containerd-shim-consumer-v1" "$consumer/containerd-shim-crun-v1" "$tutorial"; do
    env -i "$shim" -v >/dev/null || fail "$shim -v fails without LD_LIBRARY_PATH"
  done
  # One protobuf runtime in the gRPC variant: the full one, shared by libshim and grpc++.
  local libs
  libs=$(ldd "$consumer/containerd-shim-consumer-grpc-v1")
  grep -q 'libprotobuf-lite' <<<"$libs" && fail "the gRPC consumer loads protobuf-lite too"
  [[ $(grep -c 'libprotobuf\.so' <<<"$libs") == 1 ]] || fail "the gRPC consumer: not one libprotobuf"
  echo "$consumer/containerd-shim-consumer-v1:$dir/cmake/containerd-shim-consumer-static-v1:$static/containerd-shim-consumer-v1:$dir/make/containerd-shim-consumer-v1:$tutorial" >"$dir/plain"
  echo "$consumer/containerd-shim-consumer-grpc-v1" >"$dir/grpc"
  echo "$consumer/containerd-shim-crun-v1:$static/containerd-shim-crun-v1" >"$dir/crun"
  echo "$consumer/containerd-shim-consumer-v1 $consumer/containerd-shim-consumer-grpc-v1 $consumer/containerd-shim-crun-v1 $dir/make/containerd-shim-consumer-v1 $tutorial" >"$dir/dynamic"
}
# The library each consumer loads, resolved: <binary> <expected real path of libshim.so.N>
check_loads() {
  local loaded
  loaded=$(ldd "$1" | awk -v so="libshim.so.$soversion" '$1 == so {print $3}')
  [[ -n $loaded && $(readlink -f "$loaded") == "$(readlink -f "$2")" ]] ||
    fail "$1 loads libshim.so.$soversion from '$loaded', not $2"
}
prefix=$work/prefix
# The packages, in the order lintian and dpkg take them.
debs=("$work/debs"/libshim${soversion}_*.deb "$work/debs"/libshim-dev_*.deb "$work/debs"/libshim-runc-shim_*.deb
      "$work/debs"/libshim-example-shim_*.deb "$work/debs"/libshim-wasm-shim_*.deb)

if [[ $stage != check ]]; then
# --- 2. install the main build into a prefix, move it, build the consumer ---------------
# (A Release build of its own was a third build of the same sources in CI, on 2 cores,
# under the same install rules.)
step "cmake --install of $build into a temp prefix, moved afterwards"
rm -rf "$work/stage" "$work/prefix"  # a kept PKG_WORK holds the last run's
cmake --install "$build" --prefix "$work/stage" >/dev/null
mv "$work/stage" "$work/prefix"
grep -rl "$work/stage" "$prefix" && fail "the installed tree names the prefix it was installed to"
[[ $(readelf -d "$prefix/lib/libshim.so" | sed -n 's/.*SONAME.*\[\(.*\)\]/\1/p') == "libshim.so.$soversion" ]] ||
  fail "libshim.so has no SONAME libshim.so.$soversion"
# libshim.so uses the system's protobuf runtime; it must not carry one of its own.
defined=$(nm -D --defined-only "$prefix/lib/libshim.so" | c++filt)
grep -E 'google::protobuf::(internal::fixed_address_empty_string|MessageLite::SerializeAsString)' <<<"$defined" &&
  fail "libshim.so defines protobuf runtime symbols"
for shim in containerd-shim-runc-v2 containerd-shim-example-v1 containerd-shim-wasm-v1; do
  [[ $(file "$prefix/libexec/libshim/$shim") == *'statically linked'* ]] || fail "$shim is not static"
done

step "consumer and tutorial against the temp prefix (find_package, pkg-config, static, gRPC variant)"
(export PKG_CONFIG_PATH=$prefix/lib/pkgconfig && consumer_build "$work/consumer-prefix" -DCMAKE_PREFIX_PATH="$prefix")
for bin in $(cat "$work/consumer-prefix/dynamic"); do
  check_loads "$bin" "$prefix/lib/libshim.so.$soversion"
done

# --- 3. the Debian packages --------------------------------------------------------------
step "Debian packages (dpkg-buildflags, hardening=+all, prefix /usr)"
(
  cd "$work"
  export DEB_BUILD_MAINT_OPTIONS=hardening=+all
  eval "$(dpkg-buildflags --export=sh)"
  lib_build "$work/deb" -DCMAKE_BUILD_TYPE=None -DCMAKE_INSTALL_PREFIX=/usr -DLIBSHIM_WASMEDGE_ROOT=/
)
cpack --config "$work/deb/CPackConfig.cmake" -B "$work/debs" >"$work/cpack.log" 2>&1 || { cat "$work/cpack.log"; fail cpack; }
debs=("$work/debs"/libshim${soversion}_*.deb "$work/debs"/libshim-dev_*.deb "$work/debs"/libshim-runc-shim_*.deb
      "$work/debs"/libshim-example-shim_*.deb "$work/debs"/libshim-wasm-shim_*.deb)
for deb in "${debs[@]}"; do [[ -f $deb ]] || fail "missing $deb"; done
# Whole outputs in variables, then grep: `grep -q` in a pipe may end the writer early
# (SIGPIPE), which pipefail would count as a failure.
runc_files=$(dpkg-deb -c "$work/debs"/libshim-runc-shim_*.deb)
grep -q ' ./usr/libexec/libshim/containerd-shim-runc-v2$' <<<"$runc_files" ||
  fail "libshim-runc-shim does not hold /usr/libexec/libshim/containerd-shim-runc-v2"
grep -q ' ./usr/bin/' <<<"$runc_files" && fail "libshim-runc-shim installs into /usr/bin"
wasm_files=$(dpkg-deb -c "$work/debs"/libshim-wasm-shim_*.deb)
grep -q ' ./usr/libexec/libshim/containerd-shim-wasm-v1$' <<<"$wasm_files" ||
  fail "libshim-wasm-shim does not hold /usr/libexec/libshim/containerd-shim-wasm-v1"
grep -q ' ./usr/libexec/libshim/libshim-wasm-zygote$' <<<"$wasm_files" ||
  fail "libshim-wasm-shim does not hold /usr/libexec/libshim/libshim-wasm-zygote"
[[ $(dpkg-deb -I "$work/debs"/libshim${soversion}_*.deb shlibs) == "libshim $soversion libshim$soversion (>= "* ]] ||
  fail "libshim$soversion has no shlibs"

step "lintian"
lintian --info --pedantic --show-overrides --tag-display-limit 0 "${debs[@]}" >"$work/lintian.txt" 2>&1 || true
echo "lintian (--info --pedantic; O: overridden, with the reason in packaging/debian):"
grep -E '^[EWIPO]: ' "$work/lintian.txt" | sed -E 's/ \(.*\.o\)//' | sort | uniq -c || echo "  no tags"
grep -q '^E: ' "$work/lintian.txt" && { grep '^E: ' "$work/lintian.txt"; fail "lintian reports errors"; }

fi
[[ $stage == build ]] && { step "done (stage build)"; exit 0; }

# --- 4. install the packages, build against /usr, run every consumer shim ---------------
# One CI run or developer at a time may have them installed (flock); they are purged on
# any exit, and Debian's containerd package must come out of it as it went in.
step "install the .debs (lock /run/lock/libshim-debs.lock)"
exec 9>/run/lock/libshim-debs.lock
flock 9
containerd_before=$(dpkg-query -W -f='${Version} ${Status}' containerd 2>/dev/null || true)
go_shim_sum=$(sha256sum /usr/bin/containerd-shim-runc-v2 2>/dev/null || true)
for p in "${packages[@]}"; do
  [[ $(dpkg-query -W -f='${Status}' "$p" 2>/dev/null || true) == *'ok installed' ]] &&
    fail "$p is already installed on this machine (not ours to replace)"
done
installed=1
dpkg -i "${debs[@]}" >"$work/dpkg.log" 2>&1 || { cat "$work/dpkg.log"; fail "dpkg -i"; }
version=$(sed -n 's/^project(libshim VERSION \([0-9.]*\).*/\1/p' "$repo/CMakeLists.txt")
[[ $(/usr/libexec/libshim/containerd-shim-runc-v2 -v) == *"libshim:  $version"* ]] ||
  fail "the packaged runc shim reports another libshim version"
# The packaged Wasm shim looks for the engine under / (Debian's wasmedge package).
wasm_info=$(/usr/libexec/libshim/containerd-shim-wasm-v1 -info </dev/null 2>/dev/null | tr -d '\0' || true)
grep -aq 'io.libshim.wasm.engine-root' <<<"$wasm_info" && ! grep -aq '/.cache/' <<<"$wasm_info" ||
  fail "the packaged Wasm shim's -info: $wasm_info"

step "consumer and tutorial against /usr (find_package, pkg-config, static, gRPC variant)"
consumer_build "$work/consumer-usr"
for bin in $(cat "$work/consumer-usr/dynamic"); do
  check_loads "$bin" "/usr/lib/$(dpkg-architecture -qDEB_HOST_MULTIARCH)/libshim.so.$soversion"
  # CMake's: no rpath to a system dir (lintian's binary-or-shlib-defines-rpath for a vendor).
  if [[ $bin != */make/* ]] && readelf -d "$bin" | grep -qE 'R(UN)?PATH'; then
    fail "$bin has an rpath though libshim is in /usr"
  fi
done

[[ -x $integration_tests ]] || fail "$integration_tests missing (run the main build first)"
run_consumers() {  # <label> <crun shims> [env...]: every consumer shim under one containerd
  local label=$1 crun=$2
  shift 2
  step "consumer shims under containerd $label"
  env "$@" LIBSHIM_CONSUMER_SHIMS="$(cat "$work/consumer-prefix/plain"):$(cat "$work/consumer-usr/plain")" \
      LIBSHIM_CONSUMER_GRPC_SHIMS="$(cat "$work/consumer-prefix/grpc"):$(cat "$work/consumer-usr/grpc")" \
      LIBSHIM_CONSUMER_CRUN_SHIMS="$crun" "$integration_tests" '[consumer]'
}
run_consumers 1.6 "$(cat "$work/consumer-prefix/crun"):$(cat "$work/consumer-usr/crun")"
c21=$cache/containerd-2.1/usr/bin
if [[ -x $c21/containerd ]]; then
  # Not the crun shims: Debian 12's crun 1.8.1 refuses the spec containerd 2.1 writes
  # ("OCI runtime create failed: unknown version specified"): crun reads it itself,
  # whatever the shim.
  run_consumers 2.1 "" LIBSHIM_CONTAINERD_BIN="$c21/containerd" LIBSHIM_CTR_BIN="$c21/ctr" LIBSHIM_CONTAINERD_EXPECT=2.1
else
  echo "packaging: containerd 2.1 not in $cache (cmake/fetch-containerd.sh could not fetch it): skipped"
fi

step "purge the .debs"
dpkg --purge "${packages[@]}" >"$work/purge.log" 2>&1 || { cat "$work/purge.log"; fail "dpkg --purge"; }
installed=0
for p in "${packages[@]}"; do
  [[ $(dpkg-query -W -f='${Status}' "$p" 2>/dev/null || true) == *'ok installed' ]] && fail "$p still installed"
done
[[ ! -e /usr/include/shim && ! -e /usr/libexec/libshim ]] || fail "files left under /usr after the purge"
[[ $(dpkg-query -W -f='${Version} ${Status}' containerd 2>/dev/null || true) == "$containerd_before" ]] ||
  fail "Debian's containerd package changed"
[[ $(sha256sum /usr/bin/containerd-shim-runc-v2 2>/dev/null || true) == "$go_shim_sum" ]] ||
  fail "/usr/bin/containerd-shim-runc-v2 changed"
flock -u 9

# (The Debug clang build with LIBSHIM_WERROR=ON is tests/run.sh's ASan tree.)
step "done"
