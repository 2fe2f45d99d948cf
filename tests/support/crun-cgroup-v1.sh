#!/bin/sh
# Runs crun with the given arguments so that it sees pure cgroup v1 on a host whose cgroup
# layout is "hybrid" (v1 controllers plus a cgroup2 mount at /sys/fs/cgroup/unified).
# Debian 12's crun 1.8.1 refuses hybrid hosts whose cgroup2 root still holds a controller
# ("cgroups in hybrid mode not supported, drop all controllers from cgroupv2"); the
# integration tests name this script as BinaryName (`ctr run --runc-binary <this>`) so
# every shim path still runs crun there. See tests/README.md ("Other runtimes").
#
# How: crun runs in a mount namespace of its own in which the cgroup2 mount is gone, so
# crun's mode probe finds a tmpfs with v1 hierarchies only. Why this is safe for a shim:
# - a new mount namespace starts as a copy of the caller's, so the rootfs the shim mounted
#   in the host namespace before `crun create` is there, and the container's namespaces
#   are created from this copy;
# - propagation is "slave": mounts made on the host later still reach crun and the
#   container (as with runc, which makes the container's / rslave), while the unmount
#   below and anything crun mounts stay private to this namespace;
# - the namespace lives as long as some process in it (crun, then the container's
#   processes, which get namespaces of their own anyway), so containers outlive this
#   script; crun's state (--root) is plain files, visible to every later call.
# Where /sys/fs/cgroup/unified is no cgroup2 mount this just execs crun.
# $LIBSHIM_CRUN names another crun binary (default: crun on PATH).
set -eu

crun="${LIBSHIM_CRUN:-crun}"
unified=/sys/fs/cgroup/unified
: "${PATH:=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin}"
export PATH

if [ "$(stat -f -c %T "$unified" 2>/dev/null || true)" != cgroup2fs ]; then
  exec "$crun" "$@"
fi
# Lazy unmount: crun's own cgroup (or a busy file) must not make this fail.
exec unshare --mount --propagation slave -- \
  /bin/sh -c 'umount -l "$1" && shift && exec "$@"' sh "$unified" "$crun" "$@"
