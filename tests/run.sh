#!/usr/bin/env bash
# The README's test command: installs what is missing, builds, and runs every test.
#   1. Release-ish build (RelWithDebInfo): everything.
#   2. clang + AddressSanitizer + UndefinedBehaviorSanitizer build (with the libFuzzer
#      instrumentation, LIBSHIM_FUZZ) of the unit tests, the two shims and the fuzz targets.
#   3. ctest of 1: unit tests and the integration tests that start their own private
#      containerd/runc in temp dirs, among them label "sanitized": the [sanitized] cases
#      again with the shims of 2, failing on any sanitizer report.
#   4. Shipping (tests/packaging/run.sh): a Release (gcc) build installed into a temp
#      prefix, the consumer project built against it and against the .debs, lintian, the
#      consumer's shims under containerd 1.6 and 2.1 (SKIP_PACKAGING=1: not).
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

sanitized=$asan
[[ "${SKIP_ASAN:-0}" == 1 ]] && sanitized=""

phase "build ($build)"
cmake -S "$repo" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DLIBSHIM_WERROR=ON \
      -DLIBSHIM_SANITIZED_SHIM_DIR="$sanitized" >/dev/null
cmake --build "$build" -j "$jobs"

if [[ -n "$sanitized" ]]; then
  phase "ASan+UBSan build ($asan): unit tests, shims, fuzz targets"
  cmake -S "$repo" -B "$asan" -G Ninja -DCMAKE_BUILD_TYPE=Debug -DCMAKE_CXX_COMPILER=clang++ \
        -DLIBSHIM_SANITIZE=ON -DLIBSHIM_FUZZ=ON -DLIBSHIM_BENCHMARKS=OFF -DLIBSHIM_WERROR=ON \
        -DLIBSHIM_FUZZ_SECONDS="${FUZZ_SECONDS:-15}" >/dev/null
  cmake --build "$asan" -j "$jobs" --target unit_tests containerd-shim-runc-v2 \
        containerd-shim-example-v1 fuzz_targets
fi

phase "tests"
ctest --test-dir "$build" --output-on-failure -j "$jobs" ${CTEST_ARGS:-}

if [[ "${SKIP_PACKAGING:-0}" != 1 ]]; then
  phase "packaging"
  BUILD_DIR=$build JOBS=$jobs bash "$repo/tests/packaging/run.sh"
fi

if [[ -n "$sanitized" ]]; then
  phase "unit tests under ASan+UBSan ($asan)"
  ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1 \
    ctest --test-dir "$asan" --output-on-failure -j "$jobs" -L unit
  phase "fuzz targets, ${FUZZ_SECONDS:-15} s each ($asan)"
  ctest --test-dir "$asan" --output-on-failure -j "$jobs" -L fuzz
fi
phase "done"
