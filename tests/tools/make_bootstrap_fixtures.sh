#!/bin/bash
# Makes tests/data/bootstrap/*.hex from containerd's own .proto files with protoc, so the
# unit tests compare libshim's bytes with bytes built from upstream's definitions rather
# than from libshim's copies (tests/data/bootstrap/README.md says what each file is).
#
#   bash tests/tools/make_bootstrap_fixtures.sh <containerd git dir>
#
# The git dir is any clone of github.com/containerd/containerd that has the commits
# below (PR #14002's head for the mount capabilities, v2.4.0-beta.0 for parent_path).
set -euo pipefail

repo=${1:?usage: $0 <containerd git dir>}
capabilities_commit=5426b0f2f9b36bf421e72ec14f915f8dbf72c18e  # PR #14002 head
checkpoint_commit=v2.4.0-beta.0                                # has #13699 (parent_path)
out=$(cd "$(dirname "$0")/../data/bootstrap" && pwd)

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
take() {  # take <commit> <path>
  mkdir -p "$work/$(dirname "$2")"
  git -C "$repo" show "$1:$2" > "$work/$2"
}
take "$capabilities_commit" api/runtime/bootstrap/v1/bootstrap.proto
take "$capabilities_commit" api/types/mount.proto
take "$checkpoint_commit" api/types/runc/options/oci.proto

# The address libshim's tests use: sha256 of "<grpc address>/<namespace>/<id>".
hex_id=$(printf '%s' /run/containerd/containerd.sock/default/t1 | sha256sum | cut -d' ' -f1)
address="unix:///run/containerd/s/$hex_id"

# encode <file> <message> <source commit> <text format>
encode() {
  local file=$1 message=$2 commit=$3 text=$4
  {
    echo "# protoc --encode=$message, containerd $commit protos (tests/tools/make_bootstrap_fixtures.sh)"
    echo "# $text"
    printf '%s' "$text" |
      (cd "$work" && protoc -I. -I/usr/include --encode="$message" \
        api/runtime/bootstrap/v1/bootstrap.proto api/types/mount.proto \
        api/types/runc/options/oci.proto) | xxd -p -c 32
  } > "$out/$file"
}

result=containerd.runtime.bootstrap.v1.BootstrapResult
caps=type.googleapis.com/containerd.types.MountCapabilities
encode result_go_runc_shim.hex "$result" "$capabilities_commit" \
  "version: 3 address: \"$address\" protocol: \"ttrpc\""
encode result_mount_capabilities.hex "$result" "$capabilities_commit" \
  "version: 3 address: \"$address\" protocol: \"ttrpc\" extensions { value { [$caps] { types: \"erofs\" types: \"ext4\" transforms: \"format\" transforms: \"mkfs\" } } }"
encode result_mount_capabilities_empty.hex "$result" "$capabilities_commit" \
  "version: 3 address: \"$address\" protocol: \"ttrpc\" extensions { value { [$caps] { } } }"
encode result_unknown_extension.hex "$result" "$capabilities_commit" \
  "version: 3 address: \"$address\" protocol: \"ttrpc\" extensions { value { type_url: \"example.com/vendor.Thing\" value: \"\\001\\002\" } } extensions { value { [$caps] { types: \"loop\" } } }"
encode checkpoint_options_parent_path.hex containerd.runc.v1.CheckpointOptions "$checkpoint_commit" \
  'exit: false open_tcp: true image_path: "/ignored" work_path: "/var/lib/criu-work" parent_path: "../pre-dump-1"'
echo "wrote $out"
