#!/usr/bin/env bash
# The README's test command: installs what is missing, builds, and runs every test.
#   1. Release-ish build (RelWithDebInfo) + ctest: unit tests and the integration tests
#      that start their own private containerd/runc in temp dirs.
#   2. clang + AddressSanitizer + UndefinedBehaviorSanitizer build of the unit tests.
# Build dirs: build/ and build-asan/ under the repo (override with BUILD_DIR/ASAN_DIR).
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
build=${BUILD_DIR:-$repo/build}
asan=${ASAN_DIR:-$repo/build-asan}
jobs=${JOBS:-$(nproc)}

bash "$repo/cmake/install-deps.sh"
bash "$repo/cmake/fetch-containerd.sh"  # containerd 1.7/2.1 for the multi-version runs

echo "== build ($build)"
cmake -S "$repo" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build "$build" -j "$jobs"

echo "== tests"
ctest --test-dir "$build" --output-on-failure -j "$jobs" ${CTEST_ARGS:-}

if [[ "${SKIP_ASAN:-0}" != 1 ]]; then
  echo "== unit tests under ASan+UBSan ($asan)"
  cmake -S "$repo" -B "$asan" -G Ninja -DCMAKE_BUILD_TYPE=Debug -DCMAKE_CXX_COMPILER=clang++ \
        -DLIBSHIM_SANITIZE=ON -DLIBSHIM_BENCHMARKS=OFF >/dev/null
  cmake --build "$asan" -j "$jobs" --target unit_tests
  ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1 \
    ctest --test-dir "$asan" --output-on-failure -j "$jobs" -L unit
fi
