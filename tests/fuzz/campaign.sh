#!/usr/bin/env bash
# A long fuzzing campaign for one target, as recorded in README.md:
#   [PROCESSES=N] campaign.sh <build dir> <target> [runs (default 10000000)] [libFuzzer flags...]
# PROCESSES=N (default 1) runs N fuzzer processes on the one corpus dir, each for runs/N
# executions; each reloads the dir every second (libFuzzer's -reload), so what one finds
# the others build on, as libFuzzer's own -jobs does. On a 2-core machine PROCESSES=2
# uses both cores; libFuzzer's -fork=2 does too but ran at ~57% of that rate here (its
# 20 s jobs restart and re-run their seeds).
# The corpus grows in <build dir>/tests/fuzz/campaign/<target> (kept between campaigns;
# the committed seeds in corpus/<target> are read too), crashes go to
# <build dir>/tests/fuzz/artifacts/, libFuzzer's output to
# <build dir>/tests/fuzz/campaign-<target>-<start time>[-<process>].log, and one summary
# line is appended to <build dir>/tests/fuzz/campaign.log: target, executions (all
# processes), seconds, coverage (cov/ft, each process), corpus size, exit status, logs.
set -uo pipefail

# All of it is in functions: bash parses a function whole before running it, while it
# reads a script's top level as it goes. So editing this file (a `git pull`, a checkout)
# during an hours-long campaign cannot make the running copy execute shifted text.

# The executions one libFuzzer log reports.
executions_in() {
  local log=$1 executed
  executed=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
  # -fork=N prints no final stats; its parent counts the executions of all jobs:
  # "INFO: fuzzed for N iterations", else its last "#N: cov:".
  [[ -n "$executed" ]] || executed=$(sed -n 's/^INFO: fuzzed for \([0-9]*\) iterations.*/\1/p' "$log" | tail -1)
  [[ -n "$executed" ]] || executed=$(grep -oE '^#[0-9]+(:|[[:space:]])' "$log" | tail -1 | grep -oE '[0-9]+')
  echo "${executed:-?}"
}

coverage_in() {
  grep -E '^#[0-9]+(:|[[:space:]]+(DONE|pulse|NEW|REDUCE))' "$1" | tail -1 | grep -oE 'cov: [0-9]+ ft: [0-9]+' || echo 'cov: ?'
}

campaign() {
  local build target runs processes here out corpus stamp start status=0 seconds
  local executed=0 coverage='' names='' files i code count
  local -a logs=() pids=()
  build=$(cd "$1" && pwd) target=$2 runs=${3:-10000000} processes=${PROCESSES:-1}
  shift $(( $# < 3 ? $# : 3 ))
  here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
  out=$build/tests/fuzz
  corpus=$out/campaign/$target
  mkdir -p "$corpus" "$out/artifacts"
  stamp=$(date +%Y%m%dT%H%M%S)
  export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1}
  export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
  start=$(date +%s)
  for (( i = 1; i <= processes; i++ )); do
    if (( processes == 1 )); then logs+=("$out/campaign-$target-$stamp.log")
    else logs+=("$out/campaign-$target-$stamp-$i.log"); fi
    # Each process its share; the first takes the remainder.
    "$out/$target" -runs=$(( runs / processes + (i == 1 ? runs % processes : 0) )) -timeout=10 \
      -rss_limit_mb=2048 -print_final_stats=1 -artifact_prefix="$out/artifacts/$target-" "$@" \
      "$corpus" "$here/corpus/$target" >"${logs[-1]}" 2>&1 &
    pids+=($!)
  done
  for i in "${!pids[@]}"; do
    wait "${pids[$i]}"; code=$?
    (( status != 0 )) || status=$code
    count=$(executions_in "${logs[$i]}")
    if [[ $count == '?' || $executed == '?' ]]; then executed='?'; else executed=$(( executed + count )); fi
    coverage+="${coverage:+, }$(coverage_in "${logs[$i]}")"
    names+="${names:+,}${logs[$i]##*/}"
  done
  seconds=$(( $(date +%s) - start ))
  files=$(find "$corpus" -type f | wc -l)
  printf '%s executions=%s seconds=%s %s corpus=%s exit=%s log=%s\n' "$target" "$executed" \
    "$seconds" "$coverage" "$files" "$status" "$names" | tee -a "$out/campaign.log"
  return "$status"
}

campaign "$@"; exit $?
