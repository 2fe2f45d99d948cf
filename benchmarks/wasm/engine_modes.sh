#!/usr/bin/env bash
# WasmEdge's CLI against its C API loaded per container and in a forking zygote: start
# time of a hello module and memory of N spinning modules (docs/wasm.md, "Figures").
#   bash benchmarks/wasm/engine_modes.sh [build-dir] [N]
# Needs the engine (cmake/fetch-wasmedge.sh) and the test modules (build-dir/tests/wasm).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
build=$(cd "${1:-$here/../../build}" && pwd)
n=${2:-10}
root=${LIBSHIM_WASMEDGE_ROOT:-${LIBSHIM_CACHE:-$HOME/.cache/libshim}/wasmedge/root}
lib=$root/usr/lib/x86_64-linux-gnu
loader=$lib/ld-linux-x86-64.so.2
modules=$build/tests/wasm/modules
work=$(mktemp -d /tmp/engine-modes-XXXXXX)
trap 'pkill -f "$work/" 2>/dev/null || true; rm -rf "$work"' EXIT
cc -O2 -o "$work/engine_modes" "$here/engine_modes.c" -ldl
engine() { "$loader" --inhibit-cache --library-path "$lib" "$@"; }
ms() { local t0 t1; t0=$(date +%s%N); "$@" >/dev/null 2>&1 || true; t1=$(date +%s%N); echo $(((t1 - t0) / 1000)); }
median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]/1000}'; }

echo "# WasmEdge start and memory by engine mode ($(date -Is), $(engine "$root/usr/bin/wasmedge" --version | head -1 | sed 's/.* version/wasmedge/'))"
echo
cli=$(for _ in $(seq 20); do ms engine "$root/usr/bin/wasmedge" --dir /:/ "$modules/hello.wasm" 3; done | median)
capi=$(for _ in $(seq 20); do ms engine "$work/engine_modes" exec "$modules/hello.wasm" 3; done | median)
zygote=$(engine "$work/engine_modes" zygote 20 "$modules/hello.wasm" 3 2>&1 >/dev/null | sed 's/.*per_run_ms=\([0-9.]*\).*/\1/')
echo "| hello.wasm, start to exit | ms (median of 20) |"
echo "|---|---|"
echo "| CLI, a process per container | $cli |"
echo "| C API, libwasmedge loaded per container | $capi |"
echo "| C API, loaded once, fork per container | $zygote |"
echo
pss() { awk '/^Pss:/ {p=$2} /^Private_Dirty:/ {d=$2} END {print p, d}' "/proc/$1/smaps_rollup"; }
cp "$modules/spin.wasm" "$work/spin.wasm"
for _ in $(seq "$n"); do (engine "$root/usr/bin/wasmedge" "$work/spin.wasm" >/dev/null 2>&1 &); done
(engine "$work/engine_modes" hold "$n" "$work/spin.wasm" >/dev/null 2>&1 &)
sleep 3
cli_pss=0 cli_priv=0
for p in $(pgrep -f "wasmedge $work/spin.wasm"); do read -r a b < <(pss "$p"); cli_pss=$((cli_pss + a)); cli_priv=$((cli_priv + b)); done
z=$(pgrep -f "engine_modes hold" | head -1)
read -r zp zd < <(pss "$z")
kid_pss=0 kid_priv=0
for p in $(pgrep -P "$z"); do read -r a b < <(pss "$p"); kid_pss=$((kid_pss + a)); kid_priv=$((kid_priv + b)); done
echo "| $n spinning modules | PSS KiB total | private dirty KiB total |"
echo "|---|---|---|"
echo "| CLI, a process each | $cli_pss | $cli_priv |"
echo "| zygote + $n forked children | $((zp + kid_pss)) | $((zd + kid_priv)) |"
