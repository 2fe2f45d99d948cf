#!/bin/bash
# Connect/Pids latency with many containers in one grouped shim under CPU load, before
# and after a containerd restart (tests/integration/runc_load_latency_e2e_test.cpp,
# 100 containers as in CI, or the count given). Runs it twice: with runc
# (Pids read from the cgroup by libshim) and with runc under another name (the
# `runc ps` path, what every Pids cost before), and writes the LIBSHIM-LOAD lines to
# <out>/results.txt.
#
#   bash benchmarks/load_latency.sh [build dir] [out dir] [containers]
set -uo pipefail
build=${1:-build}
out=${2:-benchmarks/results/$(date +%F)-load-latency}
count=${3:-100}
tests="$build/tests/integration_tests"
[ -x "$tests" ] || { echo "no $tests: build the integration_tests target first" >&2; exit 1; }
mkdir -p "$out"
runc=$(command -v runc) || { echo "no runc on PATH" >&2; exit 1; }
alias_dir=$(mktemp -d)
trap 'rm -rf "$alias_dir"' EXIT
ln -s "$runc" "$alias_dir/runc-ps"  # not named runc: the shim runs `runc-ps ps`

{
  echo "# $(date -u +%FT%TZ) $(uname -r), $(nproc) cores, $count containers"
  for binary in "" "$alias_dir/runc-ps"; do
    LIBSHIM_LOAD_CONTAINERS=$count LIBSHIM_LOAD_RUNC=$binary \
      "$tests" "[load-latency]" 2>&1 | grep '^LIBSHIM-LOAD:' | sed "s|$alias_dir/||"
  done
} | tee "$out/results.txt"
