#!/usr/bin/env bash
# The README's test command: installs what is missing, builds, and runs every test.
#   1. Release-ish build (RelWithDebInfo): everything.
#   2. ctest of 1: unit tests and the integration tests that start their own private
#      containerd/runc in temp dirs; then label "sanitized": the [sanitized] cases again
#      with the shims of 3, failing on any sanitizer report.
#   3. In the background during 2, one step after another at a lower priority:
#      a. a clang + AddressSanitizer + UndefinedBehaviorSanitizer build (with the libFuzzer
#         instrumentation, LIBSHIM_FUZZ) of the unit tests, the two shims and the fuzz
#         targets (its log: build-asan.build.log);
#      b. the shipping builds (tests/packaging/run.sh, PKG_STAGE=build): the main build
#         installed into a temp prefix, the consumer project built against it, the .debs,
#         lintian;
#      c. the unit tests under ASan+UBSan, then every fuzz target for FUZZ_SECONDS
#         (default 15) over its seeds (label "fuzz", tests/fuzz/README.md).
#   4. After 2, the shipping checks (PKG_STAGE=check): the .debs installed, the consumer
#      built against them, the consumer's shims under containerd 1.6 and 2.1.
# Every build treats warnings as errors (LIBSHIM_WERROR=ON); a user's build does not.
# Build dirs: build/ and build-asan/ under the repo (override with BUILD_DIR/ASAN_DIR).
# SKIP_ASAN=1 skips 3a and 3c (and the sanitized run); SKIP_PACKAGING=1 skips 3b and 4.
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
bash "$repo/cmake/fetch-kernel.sh"      # the guest kernel, for the VM runtime class's tests
bash "$repo/cmake/fetch-vsock-device.sh"  # vhost-device-vsock, for the VM class's hybrid vsock test

sanitized=$asan
[[ "${SKIP_ASAN:-0}" == 1 ]] && sanitized=""

phase "build ($build)"
cmake -S "$repo" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DLIBSHIM_WERROR=ON \
      -DLIBSHIM_SANITIZED_SHIM_DIR="$sanitized" >/dev/null
cmake --build "$build" -j "$jobs"

# While the integration tests run (mostly waiting on containerd and runc), one background
# chain at a lower priority uses the CPU, one step after another (side by side, as before,
# they slowed each other down and CI by ~10 minutes):
#   ASan+UBSan build -> packaging builds -> unit tests under ASan+UBSan, fuzz targets.
# Each step it finishes leaves a marker in $state; the foreground waits for the one it needs.
state=$(mktemp -d /tmp/libshim-ci.XXXXXX)
chain="" pkg_work=""
[[ "${SKIP_PACKAGING:-0}" != 1 ]] && pkg_work=$(mktemp -d /tmp/libshim-pkg.XXXXXX)
background_chain() {
  renice -n 10 -p "$BASHPID" >/dev/null || true
  if [[ -n "$sanitized" ]]; then
    mkdir -p "$asan"
    {
      cmake -S "$repo" -B "$asan" -G Ninja -DCMAKE_BUILD_TYPE=Debug -DCMAKE_CXX_COMPILER=clang++ \
            -DLIBSHIM_SANITIZE=ON -DLIBSHIM_FUZZ=ON -DLIBSHIM_BENCHMARKS=OFF -DLIBSHIM_WERROR=ON \
            -DLIBSHIM_FUZZ_SECONDS="${FUZZ_SECONDS:-15}" >/dev/null &&
      cmake --build "$asan" -j "$jobs" --target unit_tests containerd-shim-runc-v2 \
            containerd-shim-example-v1 fuzz_targets
    } >"$asan.build.log" 2>&1 || exit 1
    touch "$state/asan-built"
  fi
  if [[ -n "$pkg_work" ]]; then
    # Builds, .debs, lintian: CPU only, no containerd, no system change.
    PKG_WORK=$pkg_work PKG_STAGE=build BUILD_DIR=$build JOBS=$jobs \
      bash "$repo/tests/packaging/run.sh" >"$pkg_work.log" 2>&1 || exit 1
    touch "$state/packaging-built"
  fi
  if [[ -n "$sanitized" ]]; then
    {
      echo "== unit tests under ASan+UBSan ($asan)"
      ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1 \
        ctest --test-dir "$asan" --output-on-failure -j "$jobs" -L unit &&
      echo "== fuzz targets, ${FUZZ_SECONDS:-15} s each ($asan)" &&
      ctest --test-dir "$asan" --output-on-failure -j "$jobs" -L fuzz
    } >"$asan.tests.log" 2>&1 || exit 1
    touch "$state/asan-tested"
  fi
}
# A failing step ends the script: take the background chain with it.
stop_tree() {  # <pid>: the process and its descendants
  local child
  for child in $(pgrep -P "$1" || true); do stop_tree "$child"; done
  kill "$1" 2>/dev/null || true
}
on_exit() {
  [[ -n "$chain" ]] && stop_tree "$chain"
  rm -rf "$state"
  [[ -n "$pkg_work" ]] && rm -rf "$pkg_work" "$pkg_work.log" "$pkg_work".*.log
  return 0
}
trap on_exit EXIT
phase "background: ASan+UBSan build ($asan), packaging builds ($pkg_work), ASan+UBSan unit tests and fuzz targets"
background_chain &
chain=$!

# Until the chain leaves <marker>; if it ends without, its <log> and a failure.
wait_for_chain() {  # <marker> <log> <what>
  while [[ ! -e "$state/$1" ]]; do
    if ! kill -0 "$chain" 2>/dev/null && [[ ! -e "$state/$1" ]]; then
      cat "$2"
      echo "$3 failed" >&2
      exit 1
    fi
    sleep 2
  done
  phase "$3 done"
}

phase "tests"
if [[ -n "$sanitized" ]]; then
  ctest --test-dir "$build" --output-on-failure -j "$jobs" -LE sanitized ${CTEST_ARGS:-}
  wait_for_chain asan-built "$asan.build.log" "ASan+UBSan build"
  phase "tests with the sanitized shims"
  ctest --test-dir "$build" --output-on-failure -j "$jobs" -L sanitized ${CTEST_ARGS:-}
else
  ctest --test-dir "$build" --output-on-failure -j "$jobs" ${CTEST_ARGS:-}
fi

if [[ -n "$pkg_work" ]]; then
  wait_for_chain packaging-built "$pkg_work.log" "packaging builds"
  cat "$pkg_work.log"
  phase "packaging: checks"
  PKG_WORK=$pkg_work PKG_STAGE=check BUILD_DIR=$build JOBS=$jobs bash "$repo/tests/packaging/run.sh"
fi

if [[ -n "$sanitized" ]]; then
  wait_for_chain asan-tested "$asan.tests.log" "unit tests under ASan+UBSan and fuzz targets"
  cat "$asan.tests.log"
fi
phase "done"
