#!/usr/bin/env bash
# The README's test command: installs what is missing, builds, and runs every test.
#   1. Release-ish build (RelWithDebInfo) + ctest: unit tests and the integration tests
#      that start their own private containerd/runc in temp dirs.
#   2. Shipping (tests/packaging/run.sh): Release (gcc) and Debug (clang) builds, install
#      into a temp prefix, the consumer project built against it and against the .debs,
#      lintian, the consumer's shims under containerd 1.6 and 2.1 (SKIP_PACKAGING=1: not).
#   3. clang + AddressSanitizer + UndefinedBehaviorSanitizer build of the unit tests.
# Every build treats warnings as errors (LIBSHIM_WERROR=ON); a user's build does not.
# Build dirs: build/ and build-asan/ under the repo (override with BUILD_DIR/ASAN_DIR).
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
build=${BUILD_DIR:-$repo/build}
asan=${ASAN_DIR:-$repo/build-asan}
jobs=${JOBS:-$(nproc)}

bash "$repo/cmake/install-deps.sh"
bash "$repo/cmake/fetch-containerd.sh"  # containerd 1.7/2.1 for the multi-version runs

echo "== build ($build)"
cmake -S "$repo" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DLIBSHIM_WERROR=ON >/dev/null
cmake --build "$build" -j "$jobs"

echo "== tests"
ctest --test-dir "$build" --output-on-failure -j "$jobs" ${CTEST_ARGS:-}

if [[ "${SKIP_PACKAGING:-0}" != 1 ]]; then
  BUILD_DIR=$build JOBS=$jobs bash "$repo/tests/packaging/run.sh"
fi

if [[ "${SKIP_ASAN:-0}" != 1 ]]; then
  echo "== unit tests under ASan+UBSan ($asan)"
  cmake -S "$repo" -B "$asan" -G Ninja -DCMAKE_BUILD_TYPE=Debug -DCMAKE_CXX_COMPILER=clang++ \
        -DLIBSHIM_SANITIZE=ON -DLIBSHIM_BENCHMARKS=OFF -DLIBSHIM_WERROR=ON >/dev/null
  cmake --build "$asan" -j "$jobs" --target unit_tests
  ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1 \
    ctest --test-dir "$asan" --output-on-failure -j "$jobs" -L unit
fi
