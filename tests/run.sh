#!/usr/bin/env bash
# The README's test command: installs what is missing, builds, and runs every test.
#   1. Release-ish build (RelWithDebInfo): everything.
#   2. clang + AddressSanitizer + UndefinedBehaviorSanitizer build (with the libFuzzer
#      instrumentation, LIBSHIM_FUZZ) of the unit tests, the two shims and the fuzz targets,
#      in the background during 3 (its log: build-asan.build.log).
#   3. ctest of 1: unit tests and the integration tests that start their own private
#      containerd/runc in temp dirs, among them label "sanitized": the [sanitized] cases
#      again with the shims of 2, failing on any sanitizer report.
#   4. Shipping (tests/packaging/run.sh): a Release (gcc) build installed into a temp
#      prefix, the consumer project built against it and against the .debs, lintian, the
#      consumer's shims under containerd 1.6 and 2.1 (SKIP_PACKAGING=1: not). Its builds
#      (PKG_STAGE=build) run in the background during 3, after 2 in priority; its checks
#      after 3.
#   5. ctest of 2: the unit tests under ASan+UBSan, then every fuzz target for
#      FUZZ_SECONDS (default 15) over its seeds (label "fuzz", tests/fuzz/README.md).
# Every build treats warnings as errors (LIBSHIM_WERROR=ON); a user's build does not.
# Build dirs: build/ and build-asan/ under the repo (override with BUILD_DIR/ASAN_DIR).
# SKIP_ASAN=1 skips 2 and 5 (and the sanitized run).
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
build=${BUILD_DIR:-$repo/build}
asan=${ASAN_DIR:-$repo/build-asan}
jobs=${JOBS:-$(nproc)}
started=$SECONDS
phase() { echo "== $* (after $((SECONDS - started)) s)"; }

bash "$repo/cmake/install-deps.sh"
bash "$repo/cmake/fetch-containerd.sh"  # containerd 1.7/2.1 for the multi-version runs
bash "$repo/cmake/fetch-criu.sh"        # a CRIU whose `criu check` passes, for checkpoints
bash "$repo/cmake/fetch-wasmedge.sh"    # the WasmEdge engine, for the Wasm runtime class's tests

sanitized=$asan
[[ "${SKIP_ASAN:-0}" == 1 ]] && sanitized=""

phase "build ($build)"
cmake -S "$repo" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DLIBSHIM_WERROR=ON \
      -DLIBSHIM_SANITIZED_SHIM_DIR="$sanitized" >/dev/null
cmake --build "$build" -j "$jobs"

# The ASan build runs while the integration tests (mostly waiting on containerd and runc:
# ~80 s of CPU in 10 minutes) do, at a lower priority; the sanitized cases wait for it.
asan_build=""
if [[ -n "$sanitized" ]]; then
  phase "ASan+UBSan build ($asan) in the background: unit tests, shims, fuzz targets"
  mkdir -p "$asan"
  (
    cmake -S "$repo" -B "$asan" -G Ninja -DCMAKE_BUILD_TYPE=Debug -DCMAKE_CXX_COMPILER=clang++ \
          -DLIBSHIM_SANITIZE=ON -DLIBSHIM_FUZZ=ON -DLIBSHIM_BENCHMARKS=OFF -DLIBSHIM_WERROR=ON \
          -DLIBSHIM_FUZZ_SECONDS="${FUZZ_SECONDS:-15}" >/dev/null &&
    nice -n 10 cmake --build "$asan" -j "$jobs" --target unit_tests containerd-shim-runc-v2 \
          containerd-shim-example-v1 fuzz_targets
  ) >"$asan.build.log" 2>&1 &
  asan_build=$!
fi
# The packaging's builds (Release, consumers, .debs, lintian: CPU only, no containerd, no
# system change) run in the background too, below the ASan build's priority; its checks
# (the .debs installed, the consumer shims under containerd) run after the tests.
pkg_build="" pkg_work=""
if [[ "${SKIP_PACKAGING:-0}" != 1 ]]; then
  pkg_work=$(mktemp -d /tmp/libshim-pkg.XXXXXX)
  phase "packaging builds ($pkg_work) in the background"
  PKG_WORK=$pkg_work PKG_STAGE=build BUILD_DIR=$build JOBS=$jobs \
    nice -n 15 bash "$repo/tests/packaging/run.sh" >"$pkg_work.log" 2>&1 &
  pkg_build=$!
fi
# A failing step ends the script: take the background builds with it.
stop_tree() {  # <pid>: the process and its descendants
  local child
  for child in $(pgrep -P "$1" || true); do stop_tree "$child"; done
  kill "$1" 2>/dev/null || true
}
on_exit() {
  [[ -n "$asan_build" ]] && stop_tree "$asan_build"
  [[ -n "$pkg_build" ]] && stop_tree "$pkg_build"
  [[ -n "$pkg_work" ]] && rm -rf "$pkg_work" "$pkg_work.log" "$pkg_work".*.log
  return 0
}
trap on_exit EXIT
wait_for_asan_build() {
  [[ -n "$asan_build" ]] || return 0
  if ! wait "$asan_build"; then
    cat "$asan.build.log"
    echo "ASan+UBSan build failed" >&2
    exit 1
  fi
  asan_build=""
  phase "ASan+UBSan build done"
}

phase "tests"
if [[ -n "$sanitized" ]]; then
  ctest --test-dir "$build" --output-on-failure -j "$jobs" -LE sanitized ${CTEST_ARGS:-}
  wait_for_asan_build
  phase "tests with the sanitized shims"
  ctest --test-dir "$build" --output-on-failure -j "$jobs" -L sanitized ${CTEST_ARGS:-}
else
  ctest --test-dir "$build" --output-on-failure -j "$jobs" ${CTEST_ARGS:-}
fi

if [[ -n "$pkg_build" ]]; then
  phase "packaging: waiting for its builds"
  if ! wait "$pkg_build"; then
    cat "$pkg_work.log"
    echo "packaging builds failed" >&2
    exit 1
  fi
  pkg_build=""
  cat "$pkg_work.log"
  phase "packaging: checks"
  PKG_WORK=$pkg_work PKG_STAGE=check BUILD_DIR=$build JOBS=$jobs bash "$repo/tests/packaging/run.sh"
fi

if [[ -n "$sanitized" ]]; then
  phase "unit tests under ASan+UBSan ($asan)"
  ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1 \
    ctest --test-dir "$asan" --output-on-failure -j "$jobs" -L unit
  phase "fuzz targets, ${FUZZ_SECONDS:-15} s each ($asan)"
  ctest --test-dir "$asan" --output-on-failure -j "$jobs" -L fuzz
fi
phase "done"
