#!/usr/bin/env bash
# A long fuzzing campaign for one target, as recorded in README.md:
#   campaign.sh <build dir> <target> [runs (default 10000000)] [libFuzzer flags...]
# (-fork=2 runs one campaign in two worker processes, for both cores of a 2-core machine.)
# The corpus grows in <build dir>/tests/fuzz/campaign/<target> (kept between campaigns;
# the committed seeds in corpus/<target> are read too), crashes go to
# <build dir>/tests/fuzz/artifacts/, libFuzzer's output to
# <build dir>/tests/fuzz/campaign-<target>-<start time>.log (one per campaign), and one
# summary line is appended to <build dir>/tests/fuzz/campaign.log: target, executions,
# seconds, coverage (cov/ft), corpus size, exit status, the campaign's log.
set -uo pipefail

# All of it is in a function: bash parses a function whole before running it, while it
# reads a script's top level as it goes. So editing this file (a `git pull`, a checkout)
# during an hours-long campaign cannot make the running copy execute shifted text.
campaign() {
  local build target runs here out corpus log start status seconds executed coverage files
  build=$(cd "$1" && pwd) target=$2 runs=${3:-10000000}
  shift $(( $# < 3 ? $# : 3 ))
  here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
  out=$build/tests/fuzz
  corpus=$out/campaign/$target
  mkdir -p "$corpus" "$out/artifacts"
  log=$out/campaign-$target-$(date +%Y%m%dT%H%M%S).log
  export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1}
  export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
  start=$(date +%s)
  "$out/$target" -runs="$runs" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
    -artifact_prefix="$out/artifacts/$target-" "$@" "$corpus" "$here/corpus/$target" \
    >"$log" 2>&1
  status=$?
  seconds=$(( $(date +%s) - start ))
  executed=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
  # -fork=N (one campaign, N worker processes) prints no final stats; its parent counts
  # the executions of all jobs: "INFO: fuzzed for N iterations", else its last "#N: cov:".
  [[ -n "$executed" ]] || executed=$(sed -n 's/^INFO: fuzzed for \([0-9]*\) iterations.*/\1/p' "$log" | tail -1)
  [[ -n "$executed" ]] || executed=$(grep -oE '^#[0-9]+: cov' "$log" | tail -1 | grep -oE '[0-9]+')
  coverage=$(grep -E '^#[0-9]+(:|[[:space:]]+(DONE|pulse|NEW|REDUCE))' "$log" | tail -1 | grep -oE 'cov: [0-9]+ ft: [0-9]+')
  files=$(find "$corpus" -type f | wc -l)
  printf '%s executions=%s seconds=%s %s corpus=%s exit=%s log=%s\n' "$target" "${executed:-?}" \
    "$seconds" "${coverage:-cov: ?}" "$files" "$status" "${log##*/}" | tee -a "$out/campaign.log"
  return "$status"
}

campaign "$@"; exit $?
