#!/usr/bin/env bash
# Installs every Debian package the build, the tests and the demo need.
# Idempotent: when everything is already installed it prints nothing and runs no apt command.
set -euo pipefail

packages=(
  build-essential cmake ninja-build pkg-config git ca-certificates
  libboost1.81-dev libboost-json1.81-dev
  libprotobuf-dev protobuf-compiler libfmt-dev catch2 libbenchmark-dev
  clang libclang-rt-14-dev
  containerd runc busybox-static
  crun runsc  # other runtimes shim-runc drives through BinaryName (tests/README.md)
  patchelf  # fetch-criu.sh points trixie's criu at its own loader and libraries
  strace procps iproute2 util-linux
  libgrpc++-dev protobuf-compiler-grpc containernetworking-plugins  # CRI tests and benchmark (tests/cri)
  debian-archive-keyring  # fetch-containerd.sh checks the trixie/sid release files with it
  doxygen python3 lintian file  # docs checks (docs/CMakeLists.txt), .debs (tests/packaging/run.sh)
  wasi-libc lld-14 libclang-rt-14-dev-wasm32  # the Wasm tests' modules (cmake/WasiModules.cmake)
  qemu-system-x86  # shim-vm's micro-VMs (qemu-system-common brings /usr/lib/qemu/virtiofsd)
)

missing=()
for p in "${packages[@]}"; do
  status=$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null || true)
  [[ "$status" == "install ok installed" ]] || missing+=("$p")
done
[[ ${#missing[@]} -eq 0 ]] && exit 0

if [[ $(id -u) -ne 0 ]]; then
  echo "install-deps: need root to install: ${missing[*]}" >&2
  exit 1
fi
echo "install-deps: installing ${missing[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
# The system containerd service must not start on its own; our tests run private daemons.
if [[ ! -e /usr/sbin/policy-rc.d ]]; then
  printf '#!/bin/sh\nexit 101\n' > /usr/sbin/policy-rc.d
  chmod +x /usr/sbin/policy-rc.d
  trap 'rm -f /usr/sbin/policy-rc.d' EXIT
fi
apt-get update -qq >/dev/null
apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
