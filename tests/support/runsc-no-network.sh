#!/bin/sh
# Runs gVisor's runsc with the given arguments plus `--network=none`, for use as BinaryName
# (`ctr run --runc-binary <this>`). `ctr run` asks for a new network namespace without a
# path; runsc's default "sandbox" network then refuses to start ("cannot run with network
# enabled in root network namespace"), because it only configures a namespace that was
# prepared for it (as CRI does). With no network the sandbox starts. Global flags go
# before the subcommand, where the shim's own (--root, --log, --log-format) also are.
# $LIBSHIM_RUNSC names another runsc binary (default: runsc on PATH).
: "${PATH:=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin}"
export PATH
exec "${LIBSHIM_RUNSC:-runsc}" --network=none "$@"
