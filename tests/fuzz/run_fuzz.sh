#!/usr/bin/env bash
# Runs one libFuzzer target for a bounded time, as ctest (label "fuzz") and CI do:
#   run_fuzz.sh <target binary> <seed dir> <seconds> <artifact dir> [libFuzzer flags...]
# The seeds are read, never written: new inputs go to a temp corpus that is removed at
# the end. A crash, leak, timeout, sanitizer report or failed FUZZ_CHECK makes libFuzzer
# exit non-zero; the input that did it is kept as <artifact dir>/<target>-crash-<sha1>
# (or leak-, timeout-, oom-) and this script exits non-zero too.
set -euo pipefail
binary=$1 seeds=$2 seconds=$3 artifacts=$4
shift 4
name=$(basename "$binary")
mkdir -p "$artifacts"
work=$(mktemp -d "${TMPDIR:-/tmp}/libshim-fuzz-$name.XXXXXX")
trap 'rm -rf "$work"' EXIT

# UBSan is fatal already (-fno-sanitize-recover); this prints its stack. libFuzzer turns
# leaks (LeakSanitizer after the input runs) into failures itself.
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
"$binary" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
  -artifact_prefix="$artifacts/$name-" "$@" "$work" "$seeds"
